"""A self-contained HTML report of checked captures, to attach to a bug report.

    page = html_report([check_capture(load_capture(path)) for path in paths])

One file, no network: inline CSS and SVG, no script at all, and a Content-Security-Policy that
forbids scripts and every load. Everything taken from a capture is escaped (`esc`), so a hostile
stream can neither inject markup nor run code. The arrival plot overlays the timed captures on one
time axis: per capture a `<g class="capture" data-chunks=N>` holding one `<path class="chunk">`
step per chunk (cumulative bytes), a dashed `<path class="events">` (cumulative events), the
`<rect class="hold">` silences before and `<rect class="burst">` releases of check's
buffering bursts, `<rect class="silence">` long silences, `<line class="ttfb">` and
`<line class="first-token">`, and a `<g class="end complete|cut|errored">` end mark.

No capture can make the page big: past `PLOT_STEPS` chunks (or events) the plot draws one step per
pixel column, each table shows its first `HEAD_ROWS` and last `TAIL_ROWS` rows and says how many it
left out, and each text shows its first `TEXT_SHOWN` characters and says how many more there were.

Each capture's events section (`<table class="events">`) shows its first `HEAD_EVENTS` and last
`TAIL_EVENTS` events and, around the event, time or body byte each finding points at (its `Anchor`),
the `AROUND` events either side, that event marked with the finding's code (`<tr class="event at"
data-findings=...>`), with a `<tr class="left-out">` line counting the events between. Its data
is gathered without keeping the events: an `EventSample` watching the pass keeps the ends, and
`EventSample.around` tells which neighbourhoods they hold; for the others the caller shows an
`Around` the stream again (the CLI reads the capture file a second time, up to the last event wanted).
"""

from __future__ import annotations

import html
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from ._analysis import Analysis, Observer
from ._capture import Chunk
from ._events import Event
from ._diff import EventDelay, TextDelay, TextTimingDiff, TimingDiff, diff_timing
from ._errors import SSEInspectError
from ._format import STREAMING_HEADERS, nice_scale, seconds, size, tick_label, visible
from ._outcome import Outcome, State
from ._version import __version__
from .checks import Finding, Report, Severity
from .checks.evidence import Bursts, Silence
from .checks.hops import culprit_line, hops_line
from .dialects import Choice, EventFlags, Passage, ToolCall

__all__ = [
    "CSP",
    "PALETTE",
    "Anchor",
    "Around",
    "Enough",
    "EventSample",
    "EventsShown",
    "Trace",
    "anchors",
    "esc",
    "html_report",
]

PALETTE = ("#1f6fb4", "#d62728", "#2a9d3a", "#8e44ad", "#e67e22", "#16a6b6", "#c2185b", "#7f6a00")
"""One colour per capture, in order (then again)."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""No script, no fetch, no image, no font: the page can load and run nothing."""

PLOT_STEPS = 2000
"""Up to this many chunks (events) a capture's plot draws one step for each; past it, one step for
each pixel column of the plot (over all of that column's chunks: from the bytes before its first to
the bytes after its last), so the page stays small and the shape is the same at the plot's resolution."""
HEAD_ROWS, TAIL_ROWS = 200, 50
"""A table (the hold table, findings, notices, choices, tool calls, bands on the plot) longer than
their sum shows its first HEAD_ROWS rows and last TAIL_ROWS, and says how many it left out."""
TEXT_SHOWN = 100_000
"""Characters of each text shown (an answer's text, reasoning, refusal, tool-call arguments); the rest is counted."""
NAME_SHOWN = 1000
"""Characters of each name or one-line value shown (a file name, URL, header value, notice)."""
HEAD_EVENTS, TAIL_EVENTS = 20, 20
"""The events section shows a capture's first HEAD_EVENTS events and its last TAIL_EVENTS ..."""
AROUND, AROUND_FINDINGS = 5, 20
"""... and the AROUND events before and after the moment each finding points at (its event, time or
byte), for the first AROUND_FINDINGS findings that point at one; the others are counted."""
DATA_SHOWN = 200
"""Characters of each event's data shown in the events section."""

T = TypeVar("T")

# the plot's geometry, in SVG user units
_W, _H = 960, 400
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 64, 36, 48
_PW, _PH = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232b;margin:0 auto;
  max-width:1100px;padding:16px 24px 40px}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #d6dbe1}
h3{font-size:15px;margin:16px 0 4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f7f9;border:1px solid #e1e5ea;border-radius:4px;
  padding:8px 10px;margin:4px 0}
