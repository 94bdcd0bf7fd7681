"""Issue 17, the capture's own lines: none is held past `CAPTURE_LINE_LIMIT`, and a capture keeps at most
`MAX_HEADERS` headers a side.

A chunk line over the limit is skipped (read on to its newline in pieces, never whole) with a warning,
and every other chunk is read; a header line over it is a one-line error. The unit tests lower the
limit to a few hundred bytes; the memory tests write real 150 MB lines and measure a process of its own.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import _capture
from sse_inspect._capture import Request, Response, chunk_line, end_line, header_line
from sse_inspect._errors import CaptureError
from sse_inspect._limits import MAX_HEADERS
from sse_inspect._loading import load_capture, parse_capture
from sse_inspect.cli import cli

from .huge import measured

LIMIT = 1000
MB = 10**6


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_capture, "CAPTURE_LINE_LIMIT", LIMIT)
    return LIMIT


HEADER = header_line(request=Request(method="POST", url="http://x/"),
                     response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.1),
                     recorded_at=None, recorder="tests")  # fmt: skip


def a_chunk_line(t: float, size: int) -> str:
    """A chunk line of exactly `size` bytes with its newline."""
    bare = len(chunk_line(t, b""))
    assert size >= bare
    line = chunk_line(t, b"x" * (size - bare))
    assert len(line.encode()) == size
    return line


def both_ways(data: bytes, tmp_path: Path) -> _capture.Capture:
    """The capture read from a file (streamed) and from bytes (`parse_capture`): the same both ways."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    streamed = load_capture(path)
    whole = parse_capture(data, path=str(path))
    assert streamed == whole
    return streamed


@pytest.mark.parametrize("over", [-1, 0, 1, 2, 1000])
def test_a_chunk_line_at_the_limit_is_read_and_one_byte_over_is_skipped(
    small_limit: int, over: int, tmp_path: Path
) -> None:
    middle = a_chunk_line(0.3, small_limit + over)
    data = (HEADER + chunk_line(0.2, b"data: a\n\n") + middle + chunk_line(0.4, b"data: b\n\n")
            + end_line("complete", 0.5)).encode()  # fmt: skip
    capture = both_ways(data, tmp_path)
    texts = [c.data for c in capture.chunks]
    if over <= 0:
        assert len(texts) == 3 and texts[1] == json.loads(middle)["text"].encode()
        assert capture.warnings == ()
    else:
        assert texts == [b"data: a\n\n", b"data: b\n\n"]
        assert capture.warnings == (
            f"line 3: a chunk line over {small_limit:,} bytes was skipped ({small_limit + over:,} bytes): "
            f"capture lines are at most {small_limit:,} bytes",
        )
    assert capture.end is not None and capture.end.kind == "complete"


def test_a_skipped_line_is_read_on_in_pieces_to_its_newline(monkeypatch: pytest.MonkeyPatch, small_limit: int) -> None:
    """The skipped line is never held: it is read in pieces of PIECE bytes, and reading goes on after it."""
    monkeypatch.setattr(_capture, "PIECE", 64)
    reads: list[int] = []

    class Recording(io.BytesIO):
        def readline(self, size: int | None = -1, /) -> bytes:
            line = super().readline(size)
            reads.append(len(line))
            return line

        def read1(self, size: int | None = -1, /) -> bytes:
            block = super().read1(size)
            reads.append(len(block))
            return block

    lines = _capture.CaptureLines(HEADER.encode(), None)
    rest = a_chunk_line(0.2, 10_000) + chunk_line(0.3, b"data: b\n\n") + end_line("complete", 0.4)
    chunks = list(lines.chunks(Recording(rest.encode())))
    assert [c.data for c in chunks] == [b"data: b\n\n"]
    assert max(reads) == small_limit
    assert sum(1 for n in reads if n == 64) > 100
    assert "(10,000 bytes)" in lines.warnings[0]


def test_a_last_line_at_the_limit_without_its_newline_is_read(small_limit: int, tmp_path: Path) -> None:
    last = a_chunk_line(0.3, small_limit + 1).rstrip("\n")
    capture = both_ways((HEADER + chunk_line(0.2, b"data: a\n\n") + last).encode(), tmp_path)
    assert [c.data for c in capture.chunks] == [b"data: a\n\n", json.loads(last)["text"].encode()]
    assert capture.warnings == ()


