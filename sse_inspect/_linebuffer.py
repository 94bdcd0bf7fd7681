"""Bytes to lines: the WHATWG line ends (CR, LF, CRLF), found with forward memchr scans.

WHATWG: "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED
(CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single U+000D
CARRIAGE RETURN (CR) character." A CR that ends the bytes at hand ends its line at once;
whether an LF follows (CRLF) only the next chunk can tell, and the parser keeps that in mind.

The parser keeps an unfinished line as a list of pieces and joins them only when a chunk
brings the line's end, so each byte is scanned once for line ends.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["lines"]


def lines(buf: bytes, pos: int, scan: int) -> Iterator[tuple[int, int, int]]:
    """The lines of `buf` from `pos` that end in it, as (start, stop, next).

    `buf[start:stop]` is the line and `buf[stop:next]` its line end (LF, CR or CRLF); a CR
    that ends `buf` gives next == len(buf). No line end lies in `buf[pos:scan]` (the pieces of
    an unfinished line), so the scans start at `scan`. Two forward scans, each moving on
    only: linear, and far faster than a regex on long lines.
    """
    find = buf.find
    n = len(buf)
    lf = find(b"\n", scan)
    cr = find(b"\r", scan)
    while lf >= 0 or cr >= 0:
        if cr < 0 or 0 <= lf < cr:
            yield pos, lf, lf + 1
            pos = lf + 1
            lf = find(b"\n", pos)
        else:
            end = cr + 1
            if end < n and buf[end] == 10:
                end += 1
                lf = find(b"\n", end)
            yield pos, cr, end
            pos = end
            cr = find(b"\r", end)
