"""A loopback HTTP server whose responses are scripted byte for byte, for end-to-end recording tests.

Each path serves a `Script`: the status line and headers, then a list of `Write`s (bytes sent in
one `sendall`, after a delay, optionally held until the test releases a gate), framed as HTTP/1.1
chunked (one write = one HTTP chunk) or HTTP/1.0-style read-until-close, and ended cleanly or
abruptly (a TCP reset, or a close before the chunked body's terminator). The server notes the
`time.monotonic()` at which each write went out, so a test can compare what a proxy recorded, and
when, with what was really sent.

One thread per connection, stdlib sockets only: the test controls every byte and every pause, and
a blocked connection never stalls another one. Every wait is bounded, and `stop()` ends them all.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

Framing = Literal["chunked", "close"]
Ending = Literal["clean", "reset", "truncate"]

SSE_HEADERS: tuple[tuple[str, str], ...] = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))

_POLL = 0.02
"""How often a held connection checks for `stop()` and for its client going away (seconds)."""


@dataclass(frozen=True)
class Write:
    """One `sendall` of `data` (one HTTP chunk when chunked), `delay` seconds after the previous
    write (or the request), and only once `gate` is set when there is one."""

    data: bytes
    delay: float = 0.0
    gate: threading.Event | None = None


@dataclass(frozen=True)
class Script:
    """A whole 200 response.

    `ending`: "clean" (the chunked terminator, or the close that ends a read-until-close body),
    "reset" (RST mid-body: SO_LINGER 0, what a crashed server or a load balancer killing the
    connection looks like) or "truncate" (FIN without the chunked terminator: a server that exits,
    an idle timeout in between). `end_gate` holds the ending until set.
    """

    writes: Sequence[Write]
    headers: Sequence[tuple[str, str]] = SSE_HEADERS
    framing: Framing = "chunked"
    ending: Ending = "clean"
    end_gate: threading.Event | None = None

    def __post_init__(self) -> None:
        if self.framing == "chunked" and any(not w.data for w in self.writes):
            raise ValueError("an empty write would be the chunked terminator")
        if self.framing == "close" and self.ending == "truncate":
            raise ValueError("a read-until-close body cannot be truncated: its close is its end")

    @classmethod
    def events(cls, *events: bytes, interval: float = 0.0, **kwargs: object) -> Script:
        """One write per event, `interval` seconds apart (the first one at once)."""
        writes = [Write(e, delay=interval if i else 0.0) for i, e in enumerate(events)]
        return cls(writes, **kwargs)  # type: ignore[arg-type]


@dataclass
class Served:
    """What happened to one request: what came in, and when each write went out."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    sent: list[float] = field(default_factory=list)
    """`time.monotonic()` right after each write's `sendall` returned."""
    outcome: str = ""
    """The `Script.ending` carried out, or why the response was cut short: "client-gone" (the client
    closed first), "stopped", "gate not released ..." or "error: ..." (a failed write)."""
    finished: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float = 10.0) -> None:
        """Block until the response is over (any outcome)."""
        if not self.finished.wait(timeout):
            raise TimeoutError(f"{self.method} {self.target}: response not finished after {timeout} s")


class _Cut(Exception):
    """The response stops here; the message is `Served.outcome`."""


