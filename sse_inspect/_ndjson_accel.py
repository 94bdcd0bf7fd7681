"""An accelerator for the NDJSON framer: a slice of plain JSON lines taken at once, with C-level bytes and str
operations instead of a Python step per line.

This module only makes `NDJSONParser` faster; it is not needed to read the rules (`_ndjson.py`), and
`NDJSONParser(accelerate=False)`, or `SSE_INSPECT_NO_ACCEL=1` in the environment, runs without it. The rules
look at every line (its line end, blank or not, its first byte, its UTF-8, the characters `str.splitlines()`
breaks at, its length) and most lines of a real stream have nothing to say: `{...}` then LF. Per line the
rules cost about 2 µs (a regex search for the splitlines characters above all); this takes a slice of such
lines for a few C passes over it and one tuple per line.

The contract, one method: `Accelerator.take(parser, data, pos, base, out) -> (pos, again)`.

- The parser calls it at a line start in `data` (stream offset `base + pos`) with nothing pending: no
  unfinished line held, none being dropped. The line's first byte came with the current chunk. (Only for a
  chunk of more than `small` bytes.)
- It takes whole lines from `pos` on, a slice at a time: the bytes up to the last LF within `slice` bytes (and
  within `limit + 1` bytes, so that no line in the slice is over the parser's limit). It takes a slice only
  when none of its lines is one the rules would say anything about:
    - no CR anywhere (no CRLF line end, no lone CR: both counted or noticed by the rules);
    - valid UTF-8 (else an "invalid-utf8" notice);
    - no character but LF that `str.splitlines()` breaks at ("splitlines-break");
    - every line opens with `{` or `[` (so none is blank, whitespace only, or "not-json-line").
  Such a line is, by the rules, exactly: an `Event` whose `data` is its text, `start` its first byte, `end`
  just past its LF, `t_first` and `t` the current chunk's time, `chunk` the current chunk; counted in
  `_items` and `_lf`. It appends those events to `out` and counts them in the parser; it changes nothing else.
- It returns where the parser's rules go on (`pos`: just past the last line taken) and `again`: the offset in
  `data` from which it may be called again. At the first slice it declines (a line the rules must look at, or
  no LF within the window: a long line, or the unfinished end of the chunk) `again` is that slice's end, so
  that the rules read that slice and the accelerator the slices after it.

`tests/test_ndjson_accel.py` holds it to `accelerate=False`: the same items, offsets, times, notices and stats
at every cut, on hostile bodies too.
"""

from __future__ import annotations

from itertools import accumulate, count, islice, repeat
from operator import add, itemgetter
from typing import TYPE_CHECKING

from ._events import Event

if TYPE_CHECKING:
    from ._linebuffer import Item
    from ._ndjson import NDJSONParser

__all__ = ["Accelerator"]

_new = tuple.__new__  # Event(...) runs a Python-level __new__; this makes the same tuple in C
_OPENERS = frozenset("{[")
_first = itemgetter(0)


class Accelerator:
    """Takes slices of plain JSON lines for an `NDJSONParser`. `small`: the parser reads a chunk of up to this
    many bytes by its rules alone (a line or two: the accelerator's fixed cost is more than it saves);
    `slice`: the most bytes taken at once. The tests make both small to send small bodies through it."""

    def __init__(self, small: int = 256, slice: int = 65536) -> None:  # noqa: A002 - the word for it
        self.small = small
        self.slice = slice

    def take(self, p: NDJSONParser, data: bytes, pos: int, base: int, out: list[Item]) -> tuple[int, int]:
        """At a line start `data[pos]` with nothing pending: take the plain lines (see the module docstring);
        return (where the rules go on, where this may be called again)."""
        n = len(data)
        window = min(self.slice, p._limit + 1)  # a line within the window is at most `limit` bytes
        while pos < n:
            lf = data.rfind(10, pos, pos + window)
            if lf < 0:
                return pos, pos + window  # a long line, or the chunk's unfinished end: the rules'
            block = data[pos : lf + 1]
            lines = _plain_lines(block)
            if lines is None:
                return pos, lf + 1
            texts, sizes = lines
            offsets = list(accumulate(map(add, sizes, repeat(1)), initial=base + pos))  # each line's start, then past
            t, k = p._t, len(texts)
            out += map(_new, repeat(Event), zip(
                count(p._items), repeat("message"), texts, repeat(""), repeat(None), offsets,
                islice(offsets, 1, None), repeat(t), repeat(t), repeat(p._chunk),
            ))  # fmt: skip
            p._items += k
            p._lf += k
            pos = lf + 1
        return pos, n


def _plain_lines(block: bytes) -> tuple[list[str], list[int]] | None:
    """The lines of `block` (whole lines, each ended by LF) as texts and their sizes in bytes, when none holds
    anything the rules look at (see the module docstring); None when one does."""
    if 13 in block:  # a CR: a CRLF line end, or a character splitlines breaks at
        return None
    try:
        text = block.decode()
    except UnicodeDecodeError:
        return None
    texts = text.splitlines()
    if text.isascii():
        sizes = list(map(len, texts))
        lines = block.count(10)
    else:
        raws = block.split(b"\n")
        raws.pop()  # (what follows the last LF: nothing)
        sizes = list(map(len, raws))
        lines = len(raws)
    if len(texts) != lines:  # a character other than LF that splitlines breaks at
        return None
    try:
        if not _OPENERS.issuperset(map(_first, texts)):  # a line that does not open with `{` or `[`
            return None
    except IndexError:  # an empty line
        return None
    return texts, sizes
