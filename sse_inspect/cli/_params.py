"""Click parameter types that wrap the core's own parsers, and the error shim of the CLI."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._errors import SSEInspectError
from .._format import visible
from .._faults import FAULT_FORMS, parse_fault
from .._rechunk import RECHUNK_FORMS, parse_rechunk_spec
from ..dialects import DIALECTS

F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """Bad input (an unreadable capture, a bad spec): one line on stderr, exit code 2. The line may
    hold a file name or captured text: shown with its control characters as escapes."""

    exit_code = 2

    def format_message(self) -> str:
        return visible(self.message)


class Interrupted(click.ClickException):
    """Ctrl-C: the line `interrupted` on stderr and exit code 130 (128 + SIGINT, as shells report it)."""

    exit_code = 130

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)

    def show(self, file: Any = None) -> None:
        # On a terminal the ^C echo is still on the line: start a new one.
        newline = "\n" if sys.stderr.isatty() else ""
        click.echo(f"{newline}{self.message}", err=True)


def error_line(exc: SSEInspectError) -> str:
    """The library's error as one line: its message, then its hint."""
    return exc.message if exc.hint is None else f"{exc.message} (hint: {exc.hint})"


def input_errors(func: F) -> F:
    """Turn the library's `SSEInspectError` into a one-line CLI error; anything else is a bug."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SSEInspectError as exc:
            raise InputError(error_line(exc)) from None

    return wrapper  # type: ignore[return-value]


class SpecParam(click.ParamType):
    """A value read by one of the core's spec parsers (`parse_rechunk_spec`, `parse_fault`): its error, one line."""

    name = "SPEC"

    def __init__(self, parse: Callable[[str], Any]) -> None:
        self.parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):  # a default, or a value parsed already
            return value
        try:
            return self.parse(value)
        except SSEInspectError as exc:
            self.fail(exc.message, param, ctx)


rechunk_option = click.option(
    "--rechunk",
    type=SpecParam(parse_rechunk_spec),
    default=None,
    help=f"Re-cut the body before parsing: {RECHUNK_FORMS}.",
)


fault_option = click.option(
    "--fault",
    "faults",
    type=SpecParam(parse_fault),
    multiple=True,
    help=f"Add a fault to every replay (repeat to compose; docs/faults.md): {FAULT_FORMS}.",
)


class ThresholdParam(click.ParamType):
    """`NAME=VALUE`: the shape is checked here, the name and the value by `parse_threshold`."""

    name = "NAME=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if "=" not in text:  # one line, as the name and the value's errors are
            raise InputError(f"--threshold {text!r}: expected NAME=VALUE (e.g. burst_min_events=10)")
        return text


dialect_option = click.option(
    "--dialect",
    type=click.Choice(list(DIALECTS)),
    default=None,
    help="The stream's grammar (default: detected from the URL and the events).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")


def stdin_note(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback for capture arguments: `-` with a terminal on standard input would wait in
    silence for the stream to be typed or pasted, so say so (on stderr) first."""
    values = value if isinstance(value, tuple) else (value,)
    if "-" in values and sys.stdin is not None and sys.stdin.isatty():
        click.echo("reading the stream from standard input (Ctrl-D to end, Ctrl-C to stop)", err=True)
    return value


capture_argument = click.argument("capture", metavar="CAPTURE", callback=stdin_note)
captures_argument = click.argument("captures", nargs=-1, required=True, metavar="CAPTURE...", callback=stdin_note)
