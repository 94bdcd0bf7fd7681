"""What a replay writes and when, with its faults: the plan every replay walks (sans-I/O).

    plan = ReplayPlan(capture, rechunk=parse_rechunk_spec("bytes:7"), faults=FaultSet.parse(["cut:event=50%"]))
    if plan.status is not None:
        status, headers, body = plan.error_response()      # the error answer instead of the stream
    for step in plan.steps(speed=1.0):                     # a Send per write, then one End
        ...                                                # wait until step.at, then write step.data / end

`at` is wall seconds after the request arrived: recorded time over `speed` (None: no waiting), plus every
stall before it, later still where a `slow` link has not yet carried the bytes before. The body is the
capture's (re-cut as asked), cut where the faults say:

- at an event boundary (`cut:event`, `stall`, `error`, keep-alive comments): just past the blank line
  that ends the event (past its LF, for a CRLF), found by the parser, so the client has whole events.
  Keep-alives go in the recorded silences between events; a capture with no timing (a raw body, an
  import) has none to show, so it gets one comment before each event and after the last;
- at a body byte (`cut:byte`, counted in the capture's body as `sse-inspect events` shows offsets) or a
  recorded time (`cut:time`), wherever it falls: mid-event, mid-character;
- without the dialect's end-marker events (`no-end-marker`), which a first pass over the body finds
  (as it counts the events and bytes a `50%` needs) once per plan, not per request.

The End says how the response ends: COMPLETE (the HTTP message ends properly: as recorded, after an
in-band error, or without the end marker), CLOSE (the connection is closed mid-body, a FIN: a `cut`)
or RESET (a TCP reset: `cut:...,reset`, and a recording that did not end cleanly, as before faults).
Events need the body as sent by the server: a compressed capture with faults at events is served
decoded (`decoded`: the caller drops its Content-Encoding). Nothing here waits or writes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ._analysis import body, detect, framer_for, parse_chunks, told_framing
from ._capture import Capture, Chunk
from ._decoding import body_chunks, is_identity
from ._events import Event
from ._faults import Cut, FaultSet, Keepalive, Share, Slow, Stall, Status, resolve
from ._outcome import abrupt_end
from ._errors import FaultSpecError
from ._framing import new_framer, tell_framing
from ._rechunk import RechunkSpec, ReplayChunks
from .dialects import Dialect, EventFlags, get_dialect

__all__ = ["CLOSE", "COMPLETE", "EVENT_STREAM_HEADERS", "HOP_BY_HOP", "RESET", "End", "ReplayPlan", "Send"]

COMPLETE, CLOSE, RESET = "complete", "close", "reset"


class Send(NamedTuple):
    """Write `data` at `at` (wall seconds after the request arrived; 0: at once)."""

    at: float
    data: bytes


class End(NamedTuple):
    """End the response at `at`: COMPLETE, CLOSE (a FIN mid-body) or RESET (a TCP reset)."""

    at: float
    how: str
    recorded: str | None = None
    """When the end is the recording's own abrupt one (not a fault's), why it was abrupt (`abrupt_end`):
    an in-process replay says so in its error, as before faults."""


HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "content-length"}
)  # fmt: skip
"""Headers that describe one connection, not the resource: a replay writes its own framing."""
EVENT_STREAM_HEADERS = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
"""What a replay of a capture with no recorded response (a raw body) answers with."""
FRAMING_TYPES = {"sse": "text/event-stream", "ndjson": "application/x-ndjson", "json-array": "application/json",
                 "eventstream": "application/vnd.amazon.eventstream"}  # fmt: skip
"""The Content-Type a raw body of each framing is served with (NDJSON as Ollama sends it)."""

Step = Send | End
_LF, _CR = 10, 13


class ReplayPlan:
    """The replay of one capture, re-cut as `rechunk` says and with `faults`: `steps(speed)` each time it is
    served. `dialect` (a name) says whose end markers and in-band error to use; by default the one the
    stream's first events tell, as `analyze` tells it."""

    def __init__(
        self,
        capture: Capture,
        *,
        rechunk: RechunkSpec | None = None,
        faults: FaultSet = FaultSet(),
        dialect: str | None = None,
    ) -> None:
        self.capture = capture
        self.faults = faults
        at_events = any(f.at == "event" if isinstance(f, Cut) else not isinstance(f, Status | Slow) for f in faults.faults)
        self.decoded = at_events and not is_identity(capture)
        """Whether the body is served content-decoded (its Content-Encoding header must go): faults at events
        need the events, which a compressed body shows only decoded."""
        wire = list(body_chunks(capture)) if self.decoded else capture.chunks
        self.framing = told_framing(capture) or tell_framing(None, (chunk.data for chunk in wire))
        """How the body is framed (one of `_ndjson.FRAMINGS`): where its items end, what a keep-alive is."""
        self.chunks = ReplayChunks(wire, rechunk, framing=self.framing)
        if faults.keepalive is not None and self.framing == "eventstream":
            raise FaultSpecError(f"{faults.keepalive}: an AWS event stream has no keep-alive (every message is a "
                                 "frame a client reads)", hint="leave keepalive: out for this capture")  # fmt: skip
        self._dialect_name = dialect
        self._dialect: Dialect | None = None
        self._survey: _Survey | None = None
        if faults.error is not None and self.framing not in self.dialect.framings:
            raise FaultSpecError(f"{faults.error}: the {self.dialect.name} dialect writes its in-band error as "
                                 f"{' or '.join(self.dialect.framings)}, and this stream is {self.framing}",
                                 hint="name the stream's dialect with --dialect")  # fmt: skip

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        """The response headers each replay sends: the recorded ones but those of one connection (hop-by-hop)
        and, for a body served decoded, its Content-Encoding; an event stream's for a capture with none."""
        response = self.capture.response
        if response is None:  # a raw body: the Content-Type of its framing
            if self.framing == "sse":
                return EVENT_STREAM_HEADERS
            return (("Content-Type", FRAMING_TYPES[self.framing]), ("Cache-Control", "no-cache"))
        drop = HOP_BY_HOP | {"content-encoding"} if self.decoded else HOP_BY_HOP
        return tuple((k, v) for k, v in response.headers if k.lower() not in drop)

    @property
    def status(self) -> Status | None:
        """The `status:` fault: the replay is an error answer (`error_response`), not the stream."""
        return self.faults.status

    @property
    def dialect(self) -> Dialect:
        """The stream's dialect: named, or told from its first events (read once, when first asked)."""
        if self._dialect is None:
            if self._dialect_name is not None:
                self._dialect = get_dialect(self._dialect_name)
            else:
                capture = self.capture
                parsed = parse_chunks(body(capture, capture.chunks, [], None), framer_for(capture), [])
                self._dialect, _ = detect(parsed, capture.request.url if capture.request else None)
            self._dialect = self._dialect.for_request(self.capture.request.body if self.capture.request else None)
        return self._dialect

    def error_response(self) -> tuple[int, list[tuple[str, str]], bytes]:
        """The `status:` fault's answer: its status, headers (Content-Type; Retry-After in whole seconds,
        rounded up, as the header takes them) and the provider's error body for that status."""
        status = self.faults.status
        if status is None:
            raise ValueError("this replay has no status: fault")
        content_type, payload = self.dialect.error_body(status.code)
        headers = [("Content-Type", content_type)]
        if status.retry_after is not None:
            headers.append(("Retry-After", str(math.ceil(status.retry_after))))
        return status.code, headers, payload

    def as_recorded(self) -> Capture:
        """The replay as a recorder on the client's side would write it, at the recorded speed: its chunks
        at the times they are sent (the stalls in them), its end as it ends (a cut: the server disconnected),
        a `status:` fault's error answer in place of the stream. What `sse-inspect replay --fault` plays."""
        from dataclasses import replace

        from ._capture import End as CaptureEnd
        from ._capture import Response

        capture = self.capture
        timed = capture.timed or any(isinstance(f, Slow | Stall) for f in self.faults.faults)
        if self.status is not None:
            status, headers, payload = self.error_response()
            return replace(capture, response=Response(status=status, headers=tuple(headers), t=0.0),
                           chunks=(Chunk(0.0, payload),), end=CaptureEnd(kind="complete", t=0.0), timed=timed)  # fmt: skip
        steps = list(self.steps(1.0))
        end = steps.pop()
        assert isinstance(end, End)
        response = capture.response
        if response is not None and self.decoded:
            response = replace(response, headers=tuple((k, v) for k, v in response.headers if k.lower() != "content-encoding"))
        if end.how == COMPLETE:
            kind, cause = "complete", None
        elif end.recorded is not None and capture.end is not None:  # cut as recorded
            kind, cause = capture.end.kind, capture.end.error
        else:
            kind, cause = "server-disconnected", f"{self.faults.cut if end.recorded is None else 'the recording'} ({end.how})"
        return replace(capture, response=response, chunks=tuple(Chunk(s.at, s.data) for s in steps if isinstance(s, Send)),
                       end=CaptureEnd(kind=kind, t=end.at, error=cause), timed=timed)  # fmt: skip

    def steps(self, speed: float | None) -> Iterator[Step]:
        """What to write and when, then how to end: one pass of the replay. `speed`: 1 = recorded timing,
        10 = ten times faster, None (or 0) = no waiting (stalls and a slow link still take their time)."""
        steps = self._steps(speed or None)
        slow = self.faults.slow
        return _dripped(steps, slow.bytes_per_s) if slow is not None else steps

    def _steps(self, speed: float | None) -> Iterator[Step]:
        faults = self.faults
        clock = _Clock(speed)
        end = self.capture.end
        abrupt = abrupt_end(end)
        ended = (RESET, abrupt) if abrupt is not None else (COMPLETE, None)  # as recorded
        if not faults:  # as recorded: each chunk at its time, then the end as it ended
            for chunk in self.chunks:
                yield Send(clock.at(chunk.t), chunk.data)
            yield End(clock.at(end.t if end is not None else None), *ended)
            return
        if faults.no_end_marker:
            ended = (COMPLETE, None)  # the server ends the response itself, without its marker
        survey = self._surveyed()
        events_total, size = (survey.events, survey.size) if survey is not None else (None, None)
        cut = faults.cut
        cut_how = (RESET if cut.reset else CLOSE) if cut is not None else ""
        cut_events = _count(cut.value, events_total) if cut is not None and cut.at == "event" else None
        cut_byte = _count(cut.value, size) if cut is not None and cut.at == "byte" else None
        cut_time = float(cut.value) if cut is not None and cut.at == "time" else None  # type: ignore[arg-type]
        error = faults.error
        error_at = resolve(error.after_event, events_total) if error is not None else None
        stalls: dict[int, float] = {}
        for stall in faults.stalls:
            n = resolve(stall.after_event, events_total)
            stalls[n] = stalls.get(n, 0.0) + stall.seconds
        keepalive = faults.keepalive
        dropped = deque(survey.dropped if survey is not None else ())
        marker = _Boundaries(self.framing)
        beat = _keepalive(keepalive, _newline(self.chunks.chunks), self.framing) if keepalive is not None else b""
        events = pos = 0
        response = self.capture.response
        last_t = (response.t if response is not None else None) or 0.0
        between = True  # the bytes so far end between events: a keep-alive comment may go here

        every_event = keepalive is not None and not self.capture.timed  # no silences known: a comment at each boundary

        def at_events(n: int) -> Iterator[Step | None]:
            """What happens once `n` events have been sent: a stall, the cut or the error (then None: the end)."""
            if every_event:
                yield Send(clock.now, beat)
            if n in stalls:
                yield from clock.stall(stalls.pop(n), keepalive, beat)
            if n == cut_events:
                yield End(clock.now, cut_how)
                yield None
            if n == error_at:
                yield Send(clock.now, self.dialect.fault_error_in(self.framing, n))
                yield End(clock.now, COMPLETE)
                yield None

        for step in at_events(0):
            if step is None:
                return
            yield step
        if cut_byte == 0:
            yield End(clock.now, cut_how)
            return
        for chunk in self.chunks:
            data, t = chunk.data, chunk.t
            start, stop = pos, pos + len(data)
            if cut_time is not None and (t or 0.0) > cut_time:  # the cut comes in the silence before this chunk
                if keepalive is not None and between:
                    yield from clock.keepalives(keepalive, beat, last_t, cut_time)
                clock.at(cut_time)
                yield End(clock.now, cut_how)
                return
            if keepalive is not None and between and t is not None:
                yield from clock.keepalives(keepalive, beat, last_t, t)
            clock.at(t)
            last_t = t if t is not None else last_t
            # where this chunk must be split: event boundaries with something to do, and the byte cut
            splits: list[tuple[int, int]] = []  # (offset, events sent once the bytes before it are)
            for boundary, event in marker.feed(data, start):
                events += 1
                if every_event or events in stalls or events == cut_events or events == error_at:
                    splits.append((boundary, events))
            between = marker.last == stop
            if cut_byte is not None and start < cut_byte <= stop:
                splits.append((cut_byte, -1))
                splits.sort()
            sent = start
            for offset, n in splits:
                piece = _kept(data, start, sent, offset, dropped)
                if piece:
                    yield Send(clock.now, piece)
                sent = offset
                if n < 0:  # the byte cut
                    yield End(clock.now, cut_how)
                    return
                for step in at_events(n):
                    if step is None:
                        return
                    yield step
            piece = _kept(data, start, sent, stop, dropped)
            if piece:
                yield Send(clock.now, piece)
            pos = stop
        end_t = end.t if end is not None else None
        if keepalive is not None and between and end_t is not None:
            yield from clock.keepalives(keepalive, beat, last_t, end_t if cut_time is None else min(end_t, cut_time))
        if cut_time is not None and end_t is not None and end_t > cut_time:
            clock.at(cut_time)
            yield End(clock.now, cut_how)
            return
        yield End(clock.at(end_t), *ended)

    def _surveyed(self) -> _Survey | None:
        """The first pass, when the faults need it: a share of events or bytes, or the end markers to leave out."""
        faults = self.faults
        counts = [f.value for f in faults.faults if isinstance(f, Cut)]
        counts += [f.after_event for f in faults.stalls] + ([faults.error.after_event] if faults.error else [])
        if not faults.no_end_marker and not any(isinstance(c, Share) for c in counts):
            return None
        if self._survey is None:
            self._survey = _survey(self.chunks.chunks, self.framing, self.dialect if faults.no_end_marker else None)
        return self._survey


