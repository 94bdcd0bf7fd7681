"""`show`, `events` and `text`: the views of one capture, streamed through.

Apart from the group (`cli/__init__.py`), as every command is: `--version` starts without the library,
and each command loads what it runs and no more.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from .._analysis import analyze
from ..dialects import Answer, Holding, Passage
from . import _json
from ._params import capture_argument, dialect_option, input_errors, json_option, rechunk_option
from ._reading import reading

if TYPE_CHECKING:
    from .._rechunk import RechunkSpec

__all__ = ["answer_pieces", "events", "show", "text"]


@click.command()
@capture_argument
@dialect_option
@rechunk_option
@input_errors
def show(capture: str, dialect: str | None, rechunk: RechunkSpec | None) -> None:
    """The main view: request, streaming headers, timing, timeline, how it ended, the answer."""
    from ._check import show as show_capture  # the check command's module: loaded for show and check only

    show_capture(capture, rechunk=rechunk, dialect=dialect)


@click.command()
@capture_argument
@json_option
@rechunk_option
@click.option("--comments", is_flag=True, help="Also list comment lines (keep-alives).")
@input_errors
def events(capture: str, as_json: bool, rechunk: RechunkSpec | None, comments: bool) -> None:
    """Every dispatched event, with its arrival time and byte offset.

    --json prints JSON Lines as the capture is read: one object per event with index, type, data,
    id, retry, t, t_first, offset, end and chunk (comments as {"comment", "t", "offset", "chunk"}),
    in the order a client sees them.
    """
    if as_json:
        with reading(capture) as (stream, watchers):
            analyze(stream, rechunk=rechunk, keep=False, rebuild=False,
                    observers=[*watchers, _json.JsonLinesOut(sys.stdout, comments=comments)])  # fmt: skip
        return
    from . import _render  # rich: loaded for terminal views only

    table = _render.EventsTable(_render.console(), comments=comments)  # printed as the capture is read
    with reading(capture) as (stream, watchers):
        analysis = analyze(stream, rechunk=rechunk, keep=False, rebuild=False, observers=[*watchers, table])
    note = _render.notices(analysis)
    if note is not None:
        _render.console(stderr=True).print(note)


@click.command()
@capture_argument
@json_option
@dialect_option
@rechunk_option
@click.option("--reasoning", is_flag=True, help="Print the reasoning / thinking text before the answer.")
@input_errors
def text(capture: str, as_json: bool, dialect: str | None, rechunk: RechunkSpec | None, reasoning: bool) -> None:
    """The reconstructed answer: text, then any tool calls.

    On a terminal, control and invisible characters in it are shown as escapes; piped or
    redirected, the answer is written exactly as it was streamed (it is data: it may hold
    control characters, so look at such a file with a pager, not `cat`).
    --json prints one object with dialect, text, reasoning, refusal, tool_calls, finish_reason,
    complete (true only when the dialect's end marker arrived and no in-band error did),
    end_marker_seen, errors, usage, choices, recording and timing.
    """
    with reading(capture) as (stream, watchers):  # the answer spooled to a file past a size: memory stays flat
        analysis = analyze(stream, rechunk=rechunk, dialect=dialect, keep=False, observers=watchers,
                           holding=Holding.SPOOL)  # fmt: skip
    for warning in analysis.capture.warnings:  # e.g. which of a HAR's streams this is (--json: "recording")
        sys.stderr.write(f"! {warning}\n")
    if as_json:
        _json.write_doc(sys.stdout, _json.analysis_json(analysis, held=True))
        return
    if sys.stdout.isatty():
        from . import _render

        _render.print_text(_render.console(), answer_pieces(analysis.answer, reasoning=reasoning, last_newline=False))
        return
    for piece in answer_pieces(analysis.answer, reasoning=reasoning):
        _json.write_out(sys.stdout, piece)


def answer_pieces(answer: Answer, *, reasoning: bool = False, last_newline: bool = True) -> Iterator[str]:
    """What `text` writes for an answer (piped), piece by piece: each choice's text (or refusal), its
    tool calls a line each (`[tool call] NAME ARGUMENTS`), its reasoning first when asked, the
    paragraphs joined by newlines and ended by one (`last_newline`). `certify` expects it of clients."""
    parts: list[tuple[str | Passage, ...]] = []  # the answer's paragraphs, each in pieces
    for choice in answer.choices:
        if len(answer.choices) > 1:
            parts.append((f"--- choice {choice.index} ---",))
        if reasoning and choice.held_reasoning:
            parts.append((choice.held_reasoning,))
        if choice.held_text or choice.held_refusal:
            parts.append((choice.held_text or choice.held_refusal,))
        parts += [("[tool call] ", c.name, " ", c.held_arguments) for c in choice.tool_calls]
    # written piece by piece, the paragraphs joined by newlines: a 200 MB answer is never one string
    for i, part in enumerate(parts):
        for item in ("\n" if i else "", *part):
            yield from (item,) if isinstance(item, str) else item.pieces()
    if parts and last_newline:
        yield "\n"
