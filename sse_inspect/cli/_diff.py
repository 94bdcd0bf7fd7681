"""`sse-inspect diff`: two captures compared by answer, by events, or by arrival times."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.console import Group, RenderableType
from rich.text import Text

from .._analysis import Analysis, analyze
from .._diff import HOLD_THRESHOLD, EventChange, EventsDiff, TextDiff, TimingDiff, diff_events, diff_text, diff_timing
from .._events import Event
from .._loading import load_capture
from .._rechunk import RechunkSpec
from . import _render
from ._json import event_json, write_doc
from ._params import InputError, dialect_option, input_errors, json_option, rechunk_option, stdin_note

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
              help="--by timing: an event this much slower than the fastest one counts as held.")  # fmt: skip
@json_option
@dialect_option
@rechunk_option
@input_errors
def diff(a: str, b: str | None, by: str, hold_ms: float, as_json: bool, dialect: str | None,
         rechunk: RechunkSpec | None) -> None:  # fmt: skip
    """Compare capture A with capture B, or with itself re-cut (no B, --rechunk SPEC).

    --by text (default): the rebuilt answers as a unified diff. --by events: the events aligned
    on type, data and id. --by timing: A and B are the same stream recorded before and after a
    hop (e.g. a proxy); each event's delay from A to B, over the smallest delay (the baseline), is
    how long the hop held it. B is read in A's dialect; --rechunk re-cuts both.

    Without B, A is compared with A re-cut by --rechunk: any difference is a parser bug.

    Exit codes: 0 identical (for --by timing: no event held more than --hold-ms over the
    baseline), 1 different, 2 bad usage or an unreadable or untimed capture.
    """
    if b is None and rechunk is None:
        raise InputError("give a second capture B, or --rechunk SPEC to compare A with itself re-cut")
    if b is None and by == "timing":
        raise InputError("--by timing needs a second capture B: re-cutting A changes no arrival time worth comparing")
    left, right = _analyses(a, b, rechunk, dialect)
    result: TextDiff | EventsDiff | TimingDiff
    if by == "text":
        result = diff_text(left, right)
    elif by == "events":
        result = diff_events(left, right)
    else:
        result = diff_timing(left, right, threshold=hold_ms / 1000)
    code = 0 if result.identical else 1
    if as_json:
        doc = {"by": by, "a": a, "b": b, "rechunk": str(rechunk) if rechunk else None, "dialect": left.dialect,
               "identical": result.identical, "exit_code": code, **_result_json(result)}  # fmt: skip
        write_doc(sys.stdout, doc)
    else:
        _render.console().print(Group(_legend(a, b, rechunk), _view(result)))
    sys.exit(code)


def _analyses(a: str, b: str | None, rechunk: RechunkSpec | None, dialect: str | None) -> tuple[Analysis, Analysis]:
    """A and B analysed alike: B in A's dialect, both re-cut by `rechunk` (without B: B is A re-cut)."""
    capture = load_capture(a)
    if b is None:
        left = analyze(capture, dialect=dialect)
        return left, analyze(capture, rechunk=rechunk, dialect=left.dialect)
    left = analyze(capture, rechunk=rechunk, dialect=dialect)
    return left, analyze(load_capture(b), rechunk=rechunk, dialect=left.dialect)


# -- views ---------------------------------------------------------------------------------


def _legend(a: str, b: str | None, rechunk: RechunkSpec | None) -> Text:
    cut = f" (re-cut by {rechunk})" if rechunk and b is not None else ""
    legend = Text("A ", style="bold")
    legend.append_text(_render.safe(a + cut, newlines=False, style="dim"))
    legend.append("\nB ", style="bold")
    other = f"{b}{cut}" if b is not None else f"A re-cut by {rechunk}"
    legend.append_text(_render.safe(other, newlines=False, style="dim"))
    return legend


def _view(result: TextDiff | EventsDiff | TimingDiff) -> RenderableType:
    if isinstance(result, TextDiff):
        return _text_view(result)
    if isinstance(result, EventsDiff):
        return _events_view(result)
    return _timing_view(result)


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


def _timing_view(d: TimingDiff) -> RenderableType:
    names = ("A #", "B #", "type", "t in A", "t in B", "delay", "hold")
    table = _render.Rows([_render.Column(name, "left" if name == "type" else "right") for name in names])
    held = set(d.held)
    for x in d.matched:
        table.add_row(str(x.a.index), str(x.b.index), _render.safe(x.a.type, newlines=False), _render.seconds(x.t_a),
                      _render.seconds(x.t_b), _render.seconds(x.delay), _render.seconds(x.hold),
                      style="yellow" if x in held else "")  # fmt: skip
    parts: list[RenderableType] = [table]
    for side, events in (("A", d.only_a), ("B", d.only_b)):
        if events:
            shown = ", ".join(f"#{e.index}" for e in events[:20]) + (", ..." if len(events) > 20 else "")
            parts.append(Text(f"{len(events)} event(s) only in {side}: {shown}", style="yellow"))
    for r in d.releases:
        parts.append(Text(f"release at t={r.t:.3f} s in B: {len(r.events)} events in {r.span * 1000:.0f} ms, "
                          f"the first held {r.first_hold:.3f} s"))  # fmt: skip
    parts.append(_verdict(d.identical, d.summary, d.summary))
    return Group(*parts)


# -- --json ----------------------------------------------------------------------------------


def _result_json(result: TextDiff | EventsDiff | TimingDiff) -> dict[str, Any]:
    if isinstance(result, TextDiff):
        return {"changed": list(result.changed), "unified": list(result.unified),
                "lines": {"a": list(result.a), "b": list(result.b)}}  # fmt: skip
    if isinstance(result, EventsDiff):
        return {
            "counts": {op: len(getattr(result, op)) for op in ("equal", "changed", "missing", "inserted")},
            "changes": [_change_json(c) for c in result.changes if c.op != "equal"],
        }
    return _timing_json(result)


def _change_json(c: EventChange) -> dict[str, Any]:
    return {
        "op": c.op,
        "fields": list(c.fields),
        "a": None if c.a is None else event_json(c.a),
        "b": None if c.b is None else event_json(c.b),
    }


def _timing_json(d: TimingDiff) -> dict[str, Any]:
    top = d.max_hold
    held = set(d.held)
    return {
        "hop": d.hop,
        "summary": d.summary,
        "baseline": d.baseline,
        "threshold": d.threshold,
        "window": d.window,
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
