"""The live page of `sse-inspect record --ui`: the streams being recorded, drawn in a browser as they come.

    session = LiveSession([...])              # the session `record` feeds (see `live`)
    page = LivePage(session)
    url = await page.start()                  # on the proxy's loop: http://127.0.0.1:PORT/?token=...
    session.views.append(page)                # now it is told every start, step, stall, end and verdict
    ...
    await page.close()                        # before the loop ends: the open pages are told goodbye

One small HTTP/1.1 server on the proxy's own event loop (h11 frames it, as it does the replay server's)
with three routes: `/` the page (one file, `live_page.html`: its own CSS and script, nothing loaded
from elsewhere), `/events` an event stream the page reads with `EventSource`, and `/report/<id>` the
HTML report of a finished stream, the one `sse-inspect report` writes, shown in a sandboxed frame.

What it guards against, since the page shows what strangers' servers sent and listens on a port any
local program, and any web page the user visits, can reach:
- it listens on a loopback address only, and answers only requests whose `Host` is a loopback name:
  a web page whose name resolves to 127.0.0.1 (DNS rebinding) sends its own name and is refused;
- every request must carry the random token printed in the URL (as Jupyter does), so another local
  user or a page guessing the port reads nothing;
- the page's Content-Security-Policy runs only its own script (by hash) and lets it connect only to
  this server; the script puts captured text into the page as text (`textContent`), never as markup,
  and shows URLs as text, never as links; the report comes with the report's own policy (no script
  at all) plus `sandbox`, and its frame is sandboxed too.

The event stream: first a snapshot of every stream the session holds (in flight, and the finished ones
it keeps), then what changes. A fast stream is not sent chunk by chunk: what each stream gained is
gathered and sent at the session's redraw (every `TICK_S`); a start, a stall, an end and a verdict go
at once (after what the stream gained before them, so the page sees them in order). A page that
cannot keep up is not queued for without bound: past `BACKLOG_BYTES` unsent, what waits for it is
dropped and it gets a fresh snapshot instead.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import math
import re
import secrets
from collections import OrderedDict, deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import h11

from ._capture import End
from ._errors import SSEInspectError
from ._live import TAIL, Burst, LiveStep, LiveStream, Stall
from ._outcome import Outcome
from .checks import Severity, Thresholds
from .live import BaseView, Entry, LiveSession
from .report import CSP as REPORT_CSP

__all__ = [
    "BACKLOG_BYTES", "HEARTBEAT_S", "MAX_LISTENERS", "MAX_POINTS", "REPORTS_KEPT", "LivePage", "loopback_host",
]  # fmt: skip

logger = logging.getLogger(__name__)

MAX_POINTS = 600
"""Arrival points kept per stream for its plot; past that, every other one is dropped (the page does the same).
A 1200-pixel plot shows no more, and a stream of hours costs what one of seconds does."""
MAX_MARKS = 200
"""Stalls and bursts sent per stream (the last ones): a stream stalling every few seconds for an hour stays small."""
BACKLOG_BYTES = 1 << 20
"""Bytes waiting for one page before it is given up on and sent a fresh snapshot instead (a snapshot of
200 finished streams with their answers' tails is about that big)."""
HEARTBEAT_S = 15.0
"""Silence on an event stream after which a comment line is sent, so that no proxy or browser drops it
as idle (browsers keep an EventSource open indefinitely; some proxies cut at 30 or 60 s)."""
MAX_LISTENERS = 16
"""Event streams open at once: the page in a few tabs, not a flood."""
MAX_CONNECTIONS = 64
"""Connections open at once; more are closed unanswered."""
REPORTS_KEPT = 8
"""Rendered reports kept in memory (a report of a long stream is a few MB)."""
REQUEST_TIMEOUT_S = 10.0
"""Time a client has to send its request's head."""
SEND_TIMEOUT_S = 30.0
"""Time a client may take nothing that is sent to it before it is dropped."""
CLOSE_GRACE_S = 2.0
"""Time `close` gives the open connections to end cleanly before it cuts them."""
MAX_HEAD_BYTES = 16 * 1024
"""A request head larger than this is refused (431): the page's own requests are a few hundred bytes."""

_PAGE_FILE = "live_page.html"
LOOPBACK_NAMES = frozenset({"localhost"})
"""Host names, besides loopback IP addresses, that the server answers to."""


def loopback_host(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is a loopback one."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """The name in a Host header's value, without its port (`[::1]:8080` -> `[::1]`)."""
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


# -- the page ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Page:
    """The page's bytes and the policy that runs its script and style, and nothing else."""

    html: bytes
    csp: str

    @classmethod
    @functools.cache
    def load(cls) -> _Page:
        """The page, read once: a page file whose script or style cannot be told apart is a packaging bug."""
        text = resources.files(__package__).joinpath(_PAGE_FILE).read_text(encoding="utf-8")
        hashes = {}
        for tag in ("script", "style"):
            blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL)
            if len(blocks) != 1:
                raise RuntimeError(f"{_PAGE_FILE} must have exactly one <{tag}> (it has {len(blocks)})")
            digest = base64.b64encode(hashlib.sha256(blocks[0].encode()).digest()).decode()
            hashes[tag] = f"'sha256-{digest}'"
        csp = (
            f"default-src 'none'; script-src {hashes['script']}; style-src {hashes['style']}; connect-src 'self'; "
            "frame-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        return cls(text.encode(), csp)


REPORT_POLICY = f"{REPORT_CSP}; frame-ancestors 'self'; sandbox"
"""The report's own policy (no script at all), framed only by the page, and sandboxed even when opened alone."""

_COMMON_HEADERS = [
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
]


# -- what the page is sent ---------------------------------------------------------------------


def _n(x: float | None, places: int = 4) -> float | None:
    """A time or rate for JSON: rounded, and None for a missing or non-finite one (JSON has no NaN)."""
    return None if x is None or not math.isfinite(x) else round(x, places)


def _stats(s: LiveStream) -> dict[str, Any]:
    return {
        "status": s.status, "chunks": s.chunks, "bytes": s.bytes, "events": s.events, "text_events": s.text_events,
        "ttfb": _n(s.ttfb), "first_event": _n(s.first_event), "first_token": _n(s.first_token),
        "last_t": _n(s.last_t), "max_gap": _n(s.max_gap), "text_chars": s.text_chars,
        "tokens_per_s": _n(s.tokens_per_s, 1), "dialect": s.dialect.name, "sure": s.sure,
    }  # fmt: skip


def _end(end: End | None) -> dict[str, Any] | None:
    return None if end is None else {"kind": end.kind, "t": _n(end.t), "error": end.error}


def _outcome(outcome: Outcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {"words": outcome.words, "ok": outcome.ok, "state": str(outcome.state)}


def _burst(b: Burst) -> list[float | int | None]:
    return [_n(b.t), b.events, _n(b.silence_s)]


def _verdict(entry: Entry) -> dict[str, Any]:
    """The verdict's line, its tone (the report's colours: error, warning or ok) and whether a report can be had."""
    report = entry.report
    if report is None:
        return {"verdict": None, "tone": None, "problem": entry.problem, "report": False}
    worst = report.worst
    tone = str(worst) if worst is not None and worst >= Severity.WARNING else "ok"
    return {"verdict": report.verdict, "tone": tone, "problem": entry.problem, "report": True}


def _frame(message: dict[str, Any]) -> bytes:
    """One event of the event stream: the message as JSON on one `data:` line (JSON escapes every line
    end; `ensure_ascii` also escapes U+2028 and a lone surrogate a dialect may have decoded)."""
    return b"data: " + json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n\n"


def _thin(points: list[list[float | int | None]]) -> None:
    """Halve `points` in place when there are more than MAX_POINTS, keeping the first and the last.
    The plot draws steps, so a dropped point's bytes show at the next kept point's time: a jump
    after a silence stays a jump, at most one interval late."""
    if len(points) > MAX_POINTS:
        last = points[-1]
        points[:] = points[::2]
        if points[-1] is not last:
            points.append(last)


@dataclass(eq=False)
class _Track:
    """What the page keeps of one stream besides its `LiveStream`: the plot's points and the stalls'
    spans, and what changed since the page's last update (`new_*`)."""

    entry: Entry
    points: list[list[float | int | None]] = field(default_factory=list)
    """[t, bytes so far] at each slice that brought bytes, thinned to MAX_POINTS."""
    stalls: deque[list[float | None]] = field(default_factory=lambda: deque(maxlen=MAX_MARKS))
    """[since, until] of each stall (until None while it lasts)."""
    new_points: list[list[float | int | None]] = field(default_factory=list)
    new_text: str = ""
    restarted: bool = False
    new_bursts: dict[float, Burst] = field(default_factory=dict)
    resumed: list[float | None] | None = None
    dirty: bool = False

    def state(self) -> dict[str, Any]:
        """Everything the page shows of the stream (what `new_*` holds must have been sent first)."""
        e, s = self.entry, self.entry.stream
        return {
            "id": e.id, "method": s.method, "url": s.url, "sent_at": _n(e.sent_at, 6), "stats": _stats(s),
            "points": self.points, "text": s.tail, "stalls": list(self.stalls),
            "bursts": [_burst(b) for b in s.bursts[-MAX_MARKS:]], "stalled": s.stalled is not None,
            "ended": _end(s.ended), "outcome": _outcome(s.outcome), **_verdict(e),
        }  # fmt: skip

    def update(self) -> dict[str, Any]:
        """What changed since the last update, as a message; the track then counts it as sent."""
        message = {
            "type": "update", "id": self.entry.id, "stats": _stats(self.entry.stream), "points": self.new_points,
            "text": self.new_text, "restarted": self.restarted, "bursts": [_burst(b) for b in self.new_bursts.values()],
            "resumed": self.resumed,
        }  # fmt: skip
        self.points += self.new_points
        _thin(self.points)
        self.new_points, self.new_text, self.restarted, self.new_bursts = [], "", False, {}
        self.resumed, self.dirty = None, False
        return message


class _Listener:
    """One open event stream: what waits to be sent to it, at most BACKLOG_BYTES, then `behind`."""

    def __init__(self) -> None:
        self.queue: deque[bytes] = deque()
        self.size = 0
        self.wake = asyncio.Event()
        self.behind = False
        """Whether messages were dropped: the next thing it is sent is a snapshot."""
        self.closing = False

    def put(self, data: bytes) -> None:
        if self.behind:
            return
        if self.size + len(data) > BACKLOG_BYTES:
            self.queue.clear()
            self.size, self.behind = 0, True
        else:
            self.queue.append(data)
            self.size += len(data)
        self.wake.set()

    def take(self) -> bytes:
        data = b"".join(self.queue)
        self.queue.clear()
        self.size = 0
        return data


class _Refused(Exception):
    """A request answered with an error status and a one-line reason."""

    def __init__(self, status: int, why: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(why)
        self.status, self.why, self.headers = status, why, list(headers)


# -- the view and its server -------------------------------------------------------------------


class LivePage(BaseView):
    """A live view that serves the page: `start` it on the session's loop, add it to the session's views,
    `close` it before the loop ends. All of it runs on that loop but building a report (a thread)."""

    def __init__(self, session: LiveSession) -> None:
        self.session = session
        self.token = secrets.token_urlsafe(24)
        """The secret every request must carry (`?token=`)."""
        self.url: str | None = None
        """The page's address, with its token, once started."""
        self._page = _Page.load()
        self._tracks: dict[int, _Track] = {}
        self._listeners: set[_Listener] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reports: OrderedDict[int, asyncio.Future[bytes]] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None

    # -- serving

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on `host` (loopback only) and `port` (0: any free one); the URL to print."""
        if not loopback_host(host):
            raise SSEInspectError(
                f"the live page listens on a loopback address only, not {host!r}: it shows captured requests",
                hint="use 127.0.0.1 (or ::1, localhost); to see it from another machine, forward the port over SSH",
            )
        if self._server is not None:
            raise RuntimeError("the live page is already started")
        bind = host.strip("[]")
        try:
            self._server = await asyncio.start_server(self._connection, bind, port)
        except OSError as exc:
            raise SSEInspectError(f"the live page cannot listen on {bind}:{port}: {exc.strerror or exc}") from None
        real_port = self._server.sockets[0].getsockname()[1]
        shown = f"[{bind}]" if ":" in bind else bind
        self.url = f"http://{shown}:{real_port}/?token={self.token}"
        return self.url

    async def close(self) -> None:
        """Stop listening, tell the open pages the recording stopped and end their streams, cut what is left."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        self._flush_all()  # what the streams gained since the last redraw
        for listener in self._listeners:  # each sends what it holds, then goodbye
            listener.closing = True
            listener.wake.set()
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=CLOSE_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await server.wait_closed()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(self._tasks) >= MAX_CONNECTIONS or self._server is None:
            writer.transport.abort()
            return
        self._tasks.add(task)
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            await self._converse(conn, reader, writer)
        except asyncio.CancelledError:  # `close`: cut
            writer.transport.abort()
        except (ConnectionError, TimeoutError, h11.LocalProtocolError):  # gone, stuck, or closed mid-answer
            writer.transport.abort()
        except Exception:  # noqa: BLE001 - a request gone wrong must not touch the recording
            logger.exception("sse-inspect: the live page failed to answer a request")
            writer.transport.abort()
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _converse(self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One request, one answer, then the connection closes: the page needs nothing more, and it keeps
        the state of a connection down to one request's."""
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                request = await _next_event(conn, reader)
                if not isinstance(request, h11.Request):
                    return
                route = self._route(request)
                if not isinstance(await _next_event(conn, reader), h11.EndOfMessage):
                    raise _Refused(400, "a request to the live page has no body")
        except h11.RemoteProtocolError as exc:  # malformed, or a head over MAX_HEAD_BYTES (431)
            await self._refuse(conn, writer, _Refused(exc.error_status_hint, f"bad request: {exc}"))
            return
        except _Refused as refused:
            await self._refuse(conn, writer, refused)
            return
        kind, arg = route
        if kind == "page":
            policies = [("Content-Security-Policy", self._page.csp), ("Cross-Origin-Opener-Policy", "same-origin")]
            await self._answer(conn, writer, 200, "text/html; charset=utf-8", self._page.html, policies)
        elif kind == "events":
            if len(self._listeners) >= MAX_LISTENERS:
                await self._refuse(conn, writer, _Refused(503, f"{MAX_LISTENERS} pages are open already: close one"))
                return
            await self._stream_events(conn, writer)
        else:
            try:
                html = await self._report(arg)
            except _Refused as refused:
                await self._refuse(conn, writer, refused)
                return
            await self._answer(conn, writer, 200, "text/html; charset=utf-8", html,
                               [("Content-Security-Policy", REPORT_POLICY)])  # fmt: skip

    def _route(self, request: h11.Request) -> tuple[str, int]:
        """Which answer a request gets: the page, the events or a report (with its stream's id); `_Refused`
        for any other, in this order: a method other than GET, a Host that is not a loopback name (DNS
        rebinding), no token or a wrong one, an unknown path."""
        if request.method != b"GET":
            raise _Refused(405, "the live page answers GET only", [("Allow", "GET")])
        hosts = [v for k, v in request.headers if k == b"host"]
        if len(hosts) != 1:
            raise _Refused(400, "a request needs exactly one Host header")
        if not loopback_host(_host_name(hosts[0].decode("latin-1"))):
            raise _Refused(403, "the live page answers requests to a loopback name only (127.0.0.1, localhost)")
        try:
            target = urlsplit(request.target.decode("ascii"))
            token = parse_qs(target.query).get("token", [""])[-1]
        except (UnicodeDecodeError, ValueError):
            raise _Refused(400, "the request target is not a path") from None
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self.token.encode()):
            raise _Refused(403, "a token is needed: open the URL `sse-inspect record --ui` printed")
        if target.path == "/":
            return "page", 0
        if target.path == "/events":
            return "events", 0
        match = re.fullmatch(r"/report/([1-9][0-9]{0,9})", target.path)
        if match:
            return "report", int(match.group(1))
        raise _Refused(404, "no such page here: the live page is at /")

    async def _answer(self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, content_type: str,
                      body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:  # fmt: skip
        head = [("Content-Type", content_type), ("Content-Length", str(len(body))), ("Connection", "close"),
                *_COMMON_HEADERS, *headers]  # fmt: skip
        response = h11.Response(status_code=status, headers=head, reason=HTTPStatus(status).phrase.encode())
        await _send(writer, conn, response, h11.Data(data=body), h11.EndOfMessage())

    async def _refuse(self, conn: h11.Connection, writer: asyncio.StreamWriter, refused: _Refused) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        body = (refused.why + "\n").encode()
        await self._answer(conn, writer, refused.status, "text/plain; charset=utf-8", body, refused.headers)

    # -- the event stream

    async def _stream_events(self, conn: h11.Connection, writer: asyncio.StreamWriter) -> None:
        """The snapshot, then each batch of messages as it comes (a heartbeat when none does), until `close`."""
        head = [("Content-Type", "text/event-stream"), ("Connection", "close"), ("X-Accel-Buffering", "no"),
                *_COMMON_HEADERS]  # fmt: skip
        listener = _Listener()
        first = b"retry: 2000\n\n" + self._snapshot()
        self._listeners.add(listener)  # after the snapshot: what changes from here on is sent to it
        try:
            await _send(writer, conn, h11.Response(status_code=200, headers=head, reason=b"OK"), h11.Data(data=first))
            while True:
                try:
                    async with asyncio.timeout(HEARTBEAT_S):
                        await listener.wake.wait()
                except TimeoutError:
                    await _send(writer, conn, h11.Data(data=b": still here\n\n"))
                    continue
                listener.wake.clear()
                if listener.behind:  # too slow: what it missed is in a snapshot of now
                    listener.behind = False
                    data = self._snapshot()
                    listener.take()  # what `_snapshot` flushed is in it
                else:
                    data = listener.take()
                if listener.closing:
                    await _send(writer, conn, h11.Data(data=data + _frame({"type": "bye"})), h11.EndOfMessage())
                    return
                if data:
                    await _send(writer, conn, h11.Data(data=data))
        finally:
            self._listeners.discard(listener)

    def _snapshot(self) -> bytes:
        """Every stream as it stands now (what each gained is sent to the other pages first, so that
        a snapshot and the updates after it add up)."""
        self._flush_all()
        entries = [*self.session.entries.values(), *self.session.finished]
        entries.sort(key=lambda e: e.id)
        return _frame({
            "type": "snapshot", "clock": _n(self.session.clock(), 6), "stall_s": self.session.stall_s,
            "tail": TAIL, "max_points": MAX_POINTS, "streams": [self._track(e).state() for e in entries],
        })  # fmt: skip

    def _broadcast(self, message: dict[str, Any]) -> None:
        if not self._listeners:
            return
        message["clock"] = _n(self.session.clock(), 6)
        data = _frame(message)
        for listener in self._listeners:
            listener.put(data)

    def _flush(self, entry_id: int) -> None:
        track = self._tracks.get(entry_id)
        if track is not None and track.dirty:
            self._broadcast(track.update())

    def _flush_all(self) -> None:
        for entry_id in [i for i, t in self._tracks.items() if t.dirty]:
            self._flush(entry_id)

    def _track(self, entry: Entry) -> _Track:
        track = self._tracks.get(entry.id)
        if track is None:  # a stream that started before the page was added: it has no past points
            track = self._tracks[entry.id] = _Track(entry)
        return track

    # -- the reports

    async def _report(self, entry_id: int) -> bytes:
        """The report of a finished stream, built in a thread the first time (then kept, REPORTS_KEPT of them)."""
        entry = next((e for e in self.session.finished if e.id == entry_id), None)
        if entry is None:
            raise _Refused(404, f"no finished stream #{entry_id} (it is still open, or forgotten)")
        future = self._reports.get(entry_id)
        if future is None:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sse-inspect-page")
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self._pool, _build_report, entry.path, entry.id, self.session.thresholds)
            self._reports[entry_id] = future
            while len(self._reports) > REPORTS_KEPT:
                self._reports.popitem(last=False)
        else:
            self._reports.move_to_end(entry_id)
        try:
            return await asyncio.shield(future)  # a page that leaves cancels its wait, not the build
        except Exception as exc:
            self._reports.pop(entry_id, None)  # the next request tries again
            if isinstance(exc, OSError | SSEInspectError):  # the file is gone, or unreadable
                raise _Refused(500, f"the capture of stream #{entry_id} cannot be read: {exc}") from None
            raise

    # -- what the session tells

    def started(self, entry: Entry) -> None:
        track = self._track(entry)
        if self._listeners:
            self._broadcast({"type": "start", "id": entry.id, "stream": track.state()})

    def stepped(self, entry: Entry, step: LiveStep) -> None:
        track = self._track(entry)
        if step.size and step.t is not None:
            track.new_points.append([_n(step.t), entry.stream.bytes])
            _thin(track.new_points)
        if step.restarted:
            track.new_text, track.restarted = step.text[-TAIL:], True
        elif step.text:
            track.new_text = (track.new_text + step.text)[-TAIL:]
        if step.burst is not None:
            track.new_bursts[step.burst.t] = step.burst
        if step.resumed is not None:
            until = _n(step.resumed.since + step.resumed.silence_s)
            if track.stalls and track.stalls[-1][1] is None:
                track.stalls[-1][1] = until
            track.resumed = [_n(step.resumed.since), until]
        if step.size or step.text or step.restarted or step.events or step.burst or step.resumed:
            track.dirty = True

    def stalled(self, entry: Entry, stall: Stall) -> None:
        self._flush(entry.id)
        track = self._track(entry)
        track.stalls.append([_n(stall.since), None])
        self._broadcast({"type": "stall", "id": entry.id, "since": _n(stall.since), "first_byte": stall.first_byte})

    def ended(self, entry: Entry, step: LiveStep) -> None:
        self.stepped(entry, step)
        self._flush(entry.id)
        track = self._track(entry)
        end = entry.stream.ended
        if track.stalls and track.stalls[-1][1] is None:  # the silence lasted to the end
            track.stalls[-1][1] = _n(end.t if end is not None else None)
        self._broadcast({
            "type": "end", "id": entry.id, "stats": _stats(entry.stream), "ended": _end(end),
            "outcome": _outcome(entry.stream.outcome), "stalls": list(track.stalls),
        })  # fmt: skip
        kept = {*self.session.entries, *(e.id for e in self.session.finished)}
        for gone in [i for i in self._tracks if i not in kept]:  # the session forgot them
            del self._tracks[gone]
            self._reports.pop(gone, None)
            self._broadcast({"type": "forget", "id": gone})

    def judged(self, entry: Entry) -> None:
        self._broadcast({"type": "judged", "id": entry.id, **_verdict(entry)})

    def redraw(self) -> None:
        self._flush_all()


def _build_report(path: Path, entry_id: int, thresholds: Thresholds) -> bytes:
    """The report `sse-inspect report` writes for the capture (run in a thread: it reads the whole file)."""
    from .cli._report import report_one  # the CLI's: its events around each finding, its plot's trace
    from .report import html_report

    checked, trace, shown = report_one(str(path), None, None, thresholds, False, progress=False)
    title = f"sse-inspect live · stream {entry_id}"
    return html_report([checked], title=title, traces=[trace], events=[shown]).encode("utf-8")


async def _next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(4096))


async def _send(writer: asyncio.StreamWriter, conn: h11.Connection, *events: Any) -> None:
    """Write `events` in one write; TimeoutError when the client takes nothing for SEND_TIMEOUT_S."""
    writer.write(b"".join(conn.send(e) or b"" for e in events))
    async with asyncio.timeout(SEND_TIMEOUT_S):
        await writer.drain()

