"""End to end: the `sse-inspect` commands on big captures against the issue-19 peer pipeline, in one run.

    python benchmarks/end_to_end.py                                   # 5, 50, 300 MB and 1 GB (bounded: --limit)
    python benchmarks/end_to_end.py --quick                           # 5 and 50 MB
    python benchmarks/end_to_end.py --captures /work/bench --keep /tmp/e2e --json e2e.json

(from the repository root, with a Python that has sse-inspect and the openai SDK installed.) Not a
test: it prints Markdown tables (stdout; progress on stderr) and never fails on a slow result.

Captures: the OpenAI chat stream and the Anthropic Messages stream of benchmarks/_corpus.py (the
same bytes on every run; MB = 10**6 bytes of body), as sse-capture/1 files written the way a live
stream is recorded: one chunk per event (175 B a chunk for OpenAI, 121 B for Anthropic), the
first 300 ms after the request, then one every 1 ms, a `complete` end line, streaming response
headers (so that `check` finds nothing to report). They are written a event at a time, never held.
`--captures DIR` reuses DIR/{openai,anthropic}-{N}mb.jsonl (and DIR/...-{N}mb.body, the raw body)
where they exist; the others are written to --keep DIR (kept) or a temporary folder.

Commands, each in a fresh process with stdout to /dev/null:

  sse-inspect text | check | show | events --json CAPTURE   the console script next to sys.executable
         (check with `--fail-on never`, so that any exit but 0 is a crash)
  sse-inspect text | check RAW-BODY   the same two on the raw body the peer reads (not in the goals,
         which are on the capture): what reading a capture's per-chunk lines and times costs.
  peer   the issue's: the openai SDK's `SSEDecoder().iter_bytes` over the capture's raw body read
         64 KiB at a time, `json.loads` of each event's data but `[DONE]`, the text deltas joined
         (OpenAI: choices[0].delta.content; Anthropic: content_block_delta text_delta), printed.
         The raw body is written from the capture before any timing.
  sse-inspect report CAPTURE -o FILE   once per capture: its peak RSS, time and HTML size (killed
         when its RSS passes --report-cap MiB: a report that holds the capture would take the machine).

The first run of `text` and of the peer write their stdout to files, compared byte for byte (the
"agreement" line): the two must print the same answer.

The children write and read their bytecode caches in a folder of their own (PYTHONPYCACHEPREFIX,
PYTHONDONTWRITEBYTECODE dropped), as an installed package runs, whatever the caller's settings.

Timing and memory: each cell is the median of --runs runs (--runs-big from 300 MB on), the
commands' runs interleaved. Every run goes through a small launcher (`python -c LAUNCHER`) that
starts the command with `os.posix_spawn`, reaps it with `os.wait4`, and reports the wall time from
spawn to reap, the CPU time and the ru_maxrss of that one child. The launcher exists because a
child's ru_maxrss starts from the high-water RSS of the process it was forked (or vforked) from;
the launcher is a bare Python (about 9 MiB), below any Python child's own peak. Times include
interpreter start-up and imports, as a user sees them.

Also: `check` over a folder of --folder N captures (the smallest of each dialect, by turns),
one process per capture in turn against `sse-inspect check FOLDER` (parallel, every core); and
start-up: `python -c pass`, `sse-inspect --version`, and `text` and `check` on the small bundled
capture captures/openai-chat-text.jsonl, median of --startup-runs runs each, interleaved.

The issue's goals are marked ✓ (met) or ✗ in the tables and listed at the end: `text`, `check`,
`show` and `events --json` at least ×1.5 the peer's speed from 300 MB on; their peak RSS under
64 MiB at every size; `report` on the 1 GB capture under 256 MiB and 8 MB of HTML; `text` and
`check` start within 60 ms; the folder checked on every core. --limit bounds the whole run (cells
left when it passes are skipped, a run in flight is killed); `--json FILE` writes every number.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _corpus as corpus
from _corpus import MB
from _timing import cpu_model, git, table, versions

ROOT = Path(__file__).resolve().parent.parent
SSE_INSPECT = str(Path(sys.executable).with_name("sse-inspect"))
SMALL = ROOT / "captures" / "openai-chat-text.jsonl"
MIB = 1 << 20

PEER = """\
import json, sys
from openai._streaming import SSEDecoder

