"""sse-inspect's event stream parser against the SSE parsers Python programs use, on the same bytes.

    /work/venv/bin/python benchmarks/parsers.py                       # full run: about 4 minutes on 2 cores
    /work/venv/bin/python benchmarks/parsers.py --quick               # smaller bodies, 3 runs: about 30 s
    /work/venv/bin/python benchmarks/parsers.py --json results.json   # also write every number to a file

(from the repository root; any Python with sse-inspect, httpx-sse, openai and sseclient-py installed.)
Not a test: it prints tables (stdout; progress on stderr) and never fails on a slow result.

Parsers, each fed the same list of byte chunks and driven as its library drives it:

  sse-inspect   `EventStreamParser.feed(chunk, t)` per chunk, a whole body (one chunk) through
                `feed_iter(body, t)`, then `close()`; counts the `Event` items. At whole bodies,
                `feed(body, t)`, one list of all the body's items, is timed beside it (not a peer).
  httpx-sse     `EventSource.iter_sse()` itself, over a stand-in response whose `iter_text()` is httpx's
                own (`TextDecoder` + `TextChunker`, as `Response.iter_text` runs them) over the chunks;
                iter_sse feeds that text through `SSELineDecoder` and `SSEDecoder`. Only httpx's
                transport (`iter_raw` / `iter_bytes`) is left out, for every parser alike.
  openai        the SDK's `openai._streaming.SSEDecoder().iter_bytes(chunks)`, exactly what
                `Stream._iter_events` runs on `response.iter_bytes()` (the JSON decoding after it is left out).
  sseclient-py  `sseclient.SSEClient(chunks).events()`.
  naive split   `buf += chunk; while b"\\n\\n" in buf: event, buf = buf.split(b"\\n\\n", 1)`, counting events:
                the loop people write. It decodes nothing, so it is a bound, not a parser; it is quadratic
                in the size of its buffer (big events, big reads, or no LF-LF at all, as in a CRLF stream).

Bodies (benchmarks/_corpus.py, deterministic; MB = 10**6 bytes): an OpenAI chat chunk stream at 1, 10
and 50 MB, the same with CRLF line ends, an Anthropic Messages stream at 1 MB, and 10 MB of big
events (`event:`, `id:` and 2-6 `data:` lines of 64 KiB). Each is cut into chunks of: the whole body,
64 KiB, 4 KiB, 128 B, 16 B (bodies up to 10 MB) and 1 B (1 MB bodies). --quick: the OpenAI stream at
1 and 10 MB, the others at 1 MB (multi-line: 2 MB), 16 B and 1 B on the 1 MB OpenAI stream only.

Timing: the chunk list is made before timing; a cell is the median of 5 runs (--quick: 3), the
parsers' runs interleaved, gc.collect() before each, time.perf_counter around the parser alone. The
objects alive before the runs (imported modules, the body, its chunks) are gc.freeze()-d, so that
collections walk what the parser makes, not the ~100k objects the libraries' imports left behind.

Skipping: before timing a cell, each parser runs on doubling prefixes of the body (ending at an
event's end, cut like the body, the first holding three of its longest events), and one run on the
whole body is extrapolated from the last two (t ~ size**a, a in [1, 2]). A parser whose runs would
take more than --cell-limit seconds in all (20 s; --quick: 5 s) is skipped: "skipped (quadratic)"
when a > 1.3 or the run would go slower than 2 MB/s on cuts of 16 B or more (a cost quadratic in
the size of one event). An alarm stops any run or prefix that passes its share of the limit.

Correctness, beside the timing:
  - every timed run's event count is compared with the body's (known by construction); a parser that
    counts wrong is marked ✗, timed once, and never "the fastest peer";
  - every parser's events (type, data, last event id) are compared one by one with the expected ones
    at the whole body, 4 KiB and the smallest cut (1 MB bodies) or 128 B (10 MB bodies; the 50 MB
    bodies are the 10 MB ones, longer), and events a parser delivered after more chunks than the
    earliest parser needed are counted as late;
  - a suite of small edge-case bodies (CR, CRLF, BOM, events without data, a lone id or retry, a
    stream cut inside an event, invalid UTF-8, ...) run whole and one byte at a time, against what
    the WHATWG algorithm dispatches (written out by hand in EDGE_CASES).

Tables: per body, each parser's MB/s and events/s per chunk size, and sse-inspect's speed divided by
the fastest correct peer's (>1: sse-inspect is faster), and by the fastest library's (the naive split
left out); a summary of those ratios; whole bodies through `feed_iter` and through `feed`; sse-inspect's
cost per MB at 1, 10 and 50 MB and its max/min across sizes (flat means linear); the agreement checks;
the machine. `--json FILE` writes all of it.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import _corpus as corpus
from _corpus import MB, Body
from _timing import RunTimeout, _alarm, commit_of, cpu_model, fmt_mbs, fmt_ratio, table, timed, versions

ROOT = Path(__file__).resolve().parent.parent

EventTuple = tuple[str, str, str]  # (type, data, last event id)


# ---------------------------------------------------------------------------------------------
# The parsers, each twice: a lean counting loop for the timing, and an event generator for the checks.


def _sse_inspect(whole_as_list: bool = False) -> tuple[Callable[[list[bytes]], int],
                                                        Callable[[Iterable[bytes]], Iterator[EventTuple]]]:  # fmt: skip
    """`feed` per read, `feed_iter` for a whole body (or with `whole_as_list`, `feed` for it too)."""
    from sse_inspect import Event, EventStreamParser

    def count(chunks: list[bytes]) -> int:
        p = EventStreamParser()
        feed = p.feed_iter if len(chunks) == 1 and not whole_as_list else p.feed
        n = 0
        for chunk in chunks:
            for x in feed(chunk, 0.0):
                if isinstance(x, Event):
                    n += 1
        for x in p.close():
            if isinstance(x, Event):
                n += 1
        return n

    def events(chunks: Iterable[bytes]) -> Iterator[EventTuple]:
        # `feed_iter` yields exactly what `feed` returns (a property test in tests/test_parser.py): the
        # events checked are those of either way.
        p = EventStreamParser()
        for chunk in chunks:
            for x in p.feed_iter(chunk, 0.0):
                if isinstance(x, Event):
                    yield x.type, x.data, x.id
        for x in p.close():
            if isinstance(x, Event):
                yield x.type, x.data, x.id

    return count, events


def _httpx_sse() -> tuple[Callable[[list[bytes]], int], Callable[[Iterable[bytes]], Iterator[EventTuple]]]:
    from httpx._decoders import TextChunker, TextDecoder
    from httpx_sse import EventSource

    class Response:
        """What `EventSource` uses of an `httpx.Response`: its headers and `iter_text()`."""

        headers: ClassVar[dict[str, str]] = {"content-type": "text/event-stream"}

        def __init__(self, chunks: Iterable[bytes]) -> None:
            self._chunks = chunks

        def iter_text(self) -> Iterator[str]:
            # httpx.Response.iter_text, minus its request_context; the chunks stand for iter_bytes().
            decoder = TextDecoder(encoding="utf-8")
            chunker = TextChunker(chunk_size=None)
            for byte_content in self._chunks:
                text_content = decoder.decode(byte_content)
                for chunk in chunker.decode(text_content):
                    yield chunk
            text_content = decoder.flush()
            for chunk in chunker.decode(text_content):
                yield chunk
            for chunk in chunker.flush():
                yield chunk

    def count(chunks: list[bytes]) -> int:
        n = 0
        for _ in EventSource(Response(chunks)).iter_sse():  # type: ignore[arg-type]
            n += 1
        return n

    def events(chunks: Iterable[bytes]) -> Iterator[EventTuple]:
        for sse in EventSource(Response(chunks)).iter_sse():  # type: ignore[arg-type]
            yield sse.event, sse.data, sse.id

    return count, events


def _openai() -> tuple[Callable[[list[bytes]], int], Callable[[Iterable[bytes]], Iterator[EventTuple]]]:
    from openai._streaming import SSEDecoder

    def count(chunks: list[bytes]) -> int:
        n = 0
        for _ in SSEDecoder().iter_bytes(iter(chunks)):
            n += 1
        return n

    def events(chunks: Iterable[bytes]) -> Iterator[EventTuple]:
        for sse in SSEDecoder().iter_bytes(iter(chunks)):
            yield sse.event or "message", sse.data, sse.id or ""

    return count, events


def _sseclient() -> tuple[Callable[[list[bytes]], int], Callable[[Iterable[bytes]], Iterator[EventTuple]]]:
    from sseclient import SSEClient

    def count(chunks: list[bytes]) -> int:
        n = 0
        for _ in SSEClient(chunks).events():
            n += 1
        return n

    def events(chunks: Iterable[bytes]) -> Iterator[EventTuple]:
        for ev in SSEClient(chunks).events():
            yield ev.event or "message", ev.data, ev.id or ""

    return count, events


def _naive() -> tuple[Callable[[list[bytes]], int], Callable[[Iterable[bytes]], Iterator[EventTuple]]]:
    def count(chunks: list[bytes]) -> int:
        buf = b""
        n = 0
        for chunk in chunks:
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)  # noqa: RUF059 (the loop as people write it)
                n += 1
        return n

    def fields(block: bytes) -> EventTuple:
        """What a careful caller of the loop makes of a block: its event, data and id lines."""
        kind, data, ident = "message", [], ""
        for line in block.split(b"\n"):
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if name == b"data":
                data.append(value.decode())
            elif name == b"event":
                kind = value.decode() or "message"
            elif name == b"id":
                ident = value.decode()
        return kind, "\n".join(data), ident

    def events(chunks: Iterable[bytes]) -> Iterator[EventTuple]:
        buf = b""
        for chunk in chunks:
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                yield fields(event)

    return count, events


@dataclass(frozen=True)
class Parser:
    name: str
    count: Callable[[list[bytes]], int]
    events: Callable[[Iterable[bytes]], Iterator[EventTuple]]
    library: bool


def load_parsers() -> list[Parser]:
    made = [
        ("sse-inspect", _sse_inspect, True),
        ("httpx-sse", _httpx_sse, True),
        ("openai", _openai, True),
        ("sseclient-py", _sseclient, True),
        ("naive split", _naive, False),
    ]
    return [Parser(name, *make(), library) for name, make, library in made]  # type: ignore[call-arg]


SUBJECT = "sse-inspect"
SUBJECT_LIST = "sse-inspect feed()"  # the whole body through `feed`: timed beside SUBJECT at whole bodies, not a peer


# ---------------------------------------------------------------------------------------------
# The plan: which bodies, cut how.

WHOLE = 0
CHUNKS = {1: [WHOLE, 65536, 4096, 128, 16, 1], 10: [WHOLE, 65536, 4096, 128, 16], 50: [WHOLE, 65536, 4096, 128]}


@dataclass(frozen=True)
class BodySpec:
    key: str
    family: str
    mb: int
    make: Callable[[], Body]
    chunks: list[int]

    @property
    def label(self) -> str:
        return f"{self.family} {self.mb} MB"


def plan(quick: bool) -> list[BodySpec]:
    def lf(mb: int) -> Callable[[], Body]:
        return lambda: corpus.openai_chat(mb * MB)

    def crlf(mb: int) -> Callable[[], Body]:
        return lambda: corpus.crlf(corpus.openai_chat(mb * MB))

    if quick:
        return [
            BodySpec("openai-lf-1", "openai-lf", 1, lf(1), CHUNKS[1]),
            BodySpec("openai-lf-10", "openai-lf", 10, lf(10), CHUNKS[50]),
            BodySpec("openai-crlf-1", "openai-crlf", 1, crlf(1), CHUNKS[50]),
            BodySpec("anthropic-1", "anthropic", 1, lambda: corpus.anthropic_messages(1 * MB), CHUNKS[50]),
            BodySpec("multiline-2", "multiline", 2, lambda: corpus.multiline(2 * MB), CHUNKS[50]),
        ]
    specs = []
    for mb in (1, 10, 50):
        specs.append(BodySpec(f"openai-lf-{mb}", "openai-lf", mb, lf(mb), CHUNKS[mb]))
    for mb in (1, 10, 50):
        specs.append(BodySpec(f"openai-crlf-{mb}", "openai-crlf", mb, crlf(mb), CHUNKS[mb]))
    specs.append(BodySpec("anthropic-1", "anthropic", 1, lambda: corpus.anthropic_messages(1 * MB), CHUNKS[1]))
    specs.append(BodySpec("multiline-10", "multiline", 10, lambda: corpus.multiline(10 * MB), CHUNKS[10]))
    return specs


def chunk_label(n: int) -> str:
    if n == WHOLE:
        return "whole"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


# ---------------------------------------------------------------------------------------------
# Timing.


def _boundary(data: bytes, size: int) -> int:
    """The end of the last event that ends within data[:size] (0 if none)."""
    return max(data.rfind(b"\n\n", 0, size) + 2, data.rfind(b"\r\n\r\n", 0, size) + 4, 0)


def predict(fn: Callable[[list[bytes]], int], body: Body, n: int, runs: int, limit: float) -> tuple[float, float]:
    """(predicted seconds of one run on the whole body, exponent), from runs on doubling prefixes.

    The prefixes are cut like the body, and each ends at an event's end (a cut inside a UTF-8
    character makes some parsers raise at the end of the stream). The first holds at least three of
    the body's longest events, so that a cost quadratic in the size of one event (linear in their
    number) is not taken for one quadratic in the size of the body. A prefix's time is the best of
    two runs when short. Probing stops when a prefix took 20 ms and the cell is clearly within the
    limit, when a prefix took 0.2 s (enough to trust the exponent), or at a quarter of the body.
    """
    total = len(body.data)
    size = min(total // 8, max(total // 1024, 3 * body.longest, 4 * n))
    points: list[tuple[int, float]] = []
    while True:
        cut = _boundary(body.data, size) or size
        sub = corpus.chunked(body.data[:cut], n)
        try:  # a prefix slower than `limit` scaled down to its size: the whole is slower than `limit`
            dt, _ = timed(fn, sub, max(0.1, limit * cut / total))
        except RunTimeout:
            return max(0.1, limit * cut / total) * total / cut, math.nan  # at least this much
        if dt < 0.05:
            dt = min(dt, timed(fn, sub, limit)[0])
        del sub
        points.append((cut, max(dt, 1e-6)))
        a = 1.0  # with one point: a lower bound, for any cost from linear to quadratic
        if len(points) >= 2:
            (s1, t1), (s2, t2) = points[-2:]
            if s2 > s1:
                a = min(2.0, max(1.0, math.log(t2 / t1) / math.log(s2 / s1)))
        predicted = dt * (total / cut) ** a
        if dt >= 0.01 and predicted * runs > 3 * limit:  # over the limit even if linear from here
            return predicted, a
        if len(points) >= 2 and ((dt >= 0.02 and predicted * runs < limit / 3) or dt >= 0.2):
            return predicted, a
        if size * 2 > total // 4:
            return predicted, a
        size *= 2


@dataclass
class Cell:
    body: str
    chunk: int
    parser: str
    status: str = "ok"  # ok | wrong (a wrong count, or it raised) | skipped
    times: list[float] = field(default_factory=list)
    counted: int | None = None
    predicted_s: float | None = None
    exponent: float | None = None
    note: str = ""
    median_s: float | None = None
    mb_s: float | None = None
    events_s: float | None = None


def measure(spec: BodySpec, body: Body, n: int, chunks: list[bytes], parsers: list[Parser], runs: int,
            cell_limit: float) -> dict[str, Cell]:  # fmt: skip
    """The cell's runs, interleaved across parsers. A parser that counts wrong is timed once, not `runs` times."""
    expected = len(body.events)
    cells = {p.name: Cell(spec.key, n, p.name) for p in parsers}
    active: list[Parser] = []
    for p in parsers:
        cell = cells[p.name]
        try:
            cell.predicted_s, cell.exponent = predict(p.count, body, n, runs, cell_limit)
        except RunTimeout:
            cell.status, cell.note = "skipped", f"skipped (a probe passed {cell_limit:g} s)"
            continue
        except Exception as exc:  # noqa: BLE001 (a parser that raises on content is a finding)
            cell.status, cell.note = "wrong", f"✗ raises {type(exc).__name__}"
            continue
        if cell.predicted_s * runs > cell_limit:
            # Quadratic: the cost grows faster than the body, or (in the size of one event) a run
            # slower than 2 MB/s on cuts of 16 B or more, which no linear parser here comes near.
            slow = n != 1 and cell.predicted_s / len(body.data) > 0.5e-6
            kind = "quadratic" if cell.exponent > 1.3 or slow else "slow"
            about = "~"
            if math.isnan(cell.exponent):  # a prefix was stopped: a lower bound
                about, cell.exponent = "> ", None
            cell.status = "skipped"
            cell.note = f"skipped ({kind}: {about}{fmt_seconds(cell.predicted_s)}/run)"
        else:
            active.append(p)
    for r in range(runs):
        order = active[r % len(active) :] + active[: r % len(active)] if active else []
        for p in order:
            cell = cells[p.name]
            if cell.status != "ok":
                continue
            try:
                dt, counted = timed(p.count, chunks, cell_limit)
            except RunTimeout:
                cell.status, cell.note = "skipped", f"skipped (a run passed {cell_limit:g} s)"
                cell.times = []
                continue
            except Exception as exc:  # noqa: BLE001
                cell.status, cell.note = "wrong", f"✗ raises {type(exc).__name__}"
                cell.times = []
                continue
            cell.times.append(dt)
            cell.counted = counted
            if counted != expected:
                cell.status = "wrong"
                cell.note = f"✗ {counted} events, not {expected}"
    for cell in cells.values():
        if cell.times and cell.status != "skipped":
            cell.median_s = statistics.median(cell.times)
            cell.mb_s = len(body.data) / MB / cell.median_s
            cell.events_s = (cell.counted or 0) / cell.median_s
    return cells


