"""Plain-text formatting shared by the terminal views and the HTML report (no rich, no click)."""

from __future__ import annotations

import math
import re

__all__ = ["STREAMING_HEADERS", "nice_scale", "seconds", "size", "tick_label", "visible"]

STREAMING_HEADERS = (
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "content-length",
    "cache-control",
    "x-accel-buffering",
    "connection",
    "server",
    "via",
)
"""Response headers that decide whether a stream can flow through the hops on its way."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with control characters (all but LF and TAB) and bidi overrides shown as escapes."""
    return _CONTROL.sub(_escape, text)


def seconds(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.3f} s"


def size(n: float) -> str:
    return f"{n:.0f} B" if n < 10_000 else f"{n / 1024:.1f} KiB" if n < 10_000_000 else f"{n / 1048576:.1f} MiB"


def nice_scale(span: float, ticks: int) -> tuple[float, float]:
    """An axis from 0 to at least `span` in about `ticks` steps of 1, 2 or 5 times a power of ten: (step, top)."""
    raw = (span or 1.0) / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step, math.ceil(span / step - 1e-9) * step or step


def tick_label(t: float, step: float) -> str:
    """A time on an axis whose ticks are `step` seconds apart: "200 ms", "1.5 s"."""
    return f"{t * 1000:.4g} ms" if step < 1 else f"{t:.4g} s"