class SSEServer:
    """Serves `routes` (path without query -> Script) on 127.0.0.1, on a free port.

    Use as a context manager; `stop()` also runs on exit when the body raised.
    """

    def __init__(self, routes: dict[str, Script] | None = None, *, io_timeout: float = 10.0) -> None:
        self.routes: dict[str, Script] = dict(routes or {})
        self.io_timeout = io_timeout
        """Bound on every socket read and write, and on every gate."""
        self.served: list[Served] = []
        self._arrived = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._listener.settimeout(_POLL * 5)
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name="sse-server-accept", daemon=True)
        self._acceptor.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, path: str, timeout: float = 10.0) -> Served:
        """The first request for `path` (query ignored), waiting up to `timeout` s for it to arrive."""

        def find() -> Served | None:
            return next((s for s in self.served if s.target.split("?", 1)[0] == path), None)

        with self._arrived:
            if not self._arrived.wait_for(find, timeout):
                raise TimeoutError(f"no request for {path} after {timeout} s; got {[s.target for s in self.served]}")
            found = find()
        assert found is not None
        return found

    def stop(self) -> None:
        """Stop accepting, end every connection (held ones too) and join the threads (bounded)."""
        self._stop.set()
        self._acceptor.join(5)
        self._listener.close()
        for thread in list(self._threads):
            thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- connections -------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._connection, args=(conn,), name="sse-server-conn", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(self.io_timeout)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = bytearray()
        try:
            while not self._stop.is_set():
                served = self._read_request(conn, buffer)
                if served is None:
                    return
                with self._arrived:
                    self.served.append(served)
                    self._arrived.notify_all()
                try:
                    keep_open = self._respond(conn, served)
                finally:
                    served.finished.set()
                if not keep_open:
                    return
        except (OSError, ValueError):
            return
        finally:
            conn.close()

    def _read_request(self, conn: socket.socket, buffer: bytearray) -> Served | None:
        """The next request on `conn`, or None when the client closed between requests."""
        while b"\r\n\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                return None
            buffer += data
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
        if any(k.lower() == "transfer-encoding" for k, _ in headers):
            raise ValueError("chunked request bodies are not supported")
        length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
        while len(rest) < length:
            data = conn.recv(65536)
            if not data:
                return None
            rest += data
        buffer[:] = rest[length:]
        return Served(method, target, headers, rest[:length])

    def _respond(self, conn: socket.socket, served: Served) -> bool:
        """Send the scripted response; True when the connection can take another request."""
        script = self.routes.get(served.target.split("?", 1)[0])
        if script is None:
            body = f"no route for {served.target}".encode()
            self._send_head(conn, "HTTP/1.1 404 Not Found", [("Content-Length", str(len(body)))])
            conn.sendall(body)
            served.outcome = "clean"
            return True
        chunked = script.framing == "chunked"
        status = "HTTP/1.1 200 OK" if chunked else "HTTP/1.0 200 OK"
        framing = ("Transfer-Encoding", "chunked") if chunked else ("Connection", "close")
        self._send_head(conn, status, [*script.headers, framing])
        try:
            for write in script.writes:
                self._hold(conn, write.delay, write.gate)
                conn.sendall(b"%x\r\n%s\r\n" % (len(write.data), write.data) if chunked else write.data)
                served.sent.append(time.monotonic())
            self._hold(conn, 0.0, script.end_gate)
        except _Cut as cut:
            served.outcome = str(cut)
            return False
        except OSError as exc:
            served.outcome = f"error: {exc!r}"
            return False
        served.outcome = script.ending
        if script.ending == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if chunked and script.ending == "clean":
            conn.sendall(b"0\r\n\r\n")
            return True
        return False

    @staticmethod
    def _send_head(conn: socket.socket, status_line: str, headers: Sequence[tuple[str, str]]) -> None:
        lines = [status_line, *(f"{k}: {v}" for k, v in headers)]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _hold(self, conn: socket.socket, delay: float, gate: threading.Event | None) -> None:
        """Wait `delay` s, then for `gate`; give up when the server stops, the client goes away or
        `io_timeout` passes (then the response is cut, so a forgotten gate cannot hang a test)."""
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            self._check(conn, min(_POLL, deadline - time.monotonic()))
        if gate is None:
            return
        limit = time.monotonic() + self.io_timeout
        while not gate.is_set():
            if time.monotonic() > limit:
                raise _Cut(f"gate not released after {self.io_timeout} s")
            self._check(conn, _POLL)

    def _check(self, conn: socket.socket, wait: float) -> None:
        """Sleep up to `wait` s; raise when the server stopped or the client closed its side."""
        if self._stop.is_set():
            raise _Cut("stopped")
        readable, _, _ = select.select([conn], [], [], max(wait, 0.0))
        if readable:
            try:
                if not conn.recv(1, socket.MSG_PEEK):
                    raise _Cut("client-gone")
            except ConnectionError as exc:
                raise _Cut("client-gone") from exc
            time.sleep(max(wait, 0.0))
