"""The replay server against hostile clients and hostile captures (issue 17, items 8 and 11): silent,
half-open and non-reading clients are dropped after their timeout, the connection cap answers 503,
a stuck client holds no copy of a big chunk, malformed requests get a 400, and a capture's status and
headers cannot break the response or inject a header. Every problem is one log line, never a traceback."""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, End, Request, Response
from sse_inspect._capture import chunk_line, end_line, header_line
from sse_inspect.server import Limits, ReplayServerThread

from .test_server import openai_capture

TIMEOUT = httpx.Timeout(10.0)
STATUS_LINE = re.compile(rb"HTTP/1\.1 (\d{3}) ")


def connect(server: ReplayServerThread) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server.port), timeout=10)


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset ends it too)."""
    data = bytearray()
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return bytes(data)


def exchange(server: ReplayServerThread, head: bytes) -> bytes:
    """Send `head`, say no more (half-close), and read the answer to the end."""
    with connect(server) as sock:
        sock.sendall(head)
        sock.shutdown(socket.SHUT_WR)
        return read_all(sock)


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed `sock` (EOF or reset); False while it is open and silent."""
    sock.setblocking(False)
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def wait_until(condition: object, what: str, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def lines() -> list[str]:
    return []


# -- item 8: timeouts, the cap, bounded writes -------------------------------------------------------


def test_silent_and_half_open_clients_are_dropped_after_the_request_timeout_while_real_requests_go_on(
    lines: list[str],
) -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None, limits=Limits(request_timeout=0.5), log=lines.append) as server:
        opened = time.monotonic()
        silent = [connect(server) for _ in range(10)]
        half = [connect(server) for _ in range(10)]
        for sock in half:
            sock.sendall(b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # never the blank line
        r = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
        assert r.content == capture.body, "a real client is answered while the others hang on"
        pending = silent + half
        while pending:
            pending = [s for s in pending if not closed_by_server(s)]
            assert time.monotonic() - opened < 20, f"{len(pending)} idle connections never dropped"
            time.sleep(0.02)
        dropped_after = time.monotonic() - opened
        wait_until(lambda: server.server.connections == 0, "the server still counts dropped connections")
        again = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
    assert dropped_after >= 0.5, "nobody is dropped before the header timeout"
    assert again.content == capture.body
    for sock in silent + half:
        sock.close()


def test_a_keep_alive_client_between_requests_has_the_request_timeout_too() -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None, limits=Limits(request_timeout=0.5)) as server:
        with connect(server) as sock:
            sock.sendall(b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n")
            got = read_all(sock)  # the answer, then the close once the client has said nothing more
        assert got.startswith(b"HTTP/1.1 200 OK") and got.endswith(b"0\r\n\r\n")
        assert capture.body.split(b"\n\n")[0] in got


def big_capture(size: int) -> Capture:
    return Capture(chunks=(Chunk(0.0, b"data: " + b"x" * size + b"\n\n"),), request=Request(url="http://h/big"),
                   end=End(kind="complete"))  # fmt: skip


def test_a_client_that_reads_nothing_is_dropped_after_the_idle_timeout(lines: list[str]) -> None:
    capture = big_capture(16 << 20)
    with ReplayServerThread([capture], speed=None, limits=Limits(idle_timeout=0.5), log=lines.append) as server:
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # or loopback buffers take megabytes
        stuck.connect(("127.0.0.1", server.server.port))
        stuck.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")  # then reads nothing
        wait_until(lambda: server.server.served == 1, "the stuck client's replay never started")
        wait_until(lambda: server.server.connections == 0, "a client that reads nothing is never dropped")
        got = read_all(stuck)  # what the socket buffers held, then the reset
        stuck.close()
        r = httpx.get(server.url + "/big", timeout=TIMEOUT)
    assert len(got) < len(capture.body), "the stuck client was cut off, not served to the end"
    assert r.content == capture.body, "a client that reads gets all 16 MiB"


def test_a_stalled_request_body_is_dropped_after_the_request_timeout() -> None:
    with ReplayServerThread([openai_capture()], speed=None, limits=Limits(request_timeout=0.5)) as server:
        with connect(server) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly this")
            assert read_all(sock) == b"", "dropped before any answer: the body never came"


def test_a_trickled_request_body_is_dropped_after_the_request_timeout() -> None:
    """A body sent a byte at a time never leaves a read idle: only the request's own deadline ends it, so a
    few such clients cannot hold every connection slot (the idle timeout here is far beyond the test)."""
    limits = Limits(request_timeout=0.5, idle_timeout=600)
    with ReplayServerThread([openai_capture()], speed=None, limits=limits) as server:
        with connect(server) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            sent = time.monotonic()
            sock.setblocking(False)
            while True:
                try:
                    sock.send(b"a")
                except OSError:  # reset: the server dropped it
                    break
                if closed_by_server(sock):
                    break
                assert time.monotonic() - sent < 20, "a trickled request body holds its connection"
                time.sleep(0.05)
            dropped_after = time.monotonic() - sent
        wait_until(lambda: server.server.connections == 0, "the server still counts the dropped connection")
    assert dropped_after >= 0.5, "nobody is dropped before the request timeout"


def test_a_client_gone_in_the_middle_of_its_request_is_no_traceback(
    lines: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None, log=lines.append) as server:
        for _ in range(5):
            sock = connect(server)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99\r\n\r\nab")
            sock.close()  # gone for good, half a body sent
        wait_until(lambda: len(lines) == 5, "each cut request is one log line")
        good = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
    assert good.content == capture.body, "the server answers the next client"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "asyncio logged no unhandled exception"


def test_the_connection_cap_answers_503_and_frees_up(lines: list[str]) -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None, limits=Limits(max_connections=2), log=lines.append) as server:
        held = [connect(server) for _ in range(2)]
        wait_until(lambda: server.server.connections == 2, "the two connections were never accepted")
        busy = exchange(server, b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n")
        also_busy = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
        held.pop().close()
        wait_until(lambda: server.server.connections == 1, "a closed connection still counts")
        served = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
        refused = server.server.refused
        for sock in held:
            sock.close()
    assert busy.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), busy
    assert b"\r\nRetry-After: 1\r\n" in busy
    assert also_busy.status_code == 503 and also_busy.headers["retry-after"] == "1"
    assert served.content == capture.body
    assert refused == 2
    assert lines == ["2 connections open (the cap): new ones are answered 503"], "said once, not per refusal"


