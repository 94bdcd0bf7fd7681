"""A real HTTP/1.1 server that answers every request with a recorded stream: `sse-inspect serve`.

It replays a capture's status and headers, then its body bytes cut and timed as asked,
each piece written and flushed as one HTTP chunk, and ends as the recording ended: a
capture whose server or client disconnected ends with an abrupt close (a TCP reset), not
a clean last chunk, so clients meet the same failure. HTTP framing is h11's.

Several captures: a request goes to the capture whose URL path equals its path; a path
no capture has gets the captures in turn (round-robin). Request bodies are read and
dropped a piece at a time, never held; each connection is its own task, so a slow or
vanished client stalls no other.

Browsers: with `cors` (the default) a request that carries an `Origin` gets
`Access-Control-Allow-Origin: *` in place of any recorded `Access-Control-*` header, and a CORS
preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered 204 with what it asked
for, without replaying anything; so a page's `EventSource` or `fetch()` reads a replay from any
origin, as a browser app under test must. No credentials are allowed: a replay holds no session.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

import h11

from ._capture import Capture, Chunk
from ._outcome import abrupt_end
from ._playback import Pacing
from ._rechunk import RechunkSpec, ReplayChunks, replay_chunks

__all__ = ["HOP_BY_HOP", "ReplayServer", "ReplayServerThread"]

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "content-length"}
)  # fmt: skip
"""Headers that describe one connection, not the resource: the server writes its own framing."""
READ_SIZE = 65536
WRITE_TIMEOUT = 30.0
"""Seconds a client may take to accept a chunk before its connection is dropped."""
MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Route:
    capture: Capture
    chunks: ReplayChunks
    path: str


class ReplayServer:
    """Serves captures over HTTP/1.1 on asyncio; `await start()`, then `url`, then `await stop()`."""

    def __init__(
        self,
        captures: Sequence[Capture],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        speed: float | None = 1.0,
        rechunk_spec: RechunkSpec | None = None,
        cors: bool = True,
    ) -> None:
        if not captures:
            raise ValueError("a replay server needs at least one capture")
        self.host, self.port = host, port
        self.speed = speed
        """1 = original timing, 10 = ten times faster, None or 0 = no waiting at all."""
        self.cors = cors
        """Answer browsers' CORS preflights and let any origin read a replay."""
        self.routes = [
            _Route(c, replay_chunks(c.chunks, rechunk_spec), _path(c))
            for c in captures
        ]
        self._turn = itertools.cycle(self.routes)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.served = 0
        """How many responses were started."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
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
        path = urlsplit(target).path
        for r in self.routes:
            if r.path == path:
                return r
        return next(self._turn)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        try:
            while True:
                request = await _next_event(conn, reader)
                if not isinstance(request, h11.Request):
                    return
                while not isinstance(await _next_event(conn, reader), h11.EndOfMessage | h11.ConnectionClosed):
                    pass  # the request body is read and dropped a piece at a time
                arrived = asyncio.get_running_loop().time()
                origin = _header(request, b"origin") is not None and self.cors
                if origin and request.method == b"OPTIONS" and _header(request, b"access-control-request-method"):
                    await _send(writer, conn.send(_preflight(request)))
                    await _send(writer, conn.send(h11.EndOfMessage()))
                elif not await self._respond(conn, writer, self.route(request.target.decode("latin-1")), arrived,
                                             cors=origin):  # fmt: skip
                    return
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (h11.ProtocolError, ConnectionError, asyncio.TimeoutError):
            return
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _respond(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, route: _Route, arrived: float, *, cors: bool = False
    ) -> bool:
        """Send one replay; False when the connection must be dropped (an abrupt end). `cors`: the
        request came from a browser page, which may read it from any origin."""
        self.served += 1
        capture = route.capture
        response = capture.response
        headers = [(k, v) for k, v in (response.headers if response else ()) if k.lower() not in HOP_BY_HOP]
        if response is None:
            headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
        if cors:
            headers = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            headers += [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "*")]
        await self._wait(arrived, response.t if response else None)
        status = response.status if response else 200
        reason = (response.reason if response else "OK") or ""
        await _send(writer, conn.send(h11.Response(status_code=status, headers=headers, reason=reason.encode())))
        for chunk in route.chunks:
            await self._wait(arrived, chunk.t)
            await _send(writer, conn.send(h11.Data(data=chunk.data)))
        end = capture.end
        if abrupt_end(end) is not None:  # cut, or a recording that stopped: unknown end
            await self._wait(arrived, end.t if end else None)
            _abort(writer)
            return False
        await _send(writer, conn.send(h11.EndOfMessage()))
        return True

    async def _wait(self, arrived: float, t: float | None) -> None:
        """Until recorded time `t` of a replay that started when its request `arrived`, as `Pacing` says."""
        delay = Pacing(self.speed).delay(t, asyncio.get_running_loop().time() - arrived)
        if delay > 0:
            await asyncio.sleep(delay)


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
    return urlsplit(capture.request.url).path if capture.request and capture.request.url else "/"


async def _next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(READ_SIZE))


async def _send(writer: asyncio.StreamWriter, data: bytes | None) -> None:
    if data:
        writer.write(data)
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)


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
