"""`sse-inspect certify`: any client run against replays of captures under every cut and fault, its answers judged.

`sse-inspect certify CAPTURE... -- COMMAND` takes the cuts of the re-chunk matrix and the faults of the
fault matrix (or those given).

A case is one capture served with one cut (`--rechunk`) or one fault (`--fault`) by its own replay
server; the command runs once per case, told where the replay is by environment variables (and `{url}`,
`{base_url}` in its arguments), and its stdout is its answer. The rules:

- a cut passes when the command exits 0 and prints the capture's answer (what `sse-inspect text`
  prints; one trailing newline more or less is tolerated): a correct client reads any cut the same;
- a fault passes unless the client reports success with a partial answer: a non-zero exit, the
  `--incomplete-marker` as its last line, or the whole answer (a benign fault, such as keep-alives or a
  stall, or one that left the answer whole) all pass.

The servers share one event loop in a background thread; the cases run on a pool of threads, each
waiting on its command's process (in its own process group, killed whole on a timeout or Ctrl-C).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from .._analysis import analyze
from .._errors import FaultSpecError
from .._capture import Capture
from .._faults import FAULT_MATRIX, FaultSet
from .._loading import load_capture
from .._rechunk import RECHUNK_MATRIX, parse_rechunk_spec
from ..server import ReplayServer
from ._params import InputError, input_errors, json_option
from ._views import answer_pieces

__all__ = ["certify"]


def fault_server(capture: Capture, spec: str) -> ReplayServer:
    """A replay server (not started) that serves `capture` at once with the faults of `spec`: one
    fault, or several that compose, space-separated (`"stall:after-event=2,for=1s keepalive:every=100ms"`)."""
    return ReplayServer([capture], speed=None, faults=FaultSet.parse(spec.split()), log=_quiet)


def cut_server(capture: Capture, spec: str) -> ReplayServer:
    """A replay server (not started) that serves `capture` at once, re-cut as `spec` says."""
    return ReplayServer([capture], speed=None, rechunk_spec=parse_rechunk_spec(spec), log=_quiet)


def _quiet(line: str) -> None:
    """A replay's problems (a client that hangs up early) are the client's answer to judge, not news."""


ENV_URL, ENV_BASE_URL, ENV_CASE = "SSE_INSPECT_URL", "SSE_INSPECT_BASE_URL", "SSE_INSPECT_CASE"
SHOWN = 24
"""How many characters of a differing line a detail shows."""
WIDE = 100
"""Narrower terminals get each capture's name on a line of its own, not in a column."""
SHOWN_ERROR = 100
"""How many characters of the last line of a failed command's stderr a detail shows."""


@dataclass(frozen=True)
class Target:
    """A capture under test: its name as given, the capture, the answer a client must print, and the
    path (and query) the capture was recorded at."""

    name: str
    capture: Capture
    expected: str
    path: str


@dataclass(frozen=True)
class Case:
    target: Target
    spec: str
    kind: str
    """"cut" or "fault"."""


@dataclass(frozen=True)
class Result:
    case: Case
    passed: bool | None
    """None: the case does not apply to the capture (a fault its framing cannot have); the command did not run."""
    exit_code: int | None
    """None: timed out (or stopped by Ctrl-C)."""
    detail: str
    seconds: float