class _Survey(NamedTuple):
    events: int
    size: int
    dropped: tuple[tuple[int, int], ...]
    """The byte ranges of the end-marker events, each from its first line to past its blank line."""


def _survey(chunks: Iterable[Chunk], framing: str, dialect: Dialect | None) -> _Survey:
    """Count the events and bytes; with a `dialect`, find its end-marker events (the reader's END flag)."""
    marker = _Boundaries(framing)
    read = dialect.reader().feed if dialect is not None else None
    events = size = 0
    dropped: list[tuple[int, int]] = []

    def take(found: list[tuple[int, Event]]) -> None:
        nonlocal events
        for boundary, event in found:
            events += 1
            if read is not None and read(event) & EventFlags.END:
                dropped.append((event.start, boundary))

    for chunk in chunks:
        take(marker.feed(chunk.data, size))
        size += len(chunk.data)
    take(marker.close())
    return _Survey(events, size, tuple(dropped))


class _Boundaries:
    """The events of a body fed chunk by chunk, each with its boundary: the offset just past the blank line
    that ended it (past the LF of a CRLF, which may be the next chunk's first byte: such an event comes
    with the next chunk, its boundary that chunk's start or one past it). In the other framings an item's
    `end` is its boundary (past an NDJSON line's LF, an array element's comma, a message's CRC)."""

    def __init__(self, framing: str = "sse") -> None:
        self._parser = new_framer(framing)
        self._sse = framing == "sse"
        self._waiting: list[Event] = []
        self._prev = -1  # the last byte of the chunk before
        self.last = 0
        """The last boundary found."""

    def feed(self, data: bytes, start: int) -> list[tuple[int, Event]]:
        found: list[tuple[int, Event]] = []
        if self._waiting:
            boundary = start + 1 if data[:1] == b"\n" else start
            found += [(boundary, e) for e in self._waiting]
            self._waiting = []
        stop = start + len(data)
        for item in self._parser.feed(data):
            if not isinstance(item, Event):
                continue
            end = item.end
            before = data[end - 1 - start] if end - 1 >= start else self._prev
            if before != _CR or not self._sse:
                found.append((end, item))
            elif end < stop:
                found.append((end + 1 if data[end - start] == _LF else end, item))
            else:  # the CR ends this chunk: whether a LF follows, the next chunk says
                self._waiting.append(item)
        if data:
            self._prev = data[-1]
        if found:
            self.last = found[-1][0]
        return found

    def close(self) -> list[tuple[int, Event]]:
        waiting, self._waiting = self._waiting, []
        self._parser.close()
        return [(e.end, e) for e in waiting]