# ---------------------------------------------------------------------------------------------
# Agreement.


class Pulls:
    """The chunks, remembering the index of the last one a parser took (len(chunks): it saw the end)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.i = -1

    def __iter__(self) -> Iterator[bytes]:
        for i, chunk in enumerate(self.chunks):
            self.i = i
            yield chunk
        self.i = len(self.chunks)


@dataclass
class Outcome:
    events: list[EventTuple] | None
    delivered: list[int]  # per event, the index of the chunk after which it came out
    error: str | None = None


def run_events(parser: Parser, chunks: list[bytes]) -> Outcome:
    pulls = Pulls(chunks)
    events: list[EventTuple] = []
    delivered: list[int] = []
    try:
        for ev in parser.events(pulls):
            events.append(ev)
            delivered.append(pulls.i)
    except Exception as exc:  # noqa: BLE001 (a parser that raises on content is a finding)
        return Outcome(None, [], f"raises {type(exc).__name__}: {str(exc)[:60]}")
    return Outcome(events, delivered)


def _short(value: str, width: int = 24) -> str:
    return repr(value if len(value) <= width else value[: width - 3] + "...")


def describe_difference(got: list[EventTuple], want: list[EventTuple]) -> str | None:
    if got == want:
        return None
    parts = []
    if len(got) != len(want):
        parts.append(f"{len(got)} events, not {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            what = [f"{name} {_short(gv)} not {_short(wv)}" for name, gv, wv in zip(("type", "data", "id"), g, w)
                    if gv != wv]  # fmt: skip
            parts.append(f"event #{i}: " + ", ".join(what))
            break
    else:
        if len(got) > len(want):
            extra = got[len(want)]
            parts.append(f"extra event #{len(want)}: type {_short(extra[0])} data {_short(extra[1])}")
        else:
            parts.append(f"missing from event #{len(got)}")
    return "; ".join(parts)


def compare(parsers: list[Parser], chunks: list[bytes], want: list[EventTuple],
            skip: Iterable[str] = ()) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Each parser's events against `want`, and how late each agreeing parser delivered them."""
    skip = set(skip)
    gc.disable()  # millions of tuples kept: no use collecting them over and over
    try:
        outcomes = {p.name: run_events(p, chunks) for p in parsers if p.name not in skip}
    finally:
        gc.enable()
    agreeing = [o for o in outcomes.values() if o.events == want]
    earliest = [min(o.delivered[i] for o in agreeing) for i in range(len(want))] if agreeing else []
    report: dict[str, dict[str, Any]] = {}
    for p in parsers:
        if p.name in skip:
            report[p.name] = {"status": "skipped", "detail": "skipped (quadratic)"}
            continue
        o = outcomes[p.name]
        if o.error:
            report[p.name] = {"status": "differs", "detail": o.error}
            continue
        assert o.events is not None
        diff = describe_difference(o.events, want)
        if diff:
            report[p.name] = {"status": "differs", "detail": diff}
            continue
        lags = [d - e for d, e in zip(o.delivered, earliest)]
        late = [x for x in lags if x > 0]
        if late:
            at_end = sum(1 for d, x in zip(o.delivered, lags) if x > 0 and d == len(chunks))
            detail = f"{len(late)} late (up to {max(late)} chunk{'s' if max(late) > 1 else ''})"
            if at_end:
                detail += f", {at_end} only at the end of the stream"
            report[p.name] = {"status": "late", "detail": detail, "late": len(late), "max_lag": max(late)}
        else:
            report[p.name] = {"status": "ok", "detail": "ok"}
    return report


