"""End to end: the `sse-inspect` commands on capture files against a minimal peer pipeline, in the same run.

    /work/venv/bin/python benchmarks/end_to_end.py                     # 1, 10 and 50 MB: about 5 minutes on 2 cores
    /work/venv/bin/python benchmarks/end_to_end.py --quick             # 1 and 10 MB
    /work/venv/bin/python benchmarks/end_to_end.py --sizes 10 --runs 5 --json e2e.json --keep /tmp/captures

(from the repository root.) Not a test: it prints a Markdown table (stdout; progress on stderr) and
never fails on a slow result.

Captures: the OpenAI chat stream and the Anthropic Messages stream of benchmarks/_corpus.py (the
same bytes on every run; MB = 10**6 bytes of body), written as sse-capture/1 files with
sse-inspect's own line writers, as a live stream is recorded: one chunk per event (175 B a chunk
for OpenAI, 121 B for Anthropic), the first 300 ms after the request, then one every 1 ms, a
`complete` end line; streaming response headers, so that `check` finds nothing to report.

Commands, each in a fresh process with stdout to /dev/null:

  sse-inspect text | check | show | events --json CAPTURE   the console script next to sys.executable
         (check with `--fail-on never`, so that any exit but 0 is a crash)
  peer   `python -c PEER CAPTURE DIALECT`: read the capture line by line (json.loads, then the
         `text` or `b64` field to bytes), decode the bytes to text incrementally as httpx's
         `Response.iter_text` does (its `TextDecoder`), split lines and events with httpx-sse's
         `SSELineDecoder` and `SSEDecoder` as `EventSource.iter_sse` does, json.loads each event's
         data but `[DONE]`, and join the text deltas (OpenAI: choices[0].delta.content; Anthropic:
         content_block_delta text_delta); print the text. It reads the capture as a stream: what
         grows with the capture is the answer it keeps (a list of deltas).

Before the timed runs, `text` and the peer run once more each with stdout to a file, and their
outputs are compared byte for byte (the "agreement" line).

Timing and memory: each cell is the median of --runs runs (3), the commands' runs interleaved.
Every run goes through a small launcher (`python -c LAUNCHER`) that starts the command with
`os.posix_spawn`, reaps it with `os.wait4`, and reports the wall time from spawn to reap (its own
start-up left out) and the ru_maxrss of that one child. The launcher exists because a child's ru_maxrss starts from the
high-water RSS of the process it was forked (or vforked) from: spawned straight from this script,
which holds the bodies, every child would show this script's peak. The launcher is a bare Python
(about 9 MiB), below any Python child's own peak. Times include interpreter start-up and imports,
as a user sees them; the start-up line shows what they cost alone.

Table: per capture and command, seconds, MB/s of body, peak RSS in MiB, the peer's time / the
command's (>1: sse-inspect is faster), and the peak RSS / the same command's at the smallest size
(about 1: memory bounded; growing with the size: the capture is held whole). --limit bounds the
whole run (cells left when it passes are skipped; a run in flight is killed). `--json FILE` writes
every number.
"""

from __future__ import annotations

import argparse
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
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import _corpus as corpus
from _corpus import MB, Body
from parsers import table

ROOT = Path(__file__).resolve().parent.parent
SSE_INSPECT = str(Path(sys.executable).with_name("sse-inspect"))

PEER = """\
import base64, json, sys
from httpx._decoders import TextDecoder
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

path, dialect = sys.argv[1], sys.argv[2]
text, lines, events, parts = TextDecoder(encoding="utf-8"), SSELineDecoder(), SSEDecoder(), []

def dispatch(new_lines):
    for line in new_lines:
        sse = events.decode(line.rstrip("\\n"))
        if sse is None or sse.data == "[DONE]":
            continue
        obj = json.loads(sse.data)
        if dialect == "openai" and obj.get("choices"):
            parts.append(obj["choices"][0]["delta"].get("content") or "")
        elif dialect == "anthropic" and obj["type"] == "content_block_delta" and obj["delta"]["type"] == "text_delta":
            parts.append(obj["delta"]["text"])

with open(path, "rb") as f:
    next(f)  # the header line
    for raw in f:
        chunk = json.loads(raw)
        if "end" in chunk:
            break
        if s := text.decode(chunk["text"].encode() if "text" in chunk else base64.b64decode(chunk["b64"])):
            dispatch(lines.decode(s))
if s := text.flush():
    dispatch(lines.decode(s))
dispatch(lines.flush())
out = "".join(parts)
sys.stdout.write(out + ("\\n" if out else ""))
"""

