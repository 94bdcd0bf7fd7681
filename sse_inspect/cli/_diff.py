"""`sse-inspect diff`: two captures compared by answer, by events, or by arrival times."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.console import Group, RenderableType
from rich.text import Text

from .._analysis import Analysis, analyze
from .._diff import (
    HOLD_THRESHOLD,
    EventChange,
    EventsDiff,
    HeldRelease,
    HeldText,
    TextDelay,
    TextDiff,
    TextTimingDiff,
    TimingDiff,
    diff_events,
    diff_text,
    diff_timing,
)
from .._events import Event
from .._loading import load_capture
from .._rechunk import RechunkSpec
from . import _render
from ._json import event_json, write_doc
from ..dialects import DIALECTS
from .._errors import SSEInspectError
from ._params import InputError, dialect_option, error_line, input_errors, json_option, rechunk_option, stdin_note

__all__ = ["diff"]

DATA_WIDTH = 300
"""Event data longer than this is cut in the tables (the --json output keeps all of it)."""
CONTEXT = 40
"""Characters kept either side of where a changed event's data differs."""


@click.command()
@click.argument("a", metavar="A", callback=stdin_note)
@click.argument("b", metavar="[B]", required=False, callback=stdin_note)
@click.option("--by", type=click.Choice(["text", "events", "timing"]), default="text", show_default=True,
              help="Compare the rebuilt answers, the events, or when the events arrived.")  # fmt: skip
@click.option("--hold-ms", type=click.FloatRange(min=0), default=HOLD_THRESHOLD * 1000, show_default=True,
              help="--by timing: an event (or text) this much slower than the fastest counts as held.")  # fmt: skip
@click.option("--all-rows", is_flag=True,
              help="--by timing: print every row of the table (default: the first 200, the last 50 and every held row).")  # fmt: skip
@json_option
@dialect_option
@click.option("--dialect-b", type=click.Choice(list(DIALECTS)), default=None,
              help="B's grammar, when a hop changed it (default: A's; for --by timing, detected in B).")  # fmt: skip
@rechunk_option
@input_errors
def diff(a: str, b: str | None, by: str, hold_ms: float, all_rows: bool, as_json: bool, dialect: str | None, dialect_b: str | None,
         rechunk: RechunkSpec | None) -> None:  # fmt: skip
    """Compare capture A with capture B, or with itself re-cut (no B, --rechunk SPEC).

    --by text (default): the rebuilt answers as a unified diff. --by events: the events aligned
    on type, data and id. --by timing: A and B are the same stream recorded before and after a
    hop (e.g. a proxy); each event's delay from A to B, over the smallest delay (the baseline), is
    how long the hop held it. When the hop re-framed the events (an app that reads OpenAI JSON and
    sends plain text), the answer texts are aligned instead, and each character's delay is timed.
    B is read in A's dialect (--by timing: in its own, detected), unless --dialect (both sides)
    or --dialect-b (B) says; --rechunk re-cuts both.

    Without B, A is compared with A re-cut by --rechunk: any difference is a parser bug.

    Exit codes: 0 identical (for --by timing: nothing held more than --hold-ms over the
    baseline, but one lone straggler under twice it), 1 different, 2 bad usage, an unreadable or untimed capture, or (--by timing) A and
    B with different events and different answer texts, or given the wrong way round (B's text
    before A's). With --json, a refused comparison still prints a document: its "error" and
    "exit_code" 2.
    """
    if b is None and rechunk is None:
        raise InputError("give a second capture B, or --rechunk SPEC to compare A with itself re-cut")
    if b is None and by == "timing":
        raise InputError("--by timing needs a second capture B: re-cutting A changes no arrival time worth comparing")
    head = {"by": by, "a": a, "b": b, "rechunk": str(rechunk) if rechunk else None}
    try:
        left, right = _analyses(a, b, rechunk, dialect, dialect_b, own=by == "timing")
        result: TextDiff | EventsDiff | TimingDiff | TextTimingDiff
        if by == "text":
            result = diff_text(left, right)
        elif by == "events":
            result = diff_events(left, right)
        else:
            result = diff_timing(left, right, threshold=hold_ms / 1000)
    except SSEInspectError as exc:
        if as_json:  # a document to parse, as check --json gives for a capture it cannot read; stderr says it too
            write_doc(sys.stdout, {**head, "error": error_line(exc), "exit_code": 2})
        raise
    code = 0 if result.identical else 1
    if as_json:
        doc = {**head, "dialect": left.dialect, "dialect_b": right.dialect, "identical": result.identical,
               "exit_code": code, **_result_json(result)}  # fmt: skip
        write_doc(sys.stdout, doc)
    else:
        _render.console().print(Group(_legend(a, b, rechunk), _view(result, all_rows=all_rows)))
    sys.exit(code)


