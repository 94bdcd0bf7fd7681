"""JSON for the hot paths: `loads` (`json.loads` of a str, faster), `common_line` and `common_lines` (a
capture's common chunk lines), `scan` and `encode_string`.

A big capture holds millions of small JSON documents (a chunk line, an event's payload). Two ways
read them, with the same values and the same errors:

- the standard library's C scanner, called directly (about half the time of `json.loads` on each);
- msgspec's decoder, a compiled JSON reader (2 to 4 times faster again), once `accelerate()` loaded
  it. It is a dependency, but the standard way stays whole: msgspec may be missing (a pure-Python
  fallback, not an error), and `SSE_INSPECT_NO_ACCEL=1` in the environment, or `use_accel(False)`,
  switches it off. Its import costs about as much as reading 2,000 lines, so nothing loads it at
  start-up: the readers of a stream call `accelerate()` once it has proved long (`ACCELERATE_AFTER`).

The contract that makes them interchangeable: msgspec is asked first, and whatever it refuses (a
lone surrogate `\\ud800`, which JSON allows and the capture format uses; `NaN` and `Infinity`,
which Python's json reads; a number out of a float's range; invalid UTF-8; a document nested near
the recursion limit) goes the standard way, which then gives the value or the error it always
gave. What msgspec accepts, it reads as json does (big ints stay ints, the last of duplicate keys
wins, `-0.0` and exponents alike): `tests/test_fastjson.py` holds the two ways to each other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from json.scanner import make_scanner  # the C scanner when there is one
from typing import Any

__all__ = [
    "ACCELERATE_AFTER",
    "accelerate",
    "accelerated",
    "common_line",
    "common_lines",
    "encode_string",
    "loads",
    "scan",
    "use_accel",
]

scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed types it as its own class
"""`scan(text, i)`: the JSON value starting at `text[i]` and where it ends; StopIteration when none does."""
encode_string = json.encoder.encode_basestring  # type: ignore[attr-defined]  # C: a JSON string, non-ASCII kept

ACCELERATE_AFTER = 2000
"""Lines (or events) a stream's reader reads the standard way before it calls `accelerate()`."""
NESTED = 48
"""A document holding more `{` and `[` than this goes the standard way: the two readers stop at
nearly the same depth of the recursion limit, but not exactly (msgspec goes a few levels deeper)."""

_enabled = os.environ.get("SSE_INSPECT_NO_ACCEL", "") in ("", "0")
_decode: Callable[[str | bytes], Any] | None = None
"""msgspec's decoder of any JSON, once loaded and while switched on; None: the standard way."""
_decode_line: Callable[[bytes], Any] | None = None
"""msgspec's decoder of a chunk line, `{"t": float | null, "text": str}` and nothing else."""
_refused: tuple[type[BaseException], ...] = ()
"""What msgspec raises on a document it will not read (then the standard way reads it)."""


def use_accel(on: bool) -> None:
    """Switch the compiled reader on (loaded by the next `accelerate()`) or off (at once)."""
    global _enabled, _decode, _decode_line
    _enabled = on
    if not on:
        _decode = _decode_line = None


def accelerated() -> bool:
    """Whether the compiled reader is in use."""
    return _decode is not None


def accelerate() -> bool:
    """Load the compiled reader, unless it is switched off or not installed; whether it is in use.
    Called by a stream's reader once the stream has proved long: cheap after the first call."""
    global _decode, _decode_line, _refused
    if _decode is not None or not _enabled:
        return _decode is not None
    try:
        import msgspec
    except ImportError:  # not installed: the standard way, which gives the same values
        return False

    class _Line(msgspec.Struct, forbid_unknown_fields=True):
        t: float | None
        text: str

    _refused = (msgspec.DecodeError, RecursionError, ValueError)
    _decode_line = msgspec.json.Decoder(_Line).decode
    _decode = msgspec.json.Decoder().decode
    return True


def loads(text: str) -> Any:
    """The value of the JSON document `text`: the same values and errors as `json.loads`."""
    decode = _decode
    if decode is not None and (len(text) <= NESTED or text.count("{") + text.count("[") <= NESTED):
        try:
            return decode(text)
        except _refused:
            pass  # the standard way says what it is
    try:
        value, end = scan(text, 0)
    except StopIteration:  # leading whitespace, or no JSON at all: json.loads tells which
        return json.loads(text)
    if end != len(text) and text[end:].strip(" \t\n\r"):  # junk after the document
        return json.loads(text)
    return value


def common_line(raw: bytes) -> tuple[float | None, str] | None:
    """The time and text of a capture's common chunk line (with its LF), `{"t": float | null, "text": str}` (those two
    keys, the last of a duplicate winning) and whitespace, when the compiled reader is in use and reads
    it; None otherwise (the standard way then reads the line, and says what is wrong with it).

    An int `t` is read as the float it equals, as the standard way's `float(t)` does."""
    decode = _decode_line
    if decode is None:
        return None
    try:
        line = decode(raw)
    except _refused:
        return None
    return line.t, line.text


def common_lines(block: bytes) -> list[Any] | None:
    """The time and text (`.t`, `.text`) of each line of `block` (whole lines, each ending in LF), when every
    one of them is a common chunk line as `common_line` reads it; None otherwise (or when the compiled
    reader is not in use), and the lines are then read one by one.

    Each line is read alone, as `common_line` reads it, with no Python code run per line (msgspec's own
    `decode_lines` is not used: it reads values separated by any whitespace, not lines)."""
    decode = _decode_line
    if decode is None:
        return None
    try:
        return list(map(decode, block[:-1].split(b"\n")))
    except _refused:
        return None