LAUNCHER = """\
import os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(f"\\nlauncher: {time.perf_counter() - t0} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}", file=sys.stderr)
"""

PEER_NAME = "peer: httpx-sse + json.loads"
COMMANDS: dict[str, list[str]] = {
    "sse-inspect text": ["text"],
    "sse-inspect check": ["check", "--fail-on", "never"],  # exit 0 whatever it finds: exit 1 is then a crash
    "sse-inspect show": ["show"],
    "sse-inspect events --json": ["events", "--json"],
}
NAMES = [*COMMANDS, PEER_NAME]
ENV = {**os.environ, "PYTHONUTF8": "1", "NO_COLOR": "1", "COLUMNS": "100"}


# ---------------------------------------------------------------------------------------------
# Captures.

DIALECTS = {
    "openai": (corpus.openai_chat, "https://api.openai.com/v1/chat/completions"),
    "anthropic": (corpus.anthropic_messages, "https://api.anthropic.com/v1/messages"),
}


@dataclass
class CaptureFile:
    dialect: str
    mb: int
    path: Path
    body_bytes: int = 0
    file_bytes: int = 0
    events: int = 0

    @property
    def label(self) -> str:
        return f"{self.dialect} {self.mb} MB"


def write_capture(body: Body, url: str, path: Path) -> None:
    """`body` as an sse-capture/1 file: one chunk per event, the first at 300 ms, then one every 1 ms."""
    from sse_inspect import Request, Response
    from sse_inspect._capture import chunk_line, end_line, header_line

    events = body.data.split(b"\n\n")  # no blank line inside these bodies' events
    assert events[-1] == b"", "a body ends with an event's blank line"
    request = Request(method="POST", url=url, headers=(("Content-Type", "application/json"),),
                      body='{"model": "bench", "stream": true}')  # fmt: skip
    response = Response(status=200, reason="OK", t=0.25, headers=(
        ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
        ("Transfer-Encoding", "chunked")))  # fmt: skip
    with path.open("w", encoding="utf-8") as f:
        f.write(header_line(request=request, response=response, recorded_at="2026-01-01T00:00:00Z",
                            recorder="benchmarks/end_to_end.py"))  # fmt: skip
        for i, event in enumerate(events[:-1]):
            f.write(chunk_line(0.3 + i / 1000, event + b"\n\n"))
        f.write(end_line("complete", 0.3 + len(events) / 1000))


def make_captures(sizes: list[int], folder: Path) -> list[CaptureFile]:
    out = []
    for mb in sizes:
        for dialect, (make, url) in DIALECTS.items():
            body = make(mb * MB)
            cap = CaptureFile(dialect, mb, folder / f"{dialect}-{mb}mb.jsonl", len(body.data), events=len(body.events))
            write_capture(body, url, cap.path)
            cap.file_bytes = cap.path.stat().st_size
            out.append(cap)
            print(f"  wrote {cap.path.name}: {cap.file_bytes:,} bytes, {cap.events:,} events", file=sys.stderr)
    return out


def argv_of(name: str, cap: CaptureFile) -> list[str]:
    if name == PEER_NAME:
        return [sys.executable, "-c", PEER, str(cap.path), cap.dialect]
    return [SSE_INSPECT, *COMMANDS[name], str(cap.path)]


# ---------------------------------------------------------------------------------------------
# Running.


class OverLimit(Exception):
    pass


@dataclass
class Run:
    seconds: float
    rss_mib: float