def test_a_cut_off_last_line_over_the_limit_is_skipped_and_said(small_limit: int, tmp_path: Path) -> None:
    cut = a_chunk_line(0.3, 2 * small_limit)[:-10]
    capture = both_ways((HEADER + chunk_line(0.2, b"data: a\n\n") + cut).encode(), tmp_path)
    assert [c.data for c in capture.chunks] == [b"data: a\n\n"]
    assert capture.end is None
    assert len(capture.warnings) == 1 and "line 3: a chunk line over" in capture.warnings[0]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(min_value=40, max_value=2 * LIMIT), max_size=12), end=st.booleans())
def test_every_line_within_the_limit_is_read_and_every_other_one_said(sizes: list[int], end: bool) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_capture, "CAPTURE_LINE_LIMIT", LIMIT)
        rest = "".join(a_chunk_line(0.1 * (i + 1), size) for i, size in enumerate(sizes))
        rest += end_line("complete", 9.0) if end else ""
        capture = parse_capture((HEADER + rest).encode())
    kept = [i for i, size in enumerate(sizes) if size <= LIMIT]
    assert [c.t for c in capture.chunks] == [pytest.approx(0.1 * (i + 1)) for i in kept]
    skipped = [w for w in capture.warnings if "was skipped" in w]
    assert [w.split(":")[0] for w in skipped] == [f"line {i + 2}" for i, size in enumerate(sizes) if size > LIMIT]
    assert (capture.end is not None) == end


@pytest.mark.parametrize("over", [0, 1])
def test_a_header_line_over_the_limit_is_one_error(small_limit: int, over: int, tmp_path: Path) -> None:
    head = json.loads(HEADER)
    head["request"]["body"] = ""
    bare = len(json.dumps(head)) + 1
    head["request"]["body"] = "p" * (small_limit + over - bare)
    first = json.dumps(head) + "\n"
    assert len(first) == small_limit + over
    data = (first + chunk_line(0.2, b"data: a\n\n") + end_line("complete", 0.3)).encode()
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    if not over:
        assert [c.data for c in both_ways(data, tmp_path).chunks] == [b"data: a\n\n"]
        return
    for read in (lambda: load_capture(path), lambda: parse_capture(data, path=str(path))):
        with pytest.raises(CaptureError) as caught:
            read()
        assert "the header line is longer than" in str(caught.value) and ":1:" in str(caught.value)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert f"{path}:1: the header line is longer than {small_limit:,} bytes" in result.output


@pytest.mark.parametrize("side", ["request", "response"])
@pytest.mark.parametrize("count", [MAX_HEADERS, MAX_HEADERS + 1, 50_000])
def test_at_most_max_headers_are_kept_a_side(side: str, count: int) -> None:
    head = json.loads(HEADER)
    head[side]["headers"] = [[f"X-{i}", "v"] for i in range(count)]
    capture = parse_capture((json.dumps(head) + "\n" + end_line("complete", 0.3)).encode())
    message = capture.request if side == "request" else capture.response
    assert message is not None
    assert message.headers == tuple((f"X-{i}", "v") for i in range(min(count, MAX_HEADERS)))
    if count > MAX_HEADERS:
        assert capture.warnings == (f"line 1: {side} has {count:,} headers; the first {MAX_HEADERS:,} are kept",)
    else:
        assert capture.warnings == ()


# -- memory, in processes of their own -------------------------------------------------------

BOUND = 250 * MB


@pytest.mark.e2e
def test_a_150_mb_header_line_is_an_error_in_bounded_memory(tmp_path: Path) -> None:
    """2M headers on the first line (154 MB): was 886 MB in `check` and nothing said; now one line, read no further."""
    path = tmp_path / "headers.jsonl"
    head = json.loads(HEADER)
    head["request"]["headers"] = [["X-A", "v" * 64]] * 2_000_000
    path.write_text(json.dumps(head) + "\n" + end_line("complete", 0.3))
    assert path.stat().st_size > 150 * MB
    for args in (["check"], ["events", "--json"], ["redact", "-o", str(tmp_path / "out.jsonl")]):
        code, _, err, peak = measured(*args[:1], path, *args[1:])
        assert peak < BOUND, f"{args}: {peak / MB:.0f} MB"
        assert code == 2 and "Traceback" not in err
        message = f"Error: {path}:1: the header line is longer than 64 MiB, the most a capture line may be"
        assert err.splitlines()[-1] == message


