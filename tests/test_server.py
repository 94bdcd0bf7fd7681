"""The replay server over real loopback HTTP: bytes, framing, timing, endings, routing, isolation."""

from __future__ import annotations

import fcntl
import json
import socket
import struct
import termios
import threading
import time

import httpx
import pytest

from sse_inspect import Capture, Chunk, End, Request, Response, parse_rechunk_spec, rechunk
from sse_inspect.server import ReplayServerThread

from .helpers import CORPUS

TIMEOUT = httpx.Timeout(5.0)


def openai_capture(end: str = "complete", times: list[float] | None = None) -> Capture:
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes()
    parts = body.split(b"\n\n")[:-1]
    events = [p + b"\n\n" for p in parts]
    times = times or [0.01 * (i + 1) for i in range(len(events))]
    return Capture(
        chunks=tuple(Chunk(t, e) for t, e in zip(times, events)),
        request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
        response=Response(
            status=200, reason="OK",
            headers=(("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"), ("Connection", "keep-alive"),
                     ("X-Request-Id", "req_1")),
            t=0.005,
        ),  # fmt: skip
        end=End(kind=end, t=times[-1] + 0.01, error=None if end == "complete" else "peer closed connection"),
    )


def raw_chunks(url: str, path: str) -> tuple[bytes, list[bytes]]:
    """GET over a bare socket; return the head and the HTTP chunk payloads as framed on the wire."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    payloads = []
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        payloads.append(body[:size])
        body = body[size + 2 :]
    return head, payloads


def test_exact_bytes_status_and_headers() -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json={"stream": True}, timeout=TIMEOUT)
    assert r.status_code == 200
    assert r.content == capture.body
    assert r.headers["x-request-id"] == "req_1"
    assert r.headers["transfer-encoding"] == "chunked"
    assert r.headers.get("connection") != "keep-alive", "the capture's hop-by-hop headers are dropped"


@pytest.mark.parametrize("spec", ["original", "bytes:7", "event", "utf8"])
def test_each_piece_is_one_http_chunk(spec: str) -> None:
    capture = openai_capture()
    parsed = parse_rechunk_spec(spec)
    with ReplayServerThread([capture], speed=None, rechunk_spec=parsed) as server:
        head, payloads = raw_chunks(server.url, "/v1/chat/completions")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert payloads == [c.data for c in rechunk(capture.chunks, parsed)]


def test_abrupt_end_is_replayed_as_a_cut() -> None:
    capture = openai_capture(end="server-disconnected")
    with ReplayServerThread([capture], speed=None) as server:
        got = b""
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            with httpx.stream("GET", server.url + "/v1/chat/completions", timeout=TIMEOUT) as r:
                for data in r.iter_raw():
                    got += data
    assert got == capture.body, "every byte arrives, then the connection breaks without the last chunk"


def paced_arrivals(capture: Capture, speed: float) -> list[float]:
    """Replay `capture` at `speed`: when each piece of the body arrived, in seconds from just before the request."""
    arrivals = []
    with ReplayServerThread([capture], speed=speed) as server:
        start = time.monotonic()
        with httpx.stream("GET", server.url + "/v1/chat/completions", timeout=TIMEOUT) as r:
            for _ in r.iter_raw():
                arrivals.append(time.monotonic() - start)
    return arrivals


def test_timing_fidelity() -> None:
    """Each chunk goes out at its recorded time divided by the speed, counted from the request.

    Proved with what holds on a loaded machine: a chunk never arrives before its time (a lower
    bound: load only makes it later), the long gaps are kept (the chunk recorded 0.4 s after the
    previous one arrives at least 0.75 s in), and `--speed 10` takes clearly less time than the
    original timing (a ratio with a wide margin, not milliseconds)."""
    times = [0.1, 0.3, 0.35, 0.75, 0.8]
    capture = openai_capture(times=times + [0.81 + i * 0.001 for i in range(7)])
    chunk_times = [c.t for c in capture.chunks if c.t is not None]
    original, fast = paced_arrivals(capture, 1.0), paced_arrivals(capture, 10.0)
    for speed, arrivals in ((1.0, original), (10.0, fast)):
        assert len(arrivals) >= 5, arrivals
        # httpx may read two chunks at once: the k-th read holds at least the k-th chunk
        for k, at in enumerate(arrivals):
            assert at >= chunk_times[k] / speed - 0.002, (speed, k, arrivals)
    assert original[-1] >= 0.81, "the whole replay takes the recorded 0.8 s"
    assert original[3] >= 0.75 and original[4] >= 0.8, original
    assert fast[-1] < original[-1] / 2, ("--speed 10 divides the pauses", fast, original)


def test_routes_by_path_then_round_robin() -> None:
    a = openai_capture()
    b = Capture(chunks=(Chunk(0.0, b"data: b\n\n"),), request=Request(url="http://h/other"), end=End(kind="complete"))
    with ReplayServerThread([a, b], speed=None) as server:
        with httpx.Client(timeout=TIMEOUT) as client:
            assert client.get(server.url + "/other").content == b"data: b\n\n"
            assert client.get(server.url + "/v1/chat/completions").content == a.body
            unknown = {client.get(server.url + "/nowhere").content for _ in range(2)}
    assert unknown == {a.body, b"data: b\n\n"}


def test_raw_body_capture_is_served_as_an_event_stream() -> None:
    capture = Capture(chunks=(Chunk(None, b"data: x\n\n"),), timed=False, raw=True, end=End(kind="complete"))
    with ReplayServerThread([capture]) as server:
        r = httpx.get(server.url + "/anything?q=1", timeout=TIMEOUT)
    assert r.headers["content-type"] == "text/event-stream"
    assert r.content == b"data: x\n\n"


def test_large_request_body_is_read_and_dropped() -> None:
    capture = openai_capture()
    body = b"x" * 20_000_000
    with ReplayServerThread([capture], speed=None) as server:
        r = httpx.post(server.url + "/v1/chat/completions", content=body, timeout=TIMEOUT)
        again = httpx.post(server.url + "/v1/chat/completions", content=iter([b"a" * 65536] * 50), timeout=TIMEOUT)
    assert r.content == capture.body and again.content == capture.body


def queued(sock: socket.socket) -> int:
    """Bytes waiting in `sock`'s receive queue (SIOCINQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_stuck_client_does_not_stall_others() -> None:
    big = Capture(chunks=tuple(Chunk(0.0, b"data: " + b"x" * 60_000 + b"\n\n") for _ in range(200)),
                  request=Request(url="http://h/big"), end=End(kind="complete"))  # fmt: skip
    small = openai_capture()
    with ReplayServerThread([big, small], speed=None) as server:
        stuck = socket.create_connection(("127.0.0.1", server.server.port), timeout=5)
        stuck.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")  # then never reads
        # the server is writing /big, and blocked on it: 12 MB cannot fit in the socket buffers
        deadline = time.monotonic() + 10
        while queued(stuck) < 65536:
            assert time.monotonic() < deadline, "the server never answered the stuck client"
            time.sleep(0.01)
        started = time.monotonic()
        r = httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT)
        elapsed = time.monotonic() - started
        stuck.close()
    assert r.content == small.body
    # stalled, it would wait for the stuck client, which never reads: the 5 s timeout; 3 s is
    # far more than a loaded machine needs to answer a small request
    assert elapsed < 3.0


