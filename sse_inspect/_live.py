"""Streams watched while they are being recorded: what `record`'s live views show, with no I/O.

    stream = LiveStream(head)                            # the capture's header: request, response
    step = stream.feed([0.41, 0.41], [b"data: {...}\\n\\n", b"data: {...}\\n\\n"])   # bytes as written, when
    stream.tick(3.2)                                     # now: a silence that became a stall, once
    step = stream.close(End(kind="complete", t=2.1))          # how the stream ended: its `Outcome`

No clock, no socket, no thread: the caller feeds the bytes the recorder wrote to the capture file
(redacted, at the times written) and says what time it is. A slice is content-decoded, framed by the
framer the capture's headers pick (`_analysis.framer_for`) and read by the dialect's reader: the parts
`analyze` and `Playback` use, so once the stream is over its counts, times, answer and outcome are
what `show` says of the file (tests/test_live.py holds them to it).

Telling the dialect: `analyze` reads `DETECT_EVENTS` events ahead before it reads any, which a live
view cannot wait for (a slow model takes seconds for fifty). Here the dialect is told from the
events so far, at 1, 2, 4, 8, ... events, and for good from the first DETECT_EVENTS (or, for a
shorter stream, at its end) exactly as `analyze` tells it. When a telling names another dialect, the
events so far are read again by it and the step says `restarted`: its `text` replaces the text before.

What is kept does not grow with the stream, but for the reader's answer (its text, as `show` holds
it): the last `TAIL` characters of the answer for the view, the events (and parsed chunks) of the first
DETECT_EVENTS until the dialect is sure, counters, and check's `TimingCheck`, fed a parsed chunk at a
time as the analysis pass feeds it, whose release still coming in is the burst shown (if it is one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ._analysis import DETECT_EVENTS, framer_for
from ._capture import Capture, Chunk, End
from ._decoding import BodyDecoder, ContentDecodingError
from ._events import Comment, Event, Notice
from ._framing import UNTERMINATED
from ._outcome import Outcome, decide_outcome
from ._playback import TextFollower
from .checks._model import Thresholds
from .checks.timing import TimingCheck
from .dialects import Answer, Dialect, EventFlags, Reader, detect_dialect

__all__ = ["STALL_S", "TAIL", "Burst", "LiveStep", "LiveStream", "Stall"]

TAIL = 4000
"""Characters of the answer's end a live stream keeps for its view."""
STALL_S = 2.0
"""The default silence (seconds) after which a live stream is shown as stalled."""

Item = Event | Comment | Notice


@dataclass(frozen=True, slots=True)
class Burst:
    """Text events released together after a silence: a hop that held them (check's `buffering-burst` rule,
    `TimingCheck.holding`, on the stream so far). `events` grows while the release goes on; each step that
    grows it says so."""

    t: float
    """When the release began."""
    events: int
    """Text events released so far."""
    silence_s: float
    """The silence before it."""


@dataclass(frozen=True, slots=True)
class Stall:
    """A silence longer than the stall threshold: since `since` (seconds since the request), `silence_s` long."""

    since: float
    silence_s: float
    first_byte: bool
    """Whether no byte of the body has come yet (the wait for the first byte)."""


@dataclass(frozen=True, slots=True)
class LiveStep:
    """What one slice of bytes (or the end) brought to a live stream."""

    t: float | None
    size: int
    """Wire bytes in the slice (0 at the end)."""
    events: tuple[tuple[Event, EventFlags], ...]
    """The events the slice completed, each with what the dialect saw in it."""
    others: tuple[Comment | Notice, ...]
    """Its comments and notices."""
    text: str
    """What the answer's text gained; with `restarted`, the whole text so far, replacing what was shown."""
    restarted: bool = False
    burst: Burst | None = None
    """The release this slice belongs to, when it is (or became) a burst."""
    resumed: Stall | None = None
    """The stall this slice ended, if the stream was stalled."""
    outcome: Outcome | None = None
    """At the end (`close`), how the stream ended."""


