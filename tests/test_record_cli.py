"""End to end: the `sse-inspect fetch` and `sse-inspect record` commands against the scripted loopback
server (`tests/sse_server.py`).

`fetch` runs in-process through click's runner (it is an httpx client and nothing more); `record`
runs as a real subprocess, as a user starts it, and is stopped with SIGINT, as by Ctrl-C. Each test
checks what the user sees (exit code, stdout and stderr apart) and what lands on disk.
Loopback only; every wait is bounded (client and `--timeout` reads, server gates, process start and stop).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

pytest.importorskip("httpx", reason="fetch and record need httpx (the [record] extra)")

from sse_inspect import Capture, load_capture  # noqa: E402
from sse_inspect.cli import cli  # noqa: E402

from .helpers import (
    ROOT,  # noqa: E402
    free_port,
)
from .recording_fixtures import Proxy, _wait_listening, chat_events  # noqa: E402
from .sse_server import Ending, Script, SSEServer, Write  # noqa: E402

PATH = "/v1/chat/completions"




def finished(capture: Capture) -> str:
    """The capture's end kind (it must have one)."""
    assert capture.end is not None, capture
    return capture.end.kind


# -- fetch ----------------------------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str


def fetch(*args: str) -> Run:
    """`sse-inspect fetch --timeout 5 ARGS...` in-process; stdout and stderr apart. COLUMNS is unset,
    so the output is what a pipe or a log file gets, whatever the terminal running the tests."""
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, ["fetch", "--timeout", "5", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def test_fetch_records_the_exact_stream_on_the_servers_schedule(tmp_path: Path, server: SSEServer) -> None:
    """`sse-inspect fetch URL`, the curl -N of recording, on a model generating a token every 300 ms:
    the capture holds every chunk as sent, timed from the request (the server's clock is the same
    monotonic clock), and the command shows the analysis of what it recorded. The margins (half a
    gap) are room for a busy machine, where a thread can wait that long for a core."""
    events = chat_events("one", "two", "three")
    server.routes[PATH] = Script.events(*events, interval=0.3)
    directory = tmp_path / "caps"

    before = time.monotonic()
    run = fetch(server.url(PATH), "--dir", str(directory))

    assert run.code == 0, run.err
    [path] = directory.glob("*.jsonl")
    capture = load_capture(path)
    assert [c.data for c in capture.chunks] == events
    assert finished(capture) == "complete"
    assert capture.request is not None and capture.response is not None
    assert (capture.request.method, capture.request.url, capture.request.body) == ("GET", server.url(PATH), None)
    assert (capture.response.status, capture.response.header("content-type")) == (200, "text/event-stream")
    times = [c.t for c in capture.chunks if c.t is not None]
    assert len(times) == len(events)
    assert all(a < b for a, b in pairwise(times)), times
    sent = server.request(PATH).sent
    for t, s in zip(times, sent, strict=True):
        # the request went out after `before` and before the first write, so t lies in between
        assert s - sent[0] - 0.15 <= t <= s - before + 0.15, (times, sent)
    for (t0, t1), (s0, s1) in zip(pairwise(times), pairwise(sent)):
        assert abs((t1 - t0) - (s1 - s0)) < 0.15, (times, sent)
    assert "✔ COMPLETE openai-chat" in run.out
    assert "capture written to" in run.err


def test_fetch_redacts_secrets(tmp_path: Path, server: SSEServer) -> None:
    """A key given with -H (OpenAI's Authorization, Anthropic's x-api-key) or in the URL (Gemini's
    `?key=`) reaches the server but never the capture, which is made to be shared in a bug report."""
    server.routes[PATH] = Script.events(*chat_events("hi"))
    output = tmp_path / "cap.jsonl"
    url = server.url(PATH) + "?key=AIzaFETCH-SECRET&alt=sse"

    run = fetch(url, "-H", "Authorization: Bearer sk-FETCH-SECRET", "-H", "x-api-key: k-FETCH-SECRET",
                "-H", "X-Trace: trace-7", "-o", str(output), "-q")  # fmt: skip

    assert run.code == 0, run.err
    served = server.request(PATH)
    assert ("Authorization", "Bearer sk-FETCH-SECRET") in served.headers
    assert ("x-api-key", "k-FETCH-SECRET") in served.headers
    assert "key=AIzaFETCH-SECRET" in served.target
    assert "FETCH-SECRET" not in output.read_text()
    capture = load_capture(output)
    assert capture.request is not None
    assert capture.request.header("authorization") == capture.request.header("x-api-key") == "[REDACTED]"
    assert capture.request.header("x-trace") == "trace-7"
    assert parse_qs(urlsplit(capture.request.url).query) == {"key": ["[REDACTED]"], "alt": ["sse"]}


@pytest.mark.parametrize("from_file", [False, True], ids=["inline", "at-file"])
def test_fetch_data_makes_a_post(tmp_path: Path, server: SSEServer, from_file: bool) -> None:
    """A chat completion needs a POST with a JSON prompt: `-d BODY` (or `-d @FILE`) sends it as
    a POST, and the capture stores it (the prompt is part of what is being debugged)."""
    server.routes[PATH] = Script.events(*chat_events("hi"))
    prompt = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]})
    prompt_file = tmp_path / "prompt.json"
    prompt_file.write_text(prompt)
    output = tmp_path / "cap.jsonl"

    data = f"@{prompt_file}" if from_file else prompt
    run = fetch(server.url(PATH), "-d", data, "-H", "Content-Type: application/json", "-o", str(output), "-q")

    assert run.code == 0, run.err
    served = server.request(PATH)
    assert (served.method, served.body) == ("POST", prompt.encode())
    capture = load_capture(output)
    assert capture.request is not None
    assert (capture.request.method, capture.request.body) == ("POST", prompt)
    assert capture.request.header("content-type") == "application/json"