def write_big_capture(path: Path, size: int) -> None:
    response = Response(headers=(("Content-Type", "text/event-stream"),), t=0.0)
    with open(path, "w") as f:
        f.write(header_line(request=Request(url="http://h/big"), response=response, recorded_at=None, recorder="test"))
        f.write(chunk_line(0.0, b"data: " + b"x" * size + b"\n\n"))
        f.write(end_line("complete", 0.0))


def status_kb(pid: int, field: str) -> int:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1])


@pytest.mark.e2e
def test_clients_that_never_read_a_big_chunk_cost_no_memory_and_are_released(tmp_path: Path) -> None:
    """10 clients ask for a 50 MiB chunk and read nothing: each used to hold a 50 MiB copy (78 -> 1,041 MB,
    never given back). Now each holds one 64 KiB piece until the idle timeout, then its socket goes."""
    path = tmp_path / "big.jsonl"
    write_big_capture(path, 50 << 20)
    server = subprocess.Popen([sys.executable, "-m", "sse_inspect", "serve", str(path), "--port", "0", "--instant",
                               "--idle-timeout", "1"], stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stderr is not None
        port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stderr.readline()).group(1))  # type: ignore[union-attr]
        baseline_fds = len(os.listdir(f"/proc/{server.pid}/fd"))
        stuck = []
        for _ in range(10):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            stuck.append(sock)
        # every stuck client is dropped: its socket released on the server's side
        fds = f"/proc/{server.pid}/fd"
        wait_until(lambda: len(os.listdir(fds)) <= baseline_fds, "stuck sockets are never released")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = read_all(sock)
        peak = status_kb(server.pid, "VmHWM") * 1024
        for sock in stuck:
            sock.close()
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert got.endswith(b"x\n\n\r\n0\r\n\r\n") and len(got) > 50 << 20, "a reading client gets the whole chunk"
    assert peak < 250 << 20, f"server peak RSS {peak >> 20} MB"
    assert "Traceback" not in err


# -- item 11: malformed requests, hostile captures ------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [b"garbage\r\n\r\n", b"GET / HTTP/1.1\r\nbad header\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n",  # no Host
     b"GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n", b"GET http://[zz]/ HTTP/1.1\r\nHost: x\r\n\r\n",
     b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
     b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 200_000 + b"\r\n\r\n"],
)  # fmt: skip
def test_a_malformed_request_gets_a_4xx_and_one_log_line(
    head: bytes, lines: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None, log=lines.append) as server:
        got = exchange(server, head)
        good = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
    status = STATUS_LINE.match(got)
    assert status is not None and status.group(1) in (b"400", b"431", b"505"), got[:200]
    assert b"\r\nConnection: close\r\n" in got
    assert len(lines) == 1 and "bad request" in lines[0], lines
    assert good.content == capture.body, "the server answers the next client"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "asyncio logged no unhandled exception"


def served_head(capture: Capture, lines: list[str]) -> bytes:
    with ReplayServerThread([capture], speed=None, log=lines.append) as server:
        with connect(server) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = read_all(sock)
    head, _, body = got.partition(b"\r\n\r\n")
    assert body.endswith(b"0\r\n\r\n"), "the whole replay is served"
    return head


def with_response(**fields: object) -> Capture:
    return Capture(chunks=(Chunk(0.0, b"data: x\n\n"),), request=Request(url="http://h/"),
                   response=Response(**fields), end=End(kind="complete"))  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("status", [99999, -1, 0, 100, 101, 600])
def test_a_recorded_status_that_is_no_final_http_status_is_served_as_502(status: int, lines: list[str]) -> None:
    head = served_head(with_response(status=status, reason="whatever"), lines)
    assert head.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
    assert lines == [f"capture: recorded status {status} is not a final HTTP status (200-599): serving 502"]