def run(argv: list[str], deadline: float, stdout: Path | None = None) -> Run:
    """One run through the launcher; OverLimit when killed at `deadline`, RuntimeError (its stderr) on an exit not 0."""
    if time.monotonic() >= deadline:
        raise OverLimit
    with open(stdout or os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, *argv], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, env=ENV, start_new_session=True)  # fmt: skip
        timer = threading.Timer(deadline - time.monotonic(), os.killpg, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        err.seek(0)
        lines = err.read().decode(errors="replace").rstrip().splitlines()
    if proc.returncode == -signal.SIGKILL:
        raise OverLimit
    *stderr, last = lines or [""]
    if not last.startswith("launcher: "):
        raise RuntimeError("not started", "\n".join(lines[-20:]))
    seconds, rss_kib, code = last.split()[1:]
    if code != "0":
        raise RuntimeError(f"exit {code}", "\n".join(stderr[-20:]))
    return Run(float(seconds), int(rss_kib) / 1024)


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
    rss_growth: float | None = None


def measure(cap: CaptureFile, runs: int, deadline: float, folder: Path) -> tuple[dict[str, Cell], str]:
    """The capture's cells (runs interleaved across commands) and whether `text` and the peer agree."""
    cells = {n: Cell(cap.label, cap.dialect, cap.mb, n) for n in NAMES}

    def attempt(name: str, stdout: Path | None = None) -> Run | None:
        cell = cells[name]
        if cell.status != "ok":
            return None
        try:
            return run(argv_of(name, cap), deadline, stdout)
        except OverLimit:
            cell.status, cell.note = "skipped", "skipped (--limit)"
        except RuntimeError as exc:
            exit_code, cell.error = exc.args
            last = (cell.error.splitlines() or ["no output"])[-1]
            cell.status, cell.note = "failed", f"failed ({exit_code}: {last[:60]})"
            print(f"  {cap.label}: {name} failed ({exit_code}): {last}", file=sys.stderr)
        return None

    outs = {n: folder / f"{cap.path.stem}.{'peer' if n == PEER_NAME else 'text'}.out" for n in (NAMES[0], PEER_NAME)}
    if all(attempt(name, path) for name, path in outs.items()):
        ours, theirs = (path.read_bytes() for path in outs.values())
        agree = f"same text ({len(ours):,} bytes)"
        if ours != theirs:
            diverge = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            agree = f"DIFFERENT: {len(ours):,} vs {len(theirs):,} bytes, first difference at byte {diverge}"
    else:
        agree = "not compared (a run failed or was skipped)"
    for r in range(runs):
        for name in NAMES[r % len(NAMES) :] + NAMES[: r % len(NAMES)]:
            if done := attempt(name):
                cells[name].runs.append(done)
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


def startup(runs: int, deadline: float) -> dict[str, float]:
    """Seconds of start-up and imports alone: `sse-inspect --version`, and the peer's imports."""
    peer_imports = PEER.split("\n\n")[0]
    argvs = {"sse-inspect --version": [SSE_INSPECT, "--version"], "peer imports": [sys.executable, "-c", peer_imports]}
    return {name: statistics.median(run(argv, deadline).seconds for _ in range(runs)) for name, argv in argvs.items()}


# ---------------------------------------------------------------------------------------------
# Output.


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        cpu = next(x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines()
                   if x.startswith("model name"))  # fmt: skip
    except (OSError, StopIteration):
        pass
    versions = {}
    for dist in ("sse-inspect", "httpx-sse", "httpx"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    spec = importlib.util.find_spec("sse_inspect")  # where the children import it from (PYTHONPATH included)
    package = Path(spec.origin).parent if spec and spec.origin else None
    source = f"{package} (not this checkout)"
    if package == ROOT / "sse_inspect":
        dirty = git("status", "--porcelain", "--", "sse_inspect")
        source = (git("rev-parse", "--short", "HEAD") or "unknown") + (
            " + uncommitted changes in sse_inspect/" * bool(dirty)
        )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": versions,
        "sse_inspect": source,
        "loadavg_start": os.getloadavg(),
    }


def cell_row(cell: Cell) -> list[str]:
    if cell.median_s is None or cell.rss_mib is None:
        return [cell.capture, cell.command, cell.note, "", "", "", ""]
    growth = "" if cell.rss_growth is None else f"{cell.rss_growth:.2f}"
    vs = "" if cell.vs_peer is None or cell.command == PEER_NAME else f"×{cell.vs_peer:.2f}"
    return [cell.capture, cell.command, f"{cell.median_s:.2f}", f"{cell.mb_s:.1f}", f"{cell.rss_mib:.0f}", vs, growth]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1,10,50", help="body sizes in MB, comma-separated (default 1,10,50)")
    ap.add_argument("--quick", action="store_true", help="sizes 1,10")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per cell (default 3); the median is shown")
    ap.add_argument("--limit", type=float, default=1200.0, help="seconds for the whole run (default 1200); "
                    "cells left after it are skipped")  # fmt: skip
    ap.add_argument("--keep", metavar="DIR", help="write the captures (and outputs) to DIR and keep them")
    ap.add_argument("--json", metavar="FILE", help="write every number to FILE")
    args = ap.parse_args(argv)
    sizes = [1, 10] if args.quick else sorted({int(x) for x in args.sizes.split(",")})
    started = time.perf_counter()
    deadline = time.monotonic() + args.limit
    info = machine()
    command = f"benchmarks/end_to_end.py --sizes {','.join(map(str, sizes))} --runs {args.runs}"

    with tempfile.TemporaryDirectory(prefix="sse-e2e-") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        captures = make_captures(sizes, folder)
        try:
            start = startup(args.runs, deadline)
        except (OverLimit, RuntimeError) as exc:
            start = {}
            print(f"  start-up not measured: {exc!r}", file=sys.stderr)
        cells: list[Cell] = []
        agreement: dict[str, str] = {}
        for cap in captures:
            t0 = time.perf_counter()
            done, agreement[cap.label] = measure(cap, args.runs, deadline, folder)
            cells += done.values()
            print(f"  {cap.label:<16} {time.perf_counter() - t0:6.1f} s (total {time.perf_counter() - started:5.0f} s); "
                  f"text: {agreement[cap.label]}", file=sys.stderr, flush=True)  # fmt: skip
    for cell in cells:
        first = next(c for c in cells if c.command == cell.command and c.dialect == cell.dialect)
        if cell.rss_mib and first.rss_mib:
            cell.rss_growth = cell.rss_mib / first.rss_mib
    elapsed = time.perf_counter() - started
    info["loadavg_end"] = os.getloadavg()

    out = sys.stdout
    print(f"# End to end (`{command}`)\n", file=out)
    print(f"- machine: {info['cpu']}, {info['cores']} cores, {info['python']}, {info['platform']}", file=out)
    print("- packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()), file=out)
    print(f"- sse-inspect at {info['sse_inspect']}", file=out)
    print(f"- median of {args.runs} runs per cell, each a fresh process; load average {info['loadavg_start'][0]:.2f} "
          f"at start, {info['loadavg_end'][0]:.2f} at end; whole run {elapsed:.0f} s", file=out)  # fmt: skip
    print("- start-up alone: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in start.items()), file=out)
    print("- captures: " + "; ".join(f"{c.label}: {c.body_bytes:,} B body, {c.file_bytes:,} B file, {c.events:,} "
                                     "events" for c in captures), file=out)  # fmt: skip
    print("- text vs peer: " + "; ".join(f"{k}: {v}" for k, v in agreement.items()) + "\n", file=out)
    print(
        "MB/s: MB (10^6 B) of SSE body per second. vs peer: the peer's time / the command's (>1: sse-inspect "
        "is faster). RSS growth: peak RSS / the same command's on the smallest capture of its dialect.\n",
        file=out,
    )
    header = ["capture", "command", "seconds", "MB/s", "peak RSS MiB", "vs peer", "RSS growth"]
    print(table(header, [cell_row(c) for c in cells]) + "\n", file=out)

    if args.json:
        doc = {
            "command": command,
            "machine": info,
            "runs": args.runs,
            "elapsed_s": elapsed,
            "startup_s": start,
            "captures": [{**vars(c), "path": c.path.name} for c in captures],
            "agreement": agreement,
            "cells": [{**vars(c), "runs": [vars(r) for r in c.runs]} for c in cells],
        }
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(f"done in {elapsed:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