path, dialect = sys.argv[1], sys.argv[2]

def chunks():
    with open(path, "rb") as f:
        while block := f.read(65536):
            yield block

parts = []
for sse in SSEDecoder().iter_bytes(chunks()):
    if sse.data == "[DONE]" or not sse.data:
        continue
    obj = json.loads(sse.data)
    if dialect == "openai":
        if obj.get("choices"):
            parts.append(obj["choices"][0]["delta"].get("content") or "")
    elif obj.get("type") == "content_block_delta" and obj["delta"].get("type") == "text_delta":
        parts.append(obj["delta"]["text"])
out = "".join(parts)
sys.stdout.write(out + ("\\n" if out else ""))
"""

LAUNCHER = """\
import os, sys, time
cap, argv = int(sys.argv[1]), sys.argv[2:]
t0 = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
over = 0
while True:  # with a cap: polled, and killed past it
    done, status, usage = os.wait4(pid, os.WNOHANG if cap else 0)
    if done:
        break
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        rss = 0
    if rss > cap:
        over = rss
        os.kill(pid, 9)
    time.sleep(0.02)
wall = time.perf_counter() - t0
cpu = usage.ru_utime + usage.ru_stime
print(f"\\nlauncher: {wall} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} {cpu} {over}", file=sys.stderr)
"""

PEER_NAME = "peer"
COMMANDS: dict[str, list[str]] = {
    "text": ["text"],
    "check": ["check", "--fail-on", "never"],  # exit 0 whatever it finds: exit 1 is then a crash
    "show": ["show"],
    "events --json": ["events", "--json"],
}
ON_BODY: dict[str, list[str]] = {
    "text (raw body)": ["text"],
    "check (raw body)": ["check", "--fail-on", "never"],
}
"""The same commands on the raw body the peer reads (not in the goals: the goals are on the capture). A capture
holds one chunk per event, each a JSON line with its arrival time, and every chunk is read, parsed and timed as
it arrived; the raw body is read 1 MiB at a time, as the peer reads it 64 KiB at a time. The difference is what
the capture's per-chunk times cost."""
NAMES = [*COMMANDS, *ON_BODY, PEER_NAME]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(PYTHONUTF8="1", NO_COLOR="1", COLUMNS="100")  # and PYTHONPYCACHEPREFIX: main() sets it

GOAL_RATIO, GOAL_RATIO_FROM = 1.5, 300  # ×1.5 the peer's speed, on captures of 300 MB and more
GOAL_RSS = 64.0  # MiB, every size
GOAL_REPORT_RSS, GOAL_REPORT_HTML, GOAL_REPORT_AT = 256.0, 8 * MB, 1000  # MiB, bytes, at 1 GB
GOAL_STARTUP = 0.060  # s, text and check on a small capture


def mark(ok: bool | None) -> str:
    return "" if ok is None else " ✓" if ok else " ✗"


# ---------------------------------------------------------------------------------------------
# Captures and their raw bodies.

URLS = {"openai": "https://api.openai.com/v1/chat/completions", "anthropic": "https://api.anthropic.com/v1/messages"}


@dataclass
class CaptureFile:
    dialect: str
    mb: int
    path: Path
    body: Path
    body_bytes: int = 0
    file_bytes: int = 0
    events: int = 0

    @property
    def label(self) -> str:
        return f"{self.dialect} {self.mb} MB" if self.mb < 1000 else f"{self.dialect} {self.mb / 1000:g} GB"