def _analyses(a: str, b: str | None, rechunk: RechunkSpec | None, dialect: str | None, dialect_b: str | None, *,
              own: bool) -> tuple[Analysis, Analysis]:  # fmt: skip
    """A and B analysed alike, both re-cut by `rechunk` (without B: B is A re-cut). B is read in
    `dialect_b`, else in `dialect`, else in A's dialect, or (`own`) in the one detected in B."""
    capture = load_capture(a)
    if b is None:
        left = analyze(capture, dialect=dialect)
        return left, analyze(capture, rechunk=rechunk, dialect=dialect_b or left.dialect)
    left = analyze(capture, rechunk=rechunk, dialect=dialect)
    other = dialect_b or dialect or (None if own else left.dialect)
    return left, analyze(load_capture(b), rechunk=rechunk, dialect=other)


# -- views ---------------------------------------------------------------------------------


def _legend(a: str, b: str | None, rechunk: RechunkSpec | None) -> Text:
    cut = f" (re-cut by {rechunk})" if rechunk and b is not None else ""
    legend = Text("A ", style="bold")
    legend.append_text(_render.safe(a + cut, newlines=False, style="dim"))
    legend.append("\nB ", style="bold")
    other = f"{b}{cut}" if b is not None else f"A re-cut by {rechunk}"
    legend.append_text(_render.safe(other, newlines=False, style="dim"))
    return legend


def _view(result: TextDiff | EventsDiff | TimingDiff | TextTimingDiff, *, all_rows: bool = False) -> RenderableType:
    if isinstance(result, TextDiff):
        return _text_view(result)
    if isinstance(result, EventsDiff):
        return _events_view(result)
    if isinstance(result, TextTimingDiff):
        return _text_timing_view(result, all_rows=all_rows)
    return _timing_view(result, all_rows=all_rows)


def _verdict(identical: bool, same: str, different: str) -> Text:
    return Text(f"✔ {same}", style="bold green") if identical else Text(f"✘ {different}", style="bold red")


def _text_view(d: TextDiff) -> RenderableType:
    lines: list[RenderableType] = []
    for i, line in enumerate(d.unified):
        header = i < 2 or line.startswith("@@")
        style = "dim" if header else {"-": "red", "+": "green"}.get(line[:1], "")
        lines.append(_render.safe(line, newlines=False, style=style))
    lines.append(_verdict(d.identical, "identical answers", f"answers differ: {', '.join(d.changed)}"))
    return Group(*lines)


def _around(x: str, y: str) -> tuple[str, str]:
    """`x` and `y` cut to where they differ, with `CONTEXT` characters either side.

    A changed token deep in a long JSON payload stays in view.
    """
    head = len(os.path.commonprefix([x, y]))
    tail = min(len(os.path.commonprefix([x[::-1], y[::-1]])), min(len(x), len(y)) - head)

    def cut(s: str) -> str:
        lo, hi = max(0, head - CONTEXT), len(s) - max(0, tail - CONTEXT)
        return ("…" if lo else "") + s[lo:hi] + ("…" if hi < len(s) else "")

    return cut(x), cut(y)


def _event_cells(e: Event, style: str, data_text: str | None = None) -> list[Text]:
    data = _render.safe(e.data if data_text is None else data_text, newlines=False, style=style)
    data.truncate(DATA_WIDTH, overflow="ellipsis")
    return [_render.safe(e.type, newlines=False, style="cyan"), _render.safe(e.id, newlines=False), data]


def _events_view(d: EventsDiff) -> RenderableType:
    counts = f"{len(d.equal)} equal, {len(d.changed)} changed, {len(d.missing)} missing, {len(d.inserted)} inserted"
    verdict = _verdict(d.identical, f"identical events ({counts})", f"events differ: {counts}")
    if d.identical:
        return verdict
    columns = [_render.Column("A #", "right"), _render.Column("B #", "right")]
    table = _render.Rows(columns + [_render.Column(name, overflow="fold") for name in ("change", "type", "id", "data")])
    for c in d.changes:
        if c.op == "equal":
            continue
        what = {"missing": "missing from B", "inserted": "only in B"}.get(c.op, f"changed {', '.join(c.fields)}")
        data_a, data_b = _around(c.a.data, c.b.data) if c.a and c.b and "data" in c.fields else (None, None)
        if c.a is not None:
            table.add_row(str(c.a.index), "", Text(f"- {what}", style="red"), *_event_cells(c.a, "red", data_a))
        if c.b is not None:
            label = "+" if c.a is not None else f"+ {what}"
            table.add_row("", str(c.b.index), Text(label, style="green"), *_event_cells(c.b, "green", data_b))
    return Group(table, verdict)