def test_fetch_output_file_and_quiet(tmp_path: Path, server: SSEServer) -> None:
    """In a script: `-o FILE` writes exactly there (its folder created, `--dir` left alone) and `-q`
    prints only the path on stdout, nothing on stderr, so `$(sse-inspect fetch -q ...)` is the file."""
    events = chat_events("a", "b")
    server.routes[PATH] = Script.events(*events)
    output = tmp_path / "new" / "folder" / "answer.jsonl"
    unused = tmp_path / "unused"

    run = fetch(server.url(PATH), "-o", str(output), "--dir", str(unused), "-q")

    assert run.code == 0, run.err
    assert (run.out, run.err) == (f"{output}\n", "")
    assert load_capture(output).body == b"".join(events)
    assert not unused.exists()


@pytest.mark.parametrize("ending", ["reset", "truncate"])
def test_fetch_server_disconnect_keeps_the_capture(tmp_path: Path, server: SSEServer, ending: Ending) -> None:
    """The server crashes (reset) or a load balancer cuts the connection (no chunked terminator)
    mid-answer: that is what fetch is for, so it exits 0, keeps what came, ends the capture
    "server-disconnected" and shows the missing end marker."""
    events = chat_events("Hel", "lo")[:2]
    server.routes[PATH] = Script([Write(e, delay=0.01) for e in events], ending=ending)
    output = tmp_path / "cap.jsonl"

    run = fetch(server.url(PATH), "-o", str(output))

    assert run.code == 0, run.err
    capture = load_capture(output)
    assert [c.data for c in capture.chunks] == events
    assert finished(capture) == "server-disconnected"
    assert "✘ NO END MARKER" in run.out
    assert server.request(PATH).outcome == ending


def test_fetch_connection_refused_is_one_line(tmp_path: Path) -> None:
    """Nothing listens at the URL (the local model server is not started): exit 2, one "Error:"
    line on stderr with the key in the URL redacted, no traceback, no capture file."""
    url = f"http://127.0.0.1:{free_port()}{PATH}?key=AIzaREFUSED-SECRET"

    run = fetch(url, "--dir", str(tmp_path / "caps"))

    assert run.code == 2
    [line] = run.err.splitlines()
    assert line.startswith("Error: GET http://127.0.0.1:"), line
    assert "REFUSED-SECRET" not in line
    assert run.out == ""
    assert not (tmp_path / "caps").exists()


def test_fetch_malformed_header_is_usage_error(tmp_path: Path, server: SSEServer) -> None:
    """`-H noval` (a header without a colon, a shell quoting slip): exit 2 before any request."""
    server.routes[PATH] = Script.events(*chat_events("hi"))

    run = fetch(server.url(PATH), "-H", "noval", "--dir", str(tmp_path / "caps"))

    assert run.code == 2
    assert "'noval' is not 'NAME: VALUE'" in run.err
    assert "Traceback" not in run.err
    assert server.served == []
    assert not (tmp_path / "caps").exists()


