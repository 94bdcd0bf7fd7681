"""The recording pieces without a proxy: file names, redaction, the writer, the stream recorder's policy."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Request, Response, load_capture
from sse_inspect._capture import chunk_line, chunk_lines
from sse_inspect._redact import REDACTED, Redactor
from sse_inspect.recorder import FLUSH_CHUNKS, CaptureWriter, StreamRecorder, capture_dir_problem, capture_filename

WHEN = datetime(2026, 11, 30, 3, 12, 45, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    "url",
    [
        "http://../../etc/passwd/x",
        "http://evil/../../../../root/.ssh/authorized_keys",
        "http://a%2F..%2F..%2Fb/%2e%2e/%2e%2e/x",
        "http://[::1]:8080/v1/chat/completions",
        "http://host/" + "a" * 500,
        "http:///nohost",
    ],
)
def test_filenames_cannot_escape_the_folder(url: str, tmp_path: Path) -> None:
    name = capture_filename(url, WHEN)
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert name.startswith("20261130T031245.123456Z-") and name.endswith(".jsonl")
    assert len(name) < 160
    assert (tmp_path / name).resolve().parent == tmp_path.resolve()


def test_filename_says_host_and_path() -> None:
    name = capture_filename("https://api.openai.com/v1/chat/completions?x=1", WHEN)
    assert name == "20261130T031245.123456Z-api.openai.com-v1_chat_completions.jsonl"


def test_redact_headers_keeps_names_order_and_case() -> None:
    headers = (
        ("Authorization", "Bearer sk-abc"), ("Content-Type", "application/json"), ("x-api-key", "sk-ant-1"),
        ("Cookie", "session=1"), ("X-Goog-Api-Key", "AIza1"), ("OpenAI-Organization", "org-1"), ("Api-Key", "az"),
    )  # fmt: skip
    out = Redactor().redact_headers(headers)
    assert [k for k, _ in out] == [k for k, _ in headers]
    assert dict(out) == {
        "Authorization": REDACTED, "Content-Type": "application/json", "x-api-key": REDACTED, "Cookie": REDACTED,
        "X-Goog-Api-Key": REDACTED, "OpenAI-Organization": REDACTED, "Api-Key": REDACTED,
    }  # fmt: skip


def test_redact_url() -> None:
    r = Redactor()
    assert r.redact_url("https://g.test/v1/m:stream?alt=sse&key=AIzaSECRET") == "https://g.test/v1/m:stream?alt=sse&key=[REDACTED]"
    assert r.redact_url("https://u:p4ss@h.test/x?api_key=1&token=2") == "https://u:[REDACTED]@h.test/x?api_key=[REDACTED]&token=[REDACTED]"
    assert r.redact_url("https://h.test/x?q=1&keyword=k") == "https://h.test/x?q=1&keyword=k", "unchanged, byte for byte"


def test_extra_names_and_off() -> None:
    assert Redactor(["X-Tenant"]).redact_headers([("x-tenant", "t1")]) == (("x-tenant", REDACTED),)
    assert Redactor(["session"]).redact_url("http://h/?session=s") == "http://h/?session=[REDACTED]"
    assert Redactor(enabled=False).redact_headers([("Authorization", "a")]) == (("Authorization", "a"),)
    assert Redactor(enabled=False).redact_url("http://h/?key=k") == "http://h/?key=k"


def make_writer(tmp_path: Path, **kwargs: object) -> CaptureWriter:
    return CaptureWriter.create(
        tmp_path / "caps",
        request=Request(method="POST", url="https://api.test/v1/chat/completions?key=SECRET",
                        headers=(("Authorization", "Bearer sk-SECRET"),), body='{"stream": true}'),
        response=Response(status=200, reason="OK", headers=(("Set-Cookie", "s=SECRET"), ("Content-Type", "text/event-stream")), t=0.1),
        redactor=Redactor(),
        recorder="test",
        when=WHEN,
        **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def test_writer_flushes_each_chunk_and_redacts(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.chunk(0.2, b"data: a\n\n")
    mid = load_capture(writer.path)
    assert mid.end is None and mid.body == b"data: a\n\n", "on disk before the next chunk"
    writer.chunk(0.3, b"data: \xe2\x82")
    writer.end("complete", 0.4)
    capture = load_capture(writer.path)
    assert capture.body == b"data: a\n\ndata: \xe2\x82"
    assert capture.end is not None and capture.end.kind == "complete"
    text = writer.path.read_text()
    assert "SECRET" not in text
    assert capture.request is not None and capture.request.header("authorization") == REDACTED
    assert capture.request.body == '{"stream": true}'
    assert capture.recorder == "sse-inspect 0.1.0 (test)"
    assert stat.S_IMODE(writer.path.stat().st_mode) == 0o600
    assert writer.closed


def test_writer_never_overwrites(tmp_path: Path) -> None:
    paths = {make_writer(tmp_path).path for _ in range(3)}
    assert len(paths) == 3
    base = capture_filename("https://api.test/v1/chat/completions", WHEN)
    assert {p.name for p in paths} == {base, base.replace(".jsonl", "-2.jsonl"), base.replace(".jsonl", "-3.jsonl")}


def test_writer_explicit_path(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "x.jsonl"
    writer = make_writer(tmp_path, path=target)
    writer.end("server-disconnected", 1.0, "peer closed connection")
    capture = load_capture(target)
    assert capture.end is not None and capture.end.error == "peer closed connection"


_STREAM_TEXT = st.text(st.characters(exclude_categories=("Cc", "Cs")) | st.sampled_from('\t\n\r\\"%'), max_size=60)
"""Text as event streams hold it, with no control character but tab, LF and CR: `chunk_lines`'s fast way."""
_CHUNK_DATA = st.one_of(
    _STREAM_TEXT.map(str.encode),
    st.text(max_size=60).map(str.encode),
    st.binary(max_size=60),
    st.sampled_from(
        [b"data: \xe2\x82", b'data: {"a": "\\"}\r\n\t\x00\x1f\x7f\n\n', "data: é€😀\u2028\x85\n\n".encode()]
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.tuples(st.floats(0, 1e6), _CHUNK_DATA), max_size=6)
    | st.lists(st.tuples(st.floats(0, 1e6), _STREAM_TEXT.map(str.encode)), min_size=1, max_size=6)
    | st.tuples(st.floats(0, 1e6), st.lists(_STREAM_TEXT.map(str.encode), min_size=1, max_size=6)).map(
        lambda one_time: [(one_time[0], data) for data in one_time[1]]  # the recorder's batches: one time for all
    )
)
def test_chunk_lines_say_what_chunk_line_says(chunks: list[tuple[float, bytes]]) -> None:
    """The recorder's fast batch encoding: line for line the same JSON values as `chunk_line`
    (text or b64, the time rounded to the microsecond), whatever the bytes and the times (one
    for all, formatted once, or each its own)."""
    times, datas = [t for t, _ in chunks], [d for _, d in chunks]
    *lines, after_last = chunk_lines(times, datas).decode().split("\n")  # not splitlines: U+0085, U+2028 stay raw
    assert after_last == ""
    assert [json.loads(line) for line in lines] == [json.loads(chunk_line(t, d)) for t, d in chunks]