def test_http_10_client_gets_a_close_delimited_body() -> None:
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None) as server:
        with socket.create_connection(("127.0.0.1", server.server.port), timeout=5) as s:
            s.sendall(b"GET /v1/chat/completions HTTP/1.0\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"chunked" not in head.lower()
    assert body == capture.body


def test_many_clients_at_once() -> None:
    capture = openai_capture(times=[0.002 * i for i in range(12)])
    results: list[bytes] = []
    with ReplayServerThread([capture], speed=1.0) as server:

        def fetch() -> None:
            results.append(httpx.get(server.url + "/v1/chat/completions", timeout=TIMEOUT).content)

        threads = [threading.Thread(target=fetch) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert results == [capture.body] * 20


def test_every_corpus_event_survives_the_wire() -> None:
    for path in sorted(CORPUS.glob("*.sse")):
        capture = Capture(chunks=(Chunk(None, path.read_bytes()),), timed=False, end=End(kind="complete"))
        with ReplayServerThread([capture], rechunk_spec=parse_rechunk_spec("random:5")) as server:
            assert httpx.get(server.url + "/", timeout=TIMEOUT).content == capture.body, path.name


def test_json_requests_do_not_matter() -> None:
    """Any method, any body: LLM APIs stream on POST."""
    capture = openai_capture()
    with ReplayServerThread([capture], speed=None) as server:
        for method in ("GET", "POST", "PUT", "DELETE"):
            r = httpx.request(method, server.url + "/v1/chat/completions", content=json.dumps({"a": 1}), timeout=TIMEOUT)
            assert r.content == capture.body
