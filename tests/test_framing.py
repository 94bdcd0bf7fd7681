"""`BodyFramer`: the framer a body needs, told by its Content-Type or its first bytes, at any cut.

The framers' own contracts are tested in test_parser.py, test_ndjson.py and test_eventstream.py; here, what
choosing adds: the same framing and the same items whatever the cut (the first bytes may come one at a time,
and wait), each held chunk's items timed as its own, the Content-Type deciding over the bytes, and an
error response never read as a stream.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, analyze
from sse_inspect._capture import Response
from sse_inspect._events import Event
from sse_inspect._eventstream import encode_message
from sse_inspect._framing import SNIFF_LIMIT, BodyFramer, tell_framing

LINES = b"".join(json.dumps({"response": w, "done": False}).encode() + b"\n" for w in ("a", "b", "c"))
ARRAY = b'[{"candidates": []}\n,\r\n{"candidates": [1]}\n]'
MESSAGES = b"".join(encode_message({":event-type": "chunk", ":message-type": "event"}, b'{"bytes": "eA=="}')
                    for _ in range(3))  # fmt: skip
SSE = b"data: a\n\nevent: e\ndata: b\n\n"
BODIES = {
    "ndjson": LINES,
    "ndjson with a BOM and blank lines first": b"\xef\xbb\xbf\n \n" + LINES,
    "json-array": ARRAY,
    "json-array after whitespace": b"  \r\n" + ARRAY,
    "eventstream": MESSAGES,
    "sse": SSE,
    "sse after a comment": b": hi\n\n" + SSE,
}
FRAMING = {"ndjson with a BOM and blank lines first": "ndjson", "json-array after whitespace": "json-array",
           "sse after a comment": "sse"}  # fmt: skip


def framed(chunks: list[bytes], content_type: str | None = None) -> tuple[str | None, list[object]]:
    framer = BodyFramer(content_type)
    items = [item for i, data in enumerate(chunks) for item in framer.feed(data, float(i))] + framer.close()
    return framer.framing, items


def untimed(items: list[object]) -> list[object]:
    return [item._replace(t=None, t_first=None, chunk=0) if isinstance(item, Event) else type(item).__name__
            for item in items]  # fmt: skip


def cut(body: bytes, at: list[int]) -> list[bytes]:
    points = sorted({0, len(body), *(p % (len(body) + 1) for p in at)})
    return [body[a:b] for a, b in zip(points, points[1:])]


@pytest.mark.parametrize("name", BODIES)
def test_the_first_bytes_tell_the_framing(name: str) -> None:
    framing, items = framed([BODIES[name]])
    assert framing == FRAMING.get(name, name)
    assert sum(isinstance(x, Event) for x in items) == (2 if framing == "sse" else 3 if framing != "json-array" else 2)


@pytest.mark.parametrize("name", BODIES)
@settings(max_examples=60, deadline=None)
@given(at=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_cut_gives_the_same_framing_and_items(name: str, at: list[int]) -> None:
    body = BODIES[name]
    whole = framed([body])
    framing, items = framed(cut(body, at))
    assert framing == whole[0]
    assert untimed(items) == untimed(whole[1])


@pytest.mark.parametrize("name", BODIES)
def test_one_byte_at_a_time_each_item_keeps_the_times_of_its_own_bytes(name: str) -> None:
    body = BODIES[name]
    _, items = framed([body[i : i + 1] for i in range(len(body))])
    for event in (x for x in items if isinstance(x, Event)):
        assert event.t_first == float(event.start), event  # chunk i (the byte at offset i) came at time i
        assert event.chunk == int(event.t) and event.t >= event.end - 2, event  # (its last byte, or the LF after a CR)


def test_the_content_type_decides_over_the_bytes() -> None:
    assert framed([LINES], "text/event-stream")[0] == "sse"
    assert framed([SSE], "application/x-ndjson; charset=utf-8")[0] == "ndjson"
    assert framed([LINES], "application/json")[0] == "ndjson"  # a type that names no stream: the bytes tell
    assert tell_framing(None, iter([b"\x00", b"\x00\x00"])) == "sse"  # too short to be a prelude, at the end


def test_waiting_is_bounded() -> None:
    """A body of whitespace alone waits for at most SNIFF_LIMIT bytes, then reads as SSE."""
    framer = BodyFramer()
    framer.feed(b" " * (SNIFF_LIMIT - 1))
    assert framer.framing is None
    framer.feed(b"  ")
    assert framer.framing == "sse"


def test_feed_after_close_is_a_bug() -> None:
    framer = BodyFramer()
    framer.close()
    with pytest.raises(RuntimeError):
        framer.feed(b"x")


def test_an_error_response_is_never_read_as_a_stream() -> None:
    """The body of a 429 in JSON is the server's refusal: shown as it is, not rebuilt as NDJSON."""
    body = b'{"error": {"message": "Rate limit reached"}}'
    refused = Capture(chunks=(Chunk(0.1, body),), response=Response(status=429, headers=(("Content-Type", "application/json"),)))
    ok = Capture(chunks=(Chunk(0.1, body),), response=Response(status=200, headers=(("Content-Type", "application/json"),)))
    assert analyze(refused).framing == "sse" and not analyze(refused).answer.errors
    assert analyze(ok).framing == "ndjson" and analyze(ok).answer.errors[0].message == "Rate limit reached"
