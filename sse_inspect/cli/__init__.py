"""The `sse-inspect` command line: one short function per command over the library.

Exit codes: 0 success; 2 bad usage or unreadable input (one line on stderr); 124 `fetch`'s own timeout
fired; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import importlib
import io
import sys
from typing import ClassVar

import click

from .._version import __version__

__all__ = ["main"]


class _LazyGroup(click.Group):
    """Commands whose modules are imported when they run (or when --help lists them): `--version`
    starts without the library, `text` and `check` without the proxy, the replay server, asyncio
    or the HTML report (tests/test_startup.py names what each command starts without)."""

    LAZY: ClassVar[dict[str, str]] = {
        "show": "_views:show", "events": "_views:events", "text": "_views:text", "check": "_check:check",
        "diff": "_diff:diff", "record": "_record:record", "fetch": "_record:fetch", "replay": "_replay:replay",
        "serve": "_replay:serve", "import": "_interop:import_command", "export": "_interop:export_command",
        "redact": "_interop:redact", "report": "_report:report", "certify": "_certify:certify",
    }  # fmt: skip

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, *self.LAZY])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY:
            module, name = self.LAZY[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            return command
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        """Ctrl-C: one line, `interrupted`, and exit 130 (click's own "Aborted!" exits 1, which
        `check` and `diff` use for "found something")."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            from ._params import Interrupted  # (here: --version starts without the options' module)

            raise Interrupted() from None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sse-inspect")
def cli() -> None:
    """Record, replay and diagnose Server-Sent Events streams (LLM token streams above all).

    CAPTURE is an sse-capture/1 file, a raw text/event-stream body, a HAR, curl --trace or
    mitmproxy flow file, or - for stdin.
    Exit codes: 0 success, 1 `check` found problems (see --fail-on), `diff` a difference or a
    `certify` case failed,
    2 bad usage or unreadable input, 124 `fetch`'s own --timeout fired, 130 interrupted (Ctrl-C).
    """


def main() -> None:
    """Entry point of `sse-inspect` and `python -m sse_inspect`."""
    for out in (sys.stdout, sys.stderr):  # a lone surrogate in an answer (JSON may say "\\ud800") has no UTF-8:
        if isinstance(out, io.TextIOWrapper):  # written as that escape, never a crash
            out.reconfigure(errors="backslashreplace")
    cli(prog_name="sse-inspect")