def write_capture(events: Iterator[bytes], url: str, path: Path) -> None:
    """The events as an sse-capture/1 file: one chunk per event, the first at 300 ms, then one every 1 ms."""
    from sse_inspect._capture import Request, Response, chunk_line, end_line, header_line

    request = Request(method="POST", url=url, headers=(("Content-Type", "application/json"),),
                      body='{"model": "bench", "stream": true}')  # fmt: skip
    response = Response(status=200, reason="OK", t=0.25, headers=(
        ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
        ("Transfer-Encoding", "chunked")))  # fmt: skip
    n = 0
    with path.open("w", encoding="utf-8") as f:
        f.write(header_line(request=request, response=response, recorded_at="2026-01-01T00:00:00Z",
                            recorder="benchmarks/end_to_end.py"))  # fmt: skip
        for n, event in enumerate(events, 1):
            f.write(chunk_line(0.3 + (n - 1) / 1000, event))
        f.write(end_line("complete", 0.3 + (n + 1) / 1000))  # 2 ms after the last chunk, as before


def write_body(capture: Path, body: Path) -> None:
    """The capture's raw body (its chunks joined), read a line at a time."""
    with capture.open("rb") as f, body.open("wb") as out:
        next(f)  # the header line
        for raw in f:
            line = json.loads(raw)
            if "end" in line:
                break
            out.write(line["text"].encode("utf-8", "surrogatepass") if "text" in line else base64.b64decode(line["b64"]))


def count_events(body: Path) -> int:
    """Blank lines in an LF body: its events (these bodies hold no other blank line)."""
    n, last = 0, b""
    with body.open("rb") as f:
        while block := f.read(1 << 20):
            n += (last + block[:1] == b"\n\n") + block.count(b"\n\n")
            last = block[-1:]
    return n


