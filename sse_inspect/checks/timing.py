"""Findings from arrival times: bursts, single flushes, fixed-size flushes, long silences.

A hop that buffers a stream shows in time, not in bytes: events that the server sent
one by one arrive together after a silence. Chunks closer together than a few
milliseconds are grouped into *releases* (one flush of a hop may reach the recorder as
several reads); a release is a burst when it holds many events, is short, and follows a
silence long against the stream's own pace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from .._capture import Chunk
from ._context import Context
from ._model import Finding, Severity, Thresholds

__all__ = ["Release", "check_timing", "releases"]


@dataclass(frozen=True, slots=True)
class Release:
    """Chunks that arrived together: within `burst_window_ms` of each other."""

    t0: float
    t1: float
    silence: float
    """Seconds without a byte before it (for the first release: since the request was sent)."""
    chunks: int
    bytes: int
    events: int

    @property
    def span(self) -> float:
        return self.t1 - self.t0


def releases(chunks: tuple[Chunk, ...], events_per_chunk: Counter[int], start: float, th: Thresholds) -> list[Release]:
    """Group timed chunks into releases."""
    out: list[Release] = []
    window = th.burst_window_ms / 1000
    for i, c in enumerate(chunks):
        t = c.t or 0.0
        n = events_per_chunk.get(i, 0)
        if out and t - out[-1].t1 <= window:
            r = out[-1]
            out[-1] = Release(r.t0, t, r.silence, r.chunks + 1, r.bytes + len(c.data), r.events + n)
        else:
            silence = t - (out[-1].t1 if out else start)
            out.append(Release(t, t, max(silence, 0.0), 1, len(c.data), n))
    return out


def check_timing(ctx: Context) -> Iterator[Finding]:
    a = ctx.analysis
    th = ctx.thresholds
    # Silences count from the request, not from the response headers: a buffering hop holds
    # the headers with the body (nginx does, for a close-delimited upstream). The first
    # release's silence therefore includes the model's time to its first token.
    start = 0.0
    text = set(a.answer.text_events)
    # Only events that carry output count: a server writes its bookkeeping events (Responses'
    # created + in_progress + output_item.added ...) together on its own.
    per_chunk = Counter(e.chunk for e in a.events if e.index in text)
    rels = releases(a.chunks, per_chunk, start, th)
    times = [e.t or 0.0 for e in a.events if e.index in text]  # timed: every t is set
    yield from _bursts_and_flush(rels, times, th)
    yield from _fixed_size(ctx)
    yield from _silences(ctx, start)


def pace(times: list[float]) -> float:
    """The stream's mean interval between text events, leaving out its longest gap (a model's
    pause to think would otherwise hide the holds of a hop after it)."""
    if len(times) < 3:
        return (times[-1] - times[0]) / (len(times) - 1) if len(times) == 2 else 0.0
    longest = max(b - a for a, b in zip(times, times[1:]))
    return (times[-1] - times[0] - longest) / (len(times) - 2)


def _bursts_and_flush(rels: list[Release], times: list[float], th: Thresholds) -> Iterator[Finding]:
    total = len(times)
    if total < th.burst_min_events:
        return  # too short an answer to tell a hop's flush from a server's single write
    interval = pace(times)
    min_silence = th.burst_min_silence_ms / 1000
    max_span = th.burst_span_ms / 1000
    total_bytes = sum(r.bytes for r in rels)
    biggest = max(rels, key=lambda r: r.events)
    if (
        biggest.events >= th.single_flush_share * total
        and biggest.bytes >= th.single_flush_share * total_bytes
        and biggest.span <= max_span
        and biggest.silence >= min_silence
    ):
        yield Finding(code="single-flush", severity=Severity.WARNING, t=biggest.t0,
                      message=f"{biggest.events} of {total} text events ({biggest.bytes} of {total_bytes} bytes) "
                              f"arrived at once at t={biggest.t0:.3f} s, after {biggest.silence:.3f} s of silence",
                      evidence={"events": biggest.events, "bytes": biggest.bytes, "held_s": round(biggest.silence, 6),
                                "t": biggest.t0})  # fmt: skip
    bursts = [
        r
        for r in rels
        if r.events >= th.burst_min_events
        and r.span <= max_span
        and r.silence >= min_silence
        and r.silence >= th.burst_silence_factor * interval
    ]
    if not bursts:
        return
    held = sum(r.events for r in bursts)
    worst = max(bursts, key=lambda r: r.events)  # the biggest release: a model's pause may precede another
    rule = (f"rule: >= {th.burst_min_events} text events within {th.burst_span_ms:g} ms after >= "
            f"{th.burst_min_silence_ms:g} ms and >= {th.burst_silence_factor:g}x the stream's pace "
            f"({interval * 1000:.1f} ms)")  # fmt: skip
    many = f"{len(bursts)} bursts released {held} of {total} text events; the biggest: " if len(bursts) > 1 else ""
    first = " (since the request)" if worst is rels[0] else ""
    yield Finding(code="buffering-burst", severity=Severity.WARNING, t=worst.t0,
                  message=f"{many}{worst.events} text events held {worst.silence:.3f} s{first} and released in "
                          f"{worst.span * 1000:.0f} ms at t={worst.t0:.3f} s ({rule})",
                  evidence={"bursts": [{"t": r.t0, "events": r.events, "bytes": r.bytes, "silence_s": round(r.silence, 6),
                                        "span_ms": round(r.span * 1000, 3)} for r in bursts],
                            "events_held": held, "pace_ms": round(interval * 1000, 3)})  # fmt: skip


def _fixed_size(ctx: Context) -> Iterator[Finding]:
    """Chunks of one size (>= 1 KiB) that are whole releases: what a hop flushing a full buffer sends.

    Equal chunks inside a longer release are framing, not flushing (HTTP/2 splits a large
    event into back-to-back 16 KiB DATA frames), so they do not count.
    """
    th = ctx.thresholds
    chunks = ctx.capture.chunks
    wire = chunks[:-1]  # the last chunk is whatever was left
    if len(wire) < th.fixed_flush_min_chunks:
        return
    size = Counter(len(c.data) for c in wire).most_common(1)[0][0]
    if size < 1024:
        return
    window = th.burst_window_ms / 1000
    flushes: list[int] = []  # indices of chunks in releases made only of `size` chunks
    run: list[int] = []
    for i, c in enumerate(chunks):
        if run and (c.t or 0.0) - (chunks[run[-1]].t or 0.0) > window:
            if all(len(chunks[j].data) == size for j in run) and run[-1] < len(wire):
                flushes += run
            run = []
        run.append(i)
    if len(flushes) < th.fixed_flush_min_chunks or len(flushes) * 2 < len(wire):
        return
    mid_event = None
    if ctx.analysis.timing.bytes == ctx.analysis.timing.decoded_bytes:  # identity: wire offsets are body offsets
        ends, offset = {}, 0
        for i, c in enumerate(chunks):
            offset += len(c.data)
            ends[i] = offset
        body = ctx.body
        mid_event = sum(not body[ends[i] - 4 : ends[i]].endswith((b"\n\n", b"\r\n\r\n", b"\r\r")) for i in flushes)
        if mid_event * 2 < len(flushes):
            return  # cut at event boundaries: a server writing equal events, not a buffer
    where = f", {mid_event} of them cut inside an event" if mid_event is not None else ""
    yield Finding(code="fixed-size-flush", severity=Severity.WARNING, t=chunks[flushes[0]].t,
                  message=f"{len(flushes)} of {len(chunks)} chunks are exactly {size} bytes, each a flush of its "
                          f"own{where}: a hop's fixed-size buffer",
                  evidence={"size": size, "chunks": len(flushes), "cut_inside_event": mid_event})  # fmt: skip


def _silences(ctx: Context, start: float) -> Iterator[Finding]:
    th = ctx.thresholds
    times = [start] + [c.t for c in ctx.capture.chunks]
    if ctx.capture.end is not None and ctx.capture.end.t is not None:
        times.append(ctx.capture.end.t)
    for t0, t1 in zip(times, times[1:]):
        gap = t1 - t0  # type: ignore[operator]
        if gap > th.long_silence_s:
            yield Finding(code="long-silence", severity=Severity.WARNING, t=t1,
                          message=f"no byte for {gap:.1f} s (t={t0:.1f} to {t1:.1f} s), longer than "
                                  f"{th.long_silence_s:g} s: idle timeouts cut connections like this",
                          evidence={"gap_s": round(gap, 6), "from": t0, "to": t1})  # fmt: skip
