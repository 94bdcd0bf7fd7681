"""The sse-capture/1 format: writing, reading, forgiving a cut-off file, refusing garbage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, CaptureError, Chunk, End, Request, Response, dump_capture, load_capture, parse_capture
from sse_inspect._capture import chunk_line, end_line, header_line

from .helpers import DATA

REQUEST = Request(
    method="POST",
    url="https://api.example.test/v1/chat/completions",
    http_version="HTTP/1.1",
    headers=(("Content-Type", "application/json"), ("authorization", "Bearer [REDACTED]")),
    body='{"stream": true}',
)
RESPONSE = Response(
    status=200, reason="OK", http_version="HTTP/1.1", headers=(("Content-Type", "text/event-stream"),), t=0.25
)


def make_capture() -> Capture:
    return Capture(
        chunks=(Chunk(0.3, b"data: {\"a\": 1}\n\n"), Chunk(0.35, b"data: \xe2\x82"), Chunk(0.4, b"\xac\n\n")),
        request=REQUEST,
        response=RESPONSE,
        end=End(kind="complete", t=0.41),
        recorded_at="2026-11-30T03:00:00.000000Z",
        recorder="test",
    )


def test_round_trip() -> None:
    capture = make_capture()
    again = parse_capture(dump_capture(capture).encode(), path="x.jsonl")
    assert again.chunks == capture.chunks
    assert (again.request, again.response, again.end) == (capture.request, capture.response, capture.end)
    assert (again.recorded_at, again.recorder, again.timed, again.raw) == (capture.recorded_at, "test", True, False)
    assert again.body == b'data: {"a": 1}\n\ndata: \xe2\x82\xac\n\n'


def test_chunk_lines_use_text_when_utf8_else_b64() -> None:
    lines = dump_capture(make_capture()).splitlines()
    assert json.loads(lines[1]) == {"t": 0.3, "text": 'data: {"a": 1}\n\n'}
    assert set(json.loads(lines[2])) == {"t", "b64"}, "half a character is not UTF-8 on its own"
    assert json.loads(lines[-1]) == {"end": "complete", "t": 0.41}


def test_header_names_keep_case_and_order() -> None:
    again = parse_capture(dump_capture(make_capture()).encode())
    assert again.request is not None and again.request.headers == REQUEST.headers
    assert again.request.header("AUTHORIZATION") == "Bearer [REDACTED]"


def test_times_have_microsecond_precision() -> None:
    assert json.loads(chunk_line(1.23456789, b"x")) == {"t": 1.234568, "text": "x"}


def test_cut_off_file_keeps_every_written_chunk() -> None:
    text = dump_capture(make_capture())
    without_end = text[: text.rindex('{"end"')]
    capture = parse_capture(without_end.encode())
    assert capture.end is None, "no end line: the recording was cut off"
    assert len(capture.chunks) == 3
    assert capture.warnings == ()


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_half_written_last_line_is_dropped_with_a_warning(cut: int) -> None:
    text = dump_capture(make_capture())
    lines = text.splitlines(keepends=True)
    broken = "".join(lines[:3]) + lines[3][:cut]
    capture = parse_capture(broken.encode(), path="cut.jsonl")
    assert len(capture.chunks) == 2
    assert capture.end is None
    assert len(capture.warnings) == 1 and "half-written" in capture.warnings[0]


def test_every_byte_prefix_loads_or_fails_with_a_capture_error() -> None:
    """Cut a file at any byte: it loads with every whole chunk line before the cut, or says why not."""
    text = dump_capture(make_capture()).encode()
    first_line_end = text.index(b"\n") + 1
    for cut in range(len(text) + 1):
        if cut < first_line_end - 1:
            if b'"format"' in text[:cut]:
                with pytest.raises(CaptureError, match="header line is cut off"):
                    parse_capture(text[:cut])
            elif cut:
                assert parse_capture(text[:cut]).raw, "too short to be a capture: a (tiny) raw body"
            continue
        capture = parse_capture(text[:cut])
        whole_lines = text[:cut].count(b"\n") - 1
        assert len(capture.chunks) >= min(whole_lines, 3)


def test_unknown_keys_are_kept() -> None:
    head = json.loads(header_line(request=None, response=None, recorded_at="now", recorder="r"))
    head["future_field"] = {"x": 1}
    text = json.dumps(head) + "\n" + '{"t": 0.1, "text": "data: a\\n\\n", "new": true}\n' + end_line("complete", 0.2)
    capture = parse_capture(text.encode())
    assert capture.extra == {"future_field": {"x": 1}}
    assert capture.chunks == (Chunk(0.1, b"data: a\n\n"),)


def test_lines_after_the_end_line_are_ignored_with_a_warning() -> None:
    text = dump_capture(make_capture()) + '{"t": 9, "text": "late"}\n'
    capture = parse_capture(text.encode())
    assert len(capture.chunks) == 3
    assert "follows the end line" in capture.warnings[0]


def test_untimed_flag_round_trips() -> None:
    capture = Capture(chunks=(Chunk(None, b"data: a\n\n"),), timed=False, end=End(kind="complete"))
    again = parse_capture(dump_capture(capture).encode())
    assert again.timed is False
    assert again.chunks[0].t is None


def test_raw_body_is_one_untimed_chunk() -> None:
    capture = parse_capture(b"data: a\n\n", path="body.sse")
    assert capture.raw and not capture.timed
    assert capture.chunks == (Chunk(None, b"data: a\n\n"),)
    assert capture.request is None and capture.response is None


def test_load_capture_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(dump_capture(make_capture()))
    assert load_capture(path).chunks == make_capture().chunks
    assert load_capture(str(path)).path == str(path)


def test_kept_v1_sample_still_loads() -> None:
    """A v1 file written by hand from the documented format: it must load forever."""
    capture = load_capture(DATA / "v1-sample.jsonl")
    assert capture.request is not None and capture.request.method == "POST"
    assert capture.response is not None and capture.response.status == 200
    assert [c.t for c in capture.chunks] == [0.412803, 0.415112, 0.58]
    assert capture.end == End(kind="client-disconnected", t=0.6, error="Client disconnected.")


BAD = [
    ("empty", b"", "empty file"),
    ("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image, not a capture"),
    ("corrupt gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage\x00", "gzip data is corrupt"),
    ("json array", b'[{"format": "sse-capture/1"}]', "JSON document"),
    ("corrupt header", b'{"format": "sse-capture/1", "recorded_at": \n{"t": 0, "text": "x"}\n', "not a JSON line"),
    ("newer format", b'{"format": "sse-capture/2"}\n', "newer capture format"),
    ("other format", b'{"format": "har"}\n', "unknown format"),
    ("bad base64", b'{"format": "sse-capture/1"}\n{"t": 0, "b64": "@@@"}\n{"end": "complete", "t": 1}\n', "base64"),
    ("bad middle line", b'{"format": "sse-capture/1"}\n{"t": 0, "te\n{"end": "complete", "t": 1}\n', ":2: not a JSON line"),
    ("bad time", b'{"format": "sse-capture/1"}\n{"t": "soon", "text": "x"}\n', "number of seconds"),
    ("bad end kind", b'{"format": "sse-capture/1"}\n{"end": "finished", "t": 1}\n', "end must be one of"),
    ("neither chunk nor end", b'{"format": "sse-capture/1"}\n{"t": 1}\n{"end": "complete"}\n', "needs"),
    ("not an object", b'{"format": "sse-capture/1"}\n[1, 2]\n{"end": "complete"}\n', "expected a JSON object"),
    ("bad headers", b'{"format": "sse-capture/1", "response": {"headers": {"a": "b"}}}\n', "headers must be"),
    ("not utf-8", b'{"format": "sse-capture/1"}\n{"t": 0, "text": "caf\xe9"}\n{"end": "complete"}\n', ":2: not UTF-8 text"),
    ("deeply nested", b'{"format": "sse-capture/1"}\n' + b"[" * 100000 + b"\n{}\n", ":2: not a JSON line"),
]


@pytest.mark.parametrize(("data", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_a_capture_error(data: bytes, message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        parse_capture(data, path="bad.jsonl")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no such file"):
        load_capture(tmp_path / "nope.jsonl")
    with pytest.raises(CaptureError, match="is a directory"):
        load_capture(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("data: a\n\n")
    path.chmod(0)
    with pytest.raises(CaptureError, match="cannot read"):
        load_capture(path)


_LINES = st.sampled_from([
    b'{"format": "sse-capture/1"}', b'{"format": "sse-capture/2"}', b'{"t": 0.1, "text": "data: a\\n\\n"}',
    b'{"t": 0.2, "b64": "ZGF0YQ=="}', b'{"t": 0.2, "b64": "@@"}', b'{"end": "complete", "t": 1}', b'{"end": "x"}',
    b'{"t": "x", "text": 1}', b"[1, 2]", b"{", b"", b"data: a", b"\xff\xfe", b'{"format": "sse-capture/1", "request": 7}',
    b'{"format": "sse-capture/1", "response": {"status": "200"}}', b"null", b'{"t": 1e999, "text": ""}',
])  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(lines=st.lists(_LINES, max_size=8), tail=st.binary(max_size=20))
def test_any_file_loads_or_says_why(lines: list[bytes], tail: bytes) -> None:
    """Whatever the bytes, reading gives a capture or a CaptureError: never another exception."""
    try:
        capture = parse_capture(b"\n".join(lines) + tail, path="fuzz.jsonl")
    except CaptureError as exc:
        assert str(exc).startswith("fuzz.jsonl") and "\n" not in str(exc)
        return
    assert all(isinstance(c.data, bytes) for c in capture.chunks)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_any_bytes_load_or_say_why(data: bytes) -> None:
    try:
        parse_capture(data)
    except CaptureError:
        pass


def test_capture_text_comes_from_the_analysis_layer_without_an_upward_import() -> None:
    """`_capture` imports no analysis; `Capture.text` still rebuilds the answer, in a process that
    imports nothing but the package's front door (which brings the analysis with any name taken from it)."""
    code = (
        "from sse_inspect import capture_from_body\n"
        "print(capture_from_body(b'data: {\"choices\": [{\"delta\": {\"content\": \"hi\"}}]}\\n\\n').text)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "hi\n"