def _count(value: float | Share, total: int | None) -> int:
    """A cut's count of events or bytes (a whole number, or a share of `total`)."""
    return resolve(value if isinstance(value, Share) else int(value), total)


def _kept(data: bytes, start: int, lo: int, hi: int, dropped: deque[tuple[int, int]]) -> bytes:
    """The body bytes [lo, hi) of `data` (which begins at body offset `start`), those in the `dropped` ranges
    left out. The pieces asked for go forward through the body: the ranges behind them are let go."""
    while dropped and dropped[0][1] <= lo:
        dropped.popleft()
    if not dropped or dropped[0][0] >= hi:
        return data[lo - start : hi - start]
    kept = []
    at = lo
    for a, b in dropped:
        if a >= hi:
            break
        if a > at:
            kept.append(data[at - start : a - start])
        at = max(at, b)
    if at < hi:
        kept.append(data[at - start : hi - start])
    return b"".join(kept)


class _Clock:
    """The replay's wall time, in seconds after the request arrived: recorded time over the speed, plus the
    stalls so far; never going back (`now`)."""

    def __init__(self, speed: float | None) -> None:
        self.speed = speed
        self.shift = 0.0
        self.now = 0.0

    def at(self, t: float | None) -> float:
        """Move to recorded time `t` (no move for an untimed moment, or with no speed); the time now."""
        if self.speed and t is not None:
            self.now = max(self.now, t / self.speed + self.shift)
        return self.now

    def stall(self, seconds: float, keepalive: Keepalive | None, beat: bytes) -> Iterator[Step]:
        """`seconds` of silence (of wall time, whatever the speed), with the keep-alives (`beat`) in it."""
        start = self.now
        if keepalive is not None:
            every = keepalive.every / self.speed if self.speed else keepalive.every
            k = 1
            while k * every < seconds:
                yield Send(start + k * every, beat)
                k += 1
        self.shift += seconds
        self.now = start + seconds

    def keepalives(self, keepalive: Keepalive, beat: bytes, t0: float, t1: float) -> Iterator[Step]:
        """The keep-alives (`beat`) a server keeping the connection alive sends between recorded times t0 and t1."""
        k = 1
        while t0 + k * keepalive.every < t1:
            yield Send(self.at(t0 + k * keepalive.every), beat)
            k += 1


