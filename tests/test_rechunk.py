"""Re-cutting: every spec keeps the bytes, never makes a byte arrive early, and keeps the events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Chunk, RechunkSpec, RechunkSpecError, parse_rechunk_spec, rechunk

from .helpers import parse_all, untimed

BODY = b"data: a\r\n\r\n: ping\n\nevent: x\ndata: b\n\ndata: \xe2\x82\xac\n\n"
CHUNKS = [Chunk(0.1, BODY[:5]), Chunk(0.2, BODY[5:30]), Chunk(0.5, BODY[30:])]
SPECS = ["original", "whole", "bytes:1", "bytes:7", "event", "line", "crlf", "utf8", "random:0", "random:42"]


@pytest.mark.parametrize("text", SPECS)
def test_every_spec_keeps_bytes_and_events(text: str) -> None:
    out = rechunk(CHUNKS, parse_rechunk_spec(text))
    assert b"".join(c.data for c in out) == BODY
    assert all(c.data for c in out), "no empty chunks"
    assert untimed(parse_all([c.data for c in out])) == untimed(parse_all([BODY]))


@pytest.mark.parametrize("text", SPECS)
def test_a_byte_never_arrives_before_it_did(text: str) -> None:
    out = rechunk(CHUNKS, parse_rechunk_spec(text))
    original_end_times = []
    for c in CHUNKS:
        original_end_times += [c.t] * len(c.data)
    pos = 0
    for c in out:
        pos += len(c.data)
        assert c.t == original_end_times[pos - 1]


def test_cut_positions() -> None:
    def sizes(spec: str) -> list[int]:
        return [len(c.data) for c in rechunk(CHUNKS, parse_rechunk_spec(spec))]

    assert sizes("whole") == [len(BODY)]
    assert sizes("bytes:20") == [20, 20, len(BODY) - 40]
    assert [c.data for c in rechunk(CHUNKS, parse_rechunk_spec("event"))] == [
        b"data: a\r\n\r\n",
        b": ping\n\nevent: x\ndata: b\n\n",
        b"data: \xe2\x82\xac\n\n",
    ], "per event: a CRLF blank line is not split between its CR and LF"
    assert [c.data for c in rechunk(CHUNKS, parse_rechunk_spec("line"))][:3] == [b"data: a\r\n", b"\r\n", b": ping\n"]
    assert [c.data for c in rechunk(CHUNKS, parse_rechunk_spec("crlf"))][:2] == [b"data: a\r", b"\n\r"]
    utf8 = [c.data for c in rechunk(CHUNKS, parse_rechunk_spec("utf8"))]
    assert utf8[0].endswith(b"data: \xe2") and utf8[1] == b"\x82\xac\n\n", "cut inside the euro sign"
    assert sizes("random:7") == sizes("random:7"), "a seed gives the same cuts every time"
    assert sizes("random:7") != sizes("random:8")


def test_original_is_unchanged() -> None:
    assert rechunk(CHUNKS, RechunkSpec("original")) == CHUNKS


def test_empty_body() -> None:
    assert rechunk([Chunk(0.0, b"")], RechunkSpec("whole")) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("whole", RechunkSpec("whole")), ("bytes:16", RechunkSpec("bytes", 16)), ("random:0", RechunkSpec("random", 0)),
     (" EVENT ", RechunkSpec("event"))],
)  # fmt: skip
def test_parse_spec(text: str, expected: RechunkSpec) -> None:
    assert parse_rechunk_spec(text) == expected
    assert parse_rechunk_spec(str(expected)) == expected


@pytest.mark.parametrize("text", ["bytes", "bytes:0", "bytes:x", "random", "random:-1", "whole:3", "lines", ""])
def test_bad_spec(text: str) -> None:
    with pytest.raises(RechunkSpecError, match="rechunk spec"):
        parse_rechunk_spec(text)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200), seed=st.integers(0, 2**32), size=st.integers(1, 50))
def test_any_body_any_spec_same_events(body: bytes, seed: int, size: int) -> None:
    chunks = [Chunk(0.0, body)]
    expected = untimed(parse_all([body]))
    for spec in (RechunkSpec("random", seed), RechunkSpec("bytes", size), RechunkSpec("event"), RechunkSpec("line")):
        out = rechunk(chunks, spec)
        assert b"".join(c.data for c in out) == body
        assert untimed(parse_all([c.data for c in out])) == expected, spec
