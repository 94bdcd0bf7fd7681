"""From a capture to what it means: decode, re-cut, parse, rebuild and time it, in one pass.

    analysis = analyze(load_capture("captures/openai-chat-text.jsonl"))
    analysis.answer.text, analysis.timing.ttfb, analysis.events[0]

    with open_capture("huge.jsonl") as stream:   # memory that does not grow with the capture
        analysis = analyze(stream, keep=False, observers=[...])

The pass reads each chunk once. What must see every chunk or event (the checks, the terminal
timeline, `events --json`) does so as an `Observer`, so nothing needs the events kept.

The way from a capture to its parsed chunks and its dialect is written once, here, and `Playback`
goes it too: `body` (content-decoded, re-cut), `parse_chunks` (each chunk with its items), `detect`
(the dialect, from the first events).

A speed module (benchmarks/end_to_end.py): the per-chunk and per-event loops (`_Pass.wired`,
`_Pass.take`) hold what they use in local variables and test `type(item) is Event` rather than
`isinstance`, since they run once per chunk and per event of captures of many megabytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ._capture import Capture, Chunk, provide_answer_text
from ._decoding import body_chunks, is_identity
from ._events import Comment, Event, Notice
from ._fastjson import ACCELERATE_AFTER, accelerate
from ._loading import CaptureStream, in_blocks
from ._ndjson import framing_by_type
from ._outcome import Outcome, decide_outcome
from ._framing import UNTERMINATED, BodyFramer, Framer
from ._parser import ParseStats
from ._rechunk import RechunkSpec, iter_rechunk
from .dialects import Answer, Dialect, EventFlags, Holding, Reader, detect_dialect, get_dialect
from .dialects._base import END, TEXT  # the flags as plain ints: speed code for the per-event loop

__all__ = [
    "DETECT_EVENTS", "Analysis", "Observer", "Parsed", "Timing", "analyze", "body", "detect", "framer_for", "parse_chunks", "told_framing",
]  # fmt: skip

DETECT_EVENTS = 50
"""How many leading events dialect detection looks at."""
NOTICES_KEPT = 100
"""Notices of each kind an analysis that keeps no events holds on to (observers see them all)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """When things arrived, in seconds since the request was sent (None: the capture is untimed)."""

    timed: bool
    """Whether every chunk has an arrival time (False for raw bodies and untimed imports)."""
    ttfb: float | None
    """Time to the first byte of the body."""
    first_event: float | None
    first_token: float | None
    """Time to the first event that carried answer text, reasoning or a tool call piece."""
    end_marker: float | None
    """Time of the first end marker."""
    total: float | None
    chunks: int
    """Chunks as they crossed the wire; under a re-cut, the re-cut chunks (and `ttfb` and the
    silences are theirs too)."""
    bytes: int
    """Body bytes as they crossed the wire (compressed, if they were)."""
    decoded_bytes: int
    events: int
    comments: int
    text_events: int
    tokens_per_s: float | None
    """Text-carrying events per second between the first and the last of them ("tokens-ish")."""
    max_gap: float | None
    """The longest time without a byte, counted from the request and up to the end of the
    stream when the recording knows when it ended (None: untimed)."""
    max_gap_at: float | None
    """When that silence ended."""
    end_silence: tuple[float, float] | None = None
    """The silence after the last byte, (from, to), when the recording knows when the stream ended."""
    max_gap_final: bool = False
    """Whether the longest silence is `end_silence`: the stream ended (or was cut) after it."""


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """A capture, the events parsed from it, the rebuilt answer and its timing.

    With `analyze(..., keep=False)` the chunks, events and comments are not kept (empty
    tuples), the notices are the first `NOTICES_KEPT` of each kind, and `capture` holds no chunks.
    """

    capture: Capture
    chunks: tuple[Chunk, ...]
    """The body chunks as parsed: content-decoded and re-cut."""
    events: tuple[Event, ...]
    comments: tuple[Comment, ...]
    notices: tuple[Notice, ...]
    stats: ParseStats
    answer: Answer
    timing: Timing
    outcome: Outcome
    """How the stream ended: complete, cut, errored, ... (decided here once, for every check and view)."""
    grammar: Dialect = dataclasses.field(compare=False, repr=False)
    """The dialect the answer was rebuilt with (`dialect` is its name; with `rebuild=False`, the generic one).
    Not compared: a dialect is a stateless grammar, and `answer` holds its name."""
    rechunk: RechunkSpec | None = None
    framing: str = "sse"
    """How the body is framed, one of `FRAMINGS`: "sse", "ndjson", "json-array", "eventstream" (the Content-Type
    says, else the first bytes: `_framing.BodyFramer`)."""
    kept: bool = True
    """Whether the chunks and events were kept."""
    notice_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    """How many notices of each kind the pass saw (all of them, kept or not)."""

    @property
    def dialect(self) -> str:
        return self.answer.dialect


