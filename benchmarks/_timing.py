"""What the benchmarks share: one timed run under an alarm (`parsers.py`, `framers.py`), the numbers and
tables they print, and the machine they ran on (`end_to_end.py` too)."""

from __future__ import annotations

import gc
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from types import FrameType


class RunTimeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise RunTimeout


def timed(fn: Callable[[list[bytes]], int], chunks: list[bytes], limit: float) -> tuple[float, int]:
    """One run, gc collected before, stopped by an alarm after `limit` seconds."""
    gc.collect()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        t0 = time.perf_counter()
        n = fn(chunks)
        dt = time.perf_counter() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return dt, n


def fmt_mbs(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def fmt_ratio(r: tuple[float, str] | None) -> str:
    return "n/a" if r is None else f"×{r[0]:.2f} ({r[1]})"


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), or "unknown"."""
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))  # fmt: skip
    except (OSError, StopIteration):
        return "unknown"


def versions(dists: Iterable[str]) -> dict[str, str]:
    """Each distribution's installed version, or "not installed"."""
    found = {}
    for dist in dists:
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def git(*args: str) -> str:
    """A git command's output in this checkout ("" when git fails or is missing)."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def commit_of(files: list[str], what: str) -> str:
    """HEAD, and the commit that last changed `files` (the code measured), as "abc1234 (parser files last
    changed in def5678)", saying so when they have uncommitted changes."""
    head, last = git("rev-parse", "--short", "HEAD"), git("log", "-1", "--format=%h", "--", *files)
    if not head:
        return "unknown"
    dirty = git("status", "--porcelain", "--", *files)
    return f"{head} ({what} files last changed in {last}{'; uncommitted changes in them' if dirty else ''})"