class LiveStream:
    """One stream as it is recorded: `feed` it what is written, `tick` it the time, `close` it at the end.

    Its attributes are the live table's columns; read them between calls (they change only in them).
    """

    def __init__(self, head: Capture, *, stall_s: float = STALL_S, thresholds: Thresholds | None = None) -> None:
        self.head = head
        self.stall_s = stall_s
        self.thresholds = thresholds or Thresholds()
        self.url = head.request.url if head.request else ""
        self.method = head.request.method if head.request else ""
        self.status = head.response.status if head.response else None
        self._framer = framer_for(head)
        try:
            decoder = BodyDecoder(head.content_encoding)
        except ContentDecodingError:
            decoder = None
        self._decoder: BodyDecoder | None = None if decoder is None or decoder.identity else decoder
        self.decode_failed = decoder is None
        """Whether the body could not be content-decoded (read as it came from there on)."""
        # the dialect: provisional until `sure`
        self._ahead: list[Event] | None = []  # the events so far while the dialect may change (then None)
        self._flags: dict[int, EventFlags] = {}  # and what the reader saw in them, by event index
        self._next_telling = 1
        self.dialect: Dialect = detect_dialect([], self.url)
        self.sure = False
        """Whether the dialect is told for good (from DETECT_EVENTS events, or at the end)."""
        self._reader: Reader = self.dialect.reader()
        self._follow = TextFollower(self._reader)
        # counts and times, as `Timing` has them
        self.chunks = self.bytes = self.decoded_bytes = 0
        self.events = self.text_events = self.comments = 0
        self.ttfb: float | None = None
        self.first_event: float | None = None
        self.first_token: float | None = None
        self.last_text: float | None = None
        self.end_marker: float | None = None
        self.last_t = 0.0
        """When the last byte came (0: the request; nothing yet)."""
        self.max_gap = 0.0
        self.text_chars = 0
        self.tail = ""
        """The answer's last TAIL characters."""
        self._unterminated = False
        self.notice_counts: dict[str, int] = {}
        # what is happening
        self.stalled: Stall | None = None
        self.stalls = 0
        self.bursts: list[Burst] = []
        """The bursts so far (each as it stood last)."""
        self._timing = TimingCheck(self.thresholds)
        """check's timing, fed a parsed chunk at a time: its release still coming in is the burst, if any."""
        self._pieces: list[tuple[float, bytes, list[Event]]] | None = []
        """The parsed chunks and their events while the dialect may change (then None): to feed `_timing`
        again with the new dialect's flags."""
        self.ended: End | None = None
        self.outcome: Outcome | None = None

    # -- what the views read

    @property
    def tokens_per_s(self) -> float | None:
        """Text events per second between the first and the last of them, as `Timing.tokens_per_s`."""
        if self.text_events < 2 or self.first_token is None or self.last_text is None:
            return None
        span = self.last_text - self.first_token
        return (self.text_events - 1) / span if span > 0 else None

    def silence(self, now: float) -> float:
        """How long nothing has come, at `now` (0 once ended)."""
        return 0.0 if self.ended is not None else max(0.0, now - self.last_t)

    def answer(self) -> Answer:
        """The answer as far as it is read (it costs the answer's length). Once the stream is closed, its
        reader is let go (its `tail` stays): the whole answer is its capture file's (`sse-inspect text`)."""
        if self.ended is not None:
            raise ValueError("the stream is closed: its answer is in its capture file (sse-inspect text FILE)")
        return self._reader.answer(self.dialect)

    # -- what the caller tells

    def feed(self, times: Sequence[float], datas: Sequence[bytes]) -> LiveStep:
        """Bytes as they were written (`datas[k]` at `times[k]`, seconds since the request)."""
        if self.ended is not None:
            raise ValueError("the stream is closed")
        t = times[-1] if times else self.last_t
        size = sum(map(len, datas))
        resumed = None
        if self.stalled is not None:
            resumed = dataclasses.replace(self.stalled, silence_s=(times[0] if times else t) - self.stalled.since)
            self.stalled = None
        events: list[tuple[Event, EventFlags]] = []
        others: list[Comment | Notice] = []
        for at, data in zip(times, datas):
            if not data:
                continue
            if self.ttfb is None:
                self.ttfb = at
            self.max_gap = max(self.max_gap, at - self.last_t)
            self.last_t = at
            self.chunks += 1
            self.bytes += len(data)
            for piece in self._decode(data):
                self.decoded_bytes += len(piece)
                self._parsed(Chunk(at, piece), self._framer.feed(piece, at), events, others)
        step = self._read(events, others, t, size)
        burst = self._burst()
        return dataclasses.replace(step, burst=burst, resumed=resumed) if burst or resumed else step

    def tick(self, now: float) -> Stall | None:
        """The time is `now`: a Stall when the silence has just become one (once per silence), else None."""
        if self.ended is not None or self.stalled is not None:
            return None
        silence = now - self.last_t
        if silence < self.stall_s:
            return None
        self.stalled = Stall(self.last_t, silence, first_byte=self.ttfb is None)
        self.stalls += 1
        return self.stalled

    def close(self, end: End) -> LiveStep:
        """The stream is over (the recording's end line): what the framer still held, and the outcome."""
        if self.ended is not None:
            raise ValueError("the stream is closed")
        events: list[tuple[Event, EventFlags]] = []
        others: list[Comment | Notice] = []
        if self._decoder is not None:
            try:
                tail = self._decoder.flush()
            except Exception:  # noqa: BLE001 - a body that stops decoding is read as it came, as `body_chunks` does
                tail = b""
            if tail:
                self.decoded_bytes += len(tail)
                self._parsed(Chunk(self.last_t, tail), self._framer.feed(tail, self.last_t), events, others)
        self._parsed(None, self._framer.close(), events, others)
        step = self._read(events, others, end.t, 0, final=True)
        text = self.answer().text  # a reader may hold pieces back until the end (A2A's artifact parts)
        if len(text) != self.text_chars or not text.endswith(self.tail):
            step = dataclasses.replace(step, text=text, restarted=True)
            self._keep(text, True)
        self.ended = end
        self.stalled = None
        reader = self._reader
        self.outcome = decide_outcome(
            errored=bool(reader.errors),
            end_marker=self.dialect.expected_marker(seen=bool(reader.end_marker_events)),
            end_marker_seen=bool(reader.end_marker_events),
            end=end,
            status=self.status,
            unterminated=self._unterminated,
        )
        # What grows with the stream goes: a session keeps its finished streams (their tails) for the views
        del self._reader, self._follow, self._framer, self._timing
        self._decoder = None
        return dataclasses.replace(step, outcome=self.outcome)

    # -- inside

    def _decode(self, data: bytes) -> list[bytes]:
        if self._decoder is None:
            return [data]
        try:
            return list(self._decoder.pieces(data))
        except Exception:  # noqa: BLE001 - the rest is read undecoded, as `body_chunks` reads it
            self._decoder, self.decode_failed = None, True
            return [data]

    def _parsed(
        self, chunk: Chunk | None, items: list[Item], events: list[tuple[Event, EventFlags]], others: list[Comment | Notice]
    ) -> None:
        """A parsed chunk's items (None: what the framer's close gave) read and counted, its events added to
        `events` with their flags, the rest to `others`; then the chunk to check's timing, as the pass shows it."""
        mine: list[Event] = []
        texts = 0
        for item in items:
            if type(item) is Event:
                flags = self._take(item)
                texts += bool(flags & EventFlags.TEXT)
                events.append((item, flags))
                mine.append(item)
            elif type(item) is Comment:
                self.comments += 1
                others.append(item)
            else:
                assert isinstance(item, Notice)
                self.notice_counts[item.kind] = self.notice_counts.get(item.kind, 0) + 1
                self._unterminated |= item.kind in UNTERMINATED
                others.append(item)
        if self._ahead is not None:
            self._ahead += mine
            if self._pieces is not None and chunk is not None:
                self._pieces.append((chunk.t or 0.0, chunk.data, mine))
        if chunk is not None:
            self._timing.chunk(self.chunks, chunk, texts)

    def _read(
        self, events: list[tuple[Event, EventFlags]], others: list[Comment | Notice], t: float | None, size: int, *,
        final: bool = False,
    ) -> LiveStep:  # fmt: skip
        """A slice read: tell the dialect again when it is due, and what the answer's text gained."""
        restarted = False
        if self._ahead is not None and (final or len(self._ahead) >= self._next_telling):
            restarted = self._tell(final)
            if restarted:  # the events were read again: their flags are the new dialect's
                events = [(event, self._flags[event.index]) for event, _ in events]
        if self.sure:
            self._flags, self._pieces = {}, None
        text, new_choice = self._follow.new_text()
        restarted |= new_choice
        self._keep(text, restarted)
        return LiveStep(t, size, tuple(events), tuple(others), text, restarted)

    def _take(self, event: Event) -> EventFlags:
        flags = self._reader.feed(event)
        self._timing.event(event, flags)
        t = event.t
        if not self.events:
            self.first_event = t
        self.events += 1
        if flags & EventFlags.TEXT:
            if not self.text_events:
                self.first_token = t
            self.text_events += 1
            self.last_text = t
        if flags & EventFlags.END and self.end_marker is None:
            self.end_marker = t
        if self._ahead is not None:
            self._flags[event.index] = flags
        return flags

    def _tell(self, final: bool) -> bool:
        """Tell the dialect from the events so far (for good from the first DETECT_EVENTS, or at the end);
        when it is another, read them again with it. Whether it changed."""
        assert self._ahead is not None
        sure = final or len(self._ahead) >= DETECT_EVENTS
        dialect = detect_dialect(self._ahead[:DETECT_EVENTS], self.url)
        changed = type(dialect) is not type(self.dialect)
        if changed:
            self.dialect, self._reader = dialect, dialect.reader()
            self._follow = TextFollower(self._reader)
            self.events = self.text_events = 0
            self.first_event = self.first_token = self.last_text = self.end_marker = None
            self._flags = {}
            self._timing = TimingCheck(self.thresholds)
            pieces = self._pieces or []
            read = {id(event) for _, _, mine in pieces for event in mine}
            for n, (at, data, mine) in enumerate(pieces):  # the chunks again, as the pass shows them
                texts = sum(bool(self._take(event) & EventFlags.TEXT) for event in mine)
                self._timing.chunk(n, Chunk(at, data), texts)
            for event in self._ahead:  # (and those of no chunk: the framer's close gave them)
                if id(event) not in read:
                    self._take(event)
        if sure:
            self.sure, self._ahead = True, None
            return changed
        while self._next_telling <= len(self._ahead):
            self._next_telling = min(2 * self._next_telling, DETECT_EVENTS)
        return changed

    def _keep(self, text: str, restarted: bool) -> None:
        if restarted:
            self.text_chars, self.tail = len(text), text[-TAIL:]
        elif text:
            self.text_chars += len(text)
            self.tail = (self.tail + text)[-TAIL:]

    def _burst(self) -> Burst | None:
        """The release the last slice is part of, when it is a burst so far (check's rule, `TimingCheck.holding`)."""
        release = self._timing.holding()
        if release is None:
            return None
        burst = Burst(release.t, release.text_events, release.silence)
        if self.bursts and self.bursts[-1].t == release.t:
            self.bursts[-1] = burst
        else:
            self.bursts.append(burst)
        return burst
