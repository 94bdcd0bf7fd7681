"""Plain-text formatting shared by the terminal views and the HTML report (no rich, no click)."""

from __future__ import annotations

import functools
import math
import re

__all__ = ["STREAMING_HEADERS", "json_visible", "nice_scale", "seconds", "size", "tick_label", "visible"]

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

_INVISIBLE = "\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
"""Unicode's format characters that reorder or hide text: the Arabic letter mark, the Mongolian vowel
separator, zero-width spaces and joiners, the left-to-right and right-to-left marks, line and paragraph
separators, bidi embeddings, overrides and isolates, the word joiner and invisible operators, the byte
order mark (zero-width no-break space) and the interlinear annotation controls."""


# Compiled on first use (functools.cache): the two classes of wide ranges take 0.6 ms to compile, which
# `text` piped to a file, the command most run in scripts, would pay at every start without using them.
@functools.cache
def _control() -> re.Pattern[str]:
    return re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


@functools.cache
def _raw_in_json() -> re.Pattern[str]:
    """What `json.dumps(..., ensure_ascii=False)` leaves raw that a terminal acts on or hides: DEL, the C1
    controls and the invisible format characters (it escapes U+0000-U+001F itself), and lone surrogates
    (UTF-8 has none)."""
    return re.compile(f"[\x7f-\x9f{_INVISIBLE}\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with control characters (all but LF and TAB), C1 controls, bidi controls and invisible
    format characters shown as escapes: captured text can then neither drive a terminal nor hide
    or reorder what it shows. The one helper every view of captured text goes through."""
    return _control().sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_visible(document: str) -> str:
    """A JSON document with the characters a terminal acts on written as \\u escapes: the same
    values when parsed, nothing that can drive the terminal it is printed on; and lone surrogates (a
    stream's JSON may say `\\ud800`), which no UTF-8 output can hold, escaped the same way."""
    return _raw_in_json().sub(_json_escape, document)


def seconds(t: float | None) -> str:
    """ "250 ms", "1.500 s"; a time too long to be a stream's (a hostile capture's 1e308) "1.7e+308 s"."""
    if t is None:
        return "-"
    return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.3f} s" if t < 1e9 else f"{t:.3g} s"


def size(n: float) -> str:
    return f"{n:.0f} B" if n < 10_000 else f"{n / 1024:.1f} KiB" if n < 10_000_000 else f"{n / 1048576:.1f} MiB"


def nice_scale(span: float, ticks: int) -> tuple[float, float]:
    """An axis from 0 to at least `span` in about `ticks` steps of 1, 2 or 5 times a power of ten: (step, top)."""
    span = span if span > 0 else 0.0  # (a capture whose times run backwards: an axis to 1)
    raw = span / max(ticks, 1)
    if not raw > 0:  # no span, or one so small its step rounds to 0
        raw = 1.0 / max(ticks, 1)
    power = 10.0 ** math.floor(math.log10(raw))  # a float: a span of 1e308 s makes no int too large to print
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    top = math.ceil(span / step - 1e-9) * step or step
    return step, top if math.isfinite(top) else span  # (past the largest float: the span itself)


def tick_label(t: float, step: float) -> str:
    """A time on an axis whose ticks are `step` seconds apart: "200 ms", "1.5 s"."""
    return f"{t * 1000:.4g} ms" if step < 1 else f"{t:.4g} s"