def test_fetch_final_line_names_the_whole_path(tmp_path: Path, server: SSEServer) -> None:
    """Output piped to a log (CI, `2>log`): "capture written to PATH" must hold the path whole on
    one line, whatever its length, so it can be found and copied."""
    server.routes[PATH] = Script.events(*chat_events("hi"))
    output = tmp_path / ("a-long-folder-name-as-in-any-ci-workspace" * 2) / "cap.jsonl"

    run = fetch(server.url(PATH), "-o", str(output))

    assert run.code == 0, run.err
    assert f"capture written to {output}" in run.err.splitlines()



def test_fetch_progress_does_not_pile_up(tmp_path: Path, server: SSEServer) -> None:
    """A long answer (here 40 chunks) fetched with stderr in a CI log: the progress must not become one
    line with a note per chunk (on a terminal the same line would grow instead of being rewritten)."""
    server.routes[PATH] = Script.events(*chat_events(*(f"w{i}" for i in range(39))))

    run = fetch(server.url(PATH), "-o", str(tmp_path / "cap.jsonl"))

    assert run.code == 0, run.err
    notes = [len(re.findall(r"\d\.\d{3} s  \+\d+ B", line)) for line in run.err.splitlines()]
    assert max(notes) <= 1, run.err

# -- record ---------------------------------------------------------------------------------

ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")},
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}
"""The subprocesses' environment: this checkout's sse_inspect first on the path, and no COLUMNS or
FORCE_COLOR, so they print what a pipe or a log file gets, whatever terminal runs the tests."""


def record_command(tmp_path: Path, port: int, *args: str) -> list[str]:
    """`sse-inspect record` on 127.0.0.1:`port`, capturing into `tmp_path`/caps, its CA in `tmp_path`/conf."""
    return [sys.executable, "-m", "sse_inspect", "record", "--listen", f"127.0.0.1:{port}",
            "-o", str(tmp_path / "caps"), "--confdir", str(tmp_path / "conf"), *args]  # fmt: skip


@dataclass
class Recorder(Proxy):
    """A running `sse-inspect record`: a `Proxy` whose log is its stderr, with its stdout apart."""

    out_path: Path

    def out(self) -> str:
        return self.out_path.read_text(errors="replace")


StartRecord = Callable[..., Recorder]


@pytest.fixture
def start_record(tmp_path: Path) -> Iterator[StartRecord]:
    """Factory: `start_record(*args, upstream=None) -> Recorder`, listening once it returns; stopped
    with SIGINT (then killed) at teardown, like `start_proxy`."""
    pytest.importorskip("mitmproxy", reason="record needs mitmproxy (the [record] extra)")
    started: list[Recorder] = []

    def start(*args: str, upstream: str | None = None) -> Recorder:
        port = free_port()
        argv = record_command(tmp_path, port, *args, *(["--upstream", upstream] if upstream else []))
        out_path, err_path = tmp_path / f"record-{len(started)}.out", tmp_path / f"record-{len(started)}.err"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=ENV, cwd=tmp_path)
        mode = f"reverse:{upstream}" if upstream else "regular"
        recorder = Recorder(mode, port, tmp_path / "caps", err_path, process, out_path)
        started.append(recorder)
        _wait_listening(recorder, timeout=20.0)
        return recorder

    yield start

    for recorder in started:
        recorder.stop()
        print(f"--- sse-inspect record, exit {recorder.process.returncode} ---\n{recorder.out()}\n{recorder.log()}")


def record_fails(tmp_path: Path, port: int, *args: str) -> str:
    """Run `sse-inspect record` that must fail at start: exit 2, one line on stderr (returned)."""
    pytest.importorskip("mitmproxy", reason="record needs mitmproxy (the [record] extra)")
    done = subprocess.run(record_command(tmp_path, port, *args), stdin=subprocess.DEVNULL, capture_output=True,
                          env=ENV, cwd=tmp_path, timeout=20)  # fmt: skip
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 2, err
    [line] = err.splitlines()
    return line


