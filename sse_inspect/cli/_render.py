"""Rich views of an analysis. Everything taken from a capture goes through `safe()`."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console, ConsoleOptions, Group, JustifyMethod, OverflowMethod, RenderableType, RenderResult

try:  # private to rich (1.0 to 15 at least): where it is missing, every cut cell wraps through Text.wrap
    from rich._wrap import divide_line
except ImportError:  # pragma: no cover
    divide_line = None  # type: ignore[assignment]
from rich.cells import cell_len
from rich.markup import escape
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from .._analysis import Analysis, Observer, Timing
from .._capture import Capture, Chunk
from .._events import Comment, Event, Notice
from .._format import STREAMING_HEADERS, nice_scale, seconds, tick_label, visible
from .._format import size as _size
from .._limits import PIECE
from .._outcome import Audience, Outcome, State, say
from ..checks import Report
from ..checks.evidence import Bursts, Silence
from ..dialects import GLIMPSED, Passage

if TYPE_CHECKING:
    from rich.table import Table

_SPARK = " ▁▂▃▄▅▆▇█"
_SCALE_WIDTH = 10
"""Columns the timeline keeps right of its bars for the scale (" 999.9 KiB")."""


def console(*, stderr: bool = False) -> Console:
    """A Console for stdout (data) or stderr (talk). Off a terminal it never wraps lines,
    so paths and messages stay whole for scripts and logs."""
    out = Console(highlight=False, stderr=stderr)
    out.soft_wrap = not out.is_terminal
    return out


def safe(text: str, *, newlines: bool = True, style: str = "") -> Text:
    """Captured text as a rich Text: no markup parsed, control characters shown as escapes.

    A hostile stream must not be able to move the cursor or rewrite the user's terminal.
    """
    if not newlines:
        text = text.replace("\r", "\\r").replace("\n", "\\n")
    return Text(visible(text.replace("\r\n", "\n")), style=style)


def print_text(console: Console, pieces: Iterable[str]) -> None:
    """Captured text, given in pieces, printed as `console.print(safe(text))` prints it whole: a run of
    whole lines at a time (so that a terminal wraps them as it would the whole), a line longer than
    PIECE in parts."""
    carry = ""
    for piece in pieces:
        text = carry + piece
        cut = text.rfind("\n") + 1
        if not cut and len(text) < PIECE:
            carry = text
            continue
        cut = cut or len(text)
        console.print(safe(text[:cut]), end="")
        carry = text[cut:]
    console.print(safe(carry))


def markup(text: str) -> str:
    """Captured text (or a file name) to put into a rich markup string: escaped as `safe` does,
    its square brackets kept from being read as markup."""
    return escape(visible(text))


def request_line(capture: Capture) -> Text:
    line = Text()
    if capture.request is not None:
        line.append_text(safe(capture.request.method + " ", newlines=False, style="bold"))
        line.append_text(safe(capture.request.url, newlines=False))
    else:
        line.append_text(safe(capture.path or "<stdin>", newlines=False, style="bold"))
        line.append("  (raw body: no request, headers or timing)", style="dim")
    if capture.response is not None:
        r = capture.response
        ok = 200 <= r.status < 300
        line.append("  →  ")
        line.append_text(safe(f"{r.status} {r.reason}".strip(), newlines=False, style="green" if ok else "bold red"))
        line.append_text(safe(f"  {r.http_version}", newlines=False, style="dim"))
    return line


class Hanging:
    """A line that a terminal wraps at words, its continuation lines indented by `indent` columns;
    printed off a terminal (`options.no_wrap`: the console soft-wraps) it stays one whole line."""

    def __init__(self, line: Text, indent: int) -> None:
        self.line, self.indent = line, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if options.no_wrap or self.line.cell_len <= width:
            yield self.line
            return
        indent = self.indent if self.indent <= width // 2 else 0
        first = self.line.wrap(console, width, overflow="fold")[0]
        yield first
        plain = self.line.plain
        start = len(first.plain)
        while start < len(plain) and plain[start] == " ":
            start += 1
        for line in self.line[start:].wrap(console, width - indent, overflow="fold"):
            yield Text.assemble(" " * indent, line)


def _field(label: str, width: int, value: Text, value_width: int = 0, style: str = "bold") -> Text:
    """A label padded to `width`, then its value (right-aligned in `value_width` columns)."""
    pad = " " * max(0, value_width - value.cell_len)
    return Text.assemble((label.ljust(width), style), pad, value)


class Fields:
    """Label-value rows: `pairs` two to a line where the width allows (the first half on the left),
    else one to a line; `wide` rows one to a line after them. A terminal wraps a long value under
    its start; off a terminal a line stays whole."""

    GAP = 2

    def __init__(self, pairs: list[tuple[str, Text]], wide: list[tuple[str, Text]], *, style: str = "bold") -> None:
        self.pairs, self.wide, self.style = pairs, wide, style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        half = (len(self.pairs) + 1) // 2
        left, right = self.pairs[:half], self.pairs[half:]
        (lk, lv), (rk, rv) = self._widths(left), self._widths(right)
        rows = self.pairs + self.wide
        if right and lk + lv + 2 * self.GAP + rk + rv <= options.max_width:
            for i, (label, value) in enumerate(left):
                line = _field(label, lk, value, lv, self.style)
                if i < len(right):
                    line.append(" " * 2 * self.GAP)
                    line.append_text(_field(right[i][0], rk, right[i][1], rv, self.style))
                yield line
            rows = self.wide
        width = max((len(label) for label, _ in rows), default=0) + self.GAP
        for label, value in rows:
            yield Hanging(_field(label, width, value, style=self.style), width)

    def _widths(self, rows: list[tuple[str, Text]]) -> tuple[int, int]:
        """The width of the labels (with the gap after them) and of the values."""
        return max((len(k) for k, _ in rows), default=0) + self.GAP, max((v.cell_len for _, v in rows), default=0)


def headers_table(capture: Capture) -> RenderableType | None:
    if capture.response is None:
        return None
    rows = [(visible(name), safe(value, newlines=False)) for name, value in capture.response.headers
            if name.lower() in STREAMING_HEADERS]  # fmt: skip
    return Fields([], rows, style="cyan") if rows else None


def silence_words(t: Timing, outcome: Outcome) -> str:
    """The longest silence, when it ended, and whether the stream ended after it."""
    if t.max_gap is None:
        return "-"
    words = f"{seconds(t.max_gap)} (to t={seconds(t.max_gap_at)}"
    if t.max_gap_final:
        words += ", before the cut" if outcome.connection_cut else ", to the end"
    return words + ")"


def text_events_words(t: Timing) -> str:
    """How many events carried text, and how fast they came."""
    if t.tokens_per_s is not None:
        return f"{t.text_events} ({t.tokens_per_s:.1f} per s)"
    if t.text_events >= 2 and t.timed:
        return f"{t.text_events} (all at once)"
    return str(t.text_events)


def timing_table(a: Analysis) -> RenderableType:
    t = a.timing
    if not a.capture.timed:
        return Text(
            f"{t.chunks} chunk(s), {_size(t.bytes)}, {t.events} events, {t.comments} comments, "
            f"{t.text_events} text events · untimed: the source kept no per-chunk timing",
        )
    size = _size(t.bytes) if t.bytes == t.decoded_bytes else f"{_size(t.bytes)} ({_size(t.decoded_bytes)} decoded)"
    cut = f" (re-cut: {a.rechunk})" if a.rechunk is not None else ""
    pairs = [("first byte", seconds(t.ttfb)), ("first event", seconds(t.first_event)),
             ("first token", seconds(t.first_token)), ("total", seconds(t.total)),
             ("chunks", f"{t.chunks}{cut}"), ("bytes", size), ("events", f"{t.events} ({t.comments} comments)"),
             ("text events", text_events_words(t))]  # fmt: skip
    wide = [("longest silence", silence_words(t, a.outcome))]
    return Fields([(k, Text(v)) for k, v in pairs], [(k, Text(v)) for k, v in wide])


class Arrivals(Observer):
    """Wire bytes per slice of time, for the timeline, in flat memory: `BINS` bins over a span
    that doubles (merging bins in pairs) whenever a chunk arrives past it."""

    BINS = 4096

    def __init__(self) -> None:
        self.span = 0.001
        self.scale = self.BINS / self.span
        self.bins = [0] * self.BINS

    @classmethod
    def of(cls, chunks: Iterable[Chunk]) -> Arrivals:
        arrivals = cls()
        for chunk in chunks:
            arrivals.wire(chunk)
        return arrivals

    def wire(self, chunk: Chunk) -> None:
        self.add(chunk.t, len(chunk.data))

    def add(self, t: float | None, size: int) -> None:
        """`size` bytes arrived at `t` (a live view's slice)."""
        at = (t or 0.0) * self.scale  # where in the bins
        if not 0.0 <= at < self.BINS:
            at = self._fit(at / self.scale)
        self.bins[int(at)] += size

    def wire_block(self, chunks: list[Chunk]) -> None:
        bins, scale, end = self.bins, self.scale, self.BINS
        for chunk in chunks:
            at = (chunk.t or 0.0) * scale  # where in the bins
            if not 0.0 <= at < end:
                at = self._fit(at / scale)
                bins, scale = self.bins, self.scale  # (the span doubled)
            bins[int(at)] += len(chunk.data)

    def _fit(self, t: float) -> float:
        """Where `t`, before the first bin or past the last, goes: the span doubles until it holds it."""
        if not 0.0 < t < math.inf:
            return 0.0
        while t * self.scale >= self.BINS:
            b = self.bins
            self.bins = [b[i] + b[i + 1] for i in range(0, self.BINS, 2)] + [0] * (self.BINS // 2)
            self.span *= 2
            self.scale = self.BINS / self.span
        return t * self.scale

    def columns(self, n: int, total: float) -> list[int]:
        """Bytes per column of `n` columns spanning 0 to `total` seconds."""
        out = [0] * n
        width = self.span / self.BINS
        for k, size in enumerate(self.bins):
            if size:
                out[min(n - 1, int(k * width / total * n))] += size
        return out


def spark_bars(columns: Sequence[int], held: Collection[int] = ()) -> Text:
    """Bytes per column as bars between `│`s, scaled to the tallest: `·` for a column without a byte, the
    `held` columns (a burst's) in yellow. The timeline's, and the live table's arrival strip."""
    top = max(columns, default=0) or 1
    bars = Text("│", style="dim")
    for i, size in enumerate(columns):
        if size:
            bars.append(_SPARK[max(1, round(size / top * 8))], style="bold yellow" if i in held else "magenta")
        else:
            bars.append("·", style="dim")
    bars.append("│", style="dim")
    return bars


def timeline(a: Analysis, report: Report | None = None, arrivals: Arrivals | None = None) -> RenderableType:
    """The arrival timeline (see `Timeline`), with the bursts `report` found; a dim note when there is none.

    `arrivals` watched the analysis pass; without them, the analysis must have kept its chunks
    (a re-cut analysis: its re-cut chunks, which stand for the wire).
    """
    if not a.timing.timed:
        return Text("no timeline: untimed capture", style="dim")
    if not a.timing.chunks or not a.timing.total:
        return Text("no timeline: nothing arrived", style="dim")
    return Timeline(a, report, arrivals or Arrivals.of(a.chunks if a.rechunk is not None else a.capture.chunks))


class Timeline:
    """When the bytes arrived, in four lines as wide as the console:

        │···▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁················█▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁│ 3895 B   bytes per column; the tallest bar
            │                ─────────────────▲                    ✔         first token, a held burst, the end
         0               2 s              4 s                6.916 s         time since the request
        ✔ data: [DONE] at 6.915 s · ▲ 40 events held 2.000 s                 the marks, as many as fit

    `·` is a column without a byte, `╌` a long silence. The bursts and long silences are those
    `report` found. Off a terminal it prints as plain text.
    """

    def __init__(self, a: Analysis, report: Report | None, arrivals: Arrivals) -> None:
        self.a = a
        self.arrivals = arrivals
        self.bursts = [b for _, found in report.evidence(Bursts) for b in found.bursts] if report is not None else []
        self.silences = [gap for _, gap in report.evidence(Silence)] if report is not None else []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)

    def lines(self, width: int) -> list[Text]:
        total = self.a.timing.total or 1.0
        n = max(10, width - 2 - _SCALE_WIDTH)

        def col(t: float) -> int:
            return min(n - 1, max(0, int(t / total * n)))

        buckets = self.arrivals.columns(n, total)
        top = max(buckets) or 1
        held = {i for b in self.bursts for i in range(col(b.t), col(b.t + b.span_ms / 1000) + 1)}
        bars = spark_bars(buckets, held)
        bars.append(f" {_size(top)}", style="dim")
        marks = [(" ", "")] * n
        for gap in self.silences:
            for i in range(col(gap.start) + 1, col(gap.end)):
                marks[i] = ("╌", "red")
        for b in self.bursts:
            at = col(b.t)
            for i in range(col(b.t - b.silence_s), at):
                marks[i] = ("─", "yellow")
            marks[at] = ("▲", "bold yellow")
        first = self.a.timing.first_token
        if first is not None and marks[col(first)][0] != "▲":
            marks[col(first)] = ("│", "bold cyan")
        end, end_words = self._end()
        legend = self._legend(width, n, total, end, end_words)
        return [bars, Text.assemble(" ", *marks, end), self._axis(n, total, col), legend]

    def _end(self) -> tuple[tuple[str, str], str]:
        """The end mark and its legend: the end marker seen, missing, or none in this dialect."""
        ans = self.a.answer
        if ans.end_marker is None:
            return ("?", "dim"), f"no end marker in {ans.dialect}"
        if not ans.end_marker_events:
            return ("✘", "bold red"), f"no {visible(ans.end_marker)}"
        t = self.a.timing.end_marker
        return ("✔", "bold green"), f"{visible(ans.end_marker)} at {seconds(t)}"

    @staticmethod
    def _axis(n: int, total: float, col: Callable[[float], int]) -> Text:
        """Tick labels from 0, each starting at its column, and the total at the right end."""
        step, _ = nice_scale(total, max(1, n // 12))
        last = seconds(total)
        right = n + 2 - len(last)
        axis = [" "] * right
        free = 1
        k = 0
        while k * step < total:
            label = "0" if k == 0 else tick_label(k * step, step)
            pos = 1 + col(k * step)
            if pos >= free and pos + len(label) < right - 1:
                axis[pos : pos + len(label)] = label
                free = pos + len(label) + 2
            k += 1
        return Text("".join(axis) + last, style="dim")

    def _legend(self, width: int, n: int, total: float, end: tuple[str, str], end_words: str) -> Text:
        """What the marks say, most important first, as many items as fit in `width`."""
        items = [Text.assemble(end, (f" {end_words}", "dim"))]
        if self.silences:
            gap = max(self.silences, key=lambda g: g.gap_s)
            items.append(Text.assemble(("╌", "red"), (f" silent {gap.gap_s:.1f} s", "dim")))
        if self.bursts:
            big = max(self.bursts, key=lambda b: b.events)
            more = f" (+{len(self.bursts) - 1} more bursts)" if len(self.bursts) > 1 else ""
            held = f" {big.events} events held {seconds(big.silence_s)}{more}"
            items.append(Text.assemble(("▲", "bold yellow"), (held, "dim")))
        first = self.a.timing.first_token
        if first is not None:
            items.append(Text.assemble(("│", "bold cyan"), (f" first token {seconds(first)}", "dim")))
        per = total / n
        items.append(Text(f"{per * 1000:.3g} ms per column" if per < 1 else f"{per:.3g} s per column", style="dim"))
        legend = items[0]
        legend.no_wrap, legend.overflow = True, "ellipsis"
        for item in items[1:]:
            if legend.cell_len + 3 + item.cell_len > width:
                break
            legend.append(" · ", style="dim")
            legend.append_text(item)
        return legend


def outcome(a: Analysis) -> Text:
    """One line on how the stream ended: the marker, the finish reason, the recording's end."""
    ans = a.answer
    line = Text()
    state = a.outcome.state
    if state in (State.ERRORED, State.NO_END_MARKER):
        line.append(f"✘ {a.outcome.words} ", style="bold red")
    elif state is State.COMPLETE:
        line.append(f"✔ {a.outcome.words} ", style="bold green")
    # (a dialect without an end marker says nothing here: the recording's end, below, tells)
    line.append(f"{ans.dialect}", style="bold")
    if a.framing != "sse":  # (an event stream is the default, said by nothing)
        line.append(f" ({a.framing})")
    if ans.model:
        line.append(" · ")
        line.append_text(safe(ans.model, newlines=False))
    if ans.end_marker is not None:
        line.append(" · end marker ")
        line.append_text(safe(ans.end_marker, newlines=False))
        n = len(ans.end_marker_events)
        line.append(
            " seen" if n == 1 else f" seen {n} times" if n else " MISSING",
            style="green" if n == 1 else "bold red",
        )
    if ans.finish_reason is not None:
        line.append(" · finish ")
        line.append_text(safe(ans.finish_reason, newlines=False))
    end = a.capture.end
    line.append(" · recording ")
    cause = a.outcome.end_cause
    if cause is None:
        line.append("complete", style="green")
    else:
        line.append(say(cause, Audience.VIEW, end), style="bold red")
        if end is not None and end.error:
            line.append(": ")
            line.append_text(safe(end.error, newlines=False))
    return line


def notices(a: Analysis) -> Text | None:
    lines = [f"! {w}" for w in a.capture.warnings]
    first: dict[str, Notice] = {}
    for n in a.notices:
        first.setdefault(n.kind, n)
    for kind, n in first.items():
        count = a.notice_counts.get(kind, 1)
        more = f" (+{count - 1} more)" if count > 1 else ""
        lines.append(f"{kind}: {n.message} (byte {n.offset}){more}")
    for e in a.answer.errors:
        lines.append(f"in-band error at event #{e.event_index}: {e.message}")
    if not lines:
        return None
    text = Text()
    for line in lines:
        text.append_text(safe(line + "\n", style="yellow"))
    text.rstrip()
    return text


SHOWN_CHARS = 2 * GLIMPSED
"""Characters of a long answer `show` prints: the first and the last half of this (what a
`Holding.GLIMPSE` keeps of each end)."""


def clipped(text: str | Passage) -> str:
    """`text`, or for a long one its head and tail around a line saying how much was left out."""
    if len(text) <= SHOWN_CHARS:
        return str(text)
    half = SHOWN_CHARS // 2
    head, tail = (text.head(half), text.tail(half)) if isinstance(text, Passage) else (text[:half], text[-half:])
    return f"{head}\n\n[... {len(text) - 2 * half:,} characters more: `sse-inspect text` prints them all ...]\n\n{tail}"


class Boxed:
    """Text under a title: a panel on a terminal (its lines wrapped at words); off a terminal a
    title line, then the text as it is, every line whole, for pasting into a bug report."""

    def __init__(self, body: Text, title: str, border_style: str = "") -> None:
        self.body, self.title, self.border_style = body, safe(title, newlines=False), border_style or "none"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not options.no_wrap:
            from rich.panel import Panel  # a terminal's view only: piped output starts without it

            yield Panel(self.body, title=self.title, title_align="left", border_style=self.border_style)
            return
        rule = "─" * max(2, min(options.max_width, 80) - self.title.cell_len - 4)
        yield Text.assemble(("── ", self.border_style), self.title, (f" {rule}", self.border_style))
        yield self.body


def answer_view(a: Analysis) -> RenderableType:
    ans = a.answer
    parts: list[RenderableType] = []
    for choice in ans.choices:
        title = f"choice {choice.index}" if len(ans.choices) > 1 else "answer"
        if choice.held_reasoning:
            parts.append(Boxed(safe(clipped(choice.held_reasoning), style="dim italic"), f"{title}: reasoning"))
        if choice.held_plan:
            parts.append(Boxed(safe(clipped(choice.held_plan), style="dim"), f"{title}: tool plan"))
        if choice.held_text:
            parts.append(Boxed(safe(clipped(choice.held_text)), title))
        if choice.held_refusal:
            parts.append(Boxed(safe(clipped(choice.held_refusal), style="yellow"), f"{title}: refusal"))
        for call in choice.tool_calls:
            body = safe(clipped(call.held_arguments) or "(no arguments)")
            valid = f"  [{problem}]" if (problem := call.arguments_problem) else ""
            parts.append(Boxed(body, f"tool call: {call.name}{valid}", border_style="cyan"))
    if not parts:
        parts.append(Text("(no answer text in this stream)", style="dim"))
    if ans.usage:
        usage = ", ".join(f"{k}={v}" for k, v in ans.usage.items() if isinstance(v, int | float))
        parts.append(Text.assemble(("usage ", "bold"), safe(usage, newlines=False)))
    return Group(*parts)


def show_view(a: Analysis, report: Report, arrivals: Arrivals | None = None) -> Group:
    """Everything `show` prints before the findings; `report` marks the timeline's bursts."""
    parts: list[RenderableType] = [request_line(a.capture)]
    if a.capture.recorder:
        when = f"recorded {a.capture.recorded_at} · " if a.capture.recorded_at else ""
        parts.append(safe(f"{when}{a.capture.recorder}", newlines=False, style="dim"))
    headers = headers_table(a.capture)
    if headers is not None:
        parts.append(headers)
    parts += [Text(""), timing_table(a)]
    if a.capture.timed:
        parts.append(timeline(a, report, arrivals))
    parts += [Text(""), outcome(a)]
    note = notices(a)
    if note is not None:
        parts.append(note)
    parts += [Text(""), answer_view(a)]
    return Group(*parts)


class Column(NamedTuple):
    """A column of a `Rows` table, as rich's `Table.add_column` takes it."""

    header: str
    justify: JustifyMethod = "left"
    style: str = ""
    overflow: OverflowMethod = "ellipsis"
    min_width: int | None = None


_LAYOUT_RULE = "_calculate_column_widths"
"""The private method of rich's Table that `Rows` takes its column widths from (rich 13 to 15)."""


class Rows:
    """Rows of cells laid out as a borderless rich `Table` (`box=None, pad_edge=False`) lays them
    out, line for line, at a small part of its cost: rich measures and renders every cell through
    its generic machinery (some 2 ms a row); here the column widths come from rich itself, given
    only the cells that decide them (the widest, and the one with the longest word, of each
    column), and each cell is padded, or cut and wrapped as rich cuts and wraps it, into its lines.
    Everything rich's Table prints comes out the same, byte for byte, colours included."""

    def __init__(self, columns: Sequence[Column], *, header: bool = True) -> None:
        self.columns, self.header = list(columns), header
        self.rows: list[tuple[list[Text], list[int], str]] = []  # the cells, their widths, the row's style

    def add_row(self, *cells: Text | str, style: str = "") -> None:
        texts = [c if isinstance(c, Text) else Text(c) for c in cells]
        self.rows.append((texts, [text.cell_len for text in texts], style))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table  # loaded for the views that print rows (with decimal and fractions)

        if not hasattr(Table, _LAYOUT_RULE):  # a rich without the layout rule `_widths` borrows
            yield self._table()
            return
        widths = self._widths(console, options)
        last = len(widths) - 1
        pads = [(0 if i == 0 else 1, 0 if i == last else 1) for i in range(len(widths))]
        inner = [w - left - right for w, (left, right) in zip(widths, pads)]
        if self.header:
            heads = [Text(c.header) for c in self.columns]
            yield from self._row(console, heads, [h.cell_len for h in heads], inner, pads, "bold", header=True)
        for cells, sizes, style in self.rows:
            yield from self._row(console, cells, sizes, inner, pads, style)

    def _table(self) -> Table:
        """The same rows as a rich Table: what they stand for, at its full cost."""
        from rich.table import Table

        table = Table(box=None, header_style="bold", pad_edge=False, show_header=self.header)
        for c in self.columns:
            table.add_column(c.header, justify=c.justify, style=c.style, overflow=c.overflow, min_width=c.min_width)
        for cells, _, style in self.rows:
            table.add_row(*cells, style=style)
        return table

    def _widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        """Each column's width with its padding: rich's layout of a table holding only, for each
        column, its widest cell and the cell with its longest word (what rich measures a column by)."""
        from rich.table import Table

        sample = Table(box=None, pad_edge=False, show_header=self.header)
        for c in self.columns:
            sample.add_column(c.header, justify=c.justify, overflow=c.overflow, min_width=c.min_width)
        for i in range(len(self.columns)):
            widest: Text | None = None
            wordiest: Text | None = None
            most = longest = -1
            for cells, sizes, _ in self.rows:
                cell, size = cells[i], sizes[i]
                if size > most:
                    widest, most = cell, size
                if size > longest and (word := _longest_word(cell)) > longest:  # a word is no wider than its text
                    wordiest, longest = cell, word
            for chosen in (widest, wordiest):
                if chosen is not None:
                    sample.add_row(*(chosen if j == i else "" for j in range(len(self.columns))))
        return getattr(sample, _LAYOUT_RULE)(console, options)  # rich's own layout rules

    def _row(self, console: Console, cells: list[Text], sizes: list[int], inner: list[int],
             pads: list[tuple[int, int]], row_style: str, *, header: bool = False) -> Iterable[Segment]:  # fmt: skip
        """One row as segments, line by line: each cell cut or wrapped to its column, padded to its width.
        Without colours (piped, NO_COLOR) a row is one plain string: most of the cost of a big table."""
        blocks = [_fit(console, *cell) for cell in zip(cells, sizes, inner, self.columns)]
        height = max(1, *(len(b) for b in blocks))
        plain = console.no_color or console.color_system is None
        lines: list[list[Segment]] = [[] for _ in range(height)]  # with colours
        texts: list[list[str]] = [[] for _ in range(height)]  # without
        for block, width, (left, right), c in zip(blocks, inner, pads, self.columns):
            style = Style.null() if plain else console.get_style(row_style if header else f"{c.style} {row_style}")
            blank: list[tuple[Text, int] | None] = [None] * (height - len(block))
            for i, fitted in enumerate([*blank, *block] if header else [*block, *blank]):
                if fitted is None:  # below a shorter cell (above, in the header): one blank run, as rich does
                    texts[i].append(" " * (left + width + right))
                    lines[i].append(Segment(" " * (left + width + right), style))
                    continue
                text, size = fitted
                room = " " * (width - size)
                if plain:
                    content = room + text.plain if c.justify == "right" else text.plain + room
                    texts[i].append(f"{' ' * left}{content}{' ' * right}")
                    continue
                lines[i] += [Segment(" " * left, style)] if left else []
                base = style + console.get_style(text.style) if text.style else style
                if not text.spans:  # one style: one segment, padded in it as rich pads it
                    content = room + text.plain if c.justify == "right" else text.plain + room
                    lines[i].append(Segment(content, base))
                else:
                    text = text.copy()
                    text.pad_left(len(room)) if c.justify == "right" else text.pad_right(len(room))
                    lines[i] += [Segment(seg.text, base + seg.style if seg.style else base)
                                 for seg in text.render(console)]
                lines[i] += [Segment(" " * right, style)] if right else []
        if plain:
            yield Segment("".join(text for line in texts for text in (*line, "\n")))
            return
        for line in lines:
            yield from line
            yield Segment.line()


def _fit(console: Console, cell: Text, size: int, width: int, column: Column) -> list[tuple[Text, int]]:
    """`cell` (`size` columns wide) as the lines rich's table puts in a column `width` wide, unpadded,
    with their widths: itself when it fits; a plain one-line text (no styled spans, one column a
    character) cut at words or folded as rich cuts it; anything else by rich."""
    plain = cell.plain
    if width < 1:  # a column squeezed to its padding: rich draws it blank
        return []
    right_strip = column.justify != "left" and plain[-1:].isspace()  # rich strips it before aligning
    if size <= width and "\n" not in plain and "\t" not in plain and not right_strip:
        return [(cell, size)]
    if (divide_line is None or cell.spans or column.justify != "left" or "\n" in plain or "\t" in plain
            or size != len(plain)):  # fmt: skip
        wrapped = cell.wrap(console, width, justify=column.justify, overflow=column.overflow)
        return [(line, line.cell_len) for line in wrapped]
    offsets = [0, *divide_line(plain, width, fold=column.overflow == "fold"), len(plain)]
    lines = []
    for start, end in zip(offsets, offsets[1:]):
        piece = plain[start:end]
        if len(piece) > width:  # what rich cuts: first the spaces past the width, then the rest
            piece = piece[: max(width, len(piece.rstrip()))]
            if len(piece) > width:
                piece = piece[: width - 1] + "…" if column.overflow == "ellipsis" else piece[:width]
        lines.append((Text(piece, style=cell.style), len(piece)))
    return lines


def _longest_word(text: Text) -> int:
    """The width of the longest word of `text`: the narrowest rich will make its column."""
    return max((cell_len(word) for word in text.plain.split()), default=text.cell_len)


class EventsTable(Observer):
    """The `events` table printed as the capture is read: a table for every `BATCH` events (the
    first with the header), so time stays linear and memory flat however many events. A column is
    never narrower than in the batches before, so they line up; a short capture is one table.
    Comments (with `comments`) are listed after it."""

    BATCH = 500
    WIDEST = 16
    """The widest a column is held open for the batches after (a long type or id is cut, as rich does)."""

    def __init__(self, console: Console, *, comments: bool = False) -> None:
        self.console = console
        self.comments = comments
        self.rows: list[list[Text]] = []
        self.widths = [0] * 6
        self.header = True
        self.comment_lines: list[Text] = []

    def event(self, event: Event, flags: object) -> None:
        data = event.data if len(event.data) <= 300 else event.data[:297] + "..."
        cells = (safe(event.type, newlines=False), safe(event.id, newlines=False), safe(data, newlines=False))
        self.rows.append([Text(str(event.index)), Text(seconds(event.t)), *cells, Text(str(event.start))])
        if len(self.rows) == self.BATCH:
            self.flush()

    def comment(self, comment: Comment) -> None:
        if self.comments:
            line = f"comment at byte {comment.offset}, t={seconds(comment.t)}: {comment.text}"
            self.comment_lines.append(safe(line, newlines=False))

    def flush(self) -> None:
        """Print the events read since the last batch."""
        if not self.rows and not self.header:
            return
        widths = list(self.widths)  # those of the batches before: the first batch is laid out as rich likes
        for row in self.rows:
            for i, cell in enumerate(row):
                self.widths[i] = max(self.widths[i], min(cell.cell_len, self.WIDEST))
        head = ("#", "t", "type", "id", "data", "offset")
        justify = ("right", "right", "left", "left", "left", "right")
        style = ("", "", "cyan", "", "", "dim")
        columns = [Column(name, justify[i], style[i], min_width=max(widths[i], len(name)))  # type: ignore[arg-type]
                   if i != 4 else Column(name, overflow="fold") for i, name in enumerate(head)]  # fmt: skip
        table = Rows(columns, header=self.header)
        for row in self.rows:
            table.add_row(*row)
        self.console.print(table)
        self.rows.clear()
        self.header = False

    def close(self, analysis: Analysis) -> None:
        self.flush()
        for line in self.comment_lines:
            self.console.print(line)