Parsed = tuple[int | None, Chunk | None, list[Event | Comment | Notice]]
"""A chunk's number, the chunk and its items (None, None: what came at the end of the body)."""


class Observer:
    """Watches one analysis pass as it goes; subclasses override what they need.

    `wire` sees the chunks as read; the other calls start once the dialect is known (after
    the first events), in stream order: each parsed chunk's items, then the chunk itself.
    """

    def wire(self, chunk: Chunk) -> None:
        """A chunk as it crossed the wire (still content-encoded, if it was)."""

    def wire_block(self, chunks: list[Chunk]) -> None:
        """Chunks as they crossed the wire, read together, in order: `wire` for each, unless overridden (an
        observer that overrides it is called with every chunk in lists, its `wire` never)."""
        wire = self.wire
        for chunk in chunks:
            wire(chunk)

    def event(self, event: Event, flags: EventFlags) -> None:
        """An event and what the dialect saw in it, as `EventFlags` (`flags & EventFlags.TEXT`, ...)."""

    def comment(self, comment: Comment) -> None:
        """A comment line."""

    def notice(self, notice: Notice) -> None:
        """Something the parser or the content decoding noticed."""

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> bool | None:
        """A chunk as parsed, after its items; `text_events` of its events carried output. True: it needs
        no more chunks (it has what it looked for), and is called no more."""

    def event_block(self, events: list[tuple[Event, EventFlags]]) -> None:
        """A block's events, in order: `event` for each, unless overridden. An observer that overrides it is
        called with every event in lists, its `event` never; each list comes after the block's comments and
        notices and before its chunks (`chunk_block` or `chunk`): a weaker order than `event`'s, for speed."""
        event = self.event
        for item, flags in events:
            event(item, flags)

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> bool | None:
        """A block's chunks as parsed, in order, as `(index, chunk, text_events)`, after all of the block's
        items: `chunk` for each, unless overridden (then `chunk` is never called, and the list can be
        empty). True: it needs no more chunks, and is called no more."""
        chunk = self.chunk
        for index, item, text_events in chunks:
            if chunk(index, item, text_events):
                return True
        return None

    def close(self, analysis: Analysis) -> None:
        """The pass is over; `analysis` is what it found."""