def _newline(chunks: Iterable[Chunk]) -> bytes:
    """The stream's line end, as its first line ends: CRLF or LF (LF for a body with no line end)."""
    prev = -1
    for chunk in chunks:
        data = chunk.data
        lf = data.find(b"\n")
        if lf >= 0:
            return b"\r\n" if (data[lf - 1] if lf else prev) == _CR else b"\n"
        if data:
            prev = data[-1]
    return b"\n"


def _keepalive(keepalive: Keepalive, newline: bytes, framing: str) -> bytes:
    """A keep-alive in the stream's framing: in an event stream a comment, `: text` and a blank line, as OpenRouter
    (`: OPENROUTER PROCESSING`) and DeepSeek (`: keep-alive`) send them; in NDJSON a blank line, as some servers
    send (the ndjson-spec lets a parser skip it; the ollama library's `json.loads` of each line fails on it); in a
    JSON array a line end, whitespace between elements. (An AWS event stream has none: the plan refuses it.)"""
    if framing != "sse":
        return newline
    return b": " + keepalive.text.encode("utf-8") + newline + newline


def _dripped(steps: Iterator[Step], rate: int) -> Iterator[Step]:
    """The steps through a link carrying `rate` bytes a second: a piece of a tenth of a second's bytes at a
    time, each when the link has carried it, never before it was to be sent."""
    piece = max(1, rate // 10)
    free = 0.0  # when the link has carried everything before
    for step in steps:
        if isinstance(step, End):
            yield step._replace(at=max(step.at, free))
            return
        data = step.data
        for i in range(0, len(data), piece):
            part = data[i : i + piece]
            free = max(step.at, free) + len(part) / rate
            yield Send(free, part)