def test_record_reverse_mode_two_streams(start_record: StartRecord, server: SSEServer) -> None:
    """`sse-inspect record --upstream URL`, an SDK pointed at it with its base URL, two streamed calls,
    then Ctrl-C: the client gets every byte, each stream gets a "●" line when it starts and a
    "complete:" line when it ends, the banner and the goodbye go to stderr, exit 0, two exact captures."""
    bodies = {PATH: chat_events("Hel", "lo"), "/v1/messages": [b"event: message_stop\ndata: {}\n\n"]}
    for path, events in bodies.items():
        server.routes[path] = Script.events(*events, interval=0.02)
    recorder = start_record(upstream=server.url(""))

    with recorder.client() as client:
        for path, events in bodies.items():
            with client.stream("POST", recorder.target(server.url(path)), content=b"{}") as response:
                assert b"".join(response.iter_raw()) == b"".join(events)
    captures = recorder.captures(2)
    assert recorder.stop() == 0, recorder.log()

    by_path = {urlsplit(c.request.url).path: c for c in captures if c.request is not None}
    assert set(by_path) == set(bodies)
    for path, events in bodies.items():
        capture = by_path[path]
        assert capture.request is not None and capture.request.url == server.url(path)
        assert [c.data for c in capture.chunks] == events, path
        assert finished(capture) == "complete"
    lines = recorder.out().splitlines()
    starts = [line for line in lines if line.startswith("●")]
    ends = [line for line in lines if line.startswith("  complete: ")]
    assert [s.split()[1] for s in starts] == [server.url(p) for p in bodies], lines
    assert [e.split(",")[0] for e in ends] == [f"  complete: {len(events)} chunks" for events in bodies.values()], lines
    err = recorder.log()
    assert f"recording proxy at {recorder.url} → {server.url('')}" in err.splitlines()
    assert err.splitlines()[-1] == "stopped; every capture is closed"


def test_record_regular_mode(start_record: StartRecord, server: SSEServer) -> None:
    """Without --upstream, a regular proxy (the client sets HTTPS_PROXY): the banner says how to
    point a client at it and where mitmproxy's CA is, and a plain-http stream through it is recorded."""
    events = chat_events("Hel", "lo")
    server.routes[PATH] = Script.events(*events)
    recorder = start_record()

    with recorder.client() as client, client.stream("GET", server.url(PATH)) as response:
        assert b"".join(response.iter_raw()) == b"".join(events)
    [capture] = recorder.captures(1)
    assert recorder.stop() == 0, recorder.log()

    assert capture.request is not None and capture.request.url == server.url(PATH)
    assert [c.data for c in capture.chunks] == events
    assert finished(capture) == "complete"
    err = recorder.log()
    assert f"recording HTTP(S) proxy at {recorder.url}" in err
    assert f"export HTTPS_PROXY={recorder.url} HTTP_PROXY={recorder.url}" in err
    assert "mitmproxy-ca-cert.pem" in err
    assert (recorder.confdir / "mitmproxy-ca-cert.pem").is_file()
    starts = [line.split()[:2] for line in recorder.out().splitlines() if line.startswith("●")]
    assert starts == [["●", server.url(PATH)]]


def test_record_lines_name_the_whole_capture_path(start_record: StartRecord, server: SSEServer) -> None:
    """`sse-inspect record > record.log` (or under a process manager): every start and end line names
    its capture file whole, and the banner names the CA file whole, so a log can be grepped for them."""
    server.routes[PATH] = Script.events(*chat_events("hi"))
    recorder = start_record()

    with recorder.client() as client:
        client.get(server.url(PATH)).raise_for_status()
    [capture] = recorder.captures(1)
    assert recorder.stop() == 0, recorder.log()

    lines = recorder.out().splitlines()
    assert len(lines) == 2, lines
    assert all(line.endswith(str(capture.path)) for line in lines), lines
    ca = recorder.confdir / "mitmproxy-ca-cert.pem"
    assert any(line.endswith(f"trust {ca}") for line in recorder.log().splitlines())


@pytest.mark.e2e  # starts `sse-inspect record`
def test_record_port_in_use(tmp_path: Path) -> None:
    """Another proxy already holds the port (a forgotten mitmdump, a second `record`): exit 2 with
    one line, not mitmproxy's startup error and exit 1."""
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        line = record_fails(tmp_path, port)
    assert line.startswith(f"Error: cannot listen on 127.0.0.1:{port}"), line


@pytest.mark.e2e  # starts `sse-inspect record`
def test_record_bad_filter(tmp_path: Path) -> None:
    """A typo in `--filter` (an unbalanced parenthesis): exit 2 with one line naming the expression,
    before anything listens."""
    line = record_fails(tmp_path, free_port(), "--filter", "~q ((")
    assert line.startswith("Error:") and "~q ((" in line, line


@pytest.mark.e2e  # starts `sse-inspect record`
def test_record_bad_upstream(tmp_path: Path) -> None:
    """A typo in `--upstream` (a scheme mitmproxy cannot reverse-proxy to): exit 2 with one line
    naming the problem, as for every other bad option."""
    line = record_fails(tmp_path, free_port(), "--upstream", "htps://api.openai.com")
    assert line.startswith("Error:") and "htps" in line, line