def test_chunk_lines_escape_a_batch_as_bytes() -> None:
    """The usual batch (UTF-8, no control character but tab, LF and CR): raw UTF-8 kept, JSON's
    short escapes, `%` as it is, the times with six decimals."""
    lines = chunk_lines([0.2, 1.5], [b'data: {"a": "\\u00e9 100%"}\n\n', "€\r\n\t".encode()])
    assert lines == (b'{"t": 0.200000, "text": "data: {\\"a\\": \\"\\\\u00e9 100%\\"}\\n\\n"}\n'
                     b'{"t": 1.500000, "text": "\xe2\x82\xac\\r\\n\\t"}\n')  # fmt: skip
    one_time = chunk_lines([0.25, 0.25], [b"data: 100%\n\n", b"data: %s\n\n"])
    assert one_time == b'{"t": 0.250000, "text": "data: 100%\\n\\n"}\n{"t": 0.250000, "text": "data: %s\\n\\n"}\n'


def test_writer_writes_chunks_in_batches(tmp_path: Path) -> None:
    """A batch with a character cut between two chunks (written as b64), then the rest of it."""
    writer = make_writer(tmp_path)
    writer.chunks([0.2, 0.25], [b"data: a\n\n", b"data: \xe2\x82"])
    writer.chunks([0.3], [b"\xac\n\n"])
    writer.end("complete", 0.4)
    capture = load_capture(writer.path)
    assert [(c.t, c.data) for c in capture.chunks] == [
        (0.2, b"data: a\n\n"), (0.25, b"data: \xe2\x82"), (0.3, b"\xac\n\n")
    ]  # fmt: skip


