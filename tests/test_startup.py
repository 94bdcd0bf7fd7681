"""Start-up: what a command loads, checked in a fresh interpreter, without timing.

A module a command does not need costs its import time on every run (`python -X importtime -m
sse_inspect text CAPTURE` shows what each costs). These tests name the heavy modules each command
must start without, so that a change cannot slowly put them back; `benchmarks/end_to_end.py`
measures the start-up itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = str(ROOT / "captures" / "openai-chat-text.jsonl")

RUN = """\
import contextlib, io, sys
sys.argv = ["sse-inspect", *sys.argv[1:]]
from sse_inspect.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
print(code, len(out.getvalue()), " ".join(sorted(sys.modules)))
"""

NEVER = ("sse_inspect._diff", "sse_inspect.report", "sse_inspect._playback", "sse_inspect.proxy", "asyncio",
         "mitmproxy", "httpx", "requests", "difflib", "concurrent.futures")  # fmt: skip
"""Loaded by no command below: the diff, the HTML report, replay and the proxy, and what they pull in."""

READING = ("urllib", "ipaddress", "base64", "bisect", "pathlib", "glob")
"""What reading an sse-capture/1 file of text needs none of: urllib.parse and the ipaddress it loads (a
plain URL's path is read without them), base64 (binary chunks only), bisect (a re-cut), pathlib and
glob (a folder or a pattern of captures)."""

WITHOUT = {
    ("--version",): ("rich", "sse_inspect.checks", "sse_inspect.cli._check", "random"),
    ("text", CAPTURE): ("rich", "sse_inspect.checks", "sse_inspect.cli._check", "sse_inspect.cli._render", "random",
                        *READING),
    ("events", "--json", CAPTURE): ("rich", "sse_inspect.checks", "sse_inspect.cli._render", "random", *READING),
    ("check", "--fail-on", "never", CAPTURE): ("rich.table", "rich.panel", "rich.progress", "decimal", "fractions",
                                               "base64", "pathlib", "glob"),
    ("show", CAPTURE): ("rich.table", "rich.progress", "decimal", "fractions", "base64", "pathlib", "glob"),
}  # fmt: skip
"""Per command (piped, as here): what it starts without besides `NEVER`. `check` and `show` print
through rich, but neither its tables nor its panels (a terminal's), nor a progress bar; the checks
read the request's host with urllib.parse."""


def loaded_by(*args: str) -> tuple[int, int, set[str]]:
    """Exit code, characters written to stdout, and the modules loaded, of one CLI run in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, check=True, cwd=ROOT)
    code, size, modules = done.stdout.split(" ", 2)
    return int(code), int(size), set(modules.split())


def _holds(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize("args", list(WITHOUT), ids=[" ".join(a[:2]).replace(CAPTURE, "CAPTURE") for a in WITHOUT])
def test_a_command_starts_without_what_it_does_not_need(args: tuple[str, ...]) -> None:
    code, size, modules = loaded_by(*args)
    assert code == 0 and size > 0, "the command ran and printed"
    assert "sse_inspect.cli" in modules  # the probe sees what the command loaded
    assert [m for m in (*NEVER, *WITHOUT[args]) if _holds(modules, m)] == []


def test_the_version_starts_without_the_library() -> None:
    """The group loads a command's module when it runs (`--help` loads them all, for their summaries):
    `--version` loads the package, its version and the group, nothing of the library under them."""
    code, size, modules = loaded_by("--version")
    assert code == 0 and size > 0
    assert sorted(m for m in modules if m.startswith("sse_inspect")) == ["sse_inspect", "sse_inspect._version",
                                                                          "sse_inspect.cli"]  # fmt: skip
    assert not _holds(modules, "json") and not _holds(modules, "dataclasses")


def test_the_checks_and_rich_are_loaded_where_needed() -> None:
    """The counterpart: the guard above would pass on a probe that saw nothing."""
    _, _, modules = loaded_by("check", "--fail-on", "never", CAPTURE)
    assert {"sse_inspect.checks", "rich.console"} <= modules


def test_the_front_door_loads_a_name_s_module_on_first_use() -> None:
    code = (
        "import sys, sse_inspect\n"
        "before = sorted(m for m in sys.modules if m.startswith('sse_inspect'))\n"
        "from sse_inspect import EventStreamParser\n"
        "print(before, 'sse_inspect._parser' in sys.modules, 'sse_inspect._diff' in sys.modules, "
        "EventStreamParser.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['sse_inspect',", "'sse_inspect._version']", "True", "False", "sse_inspect"]


def test_the_front_door_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from sse_inspect import *", namespace)  # noqa: S102
    import sse_inspect

    assert sorted(n for n in namespace if not n.startswith("__") or n == "__version__") == sorted(sse_inspect.__all__)
    assert all(namespace[n] is getattr(sse_inspect, n) for n in sse_inspect.__all__)
