"""Plain-text formatting shared by the terminal views and the HTML report (no rich, no click)."""

from __future__ import annotations

import re

__all__ = ["STREAMING_HEADERS", "seconds", "size", "visible"]

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