def _timing_view(d: TimingDiff, *, all_rows: bool = False) -> RenderableType:
    names = ("A #", "B #", "type", "t in A", "t in B", "delay", "hold")
    table = _render.Rows([_render.Column(name, "left" if name == "type" else "right") for name in names])
    aligned = Text("aligned by events: the hop passed them on", style="dim")
    held = {id(x) for x in d.held}
    for x in _shown(d.matched, lambda x: id(x) in held, all_rows):
        if isinstance(x, int):
            table.add_row(*_left_out(x, len(names), names.index("type")), style="dim")
            continue
        table.add_row(str(x.a.index), str(x.b.index), _render.safe(x.a.type, newlines=False), _render.seconds(x.t_a),
                      _render.seconds(x.t_b), _render.seconds(x.delay), _render.seconds(x.hold),
                      style="yellow" if id(x) in held else "")  # fmt: skip
    parts: list[RenderableType] = [aligned, table]
    for side, events in (("A", d.only_a), ("B", d.only_b)):
        if events:
            shown = ", ".join(f"#{e.index}" for e in events[:20]) + (", ..." if len(events) > 20 else "")
            parts.append(Text(f"{len(events)} event(s) only in {side}: {shown}", style="yellow"))
    def release(r: HeldRelease) -> Text:
        return Text(f"release at t={r.t:.3f} s in B: {len(r.events)} events in {r.span * 1000:.0f} ms, "
                    f"the first held {r.first_hold:.3f} s")  # fmt: skip

    parts += _release_lines(d.releases, release, all_rows)
    parts.append(_verdict(d.identical, d.summary, d.summary))
    return Group(*parts)


def _text_timing_view(d: TextTimingDiff, *, all_rows: bool = False) -> RenderableType:
    """One row per event of B that brought text: which of A's events it came from, when, how long
    the hop held its first characters (the longest-held of the row), and a quote of it."""
    names = ("B #", "A #", "chars", "t in A", "t in B", "delay", "hold", "text")
    table = _render.Rows([_render.Column(name, "left" if name == "text" else "right") for name in names])
    held = {id(s) for s in d.held}
    for row in _shown(_by_b_event(d.stretches), lambda row: any(id(s) in held for s in row), all_rows):
        if isinstance(row, int):
            table.add_row(*_left_out(row, len(names), names.index("text")), style="dim")
            continue
        first, last = row[0], row[-1]
        from_a = str(first.a.index) if first.a is last.a else f"{first.a.index}-{last.a.index}"
        text = _render.safe("".join(s.text for s in row[:QUOTED]).strip(), newlines=False)
        text.truncate(QUOTED, overflow="ellipsis")
        table.add_row(str(first.b.index), from_a, str(sum(len(s.text) for s in row)), _render.seconds(first.t_a),
                      _render.seconds(first.t_b), _render.seconds(first.delay), _render.seconds(first.hold), text,
                      style="yellow" if any(id(s) in held for s in row) else "")  # fmt: skip
    parts: list[RenderableType] = [Text("aligned by text: the hop re-framed the events", style="dim"), table]
    def release(r: HeldText) -> Text:
        line = Text(f"release at t={r.t:.3f} s in B: {r.characters} characters in {r.span * 1000:.0f} ms, "
                    f"the first held {r.first_hold:.3f} s: ")  # fmt: skip
        return line.append_text(_render.safe(r.quote(), newlines=False))

    parts += _release_lines(d.releases, release, all_rows)
    parts.append(_verdict(d.identical, d.summary, d.summary))
    return Group(*parts)


QUOTED = 40
"""Characters of text quoted in a row of the text timing table."""
HEAD_ROWS, TAIL_ROWS, HELD_ROWS = 200, 50, 1000
"""A timing table longer than HEAD_ROWS + TAIL_ROWS shows its first HEAD_ROWS rows, its last
TAIL_ROWS and, between them, its held rows (the first HELD_ROWS of them: a hop that held a whole
long answer would print it all), and says how many rows it left out where it left them, as the
HTML report's hold table does; the release lines under it are cut the same way. --all-rows prints
them all."""

Row = TypeVar("Row")


