"""A real HTTP/1.1 server that answers every request with a recorded stream: `sse-inspect serve`.

It replays a capture's status and headers, then its body bytes cut and timed as asked,
each piece written and flushed as one HTTP chunk, and ends as the recording ended: a
capture whose server or client disconnected ends with an abrupt close (a TCP reset), not
a clean last chunk, so clients meet the same failure. HTTP framing is h11's. With faults
(`_faults`: a cut, a stall, no end marker, the provider's in-band error, keep-alive comments,
a slow link, an error status) it walks the core's `ReplayPlan`, which says what to write, when,
and how to end: a clean last chunk, a close mid-body (a FIN) or a reset.

Several captures: a request goes to the capture whose URL path equals its path; a path
no capture has gets the captures in turn (round-robin). Request bodies are read and
dropped a piece at a time, never held; each connection is its own task, so a slow or
vanished client stalls no other.

Hostile clients and captures (`Limits`): a request head must come within a timeout, a client that
takes nothing it is sent for the idle timeout is dropped with a reset (a plain close would keep its
buffer until it reads), chunks go out a piece at a time, connections over the cap are answered 503.
A malformed request gets a 400; a capture's status and headers are made safe for the wire once, at
the start. Each problem is one line to `log`, never a traceback.

Browsers: with `cors` (the default) a request that carries an `Origin` gets
`Access-Control-Allow-Origin: *` in place of any recorded `Access-Control-*` header, and a CORS
preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered 204 with what it asked
for, without replaying anything; so a page's `EventSource` or `fetch()` reads a replay from any
origin, as a browser app under test must. No credentials are allowed: a replay holds no session.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from types import TracebackType
from typing import Self
from urllib.parse import quote, urlsplit

import h11

from ._capture import Capture
from ._fault_plan import CLOSE, COMPLETE, HOP_BY_HOP, ReplayPlan, Send
from ._faults import Fault, FaultSet
from ._playback import Pacing
from ._rechunk import RechunkSpec

__all__ = ["HOP_BY_HOP", "Limits", "ReplayServer", "ReplayServerThread", "reason_phrase"]  # HOP_BY_HOP: the plan's

READ_SIZE = 65536
SEND_PIECE = 65536
"""A chunk is written this much at a time, each piece taken by the client before the next: a client
that reads nothing holds one piece and the transport's buffer, not a copy of a 50 MiB chunk."""
MAX_HEADER_BYTES = 64 * 1024
FILES_KEPT = 64
"""Files kept free of connections for the server's own use (captures, logs, the event loop)."""
LINGER_S = 1.0
"""After an error answer (400, 503), how long the client's unread request is read and dropped before
the close: closing on unread bytes sends a reset, which can destroy the answer before it is read."""
_UNSAFE = dict.fromkeys([*range(0x20), 0x7F])
del _UNSAFE[0x09]  # tab is allowed inside a header value
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


@dataclass(frozen=True)
class Limits:
    """What clients may take from a replay server, so that none of them, slow, stuck or many, starves it."""

    request_timeout: float = 10.0
    """Seconds a client has to send a whole request, head and body, from its connection or the end of its
    last answer: a client trickling its request a byte at a time cannot hold a connection for longer."""
    idle_timeout: float = 30.0
    """Seconds a client may take nothing the server writes: then the connection is dropped with a reset,
    and its buffers with it."""
    max_connections: int = 512
    """Connections served at once; the next one is answered 503 (with Retry-After) and closed."""


@dataclass(frozen=True)
class _Route:
    capture: Capture
    plan: ReplayPlan
    path: str
    status: int
    reason: bytes
    headers: tuple[tuple[bytes, bytes], ...]
    """The capture's headers as sent: hop-by-hop ones dropped, each made safe to put on the wire."""


