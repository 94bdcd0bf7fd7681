"""`sse-inspect report`: one self-contained HTML file of checked captures, for a bug report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._rechunk import RechunkSpec
from ..checks import Thresholds, check_capture, parse_threshold
from ..report import Trace, html_report
from . import _render
from ._check import expand
from ._json import write_out
from ._reading import reading
from ._params import InputError, ThresholdParam, captures_argument, dialect_option, input_errors, rechunk_option

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

    Per capture: request, status, streaming headers, verdict, findings with their fix, timing and
    the rebuilt answer; the timed captures' arrivals overlaid on one plot; for exactly two
    recordings of one stream (both sides of a proxy), what the hop held, event by event.
    CAPTURE may be a file, a folder (its .jsonl and .sse files) or a glob; --rechunk re-cuts each
    before it is checked.
    """
    thresholds = Thresholds()
    for text in threshold_texts:
        thresholds = parse_threshold(thresholds, text)
    paths = expand(captures)
    holds = len(paths) == 2  # the hold table compares the two captures' events: only then are they kept
    checked, traces = [], []
    for path in paths:
        trace = Trace()  # the plot's data, bounded: the captures are streamed through
        with reading(path) as (stream, watchers):
            checked.append(check_capture(stream, dialect=dialect, rechunk=rechunk, thresholds=thresholds, keep=holds,
                                         observers=[*watchers, trace]))  # fmt: skip
        traces.append(trace)
    page = html_report(checked, title=title, traces=traces)
    if output == "-":
        write_out(sys.stdout, page)
        return
    try:
        Path(output).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write the report: {exc.strerror or exc}") from None
    size = len(page.encode())
    _render.console(stderr=True).print(
        _render.safe(f"wrote {output}: {len(checked)} capture(s), {size // 1024 or 1} KiB", newlines=False)
    )
