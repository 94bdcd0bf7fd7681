"""`sse-inspect replay` and `sse-inspect serve` as a user runs them."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from sse_inspect import Capture, Chunk, End, Request, Response, dump_capture, load_capture
from sse_inspect.cli import cli
from sse_inspect.server import ReplayServerThread

from .helpers import INTERRUPTED, ROOT, ctrl_c, running

CAPTURE = ROOT / "captures" / "openai-chat-text.jsonl"


def paced_capture(tmp_path: Path, text: bytes = b"Hello", pause: float = 0.0) -> Path:
    """Five tokens 40 ms apart, as a model streams them; `[DONE]` `pause` s later than 0.3 s in."""
    tokens = [text[i : i + 1] for i in range(len(text))]
    chunks = tuple(
        Chunk(0.05 + 0.04 * i, b'data: {"choices":[{"index":0,"delta":{"content":"' + tok + b'"}}]}\n\n')
        for i, tok in enumerate(tokens)
    ) + (Chunk(0.3 + pause, b"data: [DONE]\n\n"),)
    capture = Capture(chunks=chunks, request=Request(method="POST", url="http://api.test/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.04),
                      end=End(kind="complete", t=0.31 + pause))  # fmt: skip
    path = tmp_path / "paced.jsonl"
    path.write_text(dump_capture(capture))
    return path


def test_replay_piped_prints_the_answer() -> None:
    result = CliRunner().invoke(cli, ["replay", "--instant", str(CAPTURE)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "The capital of the UK is London.\n"


def test_replay_keeps_the_timing(tmp_path: Path) -> None:
    """`replay` waits as the model did, and `--speed` divides the waits. With a 1 s pause before
    `[DONE]` (1.3 s in): the original timing takes at least that long, `--speed 10` at least a
    tenth of it and clearly less than the original (the 1.1 s it saves, with a 0.6 s margin for a
    busy machine, not a bound of milliseconds)."""
    path = paced_capture(tmp_path, pause=1.0)

    def replay(*args: str) -> tuple[str, float]:
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["replay", *args, str(path)])
        assert result.exit_code == 0, result.stderr
        return result.stdout, time.monotonic() - started

    (original, t_original), (fast, t_fast) = replay(), replay("--speed", "10")
    assert original == fast == "Hello\n"
    assert t_original >= 1.25, t_original
    assert t_fast >= 0.125, t_fast
    assert t_fast < t_original - 0.6, (t_fast, t_original)


def test_replay_events_and_raw(tmp_path: Path) -> None:
    path = paced_capture(tmp_path, b"Hi\x1b")
    events = CliRunner().invoke(cli, ["replay", "--instant", "--events", str(path)]).stdout
    assert events.count("message") == 4 and "[DONE]" in events
    raw = CliRunner().invoke(cli, ["replay", "--instant", "--raw", "--rechunk", "bytes:40", str(path)]).stdout
    assert "\\n\\n" in raw and "\x1b" not in raw and "\\x1b" in raw
    assert raw.splitlines()[0].split()[2] == "40"


def test_replay_in_a_real_terminal(tmp_path: Path) -> None:
    """Under a pseudo-terminal: the live view draws the answer and a status line with the event count."""
    path = paced_capture(tmp_path)
    code, text = replay_in_a_pty(path, columns=100)
    assert code == 0, text
    assert "Hello" in text and "6/6 events" in text and "\x1b[" in text


@pytest.mark.e2e  # starts `sse-inspect serve`
def test_serve_prints_its_url_serves_and_stops(tmp_path: Path) -> None:
    path = paced_capture(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", "serve", str(path), "--port", "0", "--instant"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
        url = first.split(" at ")[1].split()[0]
        body = httpx.post(url + "/v1/chat/completions", json={"stream": True}, timeout=5).content
        assert body.endswith(b"data: [DONE]\n\n") and b'"H"' in body
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "stopped after 1 replay(s)" in err.decode()


@pytest.mark.e2e  # starts `sse-inspect serve`
def test_serve_warns_off_loopback_and_refuses_a_taken_port(tmp_path: Path) -> None:
    path = paced_capture(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", "serve", str(path), "--host", "0.0.0.0", "--port", "0"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        assert proc.stderr is not None
        assert "warning: listening on 0.0.0.0" in proc.stderr.readline().decode()
        port = proc.stderr.readline().decode().split(":")[2].split()[0]
        taken = CliRunner().invoke(cli, ["serve", str(path), "--port", port, "--host", "0.0.0.0"])
        assert taken.exit_code == 2 and "cannot listen on" in taken.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)


def cut_capture(tmp_path: Path, end: End | None, name: str = "cut.jsonl") -> Path:
    """Two tokens in the first 0.1 s, then silence until the recording's `end` (None: no end line)."""
    chunks = tuple(Chunk(0.05 * (i + 1), b'data: {"choices":[{"index":0,"delta":{"content":"' + tok + b'"}}]}\n\n')
                   for i, tok in enumerate((b"He", b"llo")))  # fmt: skip
    capture = Capture(chunks=chunks, request=Request(method="POST", url="http://api.test/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.04), end=end)  # fmt: skip
    path = tmp_path / name
    path.write_text(dump_capture(capture))
    return path


CUT = End(kind="server-disconnected", t=1.2, error="peer closed connection without sending complete message body")


def test_replay_of_a_cut_stream_plays_the_silence_then_says_it_was_cut(tmp_path: Path) -> None:
    """The last chunk came at 0.1 s, the server cut the stream at 1.2 s: replay used to stop at 0.1 s
    and say nothing. It waits until the cut (a lower bound, so it holds on a busy machine), then one
    line on stderr says how the stream ended; exit 0: replay plays, `check` judges."""
    path = cut_capture(tmp_path, CUT)
    for args in ([], ["--events"], ["--raw"]):
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["replay", *args, str(path)])
        elapsed = time.monotonic() - started
        assert result.exit_code == 0, result.stderr
        assert elapsed >= 1.2, (args, elapsed)
        assert result.stderr == (
            "the stream was cut at 1.200 s: the server, or a hop on the way, closed the connection before its end "
            "(peer closed connection without sending complete message body)\n"
        ), args
    assert CliRunner().invoke(cli, ["replay", str(path)]).stdout == "Hello\n"
    fast = CliRunner().invoke(cli, ["replay", "--speed", "10", str(path)])
    instant = CliRunner().invoke(cli, ["replay", "--instant", str(path)])
    assert fast.stderr == instant.stderr == result.stderr


def test_replay_says_how_every_unclean_recording_ended(tmp_path: Path) -> None:
    """Each end kind of the format in words, on stderr; a complete stream adds nothing."""
    said = {
        "client-disconnected": "the client left at 0.300 s, before the stream ended (interrupted (Ctrl-C))",
        "error": "the stream failed at 0.300 s (proxy shut down while the stream was open)",
        None: "the recording stops here: it was cut off (no end line), so how the stream ended is unknown",
    }
    for kind, line in said.items():
        error = "interrupted (Ctrl-C)" if kind == "client-disconnected" else "proxy shut down while the stream was open"
        end = None if kind is None else End(kind=kind, t=0.3, error=error)
        result = CliRunner().invoke(cli, ["replay", "--instant", str(cut_capture(tmp_path, end))])
        assert (result.exit_code, result.stdout, result.stderr) == (0, "Hello\n", line + "\n"), kind
    complete = CliRunner().invoke(cli, ["replay", "--instant", str(paced_capture(tmp_path))])
    assert (complete.exit_code, complete.stderr) == (0, "")


def test_replay_live_view_ends_on_the_cut(tmp_path: Path) -> None:
    """Under a pseudo-terminal the status line's last state names how the stream ended."""
    path = cut_capture(tmp_path, End(kind="server-disconnected", t=0.4, error="reset"))
    code, text = replay_in_a_pty(path, columns=120)
    assert code == 0, text
    assert "t=0.400 s · 2/2 events" in text and "server-disconnected" in text, text
    assert "the stream was cut at 0.400 s" in text


def replay_in_a_pty(path: Path, columns: int) -> tuple[int, str]:
    """`sse-inspect replay PATH` under a pseudo-terminal this wide: its exit code and all it drew."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "30", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", "replay", str(path)], stdin=follower,
                            stdout=follower, stderr=follower, env=env, close_fds=True)  # fmt: skip
    os.close(follower)
    text = read_pty(leader, proc)
    return proc.returncode, text


def read_pty(leader: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> str:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            break
    proc.wait(timeout=5)
    os.close(leader)
    return out.decode(errors="replace")


@pytest.mark.e2e
def test_replay_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    """Ctrl-C during the silence before a cut: `interrupted` and exit 130, not "Aborted!" and 1 (the
    code `check` and `diff` use for "found something"). Sent once the first event is on screen."""
    path = cut_capture(tmp_path, End(kind="server-disconnected", t=60.0))
    argv = [sys.executable, "-m", "sse_inspect", "replay", "--events", str(path)]
    with running(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "200"}) as proc:
        assert proc.stdout is not None
        assert "#0" in proc.stdout.readline().decode()
        _, err = ctrl_c(proc)
    assert proc.returncode in INTERRUPTED and err.decode() == "interrupted\n"


def test_serve_keeps_the_silence_before_a_cut(tmp_path: Path) -> None:
    """`serve` resets a cut stream at the recorded time of the cut, not right after its last chunk:
    the reset comes at least 1.2 s after the request (0.3 s at --speed 4), after both chunks."""
    capture = load_capture(cut_capture(tmp_path, CUT))
    for speed in (1.0, 4.0):
        with ReplayServerThread([capture], speed=speed) as server:
            started = time.monotonic()
            arrivals = []
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                with httpx.stream("GET", server.url + "/v1/chat/completions", timeout=10) as r:
                    for _ in r.iter_raw():
                        arrivals.append(time.monotonic() - started)
            cut = time.monotonic() - started
        assert len(arrivals) == 2 and arrivals[-1] < cut
        assert cut >= 1.2 / speed, (speed, cut)  # the request went out before the server's clock started
