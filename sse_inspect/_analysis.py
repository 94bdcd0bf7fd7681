"""From a capture to what it means: decode, re-cut, parse, rebuild, and time it.

    analysis = analyze(load_capture("captures/openai-chat-text.jsonl"))
    analysis.answer.text, analysis.timing.ttfb, analysis.events[0]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ._capture import Capture, Chunk
from ._decoding import BodyDecoder, ContentDecodingError
from ._events import Comment, Event, Notice
from ._parser import EventStreamParser, ParseStats
from ._rechunk import RechunkSpec, rechunk
from .dialects import detect_dialect, get_dialect
from .dialects._base import Answer

__all__ = ["Analysis", "Timing", "analyze", "body_chunks", "parse_capture_stream"]

DETECT_EVENTS = 50
"""How many leading events dialect detection looks at."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """When things arrived, in seconds since the request was sent (None: the capture is untimed)."""

    ttfb: float | None
    """Time to the first byte of the body."""
    first_event: float | None
    first_token: float | None
    """Time to the first event that carried answer text, reasoning or a tool call piece."""
    total: float | None
    chunks: int
    bytes: int
    """Body bytes as they crossed the wire (compressed, if they were)."""
    decoded_bytes: int
    events: int
    comments: int
    text_events: int
    tokens_per_s: float | None
    """Text-carrying events per second between the first and the last of them ("tokens-ish")."""
    max_gap: float | None
    """The longest time without a byte, counted from the request (None: untimed)."""
    max_gap_at: float | None
    """When that silence ended."""


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """A capture, the events parsed from it, the rebuilt answer and its timing."""

    capture: Capture
    chunks: tuple[Chunk, ...]
    """The body chunks as parsed: content-decoded and re-cut."""
    events: tuple[Event, ...]
    comments: tuple[Comment, ...]
    notices: tuple[Notice, ...]
    stats: ParseStats
    answer: Answer
    timing: Timing
    rechunk: RechunkSpec | None = None

    @property
    def dialect(self) -> str:
        return self.answer.dialect


def body_chunks(capture: Capture, notices: list[Notice] | None = None) -> Iterator[Chunk]:
    """The capture's body chunks with the Content-Encoding undone, each at its arrival time.

    A body that stops decoding ends there, with a "decode-error" notice added to `notices`.
    """
    try:
        decoder = BodyDecoder(capture.content_encoding)
    except ContentDecodingError as exc:
        _note(notices, f"body left as sent: {exc}", 0, None)
        yield from capture.chunks
        return
    if decoder.identity:
        yield from capture.chunks
        return
    offset = 0
    t = None
    try:
        for chunk in capture.chunks:
            t = chunk.t
            data = decoder.decode(chunk.data)
            offset += len(chunk.data)
            if data:
                yield Chunk(chunk.t, data)
        tail = decoder.flush()
        if tail:
            yield Chunk(t, tail)
    except ContentDecodingError as exc:
        _note(notices, f"the {capture.content_encoding} body stops decoding at wire byte {offset}: {exc}", offset, t)


def _note(notices: list[Notice] | None, message: str, offset: int, t: float | None) -> None:
    if notices is not None:
        notices.append(Notice(kind="decode-error", message=message, offset=offset, t=t))


def parse_capture_stream(
    capture: Capture, spec: RechunkSpec | None = None
) -> tuple[tuple[Chunk, ...], list[Event | Comment | Notice], ParseStats]:
    """Decode, re-cut and parse a capture's body: (chunks as parsed, everything parsed, stats)."""
    decode_notices: list[Notice] = []
    chunks = list(body_chunks(capture, decode_notices))
    if spec is not None:
        chunks = rechunk(chunks, spec)
    parser = EventStreamParser()
    items: list[Event | Comment | Notice] = list(decode_notices)
    for chunk in chunks:
        items += parser.feed(chunk.data, chunk.t)
    items += parser.close()
    return tuple(chunks), items, parser.stats


def analyze(capture: Capture, *, rechunk: RechunkSpec | None = None, dialect: str | None = None) -> Analysis:
    """Parse the capture and rebuild its answer with `dialect` (detected when None)."""
    chunks, items, stats = parse_capture_stream(capture, rechunk)
    events = tuple(x for x in items if isinstance(x, Event))
    comments = tuple(x for x in items if isinstance(x, Comment))
    notices = tuple(x for x in items if isinstance(x, Notice))
    url = capture.request.url if capture.request else None
    rebuilder = get_dialect(dialect) if dialect else detect_dialect(events[:DETECT_EVENTS], url)
    answer = rebuilder.rebuild(events)
    return Analysis(
        capture=capture,
        chunks=chunks,
        events=events,
        comments=comments,
        notices=notices,
        stats=stats,
        answer=answer,
        timing=_timing(capture, chunks, events, comments, answer),
        rechunk=rechunk,
    )


def _timing(
    capture: Capture, chunks: tuple[Chunk, ...], events: tuple[Event, ...], comments: tuple[Comment, ...], answer: Answer
) -> Timing:
    timed = capture.timed and all(c.t is not None for c in capture.chunks)
    text_times = [events[i].t for i in answer.text_events if i < len(events)]
    first_token = text_times[0] if timed and text_times else None
    rate = None
    if timed and len(text_times) >= 2:
        span = text_times[-1] - text_times[0]  # type: ignore[operator]
        rate = (len(text_times) - 1) / span if span > 0 else None
    max_gap = gap_at = None
    if timed:
        last = 0.0  # the request: a hop holding the whole body is silent from there
        for c in capture.chunks:
            gap = c.t - last  # type: ignore[operator]
            if max_gap is None or gap > max_gap:
                max_gap, gap_at = gap, c.t
            last = c.t  # type: ignore[assignment]
    return Timing(
        ttfb=capture.chunks[0].t if timed and capture.chunks else None,
        first_event=events[0].t if timed and events else None,
        first_token=first_token,
        total=capture.duration if timed else None,
        chunks=len(capture.chunks),
        bytes=sum(len(c.data) for c in capture.chunks),
        decoded_bytes=sum(len(c.data) for c in chunks),
        events=len(events),
        comments=len(comments),
        text_events=len(text_times),
        tokens_per_s=rate,
        max_gap=max_gap,
        max_gap_at=gap_at,
    )