def analyze(
    source: Capture | CaptureStream,
    *,
    rechunk: RechunkSpec | None = None,
    dialect: str | None = None,
    keep: bool = True,
    rebuild: bool = True,
    observers: Sequence[Observer] = (),
    holding: Holding = Holding.WHOLE,
) -> Analysis:
    """Parse a capture (or read an open `CaptureStream` through) and rebuild its answer with `dialect`
    (detected when None). `keep=False` keeps no chunks or events: memory stays flat however long the
    stream (but for the answer's text, unless `holding` spools, glimpses or counts it: `Holding`);
    `rebuild=False` rebuilds no answer (an empty generic one) and gives every event the flags 0;
    `observers` see everything as it passes. A re-cut (`rechunk`)
    holds the body whole, and stands for the wire: the timing and the `wire` observers see the
    decoded body cut as it says, each new chunk arriving when the original chunk holding its last
    byte did (`whole`: everything at the last chunk's time)."""
    head = source.capture if isinstance(source, CaptureStream) else source
    keep_wire = keep and isinstance(source, CaptureStream)  # a capture has its chunks already
    run = _Pass(head, keep, observers, keep_wire=keep_wire, rechunked=rechunk is not None)
    blocks = source.blocks() if isinstance(source, CaptureStream) else in_blocks(source.chunks)
    decode_notices: list[Notice] = []
    parser = framer_for(head)
    parsed: Iterator[list[Parsed]]
    if rechunk is None and is_identity(head):  # the common way: the chunks in the blocks they were read in
        parsed = parse_blocks(run.wired_blocks(blocks), parser, decode_notices)
    else:  # decoded or re-cut: a chunk at a time (a live stream's decoded chunks are not held back)
        chunks = body(head, itertools.chain.from_iterable(blocks), decode_notices, rechunk, read=run.read,
                      wired=run.wired)  # fmt: skip
        parsed = ([entry] for entry in parse_chunks(chunks, parser, decode_notices))
    if not rebuild:
        run.dialect, run.reader = get_dialect("generic"), _Unread()
    else:
        run.dialect, parsed = detect_blocks(parsed, head.request.url if head.request else None, dialect)
        run.reader = run.dialect.reader()
        run.reader.holding = holding
    run.take(parsed)
    capture = source.capture if isinstance(source, CaptureStream) else source  # a stream's end is known now
    return run.finish(capture, parser.stats, rechunk, parser.framing or "sse")


def answer_text(capture: Capture) -> str:
    """The rebuilt answer's text (first choice), in the detected dialect: what `Capture.text` says."""
    return analyze(capture).answer.text


provide_answer_text(answer_text)  # the capture values sit below this module: it hands `Capture.text` down


def body(
    capture: Capture,
    wire: Iterable[Chunk],
    notices: list[Notice],
    rechunk: RechunkSpec | None,
    *,
    read: Callable[[Iterable[Chunk]], Iterable[Chunk]] = iter,
    wired: Callable[[Iterable[Chunk]], Iterable[Chunk]] = iter,
) -> Iterable[Chunk]:
    """The capture's body chunks as parsed, from its `wire` chunks: content-decoded (the problems added
    to `notices`) and re-cut as `rechunk` says. A re-cut stands for the wire: `read` sees the chunks as
    read, `wired` the chunks that stand for the wire (the re-cut ones, else the ones read)."""
    if rechunk is not None:  # a re-cut needs the body whole; each new chunk comes when its last byte did
        return wired(iter_rechunk(list(body_chunks(capture, notices, read(wire))), rechunk, framing=told_framing(capture)))
    chunks = wired(wire)
    return chunks if is_identity(capture) else body_chunks(capture, notices, chunks)


def framer_for(capture: Capture) -> BodyFramer:
    """The framer for the capture's body: the framing its headers decide (`told_framing`), else its first bytes tell."""
    return BodyFramer(framing=told_framing(capture))


def told_framing(capture: Capture) -> str | None:
    """The framing a capture's headers decide: the one its Content-Type names (`text/event-stream`,
    `application/x-ndjson`, ...); "sse" for an error response whose type names none (its body is the server's
    refusal, shown as it is, not read as a stream of JSON); None when the first bytes must tell."""
    response = capture.response
    if response is None:
        return None
    framing = framing_by_type(response.header("content-type"))
    if framing is None and not 200 <= response.status < 300:
        return "sse"
    return framing


def parse_chunks(chunks: Iterable[Chunk], parser: Framer, notices: list[Notice]) -> Iterator[Parsed]:
    """Each chunk, numbered, with what `parser` parsed from it; then (None, None, the `notices` and what
    the parser's close gives)."""
    feed = parser.feed
    for index, chunk in enumerate(chunks):
        yield index, chunk, feed(chunk.data, chunk.t)
    yield None, None, [*notices, *parser.close()]


