"""What the side-by-side benchmarks (`parsers.py`, `framers.py`) share: one timed run under an alarm, and
the numbers and tables they print."""

from __future__ import annotations

import gc
import signal
import time
from collections.abc import Callable
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
