"""Findings from arrival times: bursts, single flushes, fixed-size flushes, headers held, silences
and the cuts of hops' time limits.

A hop that buffers a stream shows in time, not in bytes: events that the server sent
one by one arrive together after a silence. Chunks closer together than a few
milliseconds are grouped into *releases* (one flush of a hop may reach the recorder as
several reads); a release is a burst when it holds many events, is short, and follows a
silence long against the stream's own pace. An answer of a few events is judged by its
size instead: one event holding hundreds of characters after a silence was collected
before it was sent (no model streams that in one token).

A stream cut without its end marker after a silence as long as a hop's idle limit, or at a
total time as long as a hop's duration limit, names those hops (`_timeouts.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar

from .._capture import Chunk
from .._events import Event
from .._outcome import Cause, Outcome, State
from .._release import Release
from ..dialects import Answer, EventFlags
from ._check import Check, Context, Need
from ._model import Finding, Skipped, Thresholds
from ._timeouts import IDLE_LIMITS, TOTAL_LIMITS, match_limit
from .evidence import Burst, Bursts, FixedSizeFlush, HeadersHeld, Silence, SingleFlush, TimeoutCut

__all__ = ["ChunkRelease", "TimingCheck"]


_TEXT = EventFlags.TEXT
"""The flag as a module global: speed code for `event`, which runs for every event (on Python 3.11,
looking `EventFlags.TEXT` up there costs 0.3 µs an event; `check` takes about 7 µs)."""
_FLUSH_MIN = 1024
"""A fixed-size flush is of chunks this big at least (smaller equal chunks are a server's equal events)."""
_PACED_GAP = 0.001
"""A release whose every read holds one text event at most, its reads this far apart on average (and
most of them more than `_TIGHT_GAP` apart), is a fast model streaming (Groq and Cerebras send a token every
1-3 ms), not a flush: a hop's flush is in the kernel at once, and reaches the reader in reads of several
events or reads a few µs apart (the lab's list bug: 31 reads within 2 ms)."""
_TIGHT_GAP = 0.0002
KEPT = 1000
"""Silences, burst candidates and lumps kept, each (the rest are counted): a pass holds no per-event list."""


@dataclass(frozen=True, slots=True)
class ChunkRelease(Release):
    """A release among one capture's parsed chunks."""

    silence: float
    """Seconds without a byte before it (for the first release: since the request was sent)."""
    chunks: int
    bytes: int
    text_events: int
    """How many of its events carried output."""
    paced: bool = False
    """Whether its text events came one a read at a model's pace (`_PACED_GAP`): a fast stream, not a flush."""


@dataclass(slots=True)
class _Gathering:
    """The release whose chunks are still coming: its first and last chunk's times, and its counts."""

    t0: float
    t1: float
    silence: float
    chunks: int
    bytes: int
    text_events: int
    most: int = 0
    """The most text events one of its chunks held."""
    tight: int = 0
    """How many of its chunks came within `_TIGHT_GAP` of the one before."""

    def restart(self, t: float, silence: float, size: int, text_events: int) -> None:
        """Start over as the release of one chunk that ends the last (whose numbers `_released` took): one
        object for the pass, not one per release (a steady stream's every chunk is a release)."""
        self.t0 = self.t1 = t
        self.silence = silence
        self.chunks = 1
        self.bytes = size
        self.text_events = self.most = text_events
        self.tight = 0

    def release(self) -> ChunkRelease:
        return ChunkRelease(self.t0, self.t1 - self.t0, self.silence, self.chunks, self.bytes, self.text_events,
                            self.paced())  # fmt: skip

    def paced(self) -> bool:
        gaps = self.chunks - 1
        return (gaps > 0 and self.most <= 1 and 2 * self.tight < gaps
                and self.t1 - self.t0 >= _PACED_GAP * gaps)  # fmt: skip


@dataclass(slots=True)
class _Lead:
    """The answer's first arrivals: the chunks within `burst_span_ms` of the first one that carried text, and
    the silence before the release it came in."""

    t: float
    silence: float
    bytes: int
    text_events: int


@dataclass(slots=True)
class _Flushes:
    """The releases on the wire made of chunks of one size (>= 1 KiB): their chunks, how many of
    those were cut inside an event, and when the first began."""

    t: float
    chunks: int = 0
    cut: int = 0


class TimingCheck(Check):
    """Follows the arrival times of a pass: releases of the parsed chunks (the biggest one, and
    those that could be bursts), the times of text events, chunk sizes and runs on the wire, silences."""

    family = "timing"
    needs: ClassVar[Mapping[Need, str]] = {
        Need.TIMED: "untimed capture: the source kept no per-chunk arrival times",
        Need.HTTP_OK: "an error response: its timing says nothing about a stream",
    }

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        th = self.th = thresholds
        self.window = th.burst_window_ms / 1000
        self.span = th.burst_span_ms / 1000
        self.long_silence = th.long_silence_s
        # releases
        self.gathering: _Gathering | None = None
        self.releases = 0
        self.biggest: ChunkRelease | None = None
        self.candidates: list[tuple[ChunkRelease, bool]] = []  # (release, is the first)
        self.lead: _Lead | None = None
        self.lumps: list[ChunkRelease] = []  # short reads of several text events after a silence
        self.lump_silence = th.lump_min_silence_ms / 1000
        self.few = min(2, th.burst_min_events)  # a release of fewer text events is no burst candidate nor lump
        self.parsed_bytes = 0
        # text events: their count, first and last time, and the longest gap between two
        self.texts = 0
        self.first_text = self.last_text = 0.0
        self.longest = 0.0
        self.moments = 0  # how many different times they arrived at
        # the wire: sizes, runs of chunks within the window, silences
        self.n_wire = 0
        self.first_wire: float | None = None  # when the first body byte came
        self.sizes: Counter[int] = Counter()  # of chunks of 1 KiB or more
        self.last_size = 0
        # the current release on the wire: its chunks' one size (-1: mixed or small), count, first
        # time, and how many of them end inside an event
        self.run_size = self.run_chunks = self.run_cut = 0
        self.run_t0 = 0.0
        self.flushes: dict[int, _Flushes] = {}  # by chunk size
        self.prev_t = 0.0
        self.silences: list[tuple[float, float]] = []
        self.more_silences = self.more_candidates = self.more_lumps = 0  # past KEPT

    def event(self, event: Event, flags: EventFlags) -> None:
        if flags & _TEXT:
            t = event.t or 0.0  # timed: every t is set
            if not self.texts:
                self.first_text = t
                self.moments = 1
            else:
                gap = t - self.last_text
                if gap:
                    self.moments += 1
                    if gap > self.longest:
                        self.longest = gap
            self.texts += 1
            self.last_text = t

    def event_block(self, events: list[tuple[Event, EventFlags]]) -> None:
        """`event` for each (a speed loop: the state in locals while the block's events pass)."""
        texts, last_text, moments, longest = self.texts, self.last_text, self.moments, self.longest
        for event, flags in events:
            if flags & _TEXT:
                t = event.t or 0.0  # timed: every t is set
                if not texts:
                    self.first_text = t
                    moments = 1
                else:
                    gap = t - last_text
                    if gap:
                        moments += 1
                        if gap > longest:
                            longest = gap
                texts += 1
                last_text = t
        self.texts, self.last_text, self.moments, self.longest = texts, last_text, moments, longest

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        """`chunk` for each, in one loop with the gathering release's numbers in locals: a chunk within the
        window joins it; one past it ends it, and a release that can be no burst candidate, no lump and not
        the biggest (most: a steady stream's every chunk is one) is only counted, the others go through
        `_released`. The lead's chunks (within `burst_span_ms` of the first text, or before it) and the
        rest of their block go through `chunk`."""
        g, lead = self.gathering, self.lead
        if g is None or lead is None:
            self._chunk_items(chunks)
            return
        window, span, few, lead_t = self.window, self.span, self.few, lead.t
        biggest = self.biggest.text_events if self.biggest is not None else -1  # (-1: none yet, any is bigger)
        t0, t1, silence, count, size, texts, most, tight = (
            g.t0, g.t1, g.silence, g.chunks, g.bytes, g.text_events, g.most, g.tight)  # fmt: skip
        done_chunks, done_bytes = -count, -size  # of the releases over, less what `g` held: to count what was taken
        releases = 0
        for _, item, n in chunks:
            t = item.t or 0.0
            if t - lead_t <= span:  # the lead's
                break
            gap = t - t1
            if gap > window:  # a release begins: the gathering one is over
                done_chunks += count
                done_bytes += size
                if texts >= few or texts > biggest:  # (else `_released` would only count it)
                    g.t0, g.t1, g.silence, g.chunks, g.bytes, g.text_events, g.most, g.tight = (
                        t0, t1, silence, count, size, texts, most, tight)  # fmt: skip
                    self.releases += releases
                    releases = 0
                    self._released(g)
                    biggest = self.biggest.text_events  # type: ignore[union-attr]  # (set by `_released`)
                else:
                    releases += 1
                t0 = t1 = t
                silence = max(gap, 0.0)
                count, size, texts, most, tight = 1, len(item.data), n, n, 0
            else:
                tight += gap < _TIGHT_GAP
                t1 = t
                count += 1
                size += len(item.data)
                texts += n
                if n > most:
                    most = n
        g.t0, g.t1, g.silence, g.chunks, g.bytes, g.text_events, g.most, g.tight = (
            t0, t1, silence, count, size, texts, most, tight)  # fmt: skip
        self.releases += releases
        self.parsed_bytes += done_bytes + size
        taken = done_chunks + count
        if taken < len(chunks):
            self._chunk_items(chunks[taken:])

    def _chunk_items(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        """`chunk` for each, the chunks that join the gathering release (once the lead is over) in a loop with
        locals."""
        window, span, chunk = self.window, self.span, self.chunk
        parsed = 0
        for index, item, text_events in chunks:
            g, lead = self.gathering, self.lead
            t = item.t or 0.0
            if g is None or t - g.t1 > window or lead is None or t - lead.t <= span:
                chunk(index, item, text_events)
                continue
            size = len(item.data)
            parsed += size
            g.tight += t - g.t1 < _TIGHT_GAP
            g.t1 = t
            g.chunks += 1
            g.bytes += size
            g.text_events += text_events
            if text_events > g.most:
                g.most = text_events
        self.parsed_bytes += parsed

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        t = chunk.t or 0.0
        size = len(chunk.data)
        self.parsed_bytes += size
        g = self.gathering
        if g is not None and t - g.t1 <= self.window:
            g.tight += t - g.t1 < _TIGHT_GAP
            g.t1 = t
            g.chunks += 1
            g.bytes += size
            g.text_events += text_events
            if text_events > g.most:
                g.most = text_events
        elif g is None:
            g = self.gathering = _Gathering(t, t, max(t, 0.0), 1, size, text_events, text_events)  # (silent since the request, at 0)
        else:
            self._released(g)
            g.restart(t, max(t - g.t1, 0.0), size, text_events)
        lead = self.lead
        if lead is None:
            if text_events:
                self.lead = _Lead(t, g.silence, size, text_events)
        elif t - lead.t <= self.span:
            lead.bytes += size
            lead.text_events += text_events

    def _released(self, g: _Gathering) -> None:
        biggest = self.biggest
        if g.text_events < self.few and biggest is not None and g.text_events <= biggest.text_events:
            self.releases += 1  # (most releases of a steady stream: no candidate, no lump, not the biggest)
            return
        th = self.th
        first = self.releases == 0
        self.releases += 1
        bigger = self.biggest is None or g.text_events > self.biggest.text_events
        span = g.t1 - g.t0
        flush = self._flush(g)
        candidate = self._candidate(g)
        lump = (flush and g.text_events >= 2 and g.silence >= self.lump_silence
                and g.silence >= th.burst_silence_factor * span / (g.text_events - 1))  # fmt: skip
        if bigger or candidate or lump:  # (most releases are none: a steady stream's every chunk is one)
            release = g.release()
            if bigger:
                self.biggest = release
            if candidate:
                if len(self.candidates) < KEPT:
                    self.candidates.append((release, first))
                else:
                    self.more_candidates += 1
            if lump:
                if len(self.lumps) < KEPT:
                    self.lumps.append(release)
                else:
                    self.more_lumps += 1

    def _flush(self, g: _Gathering) -> bool:
        """Whether a release is one flush: within `burst_span_ms`, and not a fast model's events, each in its
        own read."""
        return g.t1 - g.t0 <= self.span and not g.paced()

    def _candidate(self, g: _Gathering) -> bool:
        """Whether a release may be a burst: one flush of `burst_min_events` text events or more after a silence
        of `burst_min_silence_ms` or more (`_bursts` then holds it to the stream's pace)."""
        th = self.th
        return self._flush(g) and g.text_events >= th.burst_min_events and g.silence >= th.burst_min_silence_ms / 1000

    def holding(self) -> ChunkRelease | None:
        """The release still coming in, when it is a burst so far: a candidate whose silence is
        `burst_silence_factor` times the stream's pace so far, as `_bursts` judges the releases that ended.
        What a live view shows as it happens (`_live.LiveStream`), fed a chunk at a time."""
        g = self.gathering
        if g is None or not self._candidate(g) or g.silence < self.th.burst_silence_factor * self.pace():
            return None
        return g.release()

    def wire(self, chunk: Chunk) -> None:
        t = chunk.t or 0.0
        size = len(chunk.data)
        gap = t - self.prev_t
        if self.last_size >= _FLUSH_MIN:
            self.sizes[self.last_size] += 1  # every chunk but the last (whatever was left); only big ones
        if not self.n_wire:
            self.first_wire = t
        self.n_wire += 1
        if gap > self.long_silence:
            if len(self.silences) < KEPT:
                self.silences.append((self.prev_t, t))
            else:
                self.more_silences += 1
        if gap > self.window:  # a new release on the wire: the last one is over
            if self.run_size > 0:
                self._run_over(self.run_size, self.run_chunks, self.run_cut, self.run_t0)
            self.run_size = size if size >= _FLUSH_MIN else -1
            self.run_chunks = self.run_cut = 0
            self.run_t0 = t
        elif self.run_size != size:
            self.run_size = -1
        if self.run_size > 0:  # a run of one size >= 1 KiB so far (a buffer's flushes?): is this chunk cut mid-event?
            self.run_chunks += 1
            self.run_cut += not chunk.data.endswith((b"\n\n", b"\r\n\r\n", b"\r\r"))
        self.last_size = size
        self.prev_t = t

    def wire_block(self, chunks: list[Chunk]) -> None:
        """`wire` for each (a speed loop: the state in locals while the block's chunks pass, written back at its end)."""
        window, long_silence, sizes, silences = self.window, self.long_silence, self.sizes, self.silences
        prev_t, last_size, n_wire = self.prev_t, self.last_size, self.n_wire
        run_size, run_chunks, run_cut, run_t0 = self.run_size, self.run_chunks, self.run_cut, self.run_t0
        for chunk in chunks:
            data = chunk.data
            t = chunk.t or 0.0
            size = len(data)
            gap = t - prev_t
            if last_size >= _FLUSH_MIN:
                sizes[last_size] += 1  # every chunk but the last (whatever was left); only big ones
            if not n_wire:
                self.first_wire = t
            n_wire += 1
            if gap > long_silence:
                if len(silences) < KEPT:
                    silences.append((prev_t, t))
                else:
                    self.more_silences += 1
            if gap > window:  # a new release on the wire: the last one is over
                if run_size > 0:
                    self._run_over(run_size, run_chunks, run_cut, run_t0)
                run_size = size if size >= _FLUSH_MIN else -1
                run_chunks = run_cut = 0
                run_t0 = t
            elif run_size != size:
                run_size = -1
            if run_size > 0:  # a run of one size >= 1 KiB so far (a buffer's flushes?): is this chunk cut mid-event?
                run_chunks += 1
                run_cut += not data.endswith((b"\n\n", b"\r\n\r\n", b"\r\r"))
            last_size = size
            prev_t = t
        self.prev_t, self.last_size, self.n_wire = prev_t, last_size, n_wire
        self.run_size, self.run_chunks, self.run_cut, self.run_t0 = run_size, run_chunks, run_cut, run_t0

    def _run_over(self, size: int, chunks: int, cut: int, t0: float) -> None:
        """A release of chunks all of one size (>= 1 KiB) is over: count it as that size's flushes."""
        flush = self.flushes.get(size)
        if flush is None:
            flush = self.flushes[size] = _Flushes(t0)
        flush.chunks += chunks
        flush.cut += cut

    def findings(self, ctx: Context) -> Iterator[Finding]:
        if self.gathering is not None:
            self._released(self.gathering)
            self.gathering = None
        yield from self._single_flush(ctx)
        yield from self._bursts()
        yield from self._fixed_size(ctx)
        yield from self._headers_held(ctx)
        cut = self._timeout_cut(ctx)
        if cut is not None:
            yield cut
        yield from self._silences(ctx, with_last=cut is None or cut.code != "idle-timeout-cut")

    def skips(self, ctx: Context) -> Iterator[Skipped]:
        """The buffering of an answer is judged on the events that carried it: with none, it cannot be; and
        with no body byte at all, neither can the releases nor the headers' wait for the body (the silences
        and the cuts still can: they count from the headers). A stream of no event at all says so in its
        verdict, EMPTY, or in the framing error that explains it."""
        if self.first_wire is None:
            yield Skipped(("buffering-burst", "single-flush", "fixed-size-flush", "headers-held"),
                          "no body byte arrived, so nothing was released to time")  # fmt: skip
            return
        events = ctx.analysis.timing.events
        if events and not self.texts:
            yield Skipped(("buffering-burst", "single-flush"), f"none of the {events} events carried output that "
                          f"the {ctx.dialect.name} dialect reads, so no answer can be timed")  # fmt: skip

    def pace(self) -> float:
        """The stream's mean interval between text events, leaving out its longest gap (a model's
        pause to think would otherwise hide the holds of a hop after it)."""
        n = self.texts
        if n < 3:
            return self.last_text - self.first_text if n == 2 else 0.0
        return (self.last_text - self.first_text - self.longest) / (n - 2)

    def _single_flush(self, ctx: Context) -> Iterator[Finding]:
        """(Nearly) the whole answer in one short release after a silence. An answer of many text events:
        most of its events and bytes came together. An answer of fewer than `burst_min_events`: all of
        them came together, each holding on average `single_flush_min_chars` of output or more, which no
        model streams in one event (a short answer after a think stays clean: a reader cannot tell it
        from a held one, so it is not flagged)."""
        th = self.th
        total, biggest = self.texts, self.biggest
        if not total or biggest is None:
            return
        if total < th.burst_min_events:
            yield from self._few_big_events(ctx)
            return
        if biggest.span > self.span or biggest.paced or biggest.silence < th.burst_min_silence_ms / 1000:
            return
        share = th.single_flush_share
        if biggest.text_events < share * total or biggest.bytes < share * self.parsed_bytes:
            return
        message = (f"{biggest.text_events} of {total} text events ({biggest.bytes} of {self.parsed_bytes} "
                   f"bytes) arrived at once at t={biggest.t:.3f} s, after {biggest.silence:.3f} s of silence")
        yield self.found("single-flush", message, t=biggest.t,
                         evidence=SingleFlush(biggest.text_events, biggest.bytes, round(biggest.silence, 6),
                                              biggest.t, None))  # fmt: skip

    def _few_big_events(self, ctx: Context) -> Iterator[Finding]:
        """An answer of fewer than `burst_min_events` text events, all within `burst_span_ms` of the first
        after a silence (in one write or in a few: a hop or an event loop may write a held list in several),
        each holding on average `single_flush_min_chars` of output or more. Not for a dialect whose own
        servers send batches (`Dialect.sends_batches`): a Gemini answer whole in one chunk is its shape."""
        th, total, lead = self.th, self.texts, self.lead
        if ctx.dialect.sends_batches or lead is None or lead.text_events < total:
            return
        if lead.silence < th.burst_min_silence_ms / 1000:
            return
        chars = output_chars(ctx.analysis.answer)
        if chars < th.single_flush_min_chars * total:
            return
        spread = self.last_text - self.first_text
        if total == 1:
            events = "one text event"
        elif spread <= self.window:
            events = f"{total} text events at once"
        else:
            events = f"{total} text events within {spread * 1000:.0f} ms"
        message = (f"the whole answer ({chars} characters) came in {events} at t={lead.t:.3f} s, after "
                   f"{lead.silence:.3f} s of silence: {chars // total} characters an event, more than a model "
                   "streams in one")  # fmt: skip
        yield self.found("single-flush", message, t=lead.t,
                         evidence=SingleFlush(lead.text_events, lead.bytes, round(lead.silence, 6), lead.t, chars))

    def _bursts(self) -> Iterator[Finding]:
        th = self.th
        total = self.texts
        if total < th.burst_min_events or self.biggest is None:
            return  # a burst is of burst_min_events at least
        interval = self.pace()
        found = [(r, first) for r, first in self.candidates if r.silence >= th.burst_silence_factor * interval]
        if not found:
            yield from self._lumps()
            return
        bursts = [r for r, _ in found]
        held = sum(r.text_events for r in bursts)
        # the biggest: a model's pause may precede another
        worst, worst_first = max(found, key=lambda f: f[0].text_events)
        rule = self._rule(interval)
        many = f"{len(bursts)} bursts released {held} of {total} text events; the biggest: " if len(bursts) > 1 else ""
        if self.more_candidates:
            many += f"(of the first {KEPT} candidates; {self.more_candidates} more not judged) "
        first = " (since the request)" if worst_first else ""
        evidence = Bursts(
            tuple(Burst(r.t, r.text_events, r.bytes, round(r.silence, 6), round(r.span * 1000, 3)) for r in bursts),
            events_held=held,
            pace_ms=round(interval * 1000, 3),
        )
        yield self.found("buffering-burst", f"{many}{worst.text_events} text events held {worst.silence:.3f} s{first} "
                         f"and released in {worst.span * 1000:.0f} ms at t={worst.t:.3f} s ({rule})", t=worst.t,
                         evidence=evidence)  # fmt: skip

    def _lumps(self) -> Iterator[Finding]:
        """Text events in lumps, read after read: at least `burst_min_events` short reads of several text
        events, each after `lump_min_silence_ms` of silence or more (and `burst_silence_factor` times the
        gaps inside it), holding most of the answer's text events. A model writes an event a write; a fast
        one whose events share reads has no such silences between them: this is a hop flushing what it
        held every so often (nginx's buffers, HAProxy behind a delayed ACK), too few events a flush for a
        burst, and a reader sees the answer stutter."""
        th, lumps, total = self.th, self.lumps, self.texts
        held = sum(r.text_events for r in lumps)
        if len(lumps) < th.burst_min_events or 2 * held <= total:
            return  # (past KEPT lumps, the first KEPT are judged: they hold most of the text events or not)
        sizes = sorted(r.text_events for r in lumps)
        silences = sorted(r.silence for r in lumps)
        median = silences[len(silences) // 2]
        size = f"{sizes[0]}" if sizes[0] == sizes[-1] else f"{sizes[0]}-{sizes[-1]}"
        rule = (f"rule: >= {th.burst_min_events} reads of several text events within {th.burst_span_ms:g} ms, "
                f"each after >= {th.lump_min_silence_ms:g} ms of silence, holding most of the text events")
        evidence = Bursts(
            tuple(Burst(r.t, r.text_events, r.bytes, round(r.silence, 6), round(r.span * 1000, 3)) for r in lumps),
            events_held=held,
            pace_ms=round(self.pace() * 1000, 3),
            lumps=True,
        )
        yield self.found("buffering-burst", f"{held} of {total} text events arrived in lumps of {size}: "
                         f"{len(lumps)} reads, each after a silence (median {median:.3f} s), from t={lumps[0].t:.3f} "
                         f"s: a hop flushing what it held ({rule})"
                         + (f"; {self.more_lumps} later lumps not listed" if self.more_lumps else ""),
                         t=lumps[0].t, evidence=evidence)  # fmt: skip

    def _rule(self, interval: float) -> str:
        """The burst rule in words, with this stream's numbers."""
        th = self.th
        rule = (f"rule: >= {th.burst_min_events} text events within {th.burst_span_ms:g} ms "
                f"after >= {th.burst_min_silence_ms:g} ms of silence")  # fmt: skip
        if interval >= 0.00005:  # 0.1 ms as printed
            return (f"{rule} and >= {th.burst_silence_factor:g}x the stream's pace (its usual gap between "
                    f"text events, {interval * 1000:.1f} ms)")  # fmt: skip
        if interval > 0:
            return (f"the text events came {interval * 1e6:.0f} µs apart on average, all but together, so the "
                    f"stream has no pace to compare with; {rule}")  # fmt: skip
        if self.moments == 1:
            return f"every text event arrived in the one release, so the stream has no pace to compare with; {rule}"
        return (f"the text events arrived in {self.moments} releases and none one by one, so the stream has no "
                f"pace to compare with; {rule}")  # fmt: skip

    def _fixed_size(self, ctx: Context) -> Iterator[Finding]:
        """Chunks of one size (>= 1 KiB) that are whole releases: what a hop flushing a full buffer sends.

        Equal chunks inside a longer release are framing, not flushing (HTTP/2 splits a large
        event into back-to-back 16 KiB DATA frames), so they do not count. The last release is
        whatever was left, so it does not count either.
        """
        th = self.th
        wire = self.n_wire - 1
        if wire < th.fixed_flush_min_chunks or not self.sizes:
            return
        # The most common big size: it is the most common size of all whenever its flushes are at least
        # half of the chunks, as the finding requires.
        size = self.sizes.most_common(1)[0][0]
        flush = self.flushes.get(size)
        if flush is None or flush.chunks < th.fixed_flush_min_chunks or flush.chunks * 2 < wire:
            return
        flushes = flush.chunks
        mid_event = None
        a = ctx.analysis
        if a.rechunk is not None or a.timing.bytes == a.timing.decoded_bytes:  # the chunks seen are the body's
            mid_event = flush.cut
            if mid_event * 2 < flushes:
                return  # cut at event boundaries: a server writing equal events, not a buffer
        where = f", {mid_event} of them cut inside an event" if mid_event is not None else ""
        yield self.found("fixed-size-flush", f"{flushes} of {self.n_wire} chunks are exactly {size} bytes, each a "
                         f"flush of its own{where}: a hop's fixed-size buffer", t=flush.t,
                         evidence=FixedSizeFlush(size, flushes, mid_event))  # fmt: skip

    def _headers_held(self, ctx: Context) -> Iterator[Finding]:
        """The headers came with the first body bytes (within a release's span: a server writes its headers
        and its first event in two writes, which the recorder may read a few milliseconds apart), late."""
        response, first = ctx.capture.response, self.first_wire
        if response is None or response.t is None or first is None:
            return
        if response.t < self.th.headers_held_s or abs(first - response.t) > self.th.burst_span_ms / 1000:
            return
        yield self.found("headers-held", f"the response headers came only with the first body bytes, "
                         f"{response.t:.3f} s after the request (first byte at {first:.3f} s): a hop or the "
                         f"framework held them until the body started", t=response.t,
                         evidence=HeadersHeld(response.t, first))  # fmt: skip

    def _timeout_cut(self, ctx: Context) -> Finding | None:
        """A stream a hop may have cut, against the hops' known limits: its final silence against the
        idle limits, else its whole duration (from the request) against the total limits."""
        th = self.th
        last = self._final_silence(ctx)
        if last is None or not hop_may_have_cut(ctx.analysis.outcome):
            return None
        t0, t1 = last
        idle = match_limit(t1 - t0, IDLE_LIMITS, th.timeout_tolerance_s)
        if idle is not None:
            since = " since the response headers" if self.first_wire is None and t0 > 0 else ""
            return self.found("idle-timeout-cut", f"the stream was cut before its end after {t1 - t0:.2f} s without "
                              f"a byte{since} (t={t0:.1f} to {t1:.1f} s), the idle limit of {idle.words()}", t=t1,
                              evidence=TimeoutCut(round(t1 - t0, 6), idle.limit_s, idle.hops))  # fmt: skip
        total = match_limit(t1, TOTAL_LIMITS, th.timeout_tolerance_s)
        if total is not None:
            return self.found("total-timeout-cut", f"the stream was cut before its end {t1:.2f} s after the request, "
                              f"{t1 - t0:.2f} s after its last byte, at the duration limit of {total.words()}", t=t1,
                              evidence=TimeoutCut(round(t1, 6), total.limit_s, total.hops))  # fmt: skip
        return None

    def _final_silence(self, ctx: Context) -> tuple[float, float] | None:
        """The silence up to the end, (from, to), when the recording knows when the stream ended: since the
        last body byte; with no body byte, since the response headers when their time is known (a hop's idle
        timer counts from its last read from upstream, and the headers were one: nginx's `proxy_read_timeout`,
        an ALB's idle timeout), else since the request."""
        last = ctx.analysis.timing.end_silence
        response = ctx.capture.response
        if last is None or self.first_wire is not None or response is None or response.t is None:
            return last
        return (max(last[0], min(response.t, last[1])), last[1])

    def _silences(self, ctx: Context, *, with_last: bool) -> Iterator[Finding]:
        """The silences longer than `long_silence_s`; the one before the end only `with_last` (not when it
        was an idle timeout's: then it cut the stream)."""
        th = self.th
        gaps = [(t0, t1, False) for t0, t1 in self.silences]
        last = self._final_silence(ctx)
        if with_last and last is not None and last[1] - last[0] > th.long_silence_s:
            gaps.append((*last, True))
        cut = ctx.analysis.outcome.connection_cut
        for t0, t1, final in gaps:
            gap = t1 - t0
            where = (" before the cut" if cut else " before the end") if final else ""
            yield self.found("long-silence", f"no byte for {gap:.1f} s{where} (t={t0:.1f} to {t1:.1f} s), longer than "
                             f"{th.long_silence_s:g} s: idle timeouts cut connections like this", t=t1,
                             evidence=Silence(round(gap, 6), t0, t1, final))  # fmt: skip
            if self.more_silences and t1 == self.silences[-1][1] and not final:
                yield self.found("long-silence", f"and {self.more_silences} more silences longer than "
                                 f"{th.long_silence_s:g} s after t={t1:.1f} s", t=t1)  # fmt: skip


def output_chars(answer: Answer) -> int:
    """The characters of output an answer holds: its text, reasoning and refusal (a tool call's
    arguments do not count: many servers send a whole call in one event)."""
    return answer.output_chars  # (its length, however the analysis held the text)


def hop_may_have_cut(outcome: Outcome) -> bool:
    """Whether the stream ended before its end, in a way a hop's timeout may explain: its end marker
    never came or the connection was cut, and neither an in-band error, nor the client leaving, nor the
    recorder stopping explains it."""
    if outcome.state in (State.COMPLETE, State.ERRORED) or outcome.end is None or outcome.end.t is None:
        return False
    if outcome.end_cause is Cause.CLIENT_DISCONNECTED:
        return False
    return outcome.end_marker_missing or outcome.connection_cut