def parse_blocks(blocks: Iterable[list[Chunk]], parser: Framer, notices: list[Notice]) -> Iterator[list[Parsed]]:
    """`parse_chunks`, a block of chunks at a time: a list of each block's chunks with their items (the parser
    reads a block at once, `feed_block`), then [(None, None, the notices and the close's)]."""
    feed_block = parser.feed_block
    start = 0
    for block in blocks:
        stop = start + len(block)
        yield list(zip(range(start, stop), block, feed_block(list(map(_DATA, block)), list(map(_TIME, block)))))
        start = stop
    yield [(None, None, [*notices, *parser.close()])]


def detect(parsed: Iterator[Parsed], url: str | None, name: str | None = None) -> tuple[Dialect, Iterator[Parsed]]:
    """The dialect `name` says, or (None) the one the first DETECT_EVENTS events tell, and the parsed
    chunks from the first: telling it reads ahead as far as those events, no further."""
    if name is not None:
        return get_dialect(name), parsed
    ahead: list[Parsed] = []
    events = 0
    for entry in parsed:
        ahead.append(entry)
        events += sum(type(x) is Event for x in entry[2])
        if events >= DETECT_EVENTS or entry[0] is None:
            break
    first = [x for _, _, items in ahead for x in items if type(x) is Event][:DETECT_EVENTS]
    return detect_dialect(first, url), itertools.chain(ahead, parsed)  # type: ignore[arg-type]


def detect_blocks(
    parsed: Iterator[list[Parsed]], url: str | None, name: str | None = None
) -> tuple[Dialect, Iterator[list[Parsed]]]:
    """`detect`, over parsed chunks in blocks (`parse_blocks`)."""
    if name is not None:
        return get_dialect(name), parsed
    ahead: list[list[Parsed]] = []
    events = 0
    for block in parsed:
        ahead.append(block)
        events += sum(type(x) is Event for _, _, items in block for x in items)
        if events >= DETECT_EVENTS or block[-1][0] is None:
            break
    first = [x for _, _, items in itertools.chain.from_iterable(ahead) for x in items if type(x) is Event]
    return detect_dialect(first[:DETECT_EVENTS], url), itertools.chain(_drained(ahead), parsed)


def _drained(blocks: list[list[Parsed]]) -> Iterator[list[Parsed]]:
    """The blocks, each let go of once given (a read-ahead list would hold them all the pass long)."""
    blocks.reverse()
    while blocks:
        yield blocks.pop()


_NOTHING = EventFlags(0)


class _Unread(Reader):
    """A reader that reads nothing, for `analyze(rebuild=False)`."""

    def feed(self, event: Event) -> EventFlags:
        return _NOTHING

    def feed_many(self, events: list[Event]) -> list[EventFlags]:
        return [_NOTHING] * len(events)

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return False

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        pass


def _hooks(observers: Sequence[Observer], name: str) -> list[Callable[..., None]]:
    """The `name` methods of the observers that have one of their own (calling the others is waste)."""
    return [getattr(o, name) for o in observers if _has(o, name)]


def _has(observer: Observer, name: str) -> bool:
    """Whether `observer` has a `name` method of its own."""
    return getattr(type(observer), name) is not getattr(Observer, name)


_INDEX, _CHUNK, _ITEMS = (operator.itemgetter(i) for i in range(3))  # the columns of a parsed block
_FIRST = _INDEX  # (an item list's first item: the same getter)
_DATA, _TIME = operator.attrgetter("data"), operator.attrgetter("t")  # a chunk's
_ONE = {1}
_EVENTS = {Event}


