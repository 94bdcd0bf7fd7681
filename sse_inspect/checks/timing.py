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
    # the headers with the body (nginx does, for a close-delimited upstream).
    start = 0.0
    per_chunk = Counter(e.chunk for e in a.events)
    rels = releases(a.chunks, per_chunk, start, th)
    total_events = len(a.events)

    yield from _bursts_and_flush(rels, a.events, total_events, th)
    yield from _fixed_size(ctx)
    yield from _silences(ctx, start)


def _bursts_and_flush(rels: list[Release], events: tuple, total_events: int, th: Thresholds) -> Iterator[Finding]:
    if total_events < 2:
        return
    first_t, last_t = events[0].t, events[-1].t
    mean_interval = (last_t - first_t) / (total_events - 1)
    min_silence = th.burst_min_silence_ms / 1000
    total_bytes = sum(r.bytes for r in rels)
    biggest = max(rels, key=lambda r: r.events)
    if (
        total_events >= 3
        and biggest.events >= th.single_flush_share * total_events
        and biggest.bytes >= th.single_flush_share * total_bytes
        and biggest.silence >= min_silence
    ):
        yield Finding(code="single-flush", severity=Severity.WARNING, t=biggest.t0,
                      message=f"{biggest.events} of {total_events} events ({biggest.bytes} of {total_bytes} bytes) "
                              f"arrived at once at t={biggest.t0:.3f} s, after {biggest.silence:.3f} s of silence",
                      evidence={"events": biggest.events, "bytes": biggest.bytes, "held_s": round(biggest.silence, 6),
                                "t": biggest.t0})  # fmt: skip
    bursts = [
        r
        for r in rels
        if r.events >= th.burst_min_events
        and r.span <= th.burst_span_ms / 1000
        and r.silence >= min_silence
        and r.silence >= th.burst_silence_factor * mean_interval
    ]
    if not bursts:
        return
    held = sum(r.events for r in bursts)
    worst = max(bursts, key=lambda r: r.silence)
    rule = (f"rule: >= {th.burst_min_events} events within {th.burst_span_ms:g} ms after >= "
            f"{th.burst_min_silence_ms:g} ms and >= {th.burst_silence_factor:g}x the mean interval "
            f"({mean_interval * 1000:.1f} ms)")  # fmt: skip
    many = f"{len(bursts)} bursts released {held} of {total_events} events; the longest: " if len(bursts) > 1 else ""
    yield Finding(code="buffering-burst", severity=Severity.WARNING, t=worst.t0,
                  message=f"{many}{worst.events} events held {worst.silence:.3f} s and released in "
                          f"{worst.span * 1000:.0f} ms at t={worst.t0:.3f} s ({rule})",
                  evidence={"bursts": [{"t": r.t0, "events": r.events, "bytes": r.bytes, "silence_s": round(r.silence, 6),
                                        "span_ms": round(r.span * 1000, 3)} for r in bursts],
                            "events_held": held, "mean_interval_ms": round(mean_interval * 1000, 3)})  # fmt: skip


def _fixed_size(ctx: Context) -> Iterator[Finding]:
    th = ctx.thresholds
    wire = ctx.capture.chunks[:-1]  # the last chunk is whatever was left
    if len(wire) < th.fixed_flush_min_chunks:
        return
    size, count = Counter(len(c.data) for c in wire).most_common(1)[0]
    if size < 1024 or count < th.fixed_flush_min_chunks or count * 2 < len(wire):
        return
    mid_event = None
    if ctx.analysis.timing.bytes == ctx.analysis.timing.decoded_bytes:  # identity: wire offsets are body offsets
        offset, mid_event = 0, 0
        for c in wire:
            offset += len(c.data)
            if len(c.data) == size and not ctx.body[:offset].endswith((b"\n\n", b"\r\n\r\n", b"\r\r")):
                mid_event += 1
        if mid_event * 2 < count:
            return  # cut at event boundaries: a server writing equal events, not a buffer
    where = f", {mid_event} of them cut inside an event" if mid_event is not None else ""
    yield Finding(code="fixed-size-flush", severity=Severity.WARNING, t=wire[0].t,
                  message=f"{count} of {len(ctx.capture.chunks)} chunks are exactly {size} bytes{where}: "
                          "a hop's fixed-size buffer",
                  evidence={"size": size, "chunks": count, "cut_inside_event": mid_event})  # fmt: skip


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
