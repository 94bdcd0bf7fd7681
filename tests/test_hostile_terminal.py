"""Issue 17, item 3: captured text never drives the terminal. Every command runs on one hostile
capture (tests/data/hostile/terminal.jsonl: ESC, CSI, OSC 8 links, OSC 52 clipboard writes, C1
controls, bidi overrides, zero-width characters and rich markup in every field a capture has),
also under a hostile file name, on a pseudo-terminal (rich emits colour) and piped; no byte
sequence but rich's own SGR styling reaches the output, and nothing ends in a traceback."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import load_capture
from sse_inspect.cli import cli

from .helpers import ROOT


HOSTILE = ROOT / "tests/data/hostile/terminal.jsonl"
HOSTILE_NAME = "evil\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[H\x9b31m\u202e\u200b[link=mailto:x@evil.example][blink]x.jsonl"
"""A file name holds any character but the slash."""

_SGR = re.compile(r"\x1b\[[0-9;]*m")
_LIVE = re.compile(r"\x1b\[\?25[lh]|\x1b\[2K|\x1b\[1A")
"""What rich's own live view (the replay on a terminal) writes to redraw: hide and show the cursor,
erase a line, go up one."""
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


def leaks(output: str, *, live: bool = False) -> list[str]:
    """What in `output` could drive a terminal: control characters (outside rich's own SGR
    styling, and its live redraw when `live`), C1 controls, bidi and zero-width characters."""
    rest = _SGR.sub("", output)
    if live:
        rest = _LIVE.sub("", rest)
    return [f"{m.group()!r} at {m.start()}: {rest[max(0, m.start() - 30) : m.start() + 10]!r}"
            for m in _FORBIDDEN.finditer(rest.replace("\r\n", "\n"))]  # fmt: skip


def on_tty(args: list[str], cwd: Path) -> str:
    """`sse-inspect ARGS` on a pseudo-terminal (stdout and stderr), as a colour terminal shows it."""
    main, sub = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", *args], stdin=subprocess.DEVNULL, stdout=sub,
                            stderr=sub, cwd=cwd, env=env)  # fmt: skip
    os.close(sub)
    out = bytearray()
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the program closed the terminal
            break
        if not data:
            break
        out += data
    os.close(main)
    proc.wait(timeout=60)
    return out.decode("utf-8", "replace")


def piped(args: list[str], cwd: Path, *, stdout: bool = True) -> str:
    """`sse-inspect ARGS` with stdout and stderr not a terminal (in this process, in `cwd`, through
    click's runner): what they wrote (stderr only, without `stdout`); the traceback when it raised."""
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return "Traceback: " + "".join(traceback.format_exception(result.exception))
    return (result.stdout if stdout else "") + result.stderr


COMMANDS = [
    ["show", "{}"],
    ["check", "{}"],
    ["check", "--json", "{}"],
    ["check", "{}", "{}"],
    ["events", "{}"],
    ["events", "--comments", "{}"],
    ["events", "--json", "--comments", "{}"],
    ["text", "--reasoning", "{}"],
    ["text", "--json", "{}"],
    ["replay", "--instant", "{}"],
    ["replay", "--instant", "--raw", "{}"],
    ["replay", "--instant", "--events", "{}"],
    ["diff", "{}", "{}"],
    ["diff", "--by", "events", "{}", "{}"],
    ["diff", "--by", "timing", "{}", "{}"],
    ["diff", "--json", "{}", "{}"],
    ["report", "{}", "-o", "out.html"],
    ["export", "{}", "--to", "har", "-o", "out.har"],
    ["export", "{}", "--to", "curl-trace", "-o", "out.trace"],
    ["export", "{}", "--to", "raw", "-o", "out.sse"],
    ["redact", "{}", "-o", "redacted.jsonl"],
    ["redact", "{}"],  # a capture, a HAR, a curl trace to stdout: JSON with every such character as \u
    ["export", "{}", "--to", "har", "-o", "-"],
    ["export", "{}", "--to", "curl-trace", "-o", "-"],
]


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    shutil.copy(HOSTILE, folder / "terminal.jsonl")
    shutil.copy(HOSTILE, folder / HOSTILE_NAME)
    (folder / f"empty{HOSTILE_NAME}").mkdir()
    return folder


ERRORS = [
    ["show", f"missing{HOSTILE_NAME}"],
    ["check", f"empty{HOSTILE_NAME}"],
    ["check", f"nomatch*{HOSTILE_NAME}"],
    ["export", "terminal.jsonl", "--to", "har", "-o", f"empty{HOSTILE_NAME}"],
    ["report", "terminal.jsonl", "-o", f"missing{HOSTILE_NAME}/report.html"],
]


@pytest.mark.parametrize("args", ERRORS, ids=[a[0] for a in ERRORS])
def test_an_error_message_shows_a_hostile_file_name_escaped(args: list[str], hostile_folder: Path) -> None:
    with contextlib.chdir(hostile_folder):
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and result.stderr.startswith("Error: "), result.stderr
    assert "\\x1b]52;" in result.stderr
    assert leaks(result.stderr) == []


RUNS = [pytest.param(on_tty, marks=pytest.mark.e2e, id="tty"), pytest.param(piped, id="piped")]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
@pytest.mark.parametrize("run", RUNS)
def test_no_captured_string_drives_the_terminal(run: Callable[[list[str], Path], str], args: list[str],
                                                hostile_folder: Path) -> None:  # fmt: skip
    """The hostile capture under the hostile name: what it holds and what it is called reach the
    terminal as escapes (a pseudo-terminal in a process of its own; piped in this one)."""
    args = [HOSTILE_NAME if a == "{}" else a for a in args]
    # piped, `text` writes the answer as it was streamed: that is data (see the next test); the rest is talk
    if run is piped and args[:2] == ["text", "--reasoning"]:
        output = piped(args, hostile_folder, stdout=False)
    else:
        output = run(args, hostile_folder)
    assert "Traceback" not in output, output
    live = run is on_tty and args[:2] == ["replay", "--instant"] and len(args) == 3
    assert leaks(output, live=live) == []


def test_text_piped_writes_the_answer_exactly_and_says_so(hostile_folder: Path) -> None:
    """`text` piped is the data: the answer byte for byte, control characters included; its help says so."""
    from sse_inspect import analyze, load_capture

    answer = analyze(load_capture(str(HOSTILE))).answer.text
    assert "\x1b]52;" in answer
    assert piped(["text", "terminal.jsonl"], hostile_folder).startswith(answer)
    assert "written exactly as it was streamed" in " ".join(piped(["text", "--help"], hostile_folder).split())


def test_captures_and_hars_written_to_stdout_read_back_the_same(hostile_folder: Path) -> None:
    """The \\u escapes that keep `redact` and `export --to har` terminal-safe change no value: what they
    write reads back to the capture's own chunks."""
    original = load_capture(hostile_folder / "terminal.jsonl")
    for args, name in ((["redact"], "again.jsonl"), (["export", "--to", "har", "-o", "-"], "again.har")):
        with contextlib.chdir(hostile_folder):
            result = CliRunner().invoke(cli, [*args[:1], "terminal.jsonl", *args[1:]])
        written = result.stdout
        assert result.exit_code == 0 and not leaks(written), args
        (hostile_folder / name).write_text(written, encoding="utf-8")
        assert [c.data for c in load_capture(hostile_folder / name).chunks] == [c.data for c in original.chunks]