class _Pass:
    """The state of one analysis pass: only counters, unless asked to keep the events."""

    def __init__(
        self, capture: Capture, keep: bool, observers: Sequence[Observer], *, keep_wire: bool, rechunked: bool
    ) -> None:
        self.dialect: Dialect | None = None  # told by `analyze` before `take`
        self.reader: Reader | None = None
        self.keep = keep
        self.observers = tuple(observers)
        self.on_wire = [o.wire_block for o in observers if _has(o, "wire") or _has(o, "wire_block")]
        self.on_events = _hooks(observers, "event_block")  # (the block hooks: `event_block`, `chunk_block`)
        self.on_event = [o.event for o in observers if _has(o, "event") and not _has(o, "event_block")]
        self.on_comment = _hooks(observers, "comment")
        self.on_notice = _hooks(observers, "notice")
        self.on_chunks = _hooks(observers, "chunk_block")
        self.on_chunk = [o.chunk for o in observers if _has(o, "chunk") and not _has(o, "chunk_block")]
        # kept, when keeping (the wire chunks only when a stream brought them: a capture has its own;
        # by `read` under a re-cut, by `wired` else)
        self.wire_chunks: list[Chunk] | None = [] if keep_wire else None
        self.rechunked = rechunked
        self.chunks: list[Chunk] = []
        self.events: list[Event] = []
        self.comments: list[Comment] = []
        self.notices: list[Notice] = []
        self.notice_counts: dict[str, int] = {}
        self.text_indices: list[int] = []
        # the wire
        self.n_wire = self.wire_bytes = 0
        self.read_bytes: int | None = None  # counted by `read`: the wire's bytes under a re-cut
        self.all_timed = True
        self.ttfb: float | None = None
        self.last_t = 0.0  # the request: a hop holding the whole body is silent from there
        self.max_gap: float | None = None
        self.max_gap_at: float | None = None
        # the parsed stream
        self.decoded_bytes = self.n_events = self.n_comments = self.n_text = 0
        self.first_event: float | None = None
        self.first_text: float | None = None
        self.last_text: float | None = None
        self.end_marker: float | None = None

    def read(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        """The chunks as read, kept if keeping, their bytes counted (for a re-cut, which stands for
        the wire in `wired`: the bytes that crossed the wire are still these)."""
        kept = self.wire_chunks
        size = 0
        try:
            for chunk in chunks:
                size += len(chunk.data)
                if kept is not None:
                    kept.append(chunk)
                yield chunk
        finally:
            self.read_bytes = size

    def wired(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        """The chunks that stand for the wire, one at a time: `wired_blocks` of blocks of one."""
        for block in self.wired_blocks([chunk] for chunk in chunks):
            yield block[0]

    def wired_blocks(self, blocks: Iterable[list[Chunk]]) -> Iterator[list[Chunk]]:
        """The chunks that stand for the wire, in blocks, after counting them and their silences and showing
        them to the wire observers (and keeping them, if keeping, unless `read` did: a re-cut's are not the wire's)."""
        on_wire, kept = self.on_wire, None if self.rechunked else self.wire_chunks
        n = size = 0
        ttfb: float | None = None
        max_gap: float | None = None
        max_gap_at: float | None = None
        timed, last = True, self.last_t
        try:
            for block in blocks:
                if not n:
                    ttfb = block[0].t
                n += len(block)
                size += sum([len(chunk.data) for chunk in block])
                ts = [chunk.t for chunk in block]
                if timed and None not in ts and math.isfinite(sum(ts)):  # type: ignore[arg-type]  # the common block: C loops
                    gaps = [ts[0] - last, *map(operator.sub, ts[1:], ts[:-1])]  # type: ignore[operator]
                    gap = max(gaps)
                    if max_gap is None or gap > max_gap:
                        max_gap, max_gap_at = gap, ts[gaps.index(gap)]
                    last = ts[-1]  # type: ignore[assignment]
                    ts = []
                for t in ts:  # (else a chunk at a time)
                    if t is None:
                        timed = False
                    elif timed:
                        gap = t - last
                        if max_gap is None or gap > max_gap:
                            max_gap, max_gap_at = gap, t
                        last = t
                if kept is not None:
                    kept.extend(block)
                for hook in on_wire:
                    hook(block)
                yield block
        finally:
            self.n_wire, self.wire_bytes, self.ttfb, self.all_timed, self.last_t = n, size, ttfb, timed, last
            self.max_gap, self.max_gap_at = max_gap, max_gap_at

    def take(self, parsed: Iterable[list[Parsed]]) -> None:
        """Every parsed chunk's items, in order, read by the dialect's reader, counted, kept if keeping,
        shown to the observers (to the batch hooks a block at a time, after its items)."""
        assert self.reader is not None
        read, keep = self.reader.feed, self.keep
        on_event, on_comment, on_notice, on_chunk = self.on_event, self.on_comment, self.on_notice, self.on_chunk
        on_events, on_chunks = self.on_events, self.on_chunks
        events, comments, notices, counts = self.events, self.comments, self.notices, self.notice_counts
        chunks, text_indices = self.chunks, self.text_indices
        n_events = n_comments = n_text = decoded = 0
        first_event: float | None = None
        first_text: float | None = None
        last_text: float | None = None
        end_marker: float | None = None
        read_many = self.reader.feed_many
        for block in parsed:
            # The block path when nothing needs the events or chunks one at a time (the per-chunk hooks that
            # look at a stream's start are done after a few blocks; a block this path takes holds events
            # only: the comment and notice hooks have nothing to see there)
            if not on_chunk and not on_event and not keep and block[-1][0] is not None:
                # The common block: each chunk completed one event and nothing else (a live stream's reads, a
                # token each). Its events are read together (`Reader.feed_many`) and counted by C loops over
                # the block's columns; a block of text events only (most) needs no per-event Python here.
                items = list(map(_ITEMS, block))
                if set(map(len, items)) == _ONE:
                    flat: list[Event] = list(map(_FIRST, items))
                    if set(map(type, flat)) == _EVENTS:
                        n = len(flat)
                        if n_events < ACCELERATE_AFTER <= n_events + n:
                            accelerate()
                        marks = read_many(flat)
                        if not n_events:
                            first_event = flat[0].t
                        n_events += n
                        texts: Iterable[int]
                        if marks.count(EventFlags.TEXT) == n:  # (most blocks: text events and nothing more)
                            texts = itertools.repeat(1, n)
                            if not n_text:
                                first_text = flat[0].t
                            n_text += n
                            last_text = flat[-1].t
                        else:
                            texts = [f & TEXT for f in marks]
                            for ev, f in zip(flat, marks):
                                if f & TEXT:
                                    if not n_text:
                                        first_text = ev.t
                                    n_text += 1
                                    last_text = ev.t
                                if f & END and end_marker is None:
                                    end_marker = ev.t
                        block_chunks = list(map(_CHUNK, block))
                        decoded += sum(map(len, map(_DATA, block_chunks)))
                        if on_events:
                            events_read = list(zip(flat, marks))
                            for batch_hook in on_events:
                                batch_hook(events_read)
                        if on_chunks:
                            chunks_read = list(zip(map(_INDEX, block), block_chunks, texts))
                            for chunks_hook in on_chunks:
                                if chunks_hook(chunks_read):  # it needs no more
                                    on_chunks = [h for h in on_chunks if h is not chunks_hook]
                        continue
            event_batch: list[tuple[Event, EventFlags]] = []
            chunk_batch: list[tuple[int, Chunk, int]] = []
            for index, chunk, items in block:
                text = 0
                for item in items:
                    if type(item) is Event:
                        flags = read(item)
                        t = item.t
                        if not n_events:
                            first_event = t
                        n_events += 1
                        if n_events == ACCELERATE_AFTER:  # a long stream: worth loading the compiled JSON reader
                            accelerate()
                        if flags & TEXT:
                            text += 1
                            if not n_text:
                                first_text = t
                            n_text += 1
                            last_text = t
                            if keep:
                                text_indices.append(item.index)
                        if flags & END and end_marker is None:
                            end_marker = t
                        if keep:
                            events.append(item)
                        if on_events:
                            event_batch.append((item, flags))
                        for hook in on_event:
                            hook(item, flags)
                    elif type(item) is Comment:
                        n_comments += 1
                        if keep:
                            comments.append(item)
                        for hook in on_comment:
                            hook(item)
                    else:
                        assert isinstance(item, Notice)
                        seen = counts.get(item.kind, 0)
                        counts[item.kind] = seen + 1
                        if keep or seen < NOTICES_KEPT:
                            notices.append(item)
                        for hook in on_notice:
                            hook(item)
                if chunk is not None and index is not None:
                    decoded += len(chunk.data)
                    if keep:
                        chunks.append(chunk)
                    if on_chunks:
                        chunk_batch.append((index, chunk, text))
                    for chunk_hook in on_chunk:
                        if chunk_hook(index, chunk, text):  # it needs no more: a list without it, from the next chunk
                            on_chunk = [h for h in on_chunk if h is not chunk_hook]
            for batch_hook in on_events:
                batch_hook(event_batch)
            for chunks_hook in on_chunks:
                if chunks_hook(chunk_batch):  # it needs no more
                    on_chunks = [h for h in on_chunks if h is not chunks_hook]
        self.n_events, self.n_comments, self.n_text, self.decoded_bytes = n_events, n_comments, n_text, decoded
        self.first_event, self.first_text, self.last_text, self.end_marker = first_event, first_text, last_text, end_marker

    def finish(self, capture: Capture, stats: ParseStats, spec: RechunkSpec | None, framing: str) -> Analysis:
        assert self.dialect is not None and self.reader is not None
        if self.wire_chunks is not None:
            capture = dataclasses.replace(capture, chunks=tuple(self.wire_chunks))
        answer = self.reader.answer(self.dialect, tuple(self.text_indices))
        analysis = Analysis(
            capture=capture,
            chunks=tuple(self.chunks),
            events=tuple(self.events),
            comments=tuple(self.comments),
            notices=tuple(self.notices),
            stats=stats,
            answer=answer,
            timing=self._timing(capture),
            grammar=self.dialect,
            outcome=decide_outcome(
                errored=bool(answer.errors),
                end_marker=answer.end_marker,
                end_marker_seen=answer.end_marker_seen,
                end=capture.end,
                status=capture.response.status if capture.response else None,
                unterminated=any(self.notice_counts.get(kind) for kind in UNTERMINATED),
            ),
            rechunk=spec,
            framing=framing,
            kept=self.keep,
            notice_counts=dict(self.notice_counts),
        )
        for o in self.observers:
            o.close(analysis)
        return analysis

    def _timing(self, capture: Capture) -> Timing:
        timed = capture.timed and self.all_timed
        rate = None
        if timed and self.n_text >= 2:
            span = self.last_text - self.first_text  # type: ignore[operator]
            rate = (self.n_text - 1) / span if span > 0 else None
        total = None
        max_gap, max_gap_at, end_silence, final = self.max_gap, self.max_gap_at, None, False
        if timed:
            end = capture.end
            total = end.t if end is not None and end.t is not None else (self.last_t if self.n_wire else None)
            if end is not None and end.t is not None and end.t > self.last_t:
                end_silence = (self.last_t, end.t)
                if max_gap is None or end.t - self.last_t > max_gap:
                    max_gap, max_gap_at, final = end.t - self.last_t, end.t, True
        return Timing(
            timed=timed,
            ttfb=self.ttfb if timed else None,
            first_event=self.first_event if timed else None,
            first_token=self.first_text if timed else None,
            end_marker=self.end_marker if timed else None,
            total=total,
            chunks=self.n_wire,
            bytes=self.wire_bytes if self.read_bytes is None else self.read_bytes,
            decoded_bytes=self.decoded_bytes,
            events=self.n_events,
            comments=self.n_comments,
            text_events=self.n_text,
            tokens_per_s=rate,
            max_gap=max_gap if timed else None,
            max_gap_at=max_gap_at if timed else None,
            end_silence=end_silence,
            max_gap_final=final,
        )