class ReplayServer:
    """Serves captures over HTTP/1.1 on asyncio; `await start()`, then `url`, then `await stop()`.

    `limits` bounds what clients may hold (timeouts, connections); `log` gets one line per problem
    (a malformed request, a capture's status or header that cannot be sent as recorded, a dropped
    client), never a traceback: by default a warning of the `sse_inspect.server` logger."""

    def __init__(
        self,
        captures: Sequence[Capture],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        speed: float | None = 1.0,
        rechunk_spec: RechunkSpec | None = None,
        faults: FaultSet | str | Fault | Sequence[str | Fault] = FaultSet(),
        dialect: str | None = None,
        cors: bool = True,
        limits: Limits = Limits(),
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not captures:
            raise ValueError("a replay server needs at least one capture")
        self.faults = FaultSet.of(faults)
        """What every replay suffers (`_faults`; empty: each plays as recorded). A FaultSpecError when bad."""
        self.dialect = dialect
        """The captures' dialect for the faults that need one (end markers, in-band errors); None: detected."""
        self.host, self.port = host, port
        self.speed = speed
        """1 = original timing, 10 = ten times faster, None or 0 = no waiting at all."""
        self.cors = cors
        """Answer browsers' CORS preflights and let any origin read a replay."""
        self.limits = limits
        self.log = log or logging.getLogger(__name__).warning
        self.routes = [self._prepare(c, rechunk_spec) for c in captures]
        self._turn = itertools.cycle(self.routes)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._full = False
        self._cap = limits.max_connections
        self._answering = 0
        """Connections over the cap being answered 503; as many again are closed at once."""
        self.served = 0
        """How many responses were started."""
        self.refused = 0
        """How many connections were answered 503: over `limits.max_connections`."""

    def _prepare(self, capture: Capture, rechunk_spec: RechunkSpec | None) -> _Route:
        """A capture's route, its status and headers checked once: what cannot go on the wire as recorded
        is made safe, and said in one line each."""
        name = capture.path or "capture"
        response = capture.response
        status, reason = (response.status, response.reason or "") if response is not None else (200, "OK")
        if not 200 <= status <= 599:
            self.log(f"{name}: recorded status {status} is not a final HTTP status (200-599): serving 502")
            status, reason = 502, "Bad Gateway"
        plan = ReplayPlan(capture, rechunk=rechunk_spec, faults=self.faults, dialect=self.dialect)
        if plan.decoded:
            self.log(f"{name}: the faults are at events, which its {capture.content_encoding} body shows only "
                     "decoded: served decoded")  # fmt: skip
        headers = []
        for key, value in plan.headers:
            if not _TOKEN.fullmatch(key):
                self.log(f"{name}: header name {_brief(repr(key))} is not an HTTP token: header left out")
                continue
            safe = _wire_text(value)
            if safe.decode("latin-1") != value:
                self.log(f"{name}: header {key} value {_brief(repr(value))} sent as {_brief(repr(safe))}")
            headers.append((key.encode("ascii"), safe))
        return _Route(capture, plan, _path(capture), status, _wire_text(reason), tuple(headers))

    @property
    def connections(self) -> int:
        """Connections open now (those answered 503 not counted)."""
        return len(self._tasks)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        files = _file_limit()
        if files is not None and 2 * self._cap + FILES_KEPT > files:  # served ones, as many answered 503, ours
            self._cap = max(1, (files - FILES_KEPT) // 2)
            self.log(f"the open-file limit ({files}) allows {self._cap} connections at once, not "
                     f"{self.limits.max_connections}: serving {self._cap}")  # fmt: skip
        self._server = await asyncio.start_server(self._connection, self.host, self.port, limit=READ_SIZE)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def route(self, target: str) -> _Route:
        """The capture a request target gets; ValueError for a target that is not a URL or path."""
        path = urlsplit(target).path
        for r in self.routes:
            if r.path == path:
                return r
        return next(self._turn)

    def _route_of(self, request: h11.Request) -> _Route:
        """The capture a request gets; a target that is not a URL or a path is the client's error (400)."""
        target = request.target.decode("latin-1")
        try:
            return self.route(target)
        except ValueError as e:
            raise h11.RemoteProtocolError(f"request target {target!r}: {e}", 400) from None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._tasks) >= self._cap:
            await self._refuse(reader, writer)
            return
        self._full = False
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._converse(reader, writer)
        except asyncio.CancelledError:  # stop(): the task ends here; raised on, asyncio would print a traceback
            writer.transport.abort()
        finally:
            self._tasks.discard(task)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection from its first request to its close; each way it can go wrong ends it quietly
        (a clean close, a reset, a 400) with at most one line to `log`."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        try:
            await self._serve(conn, reader, writer)
            if not writer.transport.is_closing():  # not cut as recorded: the answer is flushed, then a clean close
                await self._flush(writer, everything=True)
                writer.close()
        except h11.RemoteProtocolError as e:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                why = _brief(str(e))
                self.log(f"{_peer(writer)}: bad request ({why}): answered {e.error_status_hint}")
                await _answer_and_close(reader, writer, e.error_status_hint, why)
            else:
                writer.transport.abort()
        except (ConnectionError, TimeoutError):  # gone, silent or stuck: drop it and whatever it left unread
            _drop(writer)
        except Exception as e:  # a capture that cannot be sent (say 204 with a body): one line, never a traceback
            self.log(f"{_peer(writer)}: replay failed: {type(e).__name__}: {_brief(str(e))}")
            writer.transport.abort()

    async def _serve(self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the connection's requests until it ends."""
        limits = self.limits
        while True:
            async with asyncio.timeout(limits.request_timeout):
                request = await _next_event(conn, reader)
                if not isinstance(request, h11.Request):
                    return
                while not isinstance(await _next_event(conn, reader), h11.EndOfMessage | h11.ConnectionClosed):
                    pass  # the request body is read and dropped a piece at a time
            arrived = asyncio.get_running_loop().time()
            origin = _header(request, b"origin") is not None and self.cors
            if origin and request.method == b"OPTIONS" and _header(request, b"access-control-request-method"):
                await self._send(writer, conn, _preflight(request))
                await self._send(writer, conn, h11.EndOfMessage())
            elif not await self._respond(conn, writer, self._route_of(request), arrived, cors=origin):
                return
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer a connection over the cap 503: a client that is told to come back, not reset. A flood
        that outruns even that (as many being answered as served) is closed at once, so the server
        never runs out of sockets."""
        self.refused += 1
        if not self._full:
            self._full = True
            self.log(f"{self._cap} connections open (the cap): new ones are answered 503")
        if self._answering >= self._cap:
            writer.transport.abort()
            return
        self._answering += 1
        try:
            await _answer_and_close(reader, writer, 503, "too many connections", retry_after=1)
        finally:
            self._answering -= 1

    async def _respond(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, route: _Route, arrived: float, *, cors: bool = False
    ) -> bool:
        """Send one replay as its plan says; False when the connection is ended mid-body (a cut, as recorded
        or as a fault says). `cors`: the request came from a browser page, which may read it from any origin."""
        self.served += 1
        plan = route.plan
        cross = [(b"Access-Control-Allow-Origin", b"*"), (b"Access-Control-Expose-Headers", b"*")] if cors else []
        if plan.status is not None:  # the error answer instead of the stream
            status, extra, payload = plan.error_response()
            head = [(k.encode("ascii"), v.encode("ascii")) for k, v in extra] + cross
            head.append((b"Content-Length", str(len(payload)).encode("ascii")))
            await self._send(writer, conn, h11.Response(status_code=status, headers=head, reason=reason_phrase(status).encode("ascii")))
            await self._send(writer, conn, h11.Data(data=payload))
            await self._send(writer, conn, h11.EndOfMessage())
            return True
        headers = list(route.headers)
        if cors:
            headers = [(k, v) for k, v in headers if not k.lower().startswith(b"access-control-")] + cross
        response = route.capture.response
        await self._wait(arrived, response.t if response else None)
        await self._send(writer, conn, h11.Response(status_code=route.status, headers=headers, reason=route.reason))
        for step in plan.steps(self.speed):
            await self._until(arrived, step.at)
            if isinstance(step, Send):
                await self._send(writer, conn, h11.Data(data=step.data))
            elif step.how == COMPLETE:
                await self._send(writer, conn, h11.EndOfMessage())
                return True
            elif step.how == CLOSE:  # a FIN mid-body: what was written reaches the client first
                await self._flush(writer, everything=True)
                writer.close()
                return False
            else:  # a reset: cut, or a recording that stopped (unknown end)
                await self._delivered(writer)
                _abort(writer)
                return False
        raise AssertionError("a replay plan ends with its End")

    async def _send(self, writer: asyncio.StreamWriter, conn: h11.Connection, event: object) -> None:
        """Write `event` a piece at a time, each taken by the client (or its buffers) before the next.
        A small event goes out in one write, framing and data together, as one segment."""
        parts = conn.send_with_data_passthrough(event) or []  # type: ignore[arg-type]
        if sum(map(len, parts)) <= SEND_PIECE:
            parts = [b"".join(parts)]
        for data in parts:
            view = memoryview(data)
            for at in range(0, len(view), SEND_PIECE):
                writer.write(view[at : at + SEND_PIECE])
                await self._flush(writer)

    async def _flush(self, writer: asyncio.StreamWriter, *, everything: bool = False) -> None:
        """Wait until the client has taken what is buffered down to the transport's low-water mark (all of
        it: `everything`); TimeoutError when it takes nothing for `limits.idle_timeout` s."""
        if everything:
            writer.transport.set_write_buffer_limits(high=0)
        elif writer.transport.get_write_buffer_size() <= SEND_PIECE:
            await writer.drain()  # nothing to wait for: only a closed connection's error
            return
        async with asyncio.timeout(self.limits.idle_timeout):
            await writer.drain()

    async def _delivered(self, writer: asyncio.StreamWriter) -> None:
        """Until what was written has reached the client (taken by its TCP stack), for `limits.idle_timeout` s at
        most: a reset throws away what is still on its way, and the replay's reset comes after the bytes sent."""
        await self._flush(writer, everything=True)
        sock = writer.get_extra_info("socket")
        if sock is None:
            return
        async with asyncio.timeout(self.limits.idle_timeout):
            while _unsent(sock):
                await asyncio.sleep(0.002)

    async def _until(self, arrived: float, at: float) -> None:
        """Until `at` seconds after the request `arrived` (a plan's wall time)."""
        delay = at - (asyncio.get_running_loop().time() - arrived)
        if delay > 0:
            await asyncio.sleep(delay)

    async def _wait(self, arrived: float, t: float | None) -> None:
        """Until recorded time `t` of a replay that started when its request `arrived`, as `Pacing` says."""
        delay = Pacing(self.speed).delay(t, asyncio.get_running_loop().time() - arrived)
        if delay > 0:
            await asyncio.sleep(delay)


def _wire_text(text: str) -> bytes:
    """A captured header value or reason as bytes that stay one header line: latin-1 where it can be,
    other characters as their UTF-8 percent-escaped; CR, LF, NUL and the other control characters
    dropped (a CRLF in a capture never starts a new header), spaces at the ends trimmed."""
    kept = text.translate(_UNSAFE).strip(" \t")
    return "".join(c if ord(c) < 256 else quote(c, safe="") for c in kept).encode("latin-1")


def reason_phrase(status: int) -> str:
    """The reason phrase of a status, or "" for one HTTP does not name (but Anthropic's 529 Overloaded)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else ""


def _file_limit() -> int | None:
    """How many files this process may open (RLIMIT_NOFILE), or None: no limit, or no such thing (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def _brief(text: str, most: int = 200) -> str:
    """`text` cut to `most` characters for a log line: a request or a capture may hold megabytes."""
    return text if len(text) <= most else text[:most] + f"... ({len(text)} characters)"


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "client"


async def _answer_and_close(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, why: str, *, retry_after: int | None = None
) -> None:
    """A short plain-text error answer, then a close once the client's request is read (for `LINGER_S`
    at most) so that the answer is not lost to a reset."""
    body = f"{status} {HTTPStatus(status).phrase}: {why}\n".encode("ascii", "backslashreplace")
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Content-Type: text/plain; charset=us-ascii",
            f"Content-Length: {len(body)}", "Connection: close"]  # fmt: skip
    if retry_after is not None:
        head.append(f"Retry-After: {retry_after}")
    try:
        writer.write("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        if writer.can_write_eof():
            writer.write_eof()
        async with asyncio.timeout(LINGER_S):
            while await reader.read(READ_SIZE):
                pass
    except (TimeoutError, OSError):  # gone (ENOTCONN from write_eof when it closed mid-request) or silent
        pass
    _drop(writer)


def _drop(writer: asyncio.StreamWriter) -> None:
    """Close now: cleanly when everything written has left, else with a reset, so that a client that
    reads nothing holds no buffer and no socket here (a plain close would wait for it to read)."""
    if writer.transport.get_write_buffer_size():
        writer.transport.abort()
    else:
        writer.close()


def _header(request: h11.Request, name: bytes) -> bytes | None:
    """A request header's value (h11 gives names in lower case), or None."""
    return next((v for k, v in request.headers if k == name), None)


def _preflight(request: h11.Request) -> h11.Response:
    """The answer to a CORS preflight: yes to the method and headers it asks for, from any origin."""
    method = _header(request, b"access-control-request-method") or b"GET"
    headers = [(b"Access-Control-Allow-Origin", b"*"), (b"Access-Control-Allow-Methods", method),
               (b"Access-Control-Max-Age", b"600"), (b"Content-Length", b"0")]  # fmt: skip
    asked = _header(request, b"access-control-request-headers")
    if asked:
        headers.append((b"Access-Control-Allow-Headers", asked))
    return h11.Response(status_code=204, headers=headers)


def _path(capture: Capture) -> str:
    try:
        return urlsplit(capture.request.url).path if capture.request and capture.request.url else "/"
    except ValueError:  # a recorded URL that does not parse: the capture is served to any path
        return "/"


async def _next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(READ_SIZE))


def _unsent(sock: socket.socket) -> int:
    """Bytes written to `sock` that its peer has not acknowledged (SIOCOUTQ, as Linux and the BSDs tell
    it); 0 where the system does not say (the reset then goes when the write buffer is empty)."""
    try:
        import fcntl
        import termios

        return int.from_bytes(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"), sys.byteorder)
    except (ImportError, AttributeError, OSError):
        return 0


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset: the client sees the stream cut, as it was when recorded."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    writer.transport.abort()


class ReplayServerThread:
    """A ReplayServer on its own event loop in a background thread: for tests and sync code.

        with ReplayServerThread([capture], speed=None) as server:
            httpx.get(server.url + "/v1/chat/completions")
    """

    def __init__(self, captures: Sequence[Capture], **kwargs: object) -> None:
        self.server = ReplayServer(captures, **kwargs)  # type: ignore[arg-type]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sse-replay", daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