class _CommandAfterDashes(click.Command):
    """A command whose arguments end at the first `--`: what follows is the client's command line,
    kept whole (its own options included) in `ctx.meta["client"]`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        client: list[str] = []
        if "--" in args:
            at = args.index("--")
            args, client = args[:at], args[at + 1 :]
        ctx.meta["client"] = client
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*super().collect_usage_pieces(ctx), "-- COMMAND [ARGS]..."]


@click.command(cls=_CommandAfterDashes)
@click.argument("captures", nargs=-1, required=True, metavar="CAPTURE...")
@click.option("--rechunk", "cuts", multiple=True, metavar="SPEC",
              help="A cut to run (repeatable): replaces the standard cuts.")  # fmt: skip
@click.option("--fault", "faults", multiple=True, metavar="SPEC",
              help="A fault to run (repeatable; faults that compose, space-separated, make one case): "
                   "replaces the standard faults.")  # fmt: skip
@click.option("--no-cuts", is_flag=True, help="Run no cuts.")
@click.option("--no-faults", is_flag=True, help="Run no faults.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Cases run at once (default: one per core).")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              metavar="S", help="Seconds a case may run; then its processes are killed and it fails.")  # fmt: skip
@click.option("--incomplete-marker", default=None, metavar="TEXT",
              help="The last line the command prints when it knows its answer is incomplete.")  # fmt: skip
@json_option
@input_errors
def certify(captures: tuple[str, ...], cuts: tuple[str, ...], faults: tuple[str, ...], no_cuts: bool,
            no_faults: bool, jobs: int | None, timeout: float, incomplete_marker: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Certify a client: run COMMAND against a replay of each capture under every cut and fault.

    The command reads the replay from $SSE_INSPECT_URL (the captured path's URL) or
    $SSE_INSPECT_BASE_URL (the server's root), `{url}` and `{base_url}` in its arguments,
    and prints its answer on stdout; $SSE_INSPECT_CASE names the cut or fault.
    A cut passes when the command exits 0 and prints what `sse-inspect text CAPTURE` prints.
    A fault passes unless the command exits 0 with a partial answer: exiting non-zero,
    printing the --incomplete-marker as its last line, or printing the whole answer pass.
    A fault the capture cannot have (a keep-alive in an AWS event stream) is skipped, not run.
    Exit codes: 0 every case passed (or did not apply), 1 some failed, 2 bad input, 130 interrupted.
    """
    command = list(click.get_current_context().meta["client"])
    if not command:
        raise InputError("no command: give the client's command line after --, e.g. -- python client.py {url}")
    _check_command(command[0])
    cases = _cases([_target(c) for c in captures], _specs(cuts, faults, no_cuts=no_cuts, no_faults=no_faults))
    results = _Runner(command, timeout=timeout, marker=incomplete_marker, jobs=jobs or os.cpu_count() or 1).run(cases)
    failed = sum(r.passed is False for r in results)
    skipped = sum(r.passed is None for r in results)
    if as_json:
        from ._json import write_doc

        write_doc(sys.stdout, {"captures": list(captures), "command": command,
                               "cases": [_case_json(r) for r in results],
                               "passed": len(results) - failed - skipped, "failed": failed,
                               "skipped": skipped})  # fmt: skip
    else:
        _print_table(results)
    sys.exit(1 if failed else 0)


def _check_command(program: str) -> None:
    """The command must be one that can run (a path to an executable, or a name on PATH)."""
    if os.sep in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise InputError(f"command not found: {program} (not an executable file)")
    elif shutil.which(program) is None:
        raise InputError(f"command not found: {program} (not on PATH)")


def _specs(cuts: Sequence[str], faults: Sequence[str], *, no_cuts: bool, no_faults: bool) -> list[tuple[str, str]]:
    """(kind, spec) of every case a capture gets, each spec checked; a bad one is an SSEInspectError."""
    chosen = [] if no_cuts else [("cut", str(parse_rechunk_spec(s))) for s in cuts or RECHUNK_MATRIX]
    if not no_faults:
        for spec in faults or FAULT_MATRIX:
            if not spec.split():
                raise InputError("--fault: an empty spec")
            FaultSet.parse(spec.split())  # a FaultSpecError, before any case runs
            chosen.append(("fault", " ".join(spec.split())))
    if not chosen:
        raise InputError("no cases to run: --no-cuts and --no-faults leave nothing")
    return chosen


def _target(name: str) -> Target:
    """A capture to certify against, with the answer `sse-inspect text` prints for it."""
    capture = load_capture(name)
    analysis = analyze(capture, keep=False)
    for warning in capture.warnings:
        sys.stderr.write(f"! {warning}\n")
    if not analysis.outcome.ok:
        sys.stderr.write(f"! {name}: the recording did not end cleanly ({analysis.outcome.words}): its cuts "
                         "expect the answer as far as it went\n")  # fmt: skip
    path = "/"
    if capture.request is not None and capture.request.url:
        try:
            parts = urlsplit(capture.request.url)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        except ValueError:  # a recorded URL that does not parse: the server answers any path
            pass
    return Target(name, capture, "".join(answer_pieces(analysis.answer)), path)