def _shown(rows: Sequence[Row], held: Callable[[Row], bool], all_rows: bool) -> Iterator[Row | int]:
    """The rows a timing table shows, in order, with the number of rows left out (an int) where
    some were: the first HEAD_ROWS, the last TAIL_ROWS, and the first HELD_ROWS `held` ones between
    them (`all_rows`: all)."""
    if all_rows:
        yield from rows
        return
    left_out = held_shown = 0
    for i, row in enumerate(rows):
        middle = HEAD_ROWS <= i < len(rows) - TAIL_ROWS
        if middle and held_shown < HELD_ROWS and held(row):
            held_shown += 1
            middle = False
        if not middle:
            if left_out:
                yield left_out
                left_out = 0
            yield row
        else:
            left_out += 1
    if left_out:
        yield left_out


def _release_lines(releases: Sequence[Row], line: Callable[[Row], Text], all_rows: bool) -> list[Text]:
    """A line for each release under a timing table, cut as the table is."""
    return [Text(f"… {r:,} releases not shown", style="dim") if isinstance(r, int) else line(r)
            for r in _shown(releases, lambda r: False, all_rows)]  # fmt: skip


def _left_out(n: int, columns: int, at: int) -> list[str]:
    """The cells of the row that stands for `n` rows left out, said in column `at` (a text column)."""
    cells = ["…", *([""] * (columns - 1))]
    cells[at] = f"{n:,} rows not shown"
    return cells


def _by_b_event(stretches: tuple[TextDelay, ...]) -> list[list[TextDelay]]:
    rows: list[list[TextDelay]] = []
    for s in stretches:
        if rows and rows[-1][-1].b is s.b:
            rows[-1].append(s)
        else:
            rows.append([s])
    return rows


# -- --json ----------------------------------------------------------------------------------


def _result_json(result: TextDiff | EventsDiff | TimingDiff | TextTimingDiff) -> dict[str, Any]:
    if isinstance(result, TextDiff):
        return {"changed": list(result.changed), "unified": list(result.unified),
                "lines": {"a": list(result.a), "b": list(result.b)}}  # fmt: skip
    if isinstance(result, EventsDiff):
        return {
            "counts": {op: len(getattr(result, op)) for op in ("equal", "changed", "missing", "inserted")},
            "changes": [_change_json(c) for c in result.changes if c.op != "equal"],
        }
    if isinstance(result, TextTimingDiff):
        return _text_timing_json(result)
    return _timing_json(result)


def _change_json(c: EventChange) -> dict[str, Any]:
    return {
        "op": c.op,
        "fields": list(c.fields),
        "a": None if c.a is None else event_json(c.a),
        "b": None if c.b is None else event_json(c.b),
    }


def _timing_head(d: TimingDiff | TextTimingDiff) -> dict[str, Any]:
    """What the JSON of both alignments starts with."""
    return {"alignment": d.alignment, "hop": d.hop, "summary": d.summary, "baseline": d.baseline,
            "threshold": d.threshold, "window": d.window, "straggler": d.straggler}  # fmt: skip


def _timing_json(d: TimingDiff) -> dict[str, Any]:
    top = d.max_hold
    held = set(d.held)
    return {
        **_timing_head(d),
        "held": len(held),
        "max_hold": {"hold": top.hold, "a_index": top.a.index, "b_index": top.b.index},
        "releases": [
            {"t": r.t, "span": r.span, "events": len(r.events), "first_hold": r.first_hold,
             "a_indices": [x.a.index for x in r.events]}  # fmt: skip
            for r in d.releases
        ],
        "events": [
            {"a_index": x.a.index, "b_index": x.b.index, "type": x.a.type, "t_a": x.t_a, "t_b": x.t_b,
             "delay": x.delay, "hold": x.hold, "held": x in held}  # fmt: skip
            for x in d.matched
        ],
        "only_a": [e.index for e in d.only_a],
        "only_b": [e.index for e in d.only_b],
    }


def _text_timing_json(d: TextTimingDiff) -> dict[str, Any]:
    top = d.max_hold
    held = {id(s) for s in d.held}
    return {
        **_timing_head(d),
        "characters": d.characters,
        "held_characters": d.held_characters,
        "lost_characters": d.lost,
        "max_hold": {"hold": top.hold, "a_index": top.a.index, "b_index": top.b.index, "start": top.start},
        "releases": [
            {"t": r.t, "span": r.span, "characters": r.characters, "first_hold": r.first_hold,
             "start": r.stretches[0].start, "end": r.stretches[-1].end, "quote": r.quote(),
             "a_indices": sorted({s.a.index for s in r.stretches}),
             "b_indices": sorted({s.b.index for s in r.stretches})}  # fmt: skip
            for r in d.releases
        ],
        "stretches": [
            {"a_index": s.a.index, "b_index": s.b.index, "start": s.start, "end": s.end, "t_a": s.t_a,
             "t_b": s.t_b, "delay": s.delay, "hold": s.hold, "held": id(s) in held}  # fmt: skip
            for s in d.stretches
        ],
    }
