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
import threading
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

from .helpers import (  # noqa: E402
    INTERRUPTED,
    ROOT,
    ctrl_c,
    free_port,
    running,
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
    ends = [line for line in lines if re.match(r"  #\d+ complete: ", line)]
    assert [s.split()[1:4] for s in starts] == [[f"#{n}", "POST", server.url(p)] for n, p in enumerate(bodies, 1)], lines
    assert [e.split(",")[0] for e in ends] == [f"  #{n} complete: {len(events)} chunk{'s' if len(events) > 1 else ''}"
                                              for n, events in enumerate(bodies.values(), 1)], lines  # fmt: skip
    assert all(" · OK: " in e for e in ends), ends  # each with the verdict `show` gives its capture
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
    starts = [line.split()[:4] for line in recorder.out().splitlines() if line.startswith("●")]
    assert starts == [["●", "#1", "GET", server.url(PATH)]]


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
def test_record_output_that_cannot_be_a_folder(tmp_path: Path) -> None:
    """`-o` below a file (a typo, a stale path): exit 2 with one line when the proxy starts, not a
    warning per stream once traffic flows."""
    (tmp_path / "taken").write_text("a file")
    folder = tmp_path / "taken" / "captures"
    line = record_fails(tmp_path, free_port(), "-o", str(folder))
    assert line == f"Error: sse_capture_dir: {folder} cannot be made: {folder.parent} is a file, not a folder", line


@pytest.mark.e2e  # starts `sse-inspect record`
def test_record_bad_upstream(tmp_path: Path) -> None:
    """A typo in `--upstream` (a scheme mitmproxy cannot reverse-proxy to): exit 2 with one line
    naming the problem, as for every other bad option."""
    line = record_fails(tmp_path, free_port(), "--upstream", "htps://api.openai.com")
    assert line.startswith("Error:") and "htps" in line, line



# -- fetch: its clock, its own timeout, Ctrl-C, what it needs ---------------------------------------


def test_fetch_clock_starts_when_the_request_is_sent(tmp_path: Path, server: SSEServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Times count from the request going out, not from before the client was built (loading the CA
    bundle took 40-90 ms, all of it added to the time to first byte). The clock's origin, read back
    from a chunk's t and the moment it arrived, lies after the client was built and before the
    server sent the first byte: an ordering, whatever the machine's load."""
    import httpx

    from sse_inspect.fetch import fetch as fetch_capture

    server.routes[PATH] = Script.events(*chat_events("a"))
    built: list[float] = []
    real_init = httpx.Client.__init__

    def init(self: httpx.Client, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        built.append(time.monotonic())

    monkeypatch.setattr(httpx.Client, "__init__", init)
    origins: list[float] = []

    def on_chunk(t: float, data: bytes) -> None:
        origins.append(time.monotonic() - t)

    path = fetch_capture(server.url(PATH), directory=tmp_path, on_chunk=on_chunk, timeout=5)

    [built_at] = built
    first_sent = server.request(PATH).sent[0]
    assert origins and all(built_at <= origin <= first_sent for origin in origins), (built_at, origins, first_sent)
    capture = load_capture(path)
    assert capture.response is not None and capture.response.t is not None
    assert built_at <= origins[0] + capture.response.t, "the headers came after the clock started"


def test_fetch_own_timeout_is_said_plainly_and_exits_124(tmp_path: Path, server: SSEServer) -> None:
    """The server sends one event and then nothing (the next write waits for a gate never opened):
    fetch's --timeout fires. Not a server cut: it says what timed out and after how long, exits 124,
    shows what it got, and the capture's end says fetch gave up (client-disconnected), at least
    --timeout after the last chunk."""
    first = chat_events("Hel")[0]
    server.routes[PATH] = Script([Write(first), Write(b"data: [DONE]\n\n", gate=threading.Event())])
    output = tmp_path / "cap.jsonl"

    argv = ["fetch", "--timeout", "0.5", server.url(PATH), "-o", str(output)]
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, argv)

    assert result.exit_code == 124, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("Error: timed out: the server sent nothing for 0.5 s after chunk 1 (at "), last
    assert "fetch's --timeout 0.5 s fired" in last and "the server had not ended the stream" in last
    assert f"capture written to {output}" in result.stderr
    assert "server-disconnected" not in result.stdout and "cut mid-stream" not in result.stdout
    assert "recording client-disconnected: fetch's --timeout 0.5 s" in result.stdout
    capture = load_capture(output)
    assert [c.data for c in capture.chunks] == [first]
    assert capture.end is not None and capture.end.kind == "client-disconnected"
    assert capture.end.error is not None and capture.end.error.startswith("fetch's --timeout 0.5 s: no byte for ")
    assert capture.end.t is not None and capture.chunks[0].t is not None
    assert capture.end.t - capture.chunks[0].t >= 0.5
    server.request(PATH).wait()
    assert server.request(PATH).outcome == "client-gone", "fetch closed the connection"


def test_fetch_timeout_before_the_response_writes_no_capture(tmp_path: Path) -> None:
    """A server that accepts the connection and never answers: "no response headers after 0.3 s",
    exit 124, no capture."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}{PATH}"
        run = fetch(url, "--timeout", "0.3", "--dir", str(tmp_path / "caps"))
    assert run.code == 124, run.err
    [line] = run.err.splitlines()
    assert line == (f"Error: timed out: GET {url}: no response headers after 0.3 s (fetch's --timeout 0.3 s); "
                    "no capture written")
    assert not (tmp_path / "caps").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("quiet", [False, True])
def test_fetch_ctrl_c_keeps_the_capture_and_prints_its_path(tmp_path: Path, server: SSEServer, quiet: bool) -> None:
    """Ctrl-C on a fetch whose stream stalls: exit 130 (not click's "Aborted!" and 1), one line saying
    where the capture so far is (with -q its path on stdout too), and the capture holds the chunk
    received and an end line saying it was interrupted."""
    first = chat_events("Hel")[0]
    server.routes[PATH] = Script([Write(first), Write(b"data: [DONE]\n\n", gate=threading.Event())])
    output = tmp_path / "cap.jsonl"
    argv = [sys.executable, "-m", "sse_inspect", "fetch", server.url(PATH), "-o", str(output)] + (["-q"] if quiet else [])
    with running(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV) as process:
        wait_for(lambda: output.exists() and output.read_bytes().count(b"\n") >= 2, process, "the first chunk on disk")
        out, err = ctrl_c(process)
    assert process.returncode in INTERRUPTED, err
    assert err.decode() == f"interrupted; the capture so far (1 chunk, {len(first)} bytes) is in {output}\n"
    assert out.decode() == (f"{output}\n" if quiet else "")
    capture = load_capture(output)
    assert [c.data for c in capture.chunks] == [first]
    assert capture.end is not None
    assert (capture.end.kind, capture.end.error) == ("client-disconnected", "interrupted (Ctrl-C)")


def test_fetch_without_httpx_names_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch needs httpx and nothing else: say that, not "install mitmproxy and httpx"."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx now raises ImportError
    run = fetch("http://127.0.0.1:9/", "--dir", str(tmp_path))
    assert run.code == 2
    [line] = run.err.splitlines()
    assert line.startswith("Error: fetch needs httpx: pip install httpx"), line
    assert "mitmproxy and httpx" not in line


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[bytes], what: str, timeout: float = 20.0) -> None:
    """Poll `condition` until it holds; fail when `process` exits first or after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"exited {process.returncode} before {what}:\n{out.decode()}\n{err.decode()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.02)


@pytest.mark.e2e
def test_record_ctrl_c_with_a_stream_open_stops_cleanly(start_record: StartRecord, server: SSEServer) -> None:
    """Ctrl-C while a stream is open (its server silent after the first event): no asyncio traceback
    (Python 3.11 logged a CancelledError from `connection_made`), exit 0, the open capture gets its
    end line (`error`: the recording stopped, neither side ended the stream) after its chunk, and
    the line naming it says the recording stopped mid-stream."""
    first = chat_events("Hel")[0]
    server.routes[PATH] = Script([Write(first), Write(b"data: [DONE]\n\n", gate=threading.Event())])
    recorder = start_record(upstream=server.url(""))
    received: list[bytes] = []

    def client() -> None:
        try:
            with recorder.client() as c, c.stream("POST", recorder.target(server.url(PATH)), content=b"{}") as r:
                for data in r.iter_raw():
                    received.append(data)
        except Exception:  # noqa: BLE001  (the proxy going away cuts this stream: that is the point)
            pass

    reader = threading.Thread(target=client, daemon=True)
    reader.start()
    wait_for(lambda: len(recorder.capture_files()) == 1 and recorder.capture_files()[0].read_bytes().count(b"\n") >= 2,
             recorder.process, "the first chunk on disk")  # fmt: skip
    assert recorder.stop() == 0, recorder.log()
    reader.join(10)

    err = recorder.log()
    assert "Traceback" not in err and "CancelledError" not in err, err
    [capture] = recorder.captures(1)
    assert [c.data for c in capture.chunks] == [first] and received == [first]
    assert capture.end is not None and (capture.end.kind, capture.end.error) == (
        "error", "proxy shut down while the stream was open")  # fmt: skip
    assert capture.end.t is not None and capture.chunks[0].t is not None and capture.end.t >= capture.chunks[0].t
    [path] = recorder.capture_files()
    ends = [line for line in recorder.out().splitlines() if line.startswith("  #1 recording stopped mid-stream")]
    assert len(ends) == 1 and ends[0].endswith(f" · {path}"), recorder.out()
    assert err.splitlines()[-1].startswith("stopped; every capture is closed, 1 of them mid-stream")
