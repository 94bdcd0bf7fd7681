"""`sse-inspect report`: one self-contained HTML file of checked captures, for a bug report."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .._analysis import analyze
from .._rechunk import RechunkSpec
from ..checks import Report, Thresholds, check_capture, parse_threshold
from ..dialects import Holding
from ..report import Around, Enough, EventSample, EventsShown, Trace, anchors, html_report
from . import _render
from ._check import each, expand
from ._json import write_out
from ._params import InputError, ThresholdParam, captures_argument, dialect_option, input_errors, rechunk_option
from ._reading import reading

__all__ = ["report"]


@click.command()
@captures_argument
@click.option("-o", "--output", default="report.html", show_default=True, metavar="FILE",
              help="The HTML file to write (- for stdout).")  # fmt: skip
@click.option("--title", default="sse-inspect report", show_default=True, help="The page's heading.")
@click.option("--threshold", "threshold_texts", multiple=True, type=ThresholdParam(), metavar="NAME=VALUE",
              help="Tune a timing threshold, as for check.")  # fmt: skip
@dialect_option
@rechunk_option
@input_errors
def report(captures: tuple[str, ...], output: str, title: str, threshold_texts: tuple[str, ...],
           dialect: str | None, rechunk: RechunkSpec | None) -> None:  # fmt: skip
    """Write one self-contained HTML report (no script, no network) to attach to a bug report.

    Per capture: request, status, streaming headers, verdict, findings with their fix, timing, the
    first and last events and those around each finding, and the rebuilt answer; the timed
    captures' arrivals overlaid on one plot; for exactly two recordings of one stream (both sides
    of a proxy), what the hop held, event by event. CAPTURE may be a file, a folder (its .jsonl and
    .sse files) or a glob; --rechunk re-cuts each before it is checked. Many captures are checked
    in parallel, one process per core.
    """
    thresholds = Thresholds()
    for text in threshold_texts:
        thresholds = parse_threshold(thresholds, text)
    paths = expand(captures)
    holds = len(paths) == 2  # the hold table compares the two captures' events: only then are they kept
    done = list(each(report_one, paths, (dialect, rechunk, thresholds, holds), progress=sys.stderr.isatty(),
                     doing="reporting"))  # fmt: skip
    page = html_report([r for r, _, _ in done], title=title, traces=[t for _, t, _ in done],
                       events=[e for _, _, e in done])  # fmt: skip
    if output == "-":
        write_out(sys.stdout, page)
        return
    try:
        Path(output).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write the report: {exc.strerror or exc}") from None
    size = len(page.encode())
    _render.console(stderr=True).print(
        _render.safe(f"wrote {output}: {len(done)} capture(s), {size // 1024 or 1} KiB", newlines=False)
    )


def report_one(path: str, dialect: str | None, rechunk: RechunkSpec | None, thresholds: Thresholds,
               keep: bool, *, progress: bool = True) -> tuple[Report, Trace, EventsShown]:  # fmt: skip
    """One capture checked, streamed through (its events kept only with `keep`), with what the page
    shows of it: its plot's data and its events. The events around the findings come from that pass
    when it kept them (`EventSample.around`), else from a second pass over the file, up to the last
    of them, for those it could not tell; a capture read from a pipe cannot be read again, and its
    page says which neighbourhoods it left out."""
    trace, sample = Trace(), EventSample()
    with reading(path, progress=progress) as (stream, watchers):
        checked = check_capture(stream, dialect=dialect, rechunk=rechunk, thresholds=thresholds, keep=keep,
                                observers=[*watchers, trace, *([] if keep else [sample])],
                                holding=Holding.SPOOL)  # the page shows the texts' first TEXT_SHOWN characters  # fmt: skip
    if keep:
        return checked, trace, EventsShown.of_report(checked)
    around, missing = sample.around(anchors(checked.findings))
    if not missing or path == "-" or not os.path.isfile(path):
        why = "the capture came through a pipe, which is read only once"
        return checked, trace, EventsShown.of(sample, checked.findings, around, why=why)
    again = Around(missing, stop=True)
    with reading(path, progress=progress) as (stream, watchers):
        try:  # the events only: no dialect, no check
            analyze(stream, rechunk=rechunk, keep=False, rebuild=False, observers=[*watchers, again])
        except Enough:  # past the last event wanted
            pass
    again.finish()
    around.update(again)
    return checked, trace, EventsShown.of(sample, checked.findings, around)
