"""`sse-inspect check`: findings for one capture or many, as a rich report or one JSON document."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import click
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from .._errors import SSEInspectError
from .._rechunk import RechunkSpec
from ..checks import Finding, Report, Severity, Thresholds, check_capture, parse_codes, parse_threshold
from ..checks.evidence import Evidence, Silence
from ..checks.hops import culprit_line, hops_line
from ..dialects import Holding
from . import _render
from ._json import write_doc
from ._params import (
    InputError,
    ThresholdParam,
    captures_argument,
    dialect_option,
    input_errors,
    json_option,
    rechunk_option,
)
from ._reading import reading

__all__ = ["Checked", "check", "culprit_view", "each", "evidence_json", "findings_view", "report_json", "show"]

FAIL_ON = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO, "never": None}
PARALLEL_FROM = 4
"""From this many captures on, they are checked in parallel, one process per core."""
R = TypeVar("R")
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


# (a NamedTuple, not a frozen dataclass: defined in a quarter of the time, see checks/_timeouts.py)
class Checked(NamedTuple):
    """One capture file checked: its report, or why it could not be read."""

    path: str
    report: Report | None = None
    error: str | None = None


_EVIDENCE_KEYS: dict[type[Evidence], dict[str, str]] = {Silence: {"start": "from", "end": "to"}}
"""Evidence fields whose JSON key is not their name, by kind: a silence runs `from` ... `to`."""


def evidence_json(evidence: Evidence) -> dict[str, Any]:
    """A finding's evidence as `check --json` writes it: its fields in order, keyed by their names
    (but for `_EVIDENCE_KEYS`); evidence inside it (the bursts of `Bursts`) as objects, tuples as lists.
    Here with `report_json` rather than in `_json`, which `text` and `events` load without the checks."""
    keys = _EVIDENCE_KEYS.get(type(evidence), {})
    return {keys.get(f.name, f.name): _evidence_value(getattr(evidence, f.name)) for f in dataclasses.fields(evidence)}


def _evidence_value(value: Any) -> Any:
    if isinstance(value, Evidence):
        return evidence_json(value)
    if isinstance(value, tuple):
        return [_evidence_value(v) for v in value]
    return value


def report_json(report: Report, path: str) -> dict[str, Any]:
    a = report.analysis
    t = a.timing
    return {
        "path": path,
        "dialect": a.dialect,
        "framing": a.framing,
        "verdict": report.verdict,
        "worst": str(report.worst) if report.worst else None,
        "findings": [
            {
                "code": f.code,
                "severity": str(f.severity),
                "message": f.message,
                "fix": f.fix,
                "t": f.t,
                "event_index": f.event_index,
                "offset": f.offset,
                "evidence": evidence_json(f.evidence) if f.evidence is not None else {},
            }
            for f in report.findings
        ],
        "skipped": [{"codes": list(s.codes), "reason": s.reason} for s in report.skipped],
        "hops": [{"name": h.name, "kind": h.kind, "header": h.header, "value": h.value} for h in report.hops],
        "culprit": dataclasses.asdict(report.culprit) if report.culprit is not None else None,
        "warnings": list(a.capture.warnings),
        "stats": {
            "events": t.events,
            "chunks": t.chunks,
            "bytes": t.bytes,
            "ttfb": t.ttfb,
            "first_token": t.first_token,
            "total": t.total,
            "timed": a.capture.timed,
            "end": a.capture.end.kind if a.capture.end else None,
            "complete": a.answer.complete,
            "longest_silence": t.max_gap,
            "longest_silence_to": t.max_gap_at,
            "longest_silence_final": t.max_gap_final,
        },
    }


def checked_json(c: Checked) -> dict[str, Any]:
    return report_json(c.report, c.path) if c.report is not None else {"path": c.path, "error": c.error}


def check_one(path: str, dialect: str | None, thresholds: Thresholds, select: frozenset[str] | None,
              ignore: frozenset[str], rechunk: RechunkSpec | None = None,
              arrivals: _render.Arrivals | None = None) -> Checked:  # fmt: skip
    """Check one capture file, streamed through (re-cut first with `rechunk`); `arrivals` (for the
    timeline) watch the pass."""
    try:
        with reading(path) as (stream, watchers):
            report = check_capture(stream, thresholds=thresholds, select=select, ignore=ignore, dialect=dialect,
                                   rechunk=rechunk, keep=False, holding=Holding.COUNT,  # no check reads the text
                                   observers=[*watchers, *([arrivals] if arrivals else [])])  # fmt: skip
    except SSEInspectError as exc:
        return Checked(path, error=exc.message)
    return Checked(path, report)


def expand(inputs: tuple[str, ...]) -> list[str]:
    """Files as given; folders searched for *.jsonl and *.sse; unexpanded glob patterns expanded."""
    paths: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            from pathlib import Path  # (pathlib and glob: loaded for a folder or a pattern, not for a file)

            found = sorted(str(p) for p in Path(item).rglob("*") if p.suffix in (".jsonl", ".sse") and p.is_file())
            if not found:
                raise InputError(f"{item}: no .jsonl or .sse files in this folder")
            paths += found
        elif item != "-" and not os.path.exists(item) and any(c in item for c in "*?["):  # glob.has_magic's test
            import glob

            matched = sorted(glob.glob(item, recursive=True))
            if not matched:
                raise InputError(f"{item}: no file matches")
            paths += matched
        else:
            paths.append(item)
    return paths


def each(work: Callable[..., R], paths: Sequence[str], args: tuple[Any, ...], *, progress: bool,
         doing: str = "checking") -> Iterator[R]:  # fmt: skip
    """`work(path, *args)` of each path, in order: one after the other for a few, in parallel for
    PARALLEL_FROM or more (one process per core; `work` and what it returns must pickle), with a
    progress bar ("`doing` N captures on K cores") when `progress`. An exception `work` raises is
    raised here, as it would be one after the other."""
    if len(paths) < PARALLEL_FROM:
        yield from (work(p, *args) for p in paths)
        return
    from concurrent.futures import ProcessPoolExecutor  # loaded only for many captures

    from rich.progress import Progress

    workers = min(os.cpu_count() or 1, len(paths))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(work, p, *args) for p in paths]
        try:
            with Progress(console=_render.console(stderr=True), transient=True, disable=not progress) as bar:
                task = bar.add_task(f"{doing} {len(paths)} captures on {workers} cores", total=len(paths))
                for future in futures:
                    yield future.result()
                    bar.advance(task)
        finally:
            for future in futures:  # a failure (or a caller that stops early) leaves no work running
                future.cancel()


def _results(paths: list[str], args: tuple[Any, ...], progress: bool) -> Iterator[Checked]:
    return each(check_one, paths, args, progress=progress)


@click.command()
@captures_argument
@json_option
@click.option("--fail-on", type=click.Choice(list(FAIL_ON)), default="error", show_default=True,
              help="Exit 1 when a finding is at least this severe.")  # fmt: skip
@click.option("--select", "select_text", metavar="CODES", help="Report only these codes (comma-separated).")
@click.option("--ignore", "ignore_text", metavar="CODES", default="", help="Never report these codes.")
@click.option("--threshold", "threshold_texts", multiple=True, type=ThresholdParam(), metavar="NAME=VALUE",
              help="Tune a timing threshold, e.g. burst_min_events=10 (see README).")  # fmt: skip
@dialect_option
@rechunk_option
@input_errors
def check(captures: tuple[str, ...], as_json: bool, fail_on: str, select_text: str | None, ignore_text: str,
          threshold_texts: tuple[str, ...], dialect: str | None, rechunk: RechunkSpec | None) -> None:  # fmt: skip
    """Diagnose captures: buffering, missing end markers, sentinels, bad payloads, headers.

    CAPTURE may be a file, a folder (its .jsonl and .sse files) or a glob.
    Exit codes: 0 no finding at or above --fail-on, 1 such findings, 2 bad usage or an unreadable capture.
    """
    thresholds = Thresholds()
    for text in threshold_texts:
        thresholds = parse_threshold(thresholds, text)
    select = parse_codes(select_text) if select_text else None
    ignore = parse_codes(ignore_text)
    paths = expand(captures)
    args = (dialect, thresholds, select, ignore, rechunk)
    arrivals = _render.Arrivals()
    if len(paths) == 1:  # checked here, so that the view can draw its timeline
        results = [check_one(paths[0], *args, arrivals)]
    else:
        results = list(_results(paths, args, progress=sys.stderr.isatty() and not as_json))

    limit = FAIL_ON[fail_on]
    failed = limit is not None and any(f.severity >= limit for c in results if c.report for f in c.report.findings)
    unreadable = [c for c in results if c.report is None]
    code = 2 if unreadable else 1 if failed else 0
    if as_json:
        doc = {"captures": [checked_json(c) for c in results], "fail_on": fail_on, "exit_code": code,
               "thresholds": {k: getattr(thresholds, k) for k in thresholds.__dataclass_fields__}}  # fmt: skip
        write_doc(sys.stdout, doc)
    else:
        console = _render.console()
        console.print(warnings_view(results))
        single = results[0].report if len(paths) == 1 else None
        if single is not None:
            console.print(report_view(results[0].path, single))
            if single.analysis.capture.timed:
                console.print(_render.timeline(single.analysis, single, arrivals))
        else:
            for c in results:
                if c.report is not None and c.report.worst is not None and c.report.worst >= Severity.WARNING:
                    console.print(report_view(c.path, c.report))
                    console.print()
            console.print(summary_table(results))
        err = _render.console(stderr=True)
        for c in unreadable:
            err.print(_render.safe(f"Error: {c.error}", newlines=False))
    sys.exit(code)


def warnings_view(results: list[Checked]) -> RenderableType:
    """What reading the captures had to say (which of a HAR's streams was taken, a half-written last
    line), a line each, before the reports."""
    lines = [f"! {c.path}: {w}" for c in results if c.report for w in c.report.analysis.capture.warnings]
    return Group(*(_render.safe(line, newlines=False, style="yellow") for line in lines))


def findings_view(findings: Sequence[Finding], *, verbose: bool = True, said: str | None = None) -> RenderableType:
    """A line per finding (severity, code, message), each fix under it; a fix printed for an
    earlier finding, or above them (`said`: the culprit's), is not printed again."""
    rows: list[RenderableType] = []
    fixed: dict[str, str] = {}  # fix -> the code it was printed under
    if said is not None:
        fixed[said] = "the culprit above"
    for f in findings:
        line = Text()
        line.append(f"{f.severity!s:>7} ", style=_STYLE[f.severity])
        line.append(f"{f.code}  ", style="bold")
        line.append_text(_render.safe(f.message, newlines=False))
        rows.append(_render.Hanging(line, 8))
        if verbose and f.severity > Severity.INFO:
            fix = f"the same fix as {fixed[f.fix]}" if f.fix in fixed else f.fix
            fixed.setdefault(f.fix, f.code)
            rows.append(_render.Hanging(Text("        → " + fix, style="dim"), 10))
    return Group(*rows)


def _counts(report: Report) -> list[tuple[int, str]]:
    """How many findings of each severity, worst first: [(n, "error"), (n, "warning"), (n, "info")]."""
    severities = (Severity.ERROR, Severity.WARNING, Severity.INFO)
    return [(sum(f.severity == s for f in report.findings), str(s)) for s in severities]


def verdict_view(report: Report) -> Text:
    """The verdict line; when its sentence is a finding's message (printed below), the verdict word,
    the finding it comes from and the counts instead."""
    worst = report.worst
    style = "bold red" if worst == Severity.ERROR else "bold yellow" if worst == Severity.WARNING else "bold green"
    word, _, sentence = report.verdict.partition(": ")
    source = next((f.code for f in report.findings if f.message == sentence), None)
    if source is None:
        return _render.safe(report.verdict, newlines=False, style=style)
    said = ", ".join(f"{n} {s}{'s' if n > 1 and s != 'info' else ''}" for n, s in _counts(report) if n)
    return Text.assemble((word, style), f" (see {source} below) · {said}")


def culprit_view(report: Report) -> list[RenderableType]:
    """The hops the response passed (a line, when it has headers) and the culprit with its fix."""
    rows: list[RenderableType] = []
    if report.analysis.capture.response is not None:
        hops = Text.assemble(("hops: ", "bold"), _render.safe(hops_line(report.hops), newlines=False))
        rows.append(_render.Hanging(hops, 6))
    c = report.culprit
    if c is not None:
        word, _, rest = culprit_line(c).partition(": ")
        rows.append(_render.Hanging(Text.assemble((f"{word}: ", "bold"), _render.safe(rest, newlines=False)), 4))
        rows.append(_render.Hanging(Text("        → " + c.fix, style="dim"), 10))
    return rows


def report_view(path: str, report: Report) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble(_render.safe(f"{path}  ", newlines=False, style="dim"), (f"[{report.analysis.dialect}]", "dim")),
        verdict_view(report),
        *culprit_view(report),
    ]
    if report.findings:
        parts.append(findings_view(report.findings, said=report.culprit.fix if report.culprit else None))
    for s in report.skipped:
        parts.append(_render.Hanging(Text(f"skipped {', '.join(s.codes)}: {s.reason}", style="dim"), 8))
    return Group(*parts)