def test_a_crlf_in_a_captured_header_never_starts_a_new_header(lines: list[str]) -> None:
    headers = (("X-A", "1\r\nSet-Cookie: evil=1"), ("X-B", "a\nb\x00c\x1b[2Jd"), ("X-C", "ok"))
    capture = with_response(status=200, reason="OK\r\nX-Evil: 1", headers=headers)
    head = served_head(capture, lines)
    header_lines = head.split(b"\r\n")
    assert header_lines[0] == b"HTTP/1.1 200 OKX-Evil: 1"
    assert b"X-A: 1Set-Cookie: evil=1" in header_lines and b"X-B: abc[2Jd" in header_lines
    assert b"X-C: ok" in header_lines
    assert not any(line.lower().startswith((b"set-cookie", b"x-evil")) for line in header_lines)
    assert len(lines) == 2 and all("sent as" in line for line in lines), lines


def test_non_ascii_captured_header_values_are_sent_as_latin_1_or_percent_escaped(lines: list[str]) -> None:
    capture = with_response(status=200, headers=(("X-Name", "café ☃"), ("Bad Name", "x"), ("X-Ok", " plain ")))
    head = served_head(capture, lines)
    header_lines = head.split(b"\r\n")
    assert b"X-Name: caf\xe9 %E2%98%83" in header_lines
    assert b"X-Ok: plain" in header_lines
    assert not any(line.startswith(b"Bad Name") for line in header_lines)
    assert any("'Bad Name' is not an HTTP token" in line for line in lines), lines


def test_a_capture_that_cannot_be_sent_as_recorded_is_one_log_line(lines: list[str]) -> None:
    """A 204 with a body: h11 refuses the body; the client sees a reset, the log one line."""
    capture = with_response(status=204)
    with ReplayServerThread([capture], speed=None, log=lines.append) as server:
        with connect(server) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            read_all(sock)
        good = exchange(server, b"OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: http://o\r\n"
                                b"Access-Control-Request-Method: POST\r\n\r\n")  # fmt: skip
    assert len(lines) == 1 and "replay failed" in lines[0], lines
    assert good.startswith(b"HTTP/1.1 204 ")


# -- the request side, fuzzed ---------------------------------------------------------------------------

_PIECES = st.sampled_from([b"GET", b"POST", b" ", b"/", b"http://[", b"]", b"::1", b"%", b"HTTP/1.1", b"HTTP/1.0",
                           b"\r\n", b"\n", b"\r", b":", b"Host", b"Content-Length", b"Transfer-Encoding", b"chunked",
                           b"-1", b"0", b"99999999999999999999", b"\x00", b"\xff", b"\t", b"Expect",
                           b"100-continue"])  # fmt: skip
HEADS = st.one_of(st.binary(max_size=300), st.lists(_PIECES, max_size=40).map(b"".join))


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[tuple[ReplayServerThread, list[str]]]:
    lines: list[str] = []
    with ReplayServerThread([openai_capture()], speed=None, limits=Limits(request_timeout=2.0), log=lines.append) as s:
        yield s, lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=HEADS)
def test_any_request_head_gets_an_answer_or_a_clean_close(
    head: bytes, fuzz_server: tuple[ReplayServerThread, list[str]]
) -> None:
    server, lines = fuzz_server
    got = exchange(server, head)
    if got:
        status = STATUS_LINE.match(got)
        assert status is not None, got[:200]
        assert status.group(1) in (b"200", b"400", b"431", b"505"), got[:200]
    assert not any("replay failed" in line for line in lines), lines
    answer = exchange(server, b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), "the server still answers a good client"


def test_a_flood_past_the_503s_is_closed_at_once(lines: list[str]) -> None:
    """As many connections are answered 503 (each read for up to a second, so the answer is not lost
    to a reset) as are served; past that they are closed at once: the server never runs out of sockets."""
    with ReplayServerThread([openai_capture()], speed=None, limits=Limits(max_connections=1)) as server:
        held = connect(server)
        wait_until(lambda: server.server.connections == 1, "the first connection was never accepted")
        answered = connect(server)  # says nothing: its 503 waits for its request for a second
        wait_until(lambda: server.server.refused == 1, "the second connection was never refused")
        with connect(server) as flood:
            got = read_all(flood)
        assert read_all(answered).startswith(b"HTTP/1.1 503 "), "the one being answered gets its 503"
        held.close()
        answered.close()
    assert got == b"", "the third is closed without an answer"


def test_the_cap_fits_the_open_file_limit(monkeypatch: pytest.MonkeyPatch, lines: list[str]) -> None:
    monkeypatch.setattr("sse_inspect.server._file_limit", lambda: 200)
    with ReplayServerThread([openai_capture()], speed=None, log=lines.append) as server:
        held = [connect(server) for _ in range(68)]
        wait_until(lambda: server.server.connections == 68, "68 connections fit under a limit of 200 files")
        busy = exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for sock in held:
            sock.close()
    assert lines[0] == "the open-file limit (200) allows 68 connections at once, not 512: serving 68"
    assert busy.startswith(b"HTTP/1.1 503 ")