@pytest.mark.e2e
def test_a_150_mb_chunk_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    """One 150 MB chunk line between two ordinary ones: was 738 MB; now skipped with a warning, the others read."""
    path = tmp_path / "chunk.jsonl"
    with open(path, "w") as f:
        f.write(HEADER + chunk_line(0.2, b"data: one\n\n"))
        f.write(chunk_line(0.3, b"data: " + b"x" * (150 * MB) + b"\n\n"))
        f.write(chunk_line(0.4, b"data: two\n\n") + end_line("complete", 0.5))
    code, out, err, peak = measured("events", "--json", path, keep_output=True)
    assert peak < BOUND, f"{peak / MB:.0f} MB"
    assert code == 0, err
    assert [json.loads(line)["data"] for line in out.splitlines()] == ["one", "two"]
    code, out, err, peak = measured("check", path, keep_output=True)
    assert peak < BOUND, f"{peak / MB:.0f} MB"
    assert code == 0, err
    assert "line 3: a chunk line over 64 MiB was skipped (150,000,033 bytes)" in out
    assert "OK: 2 events" in out


# -- lines within the limit that would take many times their size as Python objects -------------


def test_values_are_counted_outside_strings_only_in_long_lines() -> None:
    over = _capture.MAX_VALUES + 1
    pad = b" " * (2 << 20)
    assert not _capture._too_many_values(b'{"a": "' + b"," * over + b'"}' + pad), "commas inside a string"
    assert not _capture._too_many_values(b'{"a": "\\"' + b"," * over + b'"}' + pad), "after an escaped quote"
    assert not _capture._too_many_values(b'{"a": [' + b"1," * over + b"1]}"), "a short line is not looked at"
    at_limit = b'{"a": "' + b"x" * (2 << 20) + b'", "b": [' + b"1," * (_capture.MAX_VALUES - 3) + b"1]}"
    assert not _capture._too_many_values(at_limit), "exactly MAX_VALUES separators: 2 colons and the commas"
    assert _capture._too_many_values(at_limit.replace(b"[1,", b"[1,1,", 1))


@pytest.mark.e2e
@pytest.mark.parametrize("value", ['["",""]', '"ab"', "1.5"])
def test_a_header_line_of_millions_of_small_values_is_an_error_in_bounded_memory(tmp_path: Path, value: str) -> None:
    """7.8M `["", ""]` headers fit in 62 MB, under the line limit, and took `check` 940 MB as Python objects
    (so would strings or floats): now one line, before they are parsed."""
    path = tmp_path / "values.jsonl"
    head = json.loads(HEADER)
    head["request"]["x"] = "@"
    values = "[" + ",".join([value] * (60 * MB // (len(value) + 1))) + "]"
    text = json.dumps(head, separators=(",", ":")).replace('"@"', values)
    path.write_text(text + "\n" + end_line("complete", 0.3))
    assert 55 * MB < path.stat().st_size < _capture.CAPTURE_LINE_LIMIT
    code, _, err, peak = measured("check", path)
    assert peak < BOUND, f"{peak / MB:.0f} MB"
    assert code == 2 and "Traceback" not in err
    message = f"Error: {path}:1: the header line holds more than 100,000 JSON values: not a capture's header"
    assert err.splitlines()[-1] == message


@pytest.mark.e2e
def test_a_chunk_line_of_millions_of_values_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "arrays.jsonl"
    with open(path, "w") as f:
        f.write(HEADER + chunk_line(0.2, b"data: one\n\n"))
        line = '{"t": 0.3, "text": "data: x\\n\\n", "x": [' + "[]," * 20_000_000 + "[]]}\n"
        f.write(line)
        f.write(chunk_line(0.4, b"data: two\n\n") + end_line("complete", 0.5))
    code, out, err, peak = measured("check", path, keep_output=True)
    assert peak < BOUND, f"{peak / MB:.0f} MB"
    assert code == 0, err
    assert f"line 3: a chunk line holding more than 100,000 JSON values was skipped ({len(line):,} bytes)" in " ".join(out.split()), out
    assert "OK: 2 events" in out