class SummaryTable:
    """A row per capture: its path, dialect, verdict and counts of findings, in columns as wide as
    their cells. Off a terminal nothing folds (a pipe has no width). On a terminal too narrow for
    the row, each path gets a line of its own, whole, with the rest of its row indented below it."""

    HEAD = ("capture", "dialect", "verdict", "errors", "warnings", "info")
    GAP = "  "

    def __init__(self, results: list[Checked]) -> None:
        self.rows: list[list[Text]] = []
        for c in results:
            path = _render.safe(c.path, newlines=False)
            if c.report is None:
                self.rows.append([path, Text(""), Text("unreadable", style="bold red"), Text(""), Text(""), Text("")])
                continue
            counts = [n for n, _ in _counts(c.report)]
            style = "red" if counts[0] else "yellow" if counts[1] else "green"
            verdict = Text(c.report.verdict.split(":")[0], style=style)
            self.rows.append([path, Text(c.report.analysis.dialect), verdict, *(Text(str(n)) for n in counts)])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        head = [Text(h, style="bold") for h in self.HEAD]
        widths = [max(c.cell_len for c in column) for column in zip(head, *self.rows, strict=True)]
        if options.no_wrap or len(self.GAP) * 5 + sum(widths) <= options.max_width:
            for row in [head, *self.rows]:
                yield self._line(row, widths)
            return
        indent = len(self.GAP)  # stacked: the path, then the rest of its row
        rest = [indent + widths[1], *widths[2:]]
        yield Text.assemble(("capture", "bold"))
        yield self._line([Text.assemble(" " * indent, head[1]), *head[2:]], rest)
        for row in self.rows:
            yield _render.Hanging(row[0], 0)
            yield _render.Hanging(self._line([Text.assemble(" " * indent, row[1]), *row[2:]], rest), indent)

    def _line(self, cells: list[Text], widths: list[int]) -> Text:
        """`cells` padded to `widths`: the words left-aligned, the three counts (the last cells) right-aligned."""
        line = Text()
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            pad = " " * (width - cell.cell_len)
            if i:
                line.append(self.GAP)
            line.append_text(Text.assemble(cell, pad) if i < len(cells) - 3 else Text.assemble(pad, cell))
        line.rstrip()
        return line


def summary_table(results: list[Checked]) -> SummaryTable:
    return SummaryTable(results)


def show(path: str, *, rechunk: RechunkSpec | None = None, dialect: str | None = None) -> None:
    """`show`'s view of a capture file, streamed through: the capture, its timeline and answer,
    then the verdict and the findings with their fixes."""
    arrivals = _render.Arrivals()
    with reading(path) as (stream, watchers):
        checked = check_capture(stream, rechunk=rechunk, dialect=dialect, keep=False, observers=[*watchers, arrivals],
                                holding=Holding.GLIMPSE)  # what `answer_view` prints of a long text, and no more
    console = _render.console()
    console.print(_render.show_view(checked.analysis, checked, arrivals))
    console.print()
    console.print(verdict_view(checked))
    console.print(*culprit_view(checked))
    if checked.findings:
        console.print(findings_view(checked.findings, said=checked.culprit.fix if checked.culprit else None))