# The edge cases: body, and what the WHATWG algorithm dispatches (type, data, last event id).
EDGE_CASES: list[tuple[str, bytes, list[EventTuple], str]] = [
    ("lf", b"data: a\n\nevent: t\ndata: b\n\n", [("message", "a", ""), ("t", "b", "")], "plain LF"),
    ("crlf", b"data: a\r\n\r\nevent: t\r\ndata: b\r\n\r\n", [("message", "a", ""), ("t", "b", "")],
     "CRLF line ends"),
    ("cr", b"data: a\r\revent: t\rdata: b\r\r", [("message", "a", ""), ("t", "b", "")], "lone CR line ends"),
    ("lf-line-cr-blank", b"data: a\n\rdata: b\n\n", [("message", "a", ""), ("message", "b", "")],
     "an LF line, then a blank line ended by CR"),
    ("lf-line-crlf-blank", b"data: a\n\r\ndata: b\n\n", [("message", "a", ""), ("message", "b", "")],
     "an LF line, then a blank line ended by CRLF"),
    ("bom", b"\xef\xbb\xbfdata: a\n\n", [("message", "a", "")], "UTF-8 BOM before the first field"),
    ("event-without-data", b"event: ping\n\ndata: a\n\n", [("message", "a", "")],
     "an event with a type and no data: not dispatched"),
    ("lone-id", b"id: 1\n\n\ndata: a\n\n", [("message", "a", "1")], "an id alone, then blank lines"),
    ("lone-retry", b"retry: 1000\n\ndata: a\n\n", [("message", "a", "")], "a retry alone"),
    ("empty-data", b"data:\n\ndata\n\n", [("message", "", ""), ("message", "", "")], "`data:` and `data`"),
    ("spaces", b"data:x\n\ndata:  y\n\n", [("message", "x", ""), ("message", " y", "")],
     "no space after the colon, two spaces"),
    ("multi-line-data", b"data: a\ndata:\ndata: b\n\ndata: c\ndata:\n\n",
     [("message", "a\n\nb", ""), ("message", "c\n", "")], "data lines joined by LF, one trailing LF dropped"),
    ("comments", b": keep-alive\n\n: x\ndata: a\n\n", [("message", "a", "")], "comment lines"),
    ("id-persists", b"id: 7\ndata: a\n\ndata: b\n\n", [("message", "a", "7"), ("message", "b", "7")],
     "the last event id carries over"),
    ("id-with-nul", b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", [("message", "a", "1"), ("message", "b", "1")],
     "an id holding NUL is ignored"),
    ("empty-event-type", b"event:\ndata: a\n\n", [("message", "a", "")], "`event:` empty"),
    ("unknown-fields", b"Data: x\ndata : y\nfoo: z\ndata: a\n\n", [("message", "a", "")],
     "field names are exact: `Data`, `data ` ignored"),
    ("blank-lines", b"\n\n\ndata: a\n\n\n\n", [("message", "a", "")], "extra blank lines"),
    ("cut-after-line", b"data: a\n\ndata: b\n", [("message", "a", "")], "stream ends inside an event"),
    ("cut-mid-line", b"data: a\n\ndata: b", [("message", "a", "")], "stream ends inside a line"),
    ("utf8-multibyte", "data: é日🙂\n\n".encode(), [("message", "é日🙂", "")], "multi-byte UTF-8"),
    ("invalid-utf8", b"data: caf\xe9\n\n", [("message", "caf\ufffd", "")], "a byte that is not UTF-8: U+FFFD"),
    ("unicode-line-breaks", "data: a\u2028b\x0bc\x0cd\x1ce\x85f\n\n".encode(),
     [("message", "a\u2028b\x0bc\x0cd\x1ce\x85f", "")], "U+2028, VT, FF, FS, NEL are not line ends"),
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Output.


def fmt_seconds(s: float) -> str:
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.1f} s"
    return f"{s * 1000:.0f} ms"


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def ratio_of(cells: dict[str, Cell], parsers: list[Parser], libraries_only: bool = False) -> tuple[float, str] | None:
    subject = cells[SUBJECT]
    peers = [cells[p.name] for p in parsers if p.name != SUBJECT and (p.library or not libraries_only)]
    peers = [c for c in peers if c.status == "ok" and c.mb_s]
    if subject.status != "ok" or not subject.mb_s or not peers:
        return None
    best = max(peers, key=lambda c: c.mb_s or 0.0)
    return subject.mb_s / (best.mb_s or 1.0), best.parser