table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 12px 2px 0;text-align:left;vertical-align:top}
th{font-weight:600}td.n,th.n{text-align:right}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:-2px;margin-right:4px}
.error,.cut,.errored{color:#b3261e}.warning{color:#9a6700}.info{color:#0b6e99}.ok,.complete{color:#1a7f37}
.verdict{font-weight:600}.dim,.meta,.skipped{color:#66707a}
.findings{list-style:none;padding:0}.finding{margin:4px 0}.finding .sev{display:inline-block;width:64px;font-weight:600}
.fix{color:#4a545e;margin-left:68px}.culprit .fix{display:block;margin-left:16px}
.cols{display:flex;flex-wrap:wrap;align-items:flex-start;gap:8px 48px}
tr.held td,tr.at td{background:#fff4d6}.summary td:nth-child(-n+3){white-space:nowrap}
td.data{word-break:break-all;max-width:640px}table.events td.n{white-space:nowrap}
svg text{font:12px system-ui,sans-serif;fill:#3b444d}svg .axis{stroke:#9aa4ae}svg .grid{stroke:#eceff2}
svg .chunk,svg .tail{fill:none;stroke-width:2}svg .events{fill:none;stroke-width:1.2;stroke-dasharray:5 3}
svg .hold{opacity:.10}svg .burst{opacity:.45}svg .silence{fill:#9aa4ae;opacity:.18}
svg .ttfb,svg .first-token{stroke-width:1;stroke-dasharray:2 3}
svg .ttfb-label,svg .first-token-label{paint-order:stroke;stroke:#fff;stroke-width:3px}
"""


def esc(value: object) -> str:
    """Text for an HTML text node or attribute value: control characters made visible, then escaped."""
    return html.escape(visible(str(value).replace("\r\n", "\n")), quote=True)


def _clip(value: object, limit: int = NAME_SHOWN) -> str:
    """`value` as text, cut to `limit` characters with a note of how many more there were."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _pre(text: str | Passage) -> str:
    """A `<pre>` of `text`, its first TEXT_SHOWN characters, and a note of how many more there were."""
    head = text[:TEXT_SHOWN] if isinstance(text, str) else text.head(TEXT_SHOWN)
    if len(text) <= TEXT_SHOWN:
        return f"<pre>{esc(head)}</pre>"
    return (f'<pre>{esc(head)}</pre><p class="dim left-out">… {len(text) - TEXT_SHOWN:,} more '
            "characters not shown</p>")  # fmt: skip


def _some(items: Sequence[T], row: Callable[[T], str], left_out: Callable[[int], str]) -> Iterator[str]:
    """`row` of each of `items`, or of the first HEAD_ROWS and the last TAIL_ROWS, with `left_out(n)` between."""
    if len(items) <= HEAD_ROWS + TAIL_ROWS:
        yield from map(row, items)
        return
    yield from map(row, items[:HEAD_ROWS])
    yield left_out(len(items) - HEAD_ROWS - TAIL_ROWS)
    yield from map(row, items[len(items) - TAIL_ROWS :])


def _end_class(o: Outcome) -> str:
    """The end mark's CSS class: complete, cut or errored."""
    return "complete" if o.ok else "errored" if o.state is State.ERRORED else "cut"


def _label(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else str(i + 1)


def _name(r: Report, i: int) -> str:
    c = r.analysis.capture
    return _clip(c.path or (c.request.url if c.request else f"capture {i + 1}"))


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _tone(r: Report) -> str:
    """The verdict's CSS class: error, warning, or ok (info findings do not colour it)."""
    return str(r.worst) if r.worst is not None and r.worst >= Severity.WARNING else "ok"


@dataclass(slots=True)
class _Run:
    """Points `first` to `last` of a step series: their times, and the total before and after them."""

    first: int
    last: int
    t0: float
    t1: float
    before: int
    after: int
    slot: float
    """Which time slot of the series' current width the run is in (never less than the run before's)."""


class Steps:
    """A cumulative step series (the bytes, chunk by chunk; the events, one by one) kept in a bounded
    number of runs, whatever the number of points: one run a point up to 2 * PLOT_STEPS of them; past
    that, the points are merged into time slots that double in width as the series outgrows them, a
    run keeping its first and last point's times and the totals before and after, which is all a step
    plot at a pixel's resolution needs. A point earlier than the one before it joins its run."""

    def __init__(self) -> None:
        self.runs: list[_Run] = []
        self.count = self.total = 0
        self.width = 0.0
        """Seconds a slot spans (0: a run for each point)."""

    def add(self, t: float, amount: int) -> None:
        t = t if math.isfinite(t) else 0.0
        k, before = self.count, self.total
        self.count, self.total = k + 1, before + amount
        slot = t // self.width if self.width else float(k)
        runs = self.runs
        if runs and slot <= runs[-1].slot:
            run = runs[-1]
            run.last, run.t1, run.after = k, t, self.total
        else:
            runs.append(_Run(k, k, t, t, before, self.total, slot))
            if len(runs) > 2 * PLOT_STEPS:
                self._coarsen()

    def _coarsen(self) -> None:
        """Merge the runs into slots at least twice as wide, few enough to fit PLOT_STEPS runs and more."""
        span = max(run.t1 for run in self.runs) - self.runs[0].t0
        self.width = max(2 * self.width, span / PLOT_STEPS, 1e-9)
        merged: list[_Run] = []
        for run in self.runs:
            run.slot = max(run.t0 // self.width, merged[-1].slot if merged else run.t0 // self.width)
            if merged and run.slot == merged[-1].slot:
                last = merged[-1]
                last.last, last.t1, last.after = run.last, run.t1, run.after
            else:
                merged.append(run)
        self.runs = merged


class Trace(Observer):
    """What the arrival plot needs of one capture, gathered as its analysis passes (an `Observer`),
    in memory bounded however long the stream: its chunks as they crossed the wire and its events,
    each as `Steps`, and whether every chunk had a time."""

    def __init__(self) -> None:
        self.chunks, self.events = Steps(), Steps()
        self.timed = True

    @classmethod
    def of(cls, analysis: Analysis) -> Trace:
        """The trace of an analysis that kept its capture's chunks and its events."""
        trace = cls()
        for chunk in analysis.capture.chunks:
            trace.wire(chunk)
        for event in analysis.events:
            trace.events.add(event.t or 0.0, 1)
        return trace

    def wire(self, chunk: Chunk) -> None:
        self.timed = self.timed and chunk.t is not None
        self.chunks.add(chunk.t or 0.0, len(chunk.data))

    def event(self, event: Event, flags: EventFlags) -> None:
        self.events.add(event.t or 0.0, 1)


# -- the events shown: the first and the last, and those around each finding ----------------------


class Row(NamedTuple):
    """An event as the events section shows it, cut to size: its data's first DATA_SHOWN characters
    (`more`: how many more there were), its type's first NAME_SHOWN; `end`: the body byte past it."""

    index: int  # type: ignore[assignment]  # as Event's: a field named as tuple.index
    t: float | None
    type: str
    data: str
    more: int
    end: int

    @classmethod
    def of(cls, e: Event) -> Row:
        data = e.data
        return cls(e.index, e.t, e.type[:NAME_SHOWN], data[:DATA_SHOWN], max(len(data) - DATA_SHOWN, 0), e.end)


class Anchor(NamedTuple):
    """Where a finding points in the stream: at an event (`by` "index"), at a time ("t", seconds since
    the request) or at a body byte ("offset"). Its event is the first one at or past that point."""

    by: str
    at: float

    @classmethod
    def of(cls, f: Finding) -> Anchor | None:
        """The finding's event, else its time, else its byte (None: it points at none of them)."""
        if f.event_index is not None:
            return cls("index", f.event_index)
        if f.t is not None and math.isfinite(f.t):
            return cls("t", f.t)
        if f.offset is not None:
            return cls("offset", f.offset)
        return None

    def reached(self, row: Row | Event) -> bool:
        """Whether `row` is at or past this point (an event reaches a byte when it holds it or comes after it)."""
        if self.by == "index":
            return row.index >= self.at
        if self.by == "t":
            return row.t is not None and row.t >= self.at
        return row.end > self.at


def _small(event: Event) -> Event | Row:
    """`event` as it is when it is no bigger than its `Row` (cutting each event costs time), else its `Row`."""
    return event if len(event.data) <= DATA_SHOWN and len(event.type) <= NAME_SHOWN else Row.of(event)


def _row(item: Event | Row) -> Row:
    return item if type(item) is Row else Row.of(item)  # type: ignore[return-value,arg-type]


class EventSample(Observer):
    """What the events section needs of a pass, in bounded memory: the first HEAD_EVENTS events and the
    last TAIL_EVENTS (as `Row`s: the two never overlap), how many there were, and whether their times
    never went back (then an anchor's event in the tail is the first one to reach it)."""

    def __init__(self) -> None:
        self.head: list[Row] = []
        self._tail: deque[Event | Row] = deque(maxlen=TAIL_EVENTS)
        """The last events: as they came when they are small (cutting each costs time), else as `Row`s."""
        self.count = 0
        self.ordered = True
        """Every event timed, none earlier than the one before it."""
        self._last_t = -math.inf

    def event(self, event: Event, flags: EventFlags) -> None:
        self.count += 1
        t = event.t
        if t is None or t < self._last_t:
            self.ordered = False
        else:
            self._last_t = t
        if self.count > HEAD_EVENTS:
            self._tail.append(_small(event))
        else:
            self.head.append(Row.of(event))

    @property
    def tail(self) -> list[Row]:
        return list(map(_row, self._tail))

    def around(self, anchors: Sequence[Anchor]) -> tuple[Around, list[Anchor]]:
        """The neighbourhoods of `anchors` found in the events kept (an `Around` that saw them), and the
        anchors whose neighbourhood may hold events they left out: an `Around` must read the stream
        again for those."""
        if self.count == len(self.head) + len(self.tail):  # every event kept: the head runs into the tail
            return Around(anchors).fed([*self.head, *self.tail]), []
        found = Around(anchors).fed(self.head, finish=False)
        missing = [anchor for anchor, _ in found.open]  # their windows run on past the head
        left = [a for queue in found.pending.values() for a in queue]  # no event of the head reached them
        if not self.ordered:  # the first event to reach a time may then be anywhere
            missing += [a for a in left if a.by == "t"]
            left = [a for a in left if a.by != "t"]
        rows = self.tail
        tail = Around(left).fed(rows)
        first = rows[0].index if rows else 0
        for anchor in left:
            hit = tail.hits[anchor]
            if hit is not None and hit - first < AROUND:  # events before it were left out (one may reach it first)
                missing.append(anchor)
            else:
                found.windows[anchor], found.hits[anchor] = tail.windows[anchor], hit
        for anchor in missing:
            found.windows.pop(anchor, None)
            found.hits.pop(anchor, None)
        found.pending, found.open = {}, []
        return found, missing


class Enough(Exception):
    """Raised by an `Around(stop=True)` once every window is full: the rest of the stream is not needed."""


class Around(Observer):
    """The events around each of `anchors` in one pass over a stream's events: the AROUND events before
    the first event to reach the anchor (`Anchor.reached`), that event, and the AROUND after it. An
    anchor no event reaches (a byte, a time after the last event) gets the last AROUND events. Memory:
    a ring of AROUND rows and the windows. With `stop`, raises `Enough` once every window is full."""

    def __init__(self, anchors: Iterable[Anchor], *, stop: bool = False) -> None:
        self.pending = {by: sorted({a for a in anchors if a.by == by}, key=lambda a: a.at)
                        for by in ("index", "t", "offset")}  # fmt: skip
        self.pending = {by: queue for by, queue in self.pending.items() if queue}
        self.windows: dict[Anchor, list[Row]] = {}
        self.hits: dict[Anchor, int | None] = {}
        """The index of the first event to reach each anchor (None: no event did)."""
        self.open: list[tuple[Anchor, int]] = []
        """The windows still taking events, and how many more each takes."""
        self.ring: deque[Event | Row] = deque(maxlen=AROUND)
        self.stop = stop

    def event(self, event: Event, flags: EventFlags) -> None:
        self.take(event)
        if self.stop and not self.pending and not self.open:
            raise Enough

    def take(self, item: Event | Row) -> None:
        """The next event (or its `Row`)."""
        if self.open:
            row = _row(item)
            still = []
            for anchor, left in self.open:
                self.windows[anchor].append(row)
                if left > 1:
                    still.append((anchor, left - 1))
            self.open = still
        for by, queue in list(self.pending.items()):
            while queue and queue[0].reached(item):  # sorted: every anchor this item reaches is at the front
                anchor = queue.pop(0)
                self.windows[anchor] = [*map(_row, self.ring), _row(item)]
                self.hits[anchor] = item.index
                self.open.append((anchor, AROUND))
            if not queue:
                del self.pending[by]
        self.ring.append(item if type(item) is Row else _small(item))  # type: ignore[arg-type]

    def fed(self, rows: Iterable[Row | Event], *, finish: bool = True) -> Around:
        """This, having taken `rows` (and, with `finish`, the stream ending after them)."""
        for row in rows:
            self.take(row)
        if finish:
            self.finish()
        return self

    def update(self, other: Around) -> None:
        """Take the neighbourhoods `other` found."""
        self.windows.update(other.windows)
        self.hits.update(other.hits)

    def finish(self) -> None:
        """The stream ended: the anchors no event reached get the last events."""
        for queue in self.pending.values():
            for anchor in queue:
                self.windows[anchor] = list(map(_row, self.ring))
                self.hits[anchor] = None
        self.pending = {}
        self.open = []


@dataclass
class EventsShown:
    """A capture's events as its section shows them: `rows` in stream order (the first, the last, and
    those around the first AROUND_FINDINGS findings that point into the stream), the findings at each
    event (by index), those after the last event, and why some neighbourhoods are missing (`note`)."""

    count: int
    rows: list[Row]
    at: dict[int, list[str]] = field(default_factory=dict)
    """Codes of the findings each event (by index) is the first to reach."""
    after_end: list[str] = field(default_factory=list)
    """Codes of the findings no event reaches (shown with the last events)."""
    note: str | None = None

    @classmethod
    def of(cls, sample: EventSample, findings: Sequence[Finding], around: Around, *, why: str = "") -> EventsShown:
        """The events shown, from the `sample` of a pass and `around`, the neighbourhoods it found of the
        findings' `anchors`; those it did not find are counted in the note, with `why`."""
        pointed = _pointing(findings)
        shown = pointed[:AROUND_FINDINGS]
        rows = {r.index: r for r in (*sample.head, *sample.tail)}
        at: dict[int, list[str]] = {}
        after_end: list[str] = []
        lost = 0
        for f, anchor in shown:
            if anchor not in around.windows:
                lost += 1
                continue
            rows.update((r.index, r) for r in around.windows[anchor])
            hit = around.hits[anchor]
            if hit is None:
                after_end.append(f.code)
            else:
                at.setdefault(hit, []).append(f.code)
        notes = []
        if lost:
            notes.append(f"The events around {lost} finding(s) are not shown: {why}.")
        if len(pointed) > len(shown):
            notes.append(f"The events around {len(pointed) - len(shown)} more finding(s) are not shown.")
        return cls(sample.count, [rows[k] for k in sorted(rows)], at, after_end, " ".join(notes) or None)

    @classmethod
    def of_report(cls, report: Report) -> EventsShown:
        """The events shown of a report whose analysis kept its events (`keep=True`)."""
        sample = EventSample()
        for event in report.analysis.events:
            sample.event(event, EventFlags(0))
        around = Around(anchors(report.findings)).fed(report.analysis.events)
        return cls.of(sample, report.findings, around)


def _pointing(findings: Sequence[Finding]) -> list[tuple[Finding, Anchor]]:
    return [(f, a) for f in findings if (a := Anchor.of(f)) is not None]


def anchors(findings: Sequence[Finding]) -> list[Anchor]:
    """The anchors of the first AROUND_FINDINGS findings that point into the stream: those the events section shows."""
    return [a for _, a in _pointing(findings)[:AROUND_FINDINGS]]


def html_report(reports: Sequence[Report], *, title: str = "sse-inspect report", traces: Sequence[Trace] | None = None,
                events: Sequence[EventsShown | None] | None = None) -> str:  # fmt: skip
    """The whole page for `reports` (captures overlaid in this order, labelled A, B, ...). `traces`: a
    `Trace` of each report's analysis pass; `events`: the `EventsShown` of each (None: the section says
    they were not kept). Without them, the analyses must have kept their chunks and events
    (`keep=True`), which the plot and the events section are then drawn from."""
    if traces is None:
        traces = [Trace.of(r.analysis) for r in reports]
    if events is None:
        events = [EventsShown.of_report(r) if r.analysis.kept else None for r in reports]
    names = ", ".join(_name(r, i) for i, r in enumerate(reports))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"/>',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
        f"<title>{esc(title)}: {esc(names)}</title><style>{_CSS}</style></head>",
        f'<body data-captures="{len(reports)}"><h1>{esc(title)}</h1>',
        _summary(reports),
        *_plot(reports, traces),
        *_holds(reports),
        *(line for i, r in enumerate(reports) for line in _capture_section(r, i, events[i])),
        (
            f'<p class="dim">Made by sse-inspect {esc(__version__)}: one self-contained file, no script, no network; '
            "times count from when the request was sent.</p>"
        ),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _summary(reports: Sequence[Report]) -> str:
    rows = []
    for i, r in enumerate(reports):
        rows.append(
            f'<tr><td><span class="swatch" style="background:{_colour(i)}"></span><a href="#capture-{i}">'
            f'{_label(i)}</a></td><td class="mono">{esc(_name(r, i))}</td><td>{esc(r.analysis.dialect)}</td>'
            f'<td class="verdict {_tone(r)}">{esc(_clip(r.verdict))}</td></tr>'
        )
    return f'<table class="summary"><tr><th></th><th>capture</th><th>dialect</th><th>verdict</th></tr>{"".join(rows)}</table>'


# -- the arrival plot --------------------------------------------------------------------------


def _n(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _timed(r: Report, trace: Trace) -> bool:
    return r.analysis.capture.timed and trace.timed


def _plot(reports: Sequence[Report], traces: Sequence[Trace]) -> Iterator[str]:
    timed = [(i, r, traces[i]) for i, r in enumerate(reports) if _timed(r, traces[i])]
    yield "<h2>Arrival</h2>"
    if not timed:
        yield '<p class="untimed">No arrival plot: untimed capture(s), the source kept no per-chunk arrival times.</p>'
        return
    t_step, t_max = nice_scale(max(_duration(r, trace) for _, r, trace in timed), 8)
    b_step, b_max = nice_scale(max(r.analysis.timing.bytes for _, r, _ in timed), 4)
    e_step, e_max = nice_scale(max(4, *(r.analysis.timing.events for _, r, _ in timed)), 4)

    def x(t: float) -> float:
        return _LEFT + t / t_max * _PW

    yield (
        f'<svg class="arrival" viewBox="0 0 {_W} {_H}" width="100%" role="img" '
        f'aria-label="cumulative bytes and events against time since the request">'
    )
    yield from _axes(t_max, t_step, (b_max, b_step), (e_max, e_step), x)
    for i, r, trace in timed:
        yield from _series(r, trace, i, x, b_max, e_max)
    yield "</svg>"
    legend = []
    for i, r in enumerate(reports):
        what = "" if _timed(r, traces[i]) else ' <span class="dim">(untimed: not plotted)</span>'
        legend.append(f'<span class="swatch" style="background:{_colour(i)}"></span>{_label(i)} '
                      f'<span class="mono">{esc(_name(r, i))}</span>{what}')  # fmt: skip
    yield (
        f'<p class="legend">{" &#160; ".join(legend)}<br/><span class="dim">solid: bytes (left axis), one step per '
        "chunk; dashed: events (right axis); shaded: a buffering burst (dark) and the silence before it (light), "
        "grey: a long silence; dotted lines: first byte and first token; end: ✔ complete, ✘ cut or errored. "
        "Hover for details.</span></p>"
    )


def _axes(t_max: float, t_step: float, b: tuple[float, float], e: tuple[float, float],
          x: Callable[[float], float]) -> Iterator[str]:  # fmt: skip
    """Grid, ticks and labels: time below, bytes left (with the grid), events right; b and e: (top, step)."""
    bottom, right = _TOP + _PH, _LEFT + _PW
    for k in range(round(t_max / t_step) + 1):
        t = k * t_step
        yield f'<line class="grid" x1="{_n(x(t))}" y1="{_TOP}" x2="{_n(x(t))}" y2="{bottom}"/>'
        yield f'<text x="{_n(x(t))}" y="{bottom + 16}" text-anchor="middle">{esc(tick_label(t, t_step))}</text>'
    (b_top, b_step), (e_top, e_step) = b, e
    for k in range(round(b_top / b_step) + 1):
        y = bottom - k * b_step / b_top * _PH
        yield f'<line class="grid" x1="{_LEFT}" y1="{_n(y)}" x2="{right}" y2="{_n(y)}"/>'
        yield f'<text x="{_LEFT - 6}" y="{_n(y + 4)}" text-anchor="end">{esc(size(k * b_step))}</text>'
    for k in range(round(e_top / e_step) + 1):
        y = bottom - k * e_step / e_top * _PH
        yield f'<text x="{right + 6}" y="{_n(y + 4)}">{k * e_step:g}</text>'
    yield f'<line class="axis" x1="{_LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}"/>'
    yield f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}"/>'
    yield f'<line class="axis" x1="{right}" y1="{_TOP}" x2="{right}" y2="{bottom}"/>'
    yield f'<text x="{_LEFT + _PW / 2}" y="{_H - 8}" text-anchor="middle">time since the request was sent</text>'
    yield f'<text x="{_LEFT}" y="{_TOP - 10}" text-anchor="middle">bytes</text>'
    yield f'<text x="{right}" y="{_TOP - 10}" text-anchor="middle">events</text>'


def _duration(r: Report, trace: Trace) -> float:
    """Seconds from the request to the end, or to the last chunk when there is no end line (0: no chunk)."""
    end = r.analysis.capture.end
    if end is not None and end.t is not None:
        return end.t
    return trace.chunks.runs[-1].t1 if trace.chunks.runs else 0.0


def _series(r: Report, trace: Trace, i: int, x: Callable[[float], float], b_max: float,
            e_max: float) -> Iterator[str]:  # fmt: skip
    a = r.analysis
    c = a.capture
    colour, label = _colour(i), _label(i)
    bottom = _TOP + _PH

    def yb(n: float) -> float:
        return bottom - n / b_max * _PH

    def ye(n: float) -> float:
        return bottom - n / e_max * _PH

    def band(cls: str, t0: float, t1: float, tip: str, fill: str) -> str:
        width = max(x(t1) - x(t0), 3.0)
        return (f'<rect class="{cls}" data-capture="{i}" x="{_n(x(t0))}" y="{_TOP}" width="{_n(width)}" '
                f'height="{_PH}" fill="{fill}"><title>{esc(tip)}</title></rect>')  # fmt: skip

    chunks, events = trace.chunks, trace.events
    yield f'<g class="capture" id="plot-{i}" data-capture="{i}" data-chunks="{chunks.count}" data-events="{events.count}">'
    bands: list[tuple[str, float, float, str, str]] = []  # (class, from, to, tip, fill)
    for _, found in r.evidence(Bursts):
        for b in found.bursts:
            t0, t1 = b.t - b.silence_s, b.t + b.span_ms / 1000
            bands.append(("hold", t0, b.t, f"{label}: {b.events} text events held {seconds(b.silence_s)}", colour))
            bands.append(("burst", b.t, t1, f"{label}: burst of {b.events} text events ({size(b.bytes)}) "
                                            f"released in {b.span_ms:g} ms at t={seconds(b.t)}", colour))  # fmt: skip
    for f, gap in r.evidence(Silence):
        bands.append(("silence", gap.start, gap.end, f"{label}: {f.message}", "#9aa4ae"))
    yield from _some(bands, lambda b: band(*b), lambda n: f'<desc class="left-out">{n} more bands not drawn</desc>')
    t_prev = 0.0
    if chunks.count <= PLOT_STEPS:  # a run is a chunk
        for run in chunks.runs:
            k, t, n = run.first, run.t0, run.after - run.before
            yield (f'<path class="chunk" data-chunk="{k}" stroke="{colour}" d="M{_n(x(t_prev))} {_n(yb(run.before))}'
                   f'H{_n(x(t))}V{_n(yb(run.after))}"><title>{esc(f"{label} chunk {k}: {size(n)} at {seconds(t)}")}'
                   "</title></path>")  # fmt: skip
            t_prev = t
    else:
        for run in _columns(chunks.runs, x):
            tip = (f"{label} chunks {run.first} to {run.last}: {size(run.after - run.before)} from {seconds(run.t0)} "
                   f"to {seconds(run.t1)}")  # fmt: skip
            yield (f'<path class="chunk" data-chunks="{run.first}-{run.last}" stroke="{colour}" d="M{_n(x(t_prev))} '
                   f'{_n(yb(run.before))}H{_n(x(run.t0))}V{_n(yb(run.after))}H{_n(x(run.t1))}"><title>{esc(tip)}'
                   "</title></path>")  # fmt: skip
            t_prev = run.t1
    total = chunks.total
    t_end = c.duration or t_prev
    if t_end > t_prev:
        yield f'<path class="tail" stroke="{colour}" d="M{_n(x(t_prev))} {_n(yb(total))}H{_n(x(t_end))}"/>'
    if events.count <= PLOT_STEPS:
        steps = "".join(f"H{_n(x(run.t0))}V{_n(ye(run.after))}" for run in events.runs)
    else:
        steps = "".join(f"H{_n(x(run.t0))}V{_n(ye(run.after))}H{_n(x(run.t1))}" for run in _columns(events.runs, x))
    yield f'<path class="events" stroke="{colour}" d="M{_n(x(0))} {_n(ye(0))}{steps}"/>'
    marks = (("ttfb", a.timing.ttfb, "first byte"), ("first-token", a.timing.first_token, "first token"))
    for row, (cls, when, what) in enumerate(marks, start=2 * i):
        if when is not None:
            t = when
            tip = f"{label}: {what} {seconds(t)}"
            anchor, dx = ("end", -3) if x(t) > _LEFT + _PW / 2 else ("start", 3)
            yield (f'<line class="{cls}" stroke="{colour}" x1="{_n(x(t))}" y1="{_TOP}" x2="{_n(x(t))}" y2="{bottom}">'
                   f'<title>{esc(tip)}</title></line><text class="{cls}-label" x="{_n(x(t) + dx)}" '
                   f'y="{_TOP + 12 + 13 * row}" text-anchor="{anchor}" style="fill:{colour}">{esc(tip)}</text>')  # fmt: skip
    state, words = _end_class(a.outcome), a.outcome.words
    mark = "✔" if state == "complete" else "✘"
    ex, ey = x(t_end), yb(total)
    yield (f'<g class="end {state}" data-capture="{i}"><circle cx="{_n(ex)}" cy="{_n(ey)}" r="9" fill="#fff" '
           f'stroke="{colour}" stroke-width="2"/><text x="{_n(ex)}" y="{_n(ey + 4)}" text-anchor="middle" '
           f'style="fill:{colour};font-weight:700">{mark}</text><title>{esc(f"{label}: {words} at {seconds(t_end)}")}'
           "</title></g>")  # fmt: skip
    yield "</g>"


def _columns(runs: Sequence[_Run], x: Callable[[float], float]) -> list[_Run]:
    """`runs` merged into one per pixel column of the plot (by where each starts). A run left of the one
    before it (time went back) joins that one's column, so there are at most as many as columns."""
    merged: list[_Run] = []
    column = -1
    for run in runs:
        here = max(column, min(int(max(x(run.t0), _LEFT)), _LEFT + _PW))
        if here == column:
            last = merged[-1]
            merged[-1] = _Run(last.first, run.last, last.t0, run.t1, last.before, run.after, last.slot)
        else:
            merged.append(run)
            column = here
    return merged


# -- the hold table ----------------------------------------------------------------------------


def _holds(reports: Sequence[Report]) -> Iterator[str]:
    if len(reports) != 2:
        return
    yield "<h2>What the hop between A and B held</h2>"
    a, b = reports[0].analysis, reports[1].analysis
    try:
        td = diff_timing(a, b)
    except SSEInspectError as exc:
        yield f'<p class="note" id="holds-skipped">No hold table: {esc(exc.message)}</p>'
        return
    if isinstance(td, TextTimingDiff):
        yield f'<p class="verdict {"ok" if td.identical else "warning"}">{esc(td.summary)}</p>'
        yield from _text_hold_table(td)
        return
    shortest = min(len(a.events), len(b.events))
    if len(td.matched) * 2 < shortest:
        yield (f'<p class="note" id="holds-skipped">No hold table: A and B share only {len(td.matched)} of '
               f"{shortest} events, so they are not two recordings of one stream.</p>")  # fmt: skip
        return
    yield f'<p class="verdict {"ok" if td.identical else "warning"}">{esc(td.summary)}</p>'
    yield from _hold_table(td)


def _hold_table(td: TimingDiff) -> Iterator[str]:
    """One row per event seen on both sides."""
    yield from _holds_table(td.matched, {id(d) for d in td.held}, "events on both sides", "events", "type",
                            lambda d: _clip(d.a.type))  # fmt: skip
    if td.only_a or td.only_b:
        yield f'<p class="dim">{len(td.only_a)} event(s) only in A, {len(td.only_b)} only in B.</p>'


def _text_hold_table(td: TextTimingDiff) -> Iterator[str]:
    """The hold table of a hop that re-framed the events: one row per stretch of the answer text
    that reached A in one event and B in one event."""
    yield from _holds_table(td.stretches, {id(s) for s in td.held}, "stretches of text on both sides", "stretches",
                            "text", lambda s: _clip(s.text.strip()))  # fmt: skip
    if td.lost:
        yield f'<p class="dim">The last {td.lost} characters of A\'s text never reached B.</p>'


def _holds_table(items: Sequence[EventDelay | TextDelay], held: set[int], counted: str, unit: str,
                 what: str, label: Callable[[Any], str]) -> Iterator[str]:  # fmt: skip
    """The hold table: a row per timed item (an event, a stretch of text: `label` of it in the column
    `what`), with when it reached A and B, its delay and its hold; the `held` ids marked."""
    opened = ' open="open"' if len(items) <= 100 else ""
    yield f"<details{opened}><summary>{len(items)} {counted}, {len(held)} held</summary>"
    yield (f'<table class="holds"><tr><th class="n">A #</th><th class="n">B #</th><th>{what}</th><th class="n">t in A'
           '</th><th class="n">t in B</th><th class="n">delay</th><th class="n">hold</th></tr>')  # fmt: skip

    def row(d: EventDelay | TextDelay) -> str:
        cls = ' class="held"' if id(d) in held else ""
        return (f'<tr{cls}><td class="n">{d.a.index}</td><td class="n">{d.b.index}</td><td class="mono">'
                f'{esc(label(d))}</td><td class="n">{seconds(d.t_a)}</td><td class="n">{seconds(d.t_b)}</td>'
                f'<td class="n">{seconds(d.delay)}</td><td class="n">{seconds(d.hold)}</td></tr>')  # fmt: skip

    def more(n: int) -> str:
        return f'<tr class="left-out"><td colspan="7">… {n} more {unit}</td></tr>'

    yield from _some(items, row, more)
    yield "</table></details>"


# -- one capture -------------------------------------------------------------------------------


def _capture_section(r: Report, i: int, shown: EventsShown | None = None) -> Iterator[str]:
    a = r.analysis
    c = a.capture
    yield f'<section class="capture" id="capture-{i}" data-capture="{i}">'
    yield f'<h2><span class="swatch" style="background:{_colour(i)}"></span>{_label(i)} · {esc(_name(r, i))}</h2>'
    yield _request_line(a)
    if c.recorder:
        when = f"recorded {c.recorded_at} · " if c.recorded_at else ""
        yield f'<p class="meta">{esc(_clip(when + c.recorder))}</p>'
    yield f'<p class="verdict {_tone(r)}">{esc(_clip(r.verdict))}</p>'
    if c.response is not None:
        yield f'<p class="hops"><b>hops:</b> {esc(_clip(hops_line(r.hops)))}</p>'
    if r.culprit is not None:
        decided = "decided" if r.culprit.decided else "undecided"
        yield (f'<p class="culprit {decided}" data-hop="{esc(r.culprit.hop)}">{esc(_clip(culprit_line(r.culprit)))}'
               f'<span class="fix">→ {esc(_clip(r.culprit.fix))}</span></p>')  # fmt: skip
    yield _outcome(a)
    yield '<div class="cols">'
    yield from _headers(a)
    yield _timing(a)
    yield "</div>"
    if r.findings:
        yield '<h3>Findings</h3><ul class="findings">'
        said = r.culprit.fix if r.culprit is not None else None
        yield from _some(r.findings, lambda f: _finding(f, said),
                         lambda n: f'<li class="left-out">… {n} more findings</li>')  # fmt: skip
        yield "</ul>"
    for s in r.skipped:
        yield f'<p class="skipped">skipped {esc(", ".join(s.codes))}: {esc(s.reason)}</p>'
    yield from _events(shown)
    yield from _answer(a)
    yield from _notices(a)
    yield "</section>"


def _events(shown: EventsShown | None) -> Iterator[str]:
    """The events table: the rows shown, a line saying how many were left out wherever some were, the
    events the findings point at marked with their codes."""
    yield "<h3>Events</h3>"
    if shown is None:
        yield '<p class="dim events-none">Events not kept: pass an EventsShown, or analyse with keep=True.</p>'
        return
    if not shown.count:
        yield '<p class="dim events-none">No event in this stream.</p>'
        return
    left = shown.count - len(shown.rows)
    what = (f"{shown.count:,} event{'s' if shown.count != 1 else ''}" if not left else
            f"{shown.count:,} events: the first and last, and the {AROUND} before and after each finding's moment; "
            f"{left:,} not shown")  # fmt: skip
    yield f'<details class="events" open="open"><summary>{what}</summary>'
    yield ('<table class="events"><tr><th class="n">#</th><th class="n">t</th><th>type</th><th>data</th>'
           "<th>finding</th></tr>")
    previous = -1
    for row in shown.rows:
        if row.index > previous + 1:
            yield _events_left_out(row.index - previous - 1)
        previous = row.index
        codes = shown.at.get(row.index, [])
        marked = f' class="event at" data-findings="{esc(" ".join(codes))}"' if codes else ' class="event"'
        more = f'<span class="dim"> … ({row.more:,} more characters)</span>' if row.more else ""
        yield (f'<tr{marked} data-index="{row.index}"><td class="n">{row.index}</td><td class="n">{seconds(row.t)}</td>'
               f'<td class="mono">{esc(row.type)}</td><td class="mono data">{esc(row.data)}{more}</td>'
               f'<td>{esc(", ".join(codes))}</td></tr>')  # fmt: skip
    if previous + 1 < shown.count:
        yield _events_left_out(shown.count - previous - 1)
    if shown.after_end:
        yield (f'<tr class="after-end" data-findings="{esc(" ".join(shown.after_end))}"><td colspan="4">after the '
               f'last event</td><td>{esc(", ".join(shown.after_end))}</td></tr>')  # fmt: skip
    yield "</table></details>"
    if shown.note:
        yield f'<p class="dim note">{esc(shown.note)}</p>'


def _events_left_out(n: int) -> str:
    return f'<tr class="left-out"><td colspan="5">… {n:,} event{"s" if n != 1 else ""} not shown</td></tr>'


def _finding(f: Finding, said: str | None = None) -> str:
    """A finding and its fix (`said`, the culprit's fix printed above it, as "the culprit's fix")."""
    fix = "the culprit's fix, above" if f.fix == said else _clip(f.fix)
    return (f'<li class="finding" data-code="{esc(f.code)}"><span class="sev {f.severity!s}">{f.severity!s}</span> '
            f'<code>{esc(f.code)}</code> {esc(_clip(f.message))}<div class="fix">→ {esc(fix)}</div></li>')


def _request_line(a: Analysis) -> str:
    c = a.capture
    if c.request is None:
        line = "<b>raw body</b>: no request, headers or timing"
    else:
        line = f'<b>{esc(_clip(c.request.method))}</b> <span class="mono">{esc(_clip(c.request.url))}</span>'
    if c.response is not None:
        resp = c.response
        ok = "ok" if 200 <= resp.status < 300 else "error"
        line += (f' → <span class="{ok}">{resp.status} {esc(_clip(resp.reason))}</span> '
                 f'<span class="dim">{esc(_clip(resp.http_version))}</span>')  # fmt: skip
    return f'<p class="request">{line}</p>'


def _outcome(a: Analysis) -> str:
    ans = a.answer
    state, words = _end_class(a.outcome), a.outcome.words
    bits = [esc(ans.dialect) + ("" if a.framing == "sse" else f" ({esc(a.framing)})")]
    if ans.model:
        bits.append(esc(_clip(ans.model)))
    if ans.end_marker is not None:
        n = len(ans.end_marker_events)
        seen = "seen" if n == 1 else f"seen {n} times" if n else "MISSING"
        bits.append(f"end marker <code>{esc(ans.end_marker)}</code> {seen}")
    if ans.finish_reason is not None:
        bits.append(f"finish <code>{esc(_clip(ans.finish_reason))}</code>")
    end = a.capture.end
    bits.append("recording " + ("INCOMPLETE (no end line)" if end is None else esc(end.kind)))
    if end is not None and end.error:
        bits[-1] += f": {esc(_clip(end.error))}"
    mark = "✔" if state == "complete" else "✘"
    return f'<p class="outcome"><b class="{state}">{mark} {esc(words)}</b> · {" · ".join(bits)}</p>'


def _headers(a: Analysis) -> Iterator[str]:
    resp = a.capture.response
    rows = [(n, v) for n, v in (resp.headers if resp else ()) if n.lower() in STREAMING_HEADERS]
    if not rows:
        return
    yield '<table class="headers"><tr><th colspan="2">streaming headers</th></tr>'
    def row(header: tuple[str, str]) -> str:
        return f'<tr><td class="mono">{esc(_clip(header[0]))}</td><td class="mono">{esc(_clip(header[1]))}</td></tr>'

    yield from _some(rows, row, lambda n: f'<tr class="left-out"><td colspan="2">… {n} more headers</td></tr>')
    yield "</table>"


def _timing(a: Analysis) -> str:
    t = a.timing
    wire = size(t.bytes) if t.bytes == t.decoded_bytes else f"{size(t.bytes)} ({size(t.decoded_bytes)} decoded)"
    rows = [
        ("chunks", str(t.chunks)),
        ("bytes", wire),
        ("events", f"{t.events} ({t.comments} comments)"),
        ("text events", str(t.text_events)),
    ]
    if a.capture.timed:
        gap = f"{seconds(t.max_gap)} (to t={seconds(t.max_gap_at)})" if t.max_gap is not None else "-"
        rate = f"{t.tokens_per_s:.1f}/s" if t.tokens_per_s is not None else "-"
        rows = [("first byte", seconds(t.ttfb)), ("first event", seconds(t.first_event)),
                ("first token", seconds(t.first_token)), ("total", seconds(t.total)), ("longest gap", gap),
                ("text events per s", rate), *rows]  # fmt: skip
    else:
        rows.append(("timing", "untimed: the source kept no per-chunk timing"))
    body = "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="timing">{body}</table>'


def _answer(a: Analysis) -> Iterator[str]:
    ans = a.answer
    yield '<h3>Answer</h3><div class="answer">'
    several = len(ans.choices) > 1
    blocks = _some(ans.choices, lambda c: "\n".join(_choice(c, several)),
                   lambda n: f'<p class="dim left-out">… {n} more choices</p>')
    yield from (block for block in blocks if block)  # a choice with nothing to show adds no line
    shown = any(c.held_text or c.held_refusal or c.tool_calls or c.held_reasoning or c.held_plan for c in ans.choices)
    if not shown:
        yield '<p class="dim">(no answer text in this stream)</p>'
    if ans.usage:
        usage = ", ".join(f"{k}={v}" for k, v in ans.usage.items() if isinstance(v, int | float))
        yield f'<p class="usage">usage <span class="mono">{esc(_clip(usage))}</span></p>'
    yield "</div>"


def _choice(choice: Choice, several: bool) -> Iterator[str]:
    title = f"choice {choice.index}: " if several else ""
    for what, text in (("reasoning", choice.held_reasoning), ("tool plan", choice.held_plan)):
        if text:
            yield f'<details class="{what.replace(" ", "-")}"><summary>{title}{what}</summary>{_pre(text)}</details>'
    if choice.held_text:
        yield f'<div class="text">{title and f"<b>{title}</b>"}{_pre(choice.held_text)}</div>'
    if choice.held_refusal:
        yield f'<div class="refusal warning">{title}refusal{_pre(choice.held_refusal)}</div>'

    def call(call: ToolCall) -> str:
        problem = call.arguments_problem
        bad = f' <span class="error">({problem})</span>' if problem else ""
        return (f'<div class="tool-call">{title}tool call <code>{esc(_clip(call.name))}</code>{bad}'
                f"{_pre(call.held_arguments or '(no arguments)')}</div>")  # fmt: skip

    yield from _some(choice.tool_calls, call, lambda n: f'<p class="dim left-out">… {n} more tool calls</p>')
    if choice.finish_reason is not None:
        yield f'<p class="finish">{title}finish reason <code>{esc(_clip(choice.finish_reason))}</code></p>'


def _notices(a: Analysis) -> Iterator[str]:
    lines = [*a.capture.warnings, *(f"{n.kind}: {n.message} (byte {n.offset})" for n in a.notices)]
    lines += [f"in-band error at event #{e.event_index}: {e.message}" for e in a.answer.errors]
    if lines:
        yield '<h3>Notices</h3><ul class="notices">'
        yield from _some(lines, lambda line: f"<li>{esc(_clip(line))}</li>",
                         lambda n: f'<li class="left-out">… {n} more notices</li>')
        yield "</ul>"
