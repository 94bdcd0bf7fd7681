"""`sse-inspect report`: one self-contained HTML file of checked captures, for a bug report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._loading import load_capture
from .._rechunk import RechunkSpec
from ..checks import Thresholds, check_capture, parse_threshold
from ..report import html_report
from . import _render
from ._check import expand
from ._json import write_out
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
    checked = [check_capture(load_capture(p), dialect=dialect, rechunk=rechunk, thresholds=thresholds)
               for p in expand(captures)]  # fmt: skip
    page = html_report(checked, title=title)
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
