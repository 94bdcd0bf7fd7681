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

from sse_inspect import Capture, Chunk, End, Request, Response, dump_capture
from sse_inspect.cli import cli

from .helpers import ROOT

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
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", "replay", str(path)], stdin=follower,
                            stdout=follower, stderr=follower, env=env, close_fds=True)  # fmt: skip
    os.close(follower)
    out = b""
    deadline = time.monotonic() + 20
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
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
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
