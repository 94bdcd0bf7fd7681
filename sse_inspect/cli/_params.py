"""Click parameter types that wrap the core's own parsers, and the error shim of the CLI."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._errors import SSEInspectError
from .._rechunk import RechunkSpec, parse_rechunk_spec
from ..dialects import DIALECTS

F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """Bad input (an unreadable capture, a bad spec): one line on stderr, exit code 2."""

    exit_code = 2


def input_errors(func: F) -> F:
    """Turn the library's `SSEInspectError` into a one-line CLI error; anything else is a bug."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SSEInspectError as exc:
            message = exc.message if exc.hint is None else f"{exc.message} (hint: {exc.hint})"
            raise InputError(message) from None

    return wrapper  # type: ignore[return-value]


class RechunkParam(click.ParamType):
    name = "SPEC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> RechunkSpec:
        if isinstance(value, RechunkSpec):
            return value
        try:
            return parse_rechunk_spec(value)
        except SSEInspectError as exc:
            self.fail(exc.message, param, ctx)


rechunk_option = click.option(
    "--rechunk",
    type=RechunkParam(),
    default=None,
    help="Re-cut the body before parsing: original, whole, bytes:N, event, line, random:SEED.",
)
dialect_option = click.option(
    "--dialect",
    type=click.Choice(list(DIALECTS)),
    default=None,
    help="The stream's grammar (default: detected from the URL and the events).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
capture_argument = click.argument("capture", metavar="CAPTURE")