def _recorder(tmp_path: Path, pending: list[Callable[[], None]], *, attach: int = 0) -> StreamRecorder:
    writer = CaptureWriter.create(tmp_path, request=Request(url="http://h/p"), response=Response(),
                                  redactor=Redactor(), recorder="test", when=WHEN)  # fmt: skip
    return StreamRecorder(writer, time.monotonic(), attach=attach, schedule=pending.append)


def test_stream_recorder_writes_an_iteration_s_chunks_together_when_it_ends(tmp_path: Path) -> None:
    """The policy without mitmproxy: chunks wait for the scheduled flush (the end of the loop
    iteration), a burst of FLUSH_CHUNKS is written at once, and `finish` writes what waits, then the end."""
    pending: list[Callable[[], None]] = []
    recorder = _recorder(tmp_path, pending, attach=1 << 20)
    recorder.take(b"data: a\n\n")
    recorder.take(b"data: b\n\n")
    assert len(pending) == 1, "one flush scheduled per iteration, not per chunk"
    assert load_capture(recorder.path).chunks == ()
    pending.pop()()
    assert [c.data for c in load_capture(recorder.path).chunks] == [b"data: a\n\n", b"data: b\n\n"]
    burst = [b"x" * (k % 7 + 1) for k in range(FLUSH_CHUNKS + 2)]
    for data in burst:
        recorder.take(data)
    assert len(load_capture(recorder.path).chunks) == 2 + FLUSH_CHUNKS, "a long burst does not wait for the loop"
    recorder.finish("server-disconnected", "peer closed")
    capture = load_capture(recorder.path)
    assert [c.data for c in capture.chunks][2:] == burst
    assert capture.end is not None and (capture.end.kind, capture.end.error) == ("server-disconnected", "peer closed")
    assert (recorder.chunks, recorder.bytes) == (len(burst) + 2, len(capture.body))
    assert recorder.ended == "server-disconnected"
    assert recorder.body is not None and recorder.body.getvalue() == capture.body


def test_stream_recorder_gives_an_iteration_s_chunks_the_time_of_the_first(tmp_path: Path) -> None:
    """Chunks taken in one loop iteration came in one read: they share the time the first was
    taken, not times set apart by the proxy's work; the next iteration's chunks have theirs."""
    pending: list[Callable[[], None]] = []
    recorder = _recorder(tmp_path, pending)
    recorder.take(b"data: a\n\n")
    time.sleep(0.02)
    recorder.take(b"data: b\n\n")
    pending.pop()()
    time.sleep(0.02)
    recorder.take(b"data: c\n\n")
    recorder.finish("complete")
    a, b, c = load_capture(recorder.path).chunks
    assert a.t is not None and a.t == b.t, "one iteration, one time"
    assert c.t is not None and c.t - a.t >= 0.02, "the next iteration's chunk has its own"


def test_stream_recorder_stops_quietly_when_the_disk_fails(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A failing write ends the recording with one warning and raises nothing: the stream flows on."""
    pending: list[Callable[[], None]] = []
    recorder = _recorder(tmp_path, pending, attach=1 << 20)
    recorder.take(b"data: a\n\n")
    pending.pop()()
    assert recorder.writer is not None
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, recorder.writer._fd)  # every write: ENOSPC, a full disk
    os.close(full)
    with caplog.at_level(logging.WARNING):
        recorder.take(b"data: b\n\n")
        pending.pop()()
        recorder.take(b"data: c\n\n")
        recorder.finish("complete")
    warnings = [r.getMessage() for r in caplog.records if "stopped recording" in r.getMessage()]
    assert len(warnings) == 1 and "No space left" in warnings[0]
    assert recorder.writer is None and recorder.ended == "complete"
    assert recorder.body is not None and recorder.body.getvalue() == b"data: a\n\ndata: b\n\ndata: c\n\n"


def test_capture_dir_problem(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert capture_dir_problem(tmp_path) is None
    assert capture_dir_problem(tmp_path / "not" / "yet") is None, "made with the first capture"
    assert capture_dir_problem(tmp_path / "file") == f"{tmp_path / 'file'} is a file, not a folder"
    assert capture_dir_problem(tmp_path / "file" / "below") == (
        f"{tmp_path / 'file' / 'below'} cannot be made: {tmp_path / 'file'} is a file, not a folder"
    )
    assert capture_dir_problem("") == "is empty: a folder is needed"