def cell_text(c: Cell) -> str:
    if c.status == "skipped" or c.mb_s is None:
        return c.note
    text = f"{fmt_mbs(c.mb_s)} · {fmt_rate(c.events_s or 0)}/s"
    return f"{c.note} ({text}, 1 run)" if c.status == "wrong" else text


def machine() -> dict[str, Any]:
    parser_files = ["sse_inspect/_parser.py", "sse_inspect/_linebuffer.py", "sse_inspect/_parser_accel.py",
                    "sse_inspect/_events.py"]
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": versions(("sse-inspect", "httpx-sse", "httpx", "openai", "sseclient-py")),
        "sse_inspect_commit": commit_of(parser_files, "parser"),
        "loadavg_start": os.getloadavg(),
    }


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smaller bodies (1, 2 and 10 MB), 16 B and 1 B cuts on one body only,\n3 runs a cell: under a minute",
    )
    ap.add_argument("--json", metavar="FILE", help="write every number to FILE")
    ap.add_argument("--runs", type=int, help="runs per cell (default 5; --quick: 3)")
    ap.add_argument("--cell-limit", type=float, help="skip a parser whose runs of a cell would take longer "
                    "(seconds; default 20; --quick: 5)")  # fmt: skip
    args = ap.parse_args(argv)
    runs = args.runs or (3 if args.quick else 5)
    cell_limit = args.cell_limit or (5.0 if args.quick else 20.0)
    started = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    info = machine()
    parsers = load_parsers()
    as_list = Parser(SUBJECT_LIST, *_sse_inspect(whole_as_list=True), library=False)
    # gc.collect() runs before every timed run; with the libraries' modules (openai's pydantic models
    # above all) it would walk ~100k long-lived objects each time. Frozen, they are left out.
    gc.collect()
    gc.freeze()
    specs = plan(args.quick)
    command = "benchmarks/parsers.py" + (" --quick" if args.quick else "")

    results: dict[str, dict[int, dict[str, Cell]]] = {}
    meta: dict[str, dict[str, Any]] = {}
    agreement: list[dict[str, Any]] = []
    for spec in specs:
        body = spec.make()
        meta[spec.key] = {"label": spec.label, "family": spec.family, "mb": spec.mb, "bytes": len(body.data),
                          "events": len(body.events), "longest_event": body.longest}  # fmt: skip
        results[spec.key] = {}
        # Events compared one by one at the whole body, 4 KiB and the smallest cut (1 MB bodies) or
        # 128 B (10 MB bodies); not on the 50 MB bodies, the 10 MB ones longer. Every timed run's count
        # is checked on all.
        checks = {WHOLE, 4096, min(n for n in spec.chunks if n) if spec.mb <= 1 else 128} if spec.mb <= 10 else set()
        for n in spec.chunks:
            t0 = time.perf_counter()
            chunks = corpus.chunked(body.data, n)
            gc.freeze()  # the body's expected events and the chunk list: long-lived too
            cells = measure(spec, body, n, chunks, parsers + [as_list] if n == WHOLE else parsers, runs, cell_limit)
            results[spec.key][n] = cells
            if n in checks:
                skip = [name for name, c in cells.items() if c.status == "skipped"]
                report = compare(parsers, chunks, body.events, skip)
                agreement.append({"body": spec.key, "chunk": n, "parsers": report})
            print(f"  {spec.label:<20} {chunk_label(n):>7}: {time.perf_counter() - t0:5.1f} s "
                  f"(total {time.perf_counter() - started:5.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
            del chunks
        del body
        gc.collect()

    edge: list[dict[str, Any]] = []
    for name, data, want, what in EDGE_CASES:
        for n in (WHOLE, 1):
            report = compare(parsers, corpus.chunked(data, n), want)
            edge.append({"case": name, "what": what, "chunk": n, "parsers": report})

    elapsed = time.perf_counter() - started
    info["loadavg_end"] = os.getloadavg()
    out = sys.stdout
    names = [p.name for p in parsers]

    print(f"# SSE parsers side by side (`{command}`)\n", file=out)
    print(f"- machine: {info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable), {info['python']}, "
          f"{info['platform']}", file=out)  # fmt: skip
    print("- packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()), file=out)
    print(f"- sse-inspect at {info['sse_inspect_commit']}", file=out)
    print(f"- median of {runs} runs per cell; load average {info['loadavg_start'][0]:.2f} at start, "
          f"{info['loadavg_end'][0]:.2f} at end; whole run {elapsed:.0f} s\n", file=out)  # fmt: skip
    print("Cells: MB/s · events/s (MB = 10^6 bytes). Ratio: sse-inspect's speed / the fastest correct peer's "
          "(>1: sse-inspect is faster); 'vs libraries' leaves the naive split out.\n", file=out)  # fmt: skip

    for spec in specs:
        m = meta[spec.key]
        print(f"## {spec.label}: {m['bytes']:,} bytes, {m['events']:,} events\n", file=out)
        rows = []
        for n in spec.chunks:
            cells = results[spec.key][n]
            rows.append([chunk_label(n), *(cell_text(cells[x]) for x in names),
                         fmt_ratio(ratio_of(cells, parsers)), fmt_ratio(ratio_of(cells, parsers, True))])  # fmt: skip
        print(table(["chunks", *names, "ratio vs fastest", "ratio vs libraries"], rows) + "\n", file=out)

    all_chunks = sorted({n for s in specs for n in s.chunks}, key=lambda n: (n != WHOLE, -n))
    print("## sse-inspect's speed / the fastest correct peer's\n", file=out)
    rows = []
    for spec in specs:
        row = [spec.label]
        for n in all_chunks:
            r = ratio_of(results[spec.key][n], parsers) if n in results[spec.key] else None
            lib = ratio_of(results[spec.key][n], parsers, True) if n in results[spec.key] else None
            row.append("" if n not in results[spec.key] else "n/a" if r is None or lib is None
                       else f"{r[0]:.2f}" if r == lib else f"{r[0]:.2f} ({lib[0]:.2f})")  # fmt: skip
        rows.append(row)
    print(table(["body", *map(chunk_label, all_chunks)], rows), file=out)
    print("\n(in brackets: against the libraries alone, where the naive split was the fastest)\n", file=out)

    whole: list[dict[str, Any]] = []
    print("## Whole bodies: `feed_iter` (the tables above) and `feed`\n", file=out)
    print("`feed_iter(body, t)` yields a body's items a 64 KiB piece at a time; `feed(body, t)` returns them all "
          "in one list. Both timed in the same interleaved runs.\n", file=out)  # fmt: skip
    rows = []
    for spec in specs:
        cells = results[spec.key][WHOLE]
        lazy, eager = cells[SUBJECT], cells[SUBJECT_LIST]
        best = ratio_of(cells, parsers, True)
        peer = cells[best[1]] if best else None
        whole.append({"body": spec.key, "feed_iter_mb_s": lazy.mb_s, "feed_mb_s": eager.mb_s,
                      "fastest_library": peer and peer.parser, "fastest_library_mb_s": peer and peer.mb_s})
        ratio = "n/a"
        if peer and peer.mb_s and lazy.mb_s and eager.mb_s:
            ratio = f"×{lazy.mb_s / peer.mb_s:.2f} / ×{eager.mb_s / peer.mb_s:.2f}"
        fastest = f"{cell_text(peer)} ({peer.parser})" if peer else "n/a"
        rows.append([spec.label, cell_text(lazy), cell_text(eager), fastest, ratio])
    print(table(["body", "feed_iter", "feed (one list)", "fastest library", "ratio: feed_iter / feed"], rows) + "\n",
          file=out)  # fmt: skip

    scaling: dict[str, dict[str, Any]] = {}
    print("## Scaling: sse-inspect's time per MB (ms/MB) by body size\n", file=out)
    for family in ("openai-lf", "openai-crlf"):
        fam = [s for s in specs if s.family == family]
        if len(fam) < 2:
            continue
        rows = []
        scaling[family] = {}
        for n, who in [(n, SUBJECT) for n in all_chunks] + [(WHOLE, SUBJECT_LIST)]:
            per = {}
            for s in fam:
                c = results[s.key].get(n, {}).get(who)
                if c and c.median_s:
                    per[s.mb] = c.median_s / (meta[s.key]["bytes"] / MB) * 1000
            if len(per) < 2:
                continue
            spread = max(per.values()) / min(per.values())
            label = chunk_label(n) if who == SUBJECT else "whole, feed()"
            scaling[family][label] = {"ms_per_mb": per, "max_over_min": spread}
            rows.append([label, *(f"{per[s.mb]:.2f}" if s.mb in per else "" for s in fam), f"{spread:.2f}"])
        print(f"{family}:\n", file=out)
        print(table(["chunks", *(f"{s.mb} MB" for s in fam), "max/min"], rows) + "\n", file=out)

    print("## Agreement on the benchmark bodies\n", file=out)
    print("Events (type, data, last event id) against those the body was built from; 'late': delivered after "
          "more chunks than the earliest parser needed.\n", file=out)  # fmt: skip
    rows = [[f"{meta[a['body']]['label']}, {chunk_label(a['chunk'])}", *(a["parsers"][x]["detail"] for x in names)]
            for a in agreement]  # fmt: skip
    print(table(["body, chunks", *names], rows) + "\n", file=out)

    print("## Edge cases (expected: the WHATWG algorithm, written out by hand)\n", file=out)
    rows = []
    for name, _, _, _ in EDGE_CASES:
        row = [name]
        for x in names:
            parts = []
            for e in edge:
                if e["case"] == name:
                    r = e["parsers"][x]
                    parts.append(r["status"] if r["status"] in ("ok", "late") else "✗")
            row.append(parts[0] if parts[0] == parts[1] else f"{parts[0]} / {parts[1]} (1 B)")
        rows.append(row)
    print(table(["case (whole / 1 B)", *names], rows) + "\n", file=out)
    print("Where they differ:\n", file=out)
    for name, data, _, what in EDGE_CASES:
        for x in names:
            details = {e["chunk"]: e["parsers"][x] for e in edge if e["case"] == name}
            if all(d["status"] == "ok" for d in details.values()):
                continue
            if details[WHOLE]["detail"] == details[1]["detail"]:
                text = details[WHOLE]["detail"]
            else:
                text = f"whole: {details[WHOLE]['detail']}; 1 B: {details[1]['detail']}"
            print(f"- {name} ({what}, {data!r}): {x}: {text}", file=out)
    print(file=out)

    if args.json:
        doc = {
            "command": command,
            "machine": info,
            "runs": runs,
            "cell_limit_s": cell_limit,
            "elapsed_s": elapsed,
            "bodies": meta,
            "cells": [
                {**vars(c), "chunk_label": chunk_label(c.chunk)}
                for per in results.values() for cells in per.values() for c in cells.values()
            ],
            "ratios": [
                {"body": key, "chunk": n, "chunk_label": chunk_label(n),
                 "vs_fastest": ratio_of(cells, parsers), "vs_libraries": ratio_of(cells, parsers, True)}
                for key, per in results.items() for n, cells in per.items()
            ],
            "whole_bodies": whole,
            "scaling": scaling,
            "agreement": agreement,
            "edge_cases": edge,
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(f"done in {elapsed:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