def _cases(targets: Sequence[Target], specs: Sequence[tuple[str, str]]) -> list[Case]:
    return [Case(t, spec, kind) for t in targets for kind, spec in specs]


T = TypeVar("T")


class _Loop:
    """One asyncio event loop in a background thread, serving every case's replay server."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sse-certify-replays", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


class _Runner:
    """Runs cases on a pool of `jobs` threads; Ctrl-C kills the commands running and stops."""

    def __init__(self, command: list[str], *, timeout: float, marker: str | None, jobs: int) -> None:
        self.command, self.timeout, self.marker, self.jobs = command, timeout, marker, jobs
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    def run(self, cases: list[Case]) -> list[Result]:
        loop = _Loop()
        pool = ThreadPoolExecutor(max_workers=min(self.jobs, len(cases)), thread_name_prefix="sse-certify")
        results: dict[int, Result] = {}
        try:
            with _Progress(len(cases)) as progress:
                futures = {pool.submit(self._case, loop, case): i for i, case in enumerate(cases)}
                for future in as_completed(futures):
                    result = future.result()
                    results[futures[future]] = result
                    progress.done(result)
        finally:  # Ctrl-C (or a bug) included: no client outlives the command
            with self.lock:
                self.stopping = True
                for proc in self.running:
                    _kill(proc)
            pool.shutdown(wait=True, cancel_futures=True)
            loop.close()
        return [results[i] for i in range(len(cases))]

    def _case(self, loop: _Loop, case: Case) -> Result:
        target = case.target
        try:
            server = (cut_server if case.kind == "cut" else fault_server)(target.capture, case.spec)
        except FaultSpecError as e:  # a fault this capture cannot have (a keep-alive in an AWS event stream)
            return Result(case, None, None, f"does not apply: {e.message}", 0.0)
        loop.run(server.start())
        try:
            url = server.url + target.path
            env = {**os.environ, ENV_URL: url, ENV_BASE_URL: server.url, ENV_CASE: case.spec}
            argv = [a.replace("{base_url}", server.url).replace("{url}", url) for a in self.command]
            start = time.monotonic()
            code, out, err = self._execute(argv, env)
            seconds = time.monotonic() - start
        finally:
            loop.run(server.stop())
        passed, detail = judge(case.kind, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                               target.expected, marker=self.marker, timeout=self.timeout)  # fmt: skip
        return Result(case, passed, code, detail, seconds)

    def _execute(self, argv: list[str], env: dict[str, str]) -> tuple[int | None, bytes, bytes]:
        """Run the command (in its own process group); its exit code (None: timed out), stdout and stderr."""
        with self.lock:
            if self.stopping:
                return None, b"", b"interrupted"
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, start_new_session=True)  # fmt: skip
            except OSError as e:  # found on PATH, yet not runnable (a directory, no permission, a bad #!)
                raise InputError(f"cannot run {argv[0]}: {e.strerror or e}") from None
            self.running.add(proc)
        try:
            out, err = proc.communicate(timeout=self.timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            code = None
        finally:
            with self.lock:
                self.running.discard(proc)
            _kill(proc)  # what it left running in its group
        return code, out, err


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill a command's whole process group (its children too)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone already
        pass


def judge(kind: str, code: int | None, out: str, err: str, expected: str, *, marker: str | None,
          timeout: float) -> tuple[bool, str]:  # fmt: skip
    """Whether a case passed, and the detail that says why (or why not)."""
    if code is None:
        return False, f"timed out after {timeout:g} s"
    whole = _same(out, expected)
    if kind == "cut":
        if code != 0:
            return False, _failure(code, err)
        return (True, "") if whole else (False, _difference(expected, out))
    if code != 0:
        return True, _failure(code, err)
    if marker is not None and out.rstrip("\n").rpartition("\n")[2] == marker:
        return True, "marked incomplete"
    if whole:
        return True, "answer whole"
    return False, f"exit 0, partial answer: {_difference(expected, out)}"


def _same(out: str, expected: str) -> bool:
    """The answers are the same, but for one trailing newline more or less."""
    return out == expected or out + "\n" == expected or out == expected + "\n"


def _failure(code: int, err: str) -> str:
    """How a command failed: its exit code (or signal) and the last line of its stderr."""
    how = f"exit {code}"
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "")
    return f"{how}: {_shorten(last, SHOWN_ERROR)}" if last else how


def _difference(expected: str, got: str) -> str:
    """The first line where `got` differs from `expected`: its number, and both lines around the difference."""
    want, have = expected.removesuffix("\n").split("\n"), got.removesuffix("\n").split("\n")
    for number, (a, b) in enumerate(zip(want, have), start=1):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"line {number}: expected {_around(a, at)}, got {_around(b, at)}"
    number = min(len(want), len(have))
    if len(have) < len(want):
        return f"line {number + 1}: expected {_around(want[number], 0)}, got nothing"
    return f"line {number + 1}: expected nothing, got {_around(have[number], 0)}"


def _around(line: str, at: int) -> str:
    """`line` quoted, cut to `SHOWN` characters that show position `at` (where it differs)."""
    start = max(0, min(at - SHOWN // 3, len(line) - SHOWN))
    piece = line[start : start + SHOWN]
    text = ("…" if start else "") + piece + ("…" if start + SHOWN < len(line) else "")
    return repr(text)


def _shorten(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _case_json(r: Result) -> dict[str, object]:
    return {"capture": r.case.target.name, "case": r.case.spec, "kind": r.case.kind, "passed": r.passed,
            "exit_code": r.exit_code, "detail": r.detail, "seconds": round(r.seconds, 3)}  # fmt: skip


class _Progress:
    """Progress on stderr: a bar on a terminal, a line a finished case otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.count = total, 0
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty():
            from rich.progress import Progress

            from . import _render

            self.bar = Progress(*Progress.get_default_columns(), console=_render.console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("certifying", total=self.total)
        return self

    def done(self, result: Result) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.advance(self.task)
            return
        case = result.case
        verdict = {True: "PASS", False: "FAIL", None: "SKIP"}[result.passed]
        sys.stderr.write(f"[{self.count}/{self.total}] {verdict} {case.target.name} {case.spec}\n")
        sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _print_table(results: list[Result]) -> None:
    """The cases as a table, then how many passed. Wide, one row a case, a capture's name on its first
    case only; narrow (under `WIDE` columns), each capture's name on a line of its own over its cases,
    so that the details keep room (the columns line up from one capture to the next)."""
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    from . import _render

    console = _render.console()
    wide = console.width >= WIDE
    case_width = min(max(len(r.case.spec) for r in results), max(10, console.width // 3))
    name_width = min(max(cell_len(os.path.basename(r.case.target.name)) for r in results), console.width // 2)

    def table(header: bool) -> Table:
        t = Table(box=None, header_style="bold", pad_edge=False, show_header=header)
        if wide:
            t.add_column("capture", overflow="fold", min_width=name_width, max_width=name_width)
        else:
            t.add_column("", width=1)  # the cases indented under their capture's name
        t.add_column("case", overflow="fold", min_width=case_width, max_width=case_width)
        t.add_column("kind", min_width=len("fault"))
        t.add_column("result", min_width=len("result"))
        t.add_column("detail", overflow="fold")
        return t

    current = table(header=True)
    shown = None
    for r in results:
        verdict = {True: Text("PASS", style="green"), False: Text("FAIL", style="bold red"),
                   None: Text("SKIP", style="yellow")}[r.passed]
        name = _render.safe(os.path.basename(r.case.target.name), newlines=False, style="bold")
        detail = _render.safe(r.detail, newlines=False)
        if r.passed is not False:  # why a case passed is one line (cut short); why one failed is all there
            detail.no_wrap, detail.overflow = True, "ellipsis"
        cells: list[Text | str] = [_render.safe(r.case.spec, newlines=False), r.case.kind, verdict, detail]
        first = r.case.target is not shown
        shown = r.case.target
        if wide:
            current.add_row(name if first else "", *cells)
            continue
        if first:
            console.print(current)
            current = table(header=False)
            console.print(name)
        current.add_row("", *cells)
    console.print(current)
    passed = sum(r.passed is True for r in results)
    skipped = sum(r.passed is None for r in results)
    ran = len(results) - skipped
    said = f"{passed} of {ran} cases passed" + (f" ({skipped} did not apply)" if skipped else "")
    console.print(Text(said, style="bold green" if passed == ran else "bold red"))