def prepare(dialects: list[str], sizes: list[int], reuse: Path | None, folder: Path) -> list[CaptureFile]:
    out = []
    for mb in sizes:
        for dialect in dialects:
            name = f"{dialect}-{mb}mb"
            found = reuse / f"{name}.jsonl" if reuse else None
            path = found if found is not None and found.is_file() else folder / f"{name}.jsonl"
            if not path.is_file():
                t0 = time.perf_counter()
                write_capture(corpus.stream(dialect, mb * MB), URLS[dialect], path)
                print(f"  wrote {path}: {path.stat().st_size:,} bytes ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
            body = path.with_suffix(".body")
            if not body.is_file():
                body = folder / f"{name}.body"
                if not body.is_file() or body.stat().st_mtime < path.stat().st_mtime:
                    t0 = time.perf_counter()
                    write_body(path, body)
                    print(f"  wrote {body} from the capture ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
            cap = CaptureFile(dialect, mb, path, body, body.stat().st_size, path.stat().st_size, count_events(body))
            out.append(cap)
    return out


def argv_of(name: str, cap: CaptureFile) -> list[str]:
    if name == PEER_NAME:
        return [sys.executable, "-c", PEER, str(cap.body), cap.dialect]
    if name in ON_BODY:
        return [SSE_INSPECT, *ON_BODY[name], str(cap.body)]
    return [SSE_INSPECT, *COMMANDS[name], str(cap.path)]


# ---------------------------------------------------------------------------------------------
# Running.


class OverLimit(Exception):
    pass


@dataclass
class Run:
    seconds: float
    rss_mib: float
    cpu_s: float


def run(argv: list[str], deadline: float, stdout: Path | None = None, cap_mib: float = 0) -> Run:
    """One run through the launcher; OverLimit when killed at `deadline`, RuntimeError (why, its
    stderr) on an exit not 0 or past `cap_mib` MiB of RSS."""
    if time.monotonic() >= deadline:
        raise OverLimit
    with open(stdout or os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(int(cap_mib * 1024)), *argv],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=ENV,
                                start_new_session=True)  # fmt: skip
        timer = threading.Timer(deadline - time.monotonic(), os.killpg, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            proc.wait()
        except BaseException:  # interrupted (Ctrl-C, or SIGTERM: see main): no run left behind
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            timer.cancel()
        err.seek(0)
        lines = err.read().decode(errors="replace").rstrip().splitlines()
    if proc.returncode == -signal.SIGKILL:
        raise OverLimit
    *stderr, last = lines or [""]
    if not last.startswith("launcher: "):
        raise RuntimeError("not started", "\n".join(lines[-20:]))
    seconds, rss_kib, code, cpu, over = last.split()[1:]
    if over != "0":
        raise RuntimeError(f"killed past {cap_mib:.0f} MiB", f"RSS {int(over) / 1024:.0f} MiB")
    if code != "0":
        raise RuntimeError(f"exit {code}", "\n".join(stderr[-20:]))
    return Run(float(seconds), int(rss_kib) / 1024, float(cpu))


@dataclass
class Cell:
    capture: str
    dialect: str
    mb: int
    command: str
    status: str = "ok"  # ok | failed | skipped
    note: str = ""
    error: str = ""
    runs: list[Run] = field(default_factory=list)
    median_s: float | None = None
    mb_s: float | None = None
    rss_mib: float | None = None
    vs_peer: float | None = None


@dataclass
class ReportCell:
    status: str = "ok"
    note: str = ""
    seconds: float | None = None
    rss_mib: float | None = None
    html_bytes: int | None = None


def failure(exc: RuntimeError) -> tuple[str, str]:
    why, error = exc.args
    last = (error.splitlines() or ["no output"])[-1]
    return f"failed ({why}: {last[:60]})", error


def measure(cap: CaptureFile, runs: int, deadline: float, folder: Path) -> tuple[dict[str, Cell], str]:
    """The capture's cells (runs interleaved across commands) and whether `text` and the peer agree."""
    cells = {n: Cell(cap.label, cap.dialect, cap.mb, n) for n in NAMES}
    outs = {name: folder / f"{cap.path.stem}.{name}.out" for name in ("text", PEER_NAME)}

    def attempt(name: str) -> None:
        cell = cells[name]
        if cell.status != "ok":
            return
        stdout = outs.get(name) if not cell.runs else None  # the first run of text and the peer: kept
        try:
            cell.runs.append(run(argv_of(name, cap), deadline, stdout))
        except OverLimit:
            cell.status, cell.note = "skipped", "skipped (--limit)"
        except RuntimeError as exc:
            cell.status = "failed"
            cell.note, cell.error = failure(exc)
            print(f"  {cap.label}: {name} {cell.note}", file=sys.stderr)

    for r in range(runs):
        for name in NAMES[r % len(NAMES) :] + NAMES[: r % len(NAMES)]:
            attempt(name)
    agree = "not compared (a run failed or was skipped)"
    if all(cells[n].runs for n in outs):
        agree = same_bytes(*outs.values())
    for path in outs.values():
        path.unlink(missing_ok=True)
    for cell in cells.values():
        if cell.status == "ok":  # all its runs done
            cell.median_s = statistics.median(x.seconds for x in cell.runs)
            cell.mb_s = cap.body_bytes / MB / cell.median_s
            cell.rss_mib = max(x.rss_mib for x in cell.runs)
    peer = cells[PEER_NAME].median_s
    for cell in cells.values():
        if peer and cell.median_s:
            cell.vs_peer = peer / cell.median_s
    return cells, agree


def same_bytes(ours: Path, theirs: Path) -> str:
    offset = 0
    with ours.open("rb") as a, theirs.open("rb") as b:
        while True:
            x, y = a.read(1 << 20), b.read(1 << 20)
            if x != y:
                at = offset + next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
                return f"DIFFERENT: {ours.stat().st_size:,} vs {theirs.stat().st_size:,} bytes, first difference at byte {at}"
            if not x:
                return f"same text ({offset:,} bytes)"
            offset += len(x)


def measure_report(cap: CaptureFile, deadline: float, folder: Path, cap_mib: float) -> ReportCell:
    html = folder / f"{cap.path.stem}.report.html"
    cell = ReportCell()
    try:
        done = run([SSE_INSPECT, "report", str(cap.path), "-o", str(html)], deadline, cap_mib=cap_mib)
        cell.seconds, cell.rss_mib, cell.html_bytes = done.seconds, done.rss_mib, html.stat().st_size
    except OverLimit:
        cell.status, cell.note = "skipped", "skipped (--limit)"
    except RuntimeError as exc:
        cell.status = "failed"
        cell.note = failure(exc)[0]
        print(f"  {cap.label}: report {cell.note}", file=sys.stderr)
    html.unlink(missing_ok=True)
    return cell


def startup(runs: int, deadline: float) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of start-up alone, runs interleaved."""
    argvs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "sse-inspect --version": [SSE_INSPECT, "--version"],
        "sse-inspect text (small capture)": [SSE_INSPECT, "text", str(SMALL)],
        "sse-inspect check (small capture)": [SSE_INSPECT, "check", "--fail-on", "never", str(SMALL)],
    }
    got: dict[str, list[Run]] = {name: [] for name in argvs}
    for argv in argvs.values():  # untimed: fills the bytecode cache
        run(argv, deadline)
    for _ in range(runs):
        for name, argv in argvs.items():
            got[name].append(run(argv, deadline))
    return {name: {"wall_s": statistics.median(r.seconds for r in rs), "cpu_s": statistics.median(r.cpu_s for r in rs)}
            for name, rs in got.items()}  # fmt: skip


def folder_check(captures: list[CaptureFile], n: int, runs: int, deadline: float, folder: Path) -> dict[str, Any]:
    """`check` over n captures: one process per capture in turn, against `check FOLDER` (every core)."""
    small = min(c.mb for c in captures)
    pool = [c for c in captures if c.mb == small]
    where = folder / "folder"
    where.mkdir(exist_ok=True)
    paths = []
    for i in range(n):
        link = where / f"{i:03d}-{pool[i % len(pool)].path.name}"
        link.unlink(missing_ok=True)
        link.symlink_to(pool[i % len(pool)].path.resolve())
        paths.append(link)
    sequential, parallel = [], []
    for r in range(runs):
        order = ("seq", "par") if r % 2 == 0 else ("par", "seq")
        for kind in order:
            if kind == "seq":
                sequential.append(sum(run([SSE_INSPECT, *COMMANDS["check"], str(p)], deadline).seconds for p in paths))
            else:
                parallel.append(run([SSE_INSPECT, *COMMANDS["check"], str(where)], deadline).seconds)
    seq, par = statistics.median(sequential), statistics.median(parallel)
    return {"captures": n, "each": f"{small} MB", "sequential_s": seq, "parallel_s": par, "speedup": seq / par,
            "cores": os.cpu_count() or 1}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Output.


def machine() -> dict[str, Any]:
    spec = importlib.util.find_spec("sse_inspect")  # where the children import it from (PYTHONPATH included)
    package = Path(spec.origin).parent if spec and spec.origin else None
    source = f"{package} (not this checkout)"
    if package == ROOT / "sse_inspect":
        dirty = git("status", "--porcelain", "--", "sse_inspect")
        head = git("rev-parse", "--short", "HEAD")
        source = f"{head} + uncommitted changes in sse_inspect/" if head and dirty else head or f"{package} (no git)"
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": versions(("sse-inspect", "openai", "msgspec", "orjson", "rich", "click")),
        "sse_inspect": source,
        "loadavg_start": os.getloadavg(),
    }


def time_cell(cell: Cell) -> str:
    if cell.median_s is None:
        return cell.note
    if cell.command == PEER_NAME or cell.vs_peer is None:
        return f"{cell.median_s:.2f} s"
    goal = cell.vs_peer >= GOAL_RATIO if cell.mb >= GOAL_RATIO_FROM else None
    return f"{cell.median_s:.2f} s ×{cell.vs_peer:.2f}{mark(goal)}"


def rss_cell(cells: dict[str, Cell]) -> str:
    ours = [cells[n].rss_mib for n in COMMANDS]
    text = " / ".join("–" if r is None else f"{r:.0f}" for r in ours)
    peer = cells[PEER_NAME].rss_mib
    known = [r for r in ours if r is not None]
    return text + (mark(max(known) < GOAL_RSS) if known else "") + ("" if peer is None else f" (peer {peer:.0f})")


def report_cells(cell: ReportCell, mb: int) -> list[str]:
    if cell.rss_mib is None or cell.html_bytes is None or cell.seconds is None:
        return [cell.note, ""]
    at_goal = mb >= GOAL_REPORT_AT
    return [f"{cell.rss_mib:.0f}{mark(cell.rss_mib < GOAL_REPORT_RSS if at_goal else None)} ({cell.seconds:.1f} s)",
            f"{cell.html_bytes / MB:.1f} MB{mark(cell.html_bytes < GOAL_REPORT_HTML if at_goal else None)}"]  # fmt: skip


def goals(cells: list[Cell], reports: dict[str, tuple[int, ReportCell]], start: dict[str, dict[str, float]],
          folder: dict[str, Any] | None) -> list[list[str]]:  # fmt: skip
    rows = []
    big = [c for c in cells if c.command in COMMANDS and c.mb >= GOAL_RATIO_FROM]
    timed = [c for c in big if c.vs_peer is not None]
    if timed:
        worst = min(timed, key=lambda c: c.vs_peer or 0.0)
        ok = len(timed) == len(big) and all((c.vs_peer or 0.0) >= GOAL_RATIO for c in timed)
        rows.append([f"×{GOAL_RATIO} the peer at {GOAL_RATIO_FROM} MB and more (text, check, show, events --json)",
                     f"lowest ×{worst.vs_peer:.2f} ({worst.command}, {worst.capture}); {len(timed)} of {len(big)} "
                     "cells measured", "met" if ok else "NOT met"])  # fmt: skip
    sized = [c for c in cells if c.command in COMMANDS]
    known = [c for c in sized if c.rss_mib is not None]
    if known:
        top = max(known, key=lambda c: c.rss_mib or 0.0)
        low = min(known, key=lambda c: c.rss_mib or 0.0)
        ok = len(known) == len(sized) and (top.rss_mib or 0.0) < GOAL_RSS
        rows.append([f"peak RSS under {GOAL_RSS:.0f} MiB at every size (text, check, show, events --json)",
                     f"{low.rss_mib:.0f} to {top.rss_mib:.0f} MiB (highest: {top.command}, {top.capture})",
                     "met" if ok else "NOT met"])  # fmt: skip
    at_goal = [(label, r) for label, (mb, r) in reports.items() if mb >= GOAL_REPORT_AT]
    for label, r in at_goal:
        if r.rss_mib is None or r.html_bytes is None:
            rows.append([f"report at 1 GB: under {GOAL_REPORT_RSS:.0f} MiB and {GOAL_REPORT_HTML / MB:.0f} MB of HTML",
                         f"{label}: {r.note}", "NOT met"])  # fmt: skip
        else:
            ok = r.rss_mib < GOAL_REPORT_RSS and r.html_bytes < GOAL_REPORT_HTML
            rows.append([f"report at 1 GB: under {GOAL_REPORT_RSS:.0f} MiB and {GOAL_REPORT_HTML / MB:.0f} MB of HTML",
                         f"{label}: {r.rss_mib:.0f} MiB, {r.html_bytes / MB:.1f} MB", "met" if ok else "NOT met"])  # fmt: skip
    if start:
        names = [n for n in start if n.startswith(("sse-inspect text", "sse-inspect check"))]
        slow = max(start[n]["wall_s"] for n in names)
        said = ", ".join(f"{n.split()[1]} {start[n]['wall_s'] * 1000:.0f} ms" for n in names)
        rows.append([f"start-up of text and check within {GOAL_STARTUP * 1000:.0f} ms", said + " (wall, median)",
                     "met" if slow <= GOAL_STARTUP else "NOT met"])  # fmt: skip
    if folder:
        want = 0.75 * min(folder["cores"], folder["captures"])
        rows.append([f"check FOLDER uses every core (at least ×{want:.1f} the captures checked one by one)",
                     f"×{folder['speedup']:.2f} on {folder['cores']} cores", "met" if folder["speedup"] >= want else
                     "NOT met"])  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawTextHelpFormatter)  # fmt: skip
    ap.add_argument("--sizes", default="5,50,300,1000", help="body sizes in MB, comma-separated (default 5,50,300,1000)")
    ap.add_argument("--quick", action="store_true", help="sizes 5,50")
    ap.add_argument("--dialects", default="openai,anthropic", help="openai, anthropic or both (default)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per cell below 300 MB (default 3); the median")
    ap.add_argument("--runs-big", type=int, default=1, help="timed runs per cell from 300 MB on (default 1)")
    ap.add_argument("--limit", type=float, default=3600.0, help="seconds for the whole run (default 3600); "
                    "cells left after it are skipped")  # fmt: skip
    ap.add_argument("--captures", metavar="DIR", help="reuse DIR/{dialect}-{N}mb.jsonl (and .body) where they exist")
    ap.add_argument("--keep", metavar="DIR", help="write the captures and bodies to DIR and keep them")
    ap.add_argument("--report-cap", type=float, default=2048.0, metavar="MIB",
                    help="kill `report` past this RSS (default 2048 MiB); 0: no report")  # fmt: skip
    ap.add_argument("--folder", type=int, default=8, metavar="N", help="captures in the folder check (default 8; 0: none)")
    ap.add_argument("--startup-runs", type=int, default=20, help="runs per start-up command (default 20)")
    ap.add_argument("--json", metavar="FILE", help="write every number to FILE")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # unwinds: the run in flight is killed
    sizes = [5, 50] if args.quick else sorted({int(x) for x in args.sizes.split(",")})
    dialects = [d for d in args.dialects.split(",") if d]
    started = time.perf_counter()
    deadline = time.monotonic() + args.limit
    info = machine()
    command = f"benchmarks/end_to_end.py --sizes {','.join(map(str, sizes))} --dialects {','.join(dialects)} " \
              f"--runs {args.runs} --runs-big {args.runs_big}"  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="sse-e2e-") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        ENV["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")  # compiled once, as an installed package is
        captures = prepare(dialects, sizes, Path(args.captures) if args.captures else None, folder)
        print(f"  captures ready ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        start: dict[str, dict[str, float]] = {}
        try:
            start = startup(args.startup_runs, deadline)
        except (OverLimit, RuntimeError) as exc:
            print(f"  start-up not measured: {exc!r}", file=sys.stderr)
        folder_result = None
        if args.folder:
            try:
                folder_result = folder_check(captures, args.folder, args.runs, deadline, folder)
            except (OverLimit, RuntimeError) as exc:
                print(f"  folder check not measured: {exc!r}", file=sys.stderr)
        cells: list[Cell] = []
        by_capture: dict[str, dict[str, Cell]] = {}
        reports: dict[str, tuple[int, ReportCell]] = {}
        agreement: dict[str, str] = {}
        for cap in captures:
            t0 = time.perf_counter()
            runs = args.runs if cap.mb < GOAL_RATIO_FROM else args.runs_big
            done, agreement[cap.label] = measure(cap, runs, deadline, folder)
            by_capture[cap.label] = done
            cells += done.values()
            if args.report_cap:
                reports[cap.label] = (cap.mb, measure_report(cap, deadline, folder, args.report_cap))
            print(f"  {cap.label:<16} {time.perf_counter() - t0:6.1f} s (total {time.perf_counter() - started:5.0f} s); "
                  f"text: {agreement[cap.label]}", file=sys.stderr, flush=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    info["loadavg_end"] = os.getloadavg()

    out = sys.stdout
    print(f"# End to end (`{command}`)\n", file=out)
    print(f"- machine: {info['cpu']}, {info['cores']} cores, {info['python']}, {info['platform']}", file=out)
    print("- packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()), file=out)
    print(f"- sse-inspect at {info['sse_inspect']}", file=out)
    print(f"- median of {args.runs} runs per cell below {GOAL_RATIO_FROM} MB, {args.runs_big} from it on, each a fresh "
          f"process; load average {info['loadavg_start'][0]:.2f} at start, {info['loadavg_end'][0]:.2f} at end; "
          f"whole run {elapsed:.0f} s", file=out)  # fmt: skip
    print("- captures: " + "; ".join(f"{c.label}: {c.body_bytes:,} B body, {c.file_bytes:,} B file, {c.events:,} "
                                     "events" for c in captures), file=out)  # fmt: skip
    print("- text vs peer: " + "; ".join(f"{k}: {v}" for k, v in agreement.items()) + "\n", file=out)
    print(f"Seconds, and ×: the peer's time / the command's (>1: sse-inspect is faster; goal ×{GOAL_RATIO} from "
          f"{GOAL_RATIO_FROM} MB). Peak RSS in MiB of text / check / show / events --json (goal: under "
          f"{GOAL_RSS:.0f}), the peer's after it. report: its peak RSS (time) and HTML (goal at 1 GB: under "
          f"{GOAL_REPORT_RSS:.0f} MiB, {GOAL_REPORT_HTML / MB:.0f} MB). ✓ met, ✗ not.\n", file=out)  # fmt: skip
    header = ["capture", "peer", *COMMANDS, "peak RSS MiB", "report RSS MiB", "report HTML", *ON_BODY]
    rows = []
    for cap in captures:
        row = by_capture[cap.label]
        report = report_cells(reports[cap.label][1], cap.mb) if cap.label in reports else ["", ""]
        rows.append([cap.label, time_cell(row[PEER_NAME]), *(time_cell(row[n]) for n in COMMANDS), rss_cell(row),
                     *report, *(time_cell(row[n]) for n in ON_BODY)])  # fmt: skip
    print(table(header, rows) + "\n", file=out)
    if start:
        print(table(["start-up (small capture)", "wall ms (median)", "CPU ms (median)"],
                    [[k, f"{v['wall_s'] * 1000:.0f}", f"{v['cpu_s'] * 1000:.0f}"] for k, v in start.items()]) + "\n",
              file=out)  # fmt: skip
    if folder_result:
        print(f"check over a folder of {folder_result['captures']} captures of {folder_result['each']}: one process "
              f"per capture in turn {folder_result['sequential_s']:.2f} s, `sse-inspect check FOLDER` "
              f"{folder_result['parallel_s']:.2f} s: ×{folder_result['speedup']:.2f} on {folder_result['cores']} "
              "cores\n", file=out)  # fmt: skip
    print(table(["goal", "measured", "met"], goals(cells, reports, start, folder_result)) + "\n", file=out)

    if args.json:
        doc = {
            "command": command,
            "machine": info,
            "runs": args.runs,
            "runs_big": args.runs_big,
            "elapsed_s": elapsed,
            "startup": start,
            "folder": folder_result,
            "captures": [{**vars(c), "path": str(c.path), "body": str(c.body)} for c in captures],
            "agreement": agreement,
            "cells": [{**vars(c), "runs": [vars(r) for r in c.runs]} for c in cells],
            "reports": {label: {"mb": mb, **vars(r)} for label, (mb, r) in reports.items()},
        }
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(f"done in {elapsed:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
