"""Hostile bodies in processes of their own (issue 17, items 1 and 14): Content-Encoding bombs and one huge line
keep every command's memory flat, and the check says what happened.

Each capture is made here, small on disk (a bomb is a few hundred bytes to a few hundred KB). Peak memory is the
command's VmHWM (tests/huge.py). Before the fix, a 1 GiB br bomb took `check` to 4.2 GB and `events --json` to
14.7 GB; the bound here is generous, and the commands stop decoding at BOMB_FLOOR (32 MiB), so each run takes
about a second.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from sse_inspect._capture import Request, Response, chunk_line, end_line, header_line

from .huge import measured

pytestmark = pytest.mark.e2e

MiB = 1 << 20
BOUND = 250 * 1000 * 1000
"""Peak resident bytes a command may reach on these captures (the bombs took gigabytes)."""


def _compressor(encoding: str) -> tuple[Callable[[bytes], bytes], Callable[[], bytes]]:
    if encoding == "gzip":
        z = zlib.compressobj(6, wbits=31)
        return z.compress, z.flush
    if encoding == "br":
        brotli = pytest.importorskip("brotli")
        b = brotli.Compressor(quality=5)
        return b.process, b.finish
    from sse_inspect._decoding import zstd_module

    module = zstd_module()
    if hasattr(module, "ZstdFile"):  # the standard library's API (PEP 784) and its backport
        c = module.ZstdCompressor()
        return c.compress, lambda: c.flush(module.ZstdCompressor.FLUSH_FRAME)
    o = module.ZstdCompressor().compressobj()
    return o.compress, o.flush


def write_capture(path: Path, wire: bytes, encoding: str | None, piece: int = 16384) -> Path:
    headers = (("Content-Type", "text/event-stream"),) + ((("Content-Encoding", encoding),) if encoding else ())
    with open(path, "w", encoding="utf-8") as f:
        f.write(header_line(request=Request(method="POST", url="https://api.example/v1/chat/completions"),
                            response=Response(headers=headers, t=0.1), recorded_at=None, recorder="tests"))  # fmt: skip
        for i in range(0, len(wire), piece):
            f.write(chunk_line(0.2 + i / len(wire), wire[i : i + piece]))
        f.write(end_line("complete", 1.5))
    return path


def write_bomb(path: Path, encoding: str, decoded_mib: int, unit: bytes) -> Path:
    """A capture whose body, `unit` repeated (about `decoded_mib` MiB), is sent with `encoding`."""
    compress, flush = _compressor(encoding)
    block = unit * (MiB // len(unit))
    wire = b"".join(compress(block) for _ in range(decoded_mib)) + flush()
    assert len(wire) * 300 < decoded_mib * MiB, "small on disk"
    return write_capture(path, wire, encoding)


ONE_LINE = b"a"  # the body: `data: ` and one endless line
EVENTS = b"data: " + b"a" * 1000 + b"\n\n"


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bombs")
    return {enc: write_bomb(d / f"{enc}.sse", enc, 128, b"data: " + ONE_LINE * 4090) for enc in ("br", "zstd", "gzip")}


COMMANDS = {
    "check": ["check"],
    "show": ["show"],
    "text": ["text"],
    "events --json": ["events", "--json"],
    "report": ["report", "-o", "{tmp}/report.html"],
    "diff": ["diff", "--by", "events", "{capture}"],
    "redact": ["redact", "-o", "{tmp}/redacted.sse"],
}


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bomb_keeps_memory_flat(bombs: dict[str, Path], encoding: str, command: str, tmp_path: Path) -> None:
    capture = bombs[encoding]
    args = [a.format(tmp=tmp_path, capture=capture) for a in COMMANDS[command]]
    code, out, err, peak = measured(*args[:1], capture, *args[1:], keep_output=command == "check")
    assert peak < BOUND, f"{command} on a {encoding} bomb: {peak / 1e6:.0f} MB"
    assert "Traceback" not in err and "Error" not in err, err
    if command == "check":
        assert code == 1
        assert "decode-bomb" in out and f"the {encoding} body expands" in out
        assert "line-too-long" in out
    else:
        assert code == 0, err


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip"])
def test_a_bomb_of_events_is_cut_and_said(encoding: str, tmp_path: Path) -> None:
    """A bomb of ordinary events (no line over the limit): decoding stops at the floor, the check says so, and
    the end line of the capture is still read (no recording-incomplete)."""
    capture = write_bomb(tmp_path / "events.sse", encoding, 128, EVENTS)
    code, out, err, peak = measured("check", capture, keep_output=True)
    assert peak < BOUND, f"{peak / 1e6:.0f} MB"
    assert code == 1, err
    assert "decode-bomb" in out and "decoding stopped" in out
    assert "recording-incomplete" not in out


def test_one_huge_line_keeps_memory_flat(tmp_path: Path) -> None:
    """One line of 96 MiB, sent as it is, between two events: dropped, the events around it read."""
    body = b"data: first\n\n" + b"data: " + b"x" * (96 * MiB) + b"\n\ndata: last\n\n"
    capture = write_capture(tmp_path / "line.sse", body, None, piece=MiB)
    del body
    for args in (["check"], ["events", "--json"]):
        code, out, err, peak = measured(*args, capture, keep_output=True)
        assert peak < BOUND, f"{args}: {peak / 1e6:.0f} MB"
        assert "Traceback" not in err, err
        if args == ["check"]:
            assert code == 1 and "line-too-long" in out and "a line of 100663302 bytes" in out
        if args == ["events", "--json"]:
            assert code == 0 and [line[:40] for line in out.splitlines()] == [
                '{"index": 0, "type": "message", "data": ', '{"index": 1, "type": "message", "data": '
            ]
            assert '"data": "first"' in out and '"data": "last"' in out


def test_one_huge_event_of_short_lines_keeps_memory_flat(tmp_path: Path) -> None:
    """An event of 128 MiB of data lines, each of them short, sent as it is between two events: no line is over
    the limit, but the event's data is; it is dropped once its data passes the limit (before: check and text
    436 MB, events --json 547 MB), the events around it read."""
    line = b"data: " + b"x" * 1000 + b"\n"
    body = b"data: first\n\n" + line * (128 * MiB // len(line)) + b"\ndata: last\n\n"
    path = write_capture(tmp_path / "event.sse", body, None, piece=MiB)
    del body
    for args in (["check"], ["events", "--json"], ["text"]):
        code, out, err, peak = measured(*args, path, keep_output=True)
        assert peak < BOUND, f"{args}: {peak / 1e6:.0f} MB"
        assert "Traceback" not in err, err
        if args == ["check"]:
            assert code == 1 and "event-too-long" in out and "from byte 13" in out
        if args == ["events", "--json"]:
            assert code == 0 and [json.loads(line)["data"] for line in out.splitlines()] == ["first", "last"]
        if args == ["text"]:
            assert code == 0


def test_a_big_har_is_imported_a_line_at_a_time(tmp_path: Path) -> None:
    """A HAR whose 16 MiB event stream is control characters, each written \\u0001 in the HAR and in the capture:
    the capture (as big as the HAR) is written a line at a time, never built and encoded whole (before: 373 MB
    for this 100 MB HAR; the reading itself takes about twice the HAR)."""
    body = ("data: " + "\x01" * 1000 + "\n\n") * (16 * MiB // 1008)
    entry = {
        "startedDateTime": "2026-01-01T00:00:00Z", "time": 1, "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0},
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions", "httpVersion": "HTTP/1.1",
                    "headers": [], "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [], "redirectURL": "",
                     "headers": [{"name": "Content-Type", "value": "text/event-stream"}], "headersSize": -1,
                     "bodySize": len(body), "content": {"size": len(body), "mimeType": "text/event-stream", "text": body}},
    }  # fmt: skip
    har = tmp_path / "big.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "tests", "version": "1"}, "entries": [entry]}}))
    del body, entry
    size = har.stat().st_size
    code, _, err, peak = measured("import", har, "-o", tmp_path / "big.sse")
    assert code == 0 and "Traceback" not in err, err
    assert peak < 50 * MiB + 2.6 * size, f"{peak / 1e6:.0f} MB for a {size / 1e6:.0f} MB HAR"
    with open(tmp_path / "big.sse", encoding="utf-8") as f:
        assert json.loads(f.readline())["format"] == "sse-capture/1"
        assert sum(len(json.loads(line).get("text", "")) for line in f) >= 16 * MiB - 1008


def _chat_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": [choice]}).encode() + b"\n\n"


def test_a_huge_tool_call_argument_is_written_in_pieces(tmp_path: Path) -> None:
    """A 64 MiB tool-call argument: `text` and `text --json` write the answer a piece at a time, never joined into
    one string and copied (before, for 100 MiB: text 340 MB, text --json 547 MB; the analysis alone is about
    twice the argument), and write it exactly."""
    path = tmp_path / "tool.sse"
    piece = "x" * 65536
    with open(path, "w", encoding="utf-8") as f:
        f.write(header_line(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                            response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.1),
                            recorded_at=None, recorder="tests"))  # fmt: skip
        first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": "'}}
        f.write(chunk_line(0.2, _chat_chunk({"role": "assistant", "tool_calls": [first]})))
        more = chunk_line(0.3, _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        f.write(more * 1024)
        f.write(chunk_line(0.4, _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]})))
        f.write(chunk_line(0.5, _chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n") + end_line("complete", 1.5))
    size = 64 * MiB + 9
    code, out, err, peak = measured("text", path, keep_output=True)
    assert code == 0 and "Traceback" not in err, err
    assert out == '[tool call] f {"a": "' + "x" * (64 * MiB) + '"}\n'
    assert peak < 50 * MiB + 2.5 * size, f"text: {peak / 1e6:.0f} MB"
    code, out, err, peak = measured("text", "--json", path, keep_output=True)
    assert code == 0 and "Traceback" not in err, err
    (call,) = json.loads(out)["tool_calls"]
    # past ARGUMENTS_CHECKED (16 Mi characters) the arguments are not parsed: not told (null), not "invalid"
    assert (call["name"], len(call["arguments"]), call["arguments_valid_json"]) == ("f", size, None)
    assert peak < 50 * MiB + 3.8 * size, f"text --json: {peak / 1e6:.0f} MB"
