"""Bytes to lines, as the WHATWG "Parsing an event stream" section says, chunk after chunk.

WHATWG: "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED
(CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single U+000D
CARRIAGE RETURN (CR) character." A CR that ends the bytes at hand ends its line at once;
whether an LF follows (CRLF) only the next chunk can tell, and the buffer keeps that in mind.

`LineBuffer` keeps an unfinished line as a list of pieces and joins them only when a chunk
brings the line's end, so each byte is scanned once for line ends. It counts the line ends
(a `Notice` for the first lone CR and the first CRLF: many clients split on LF only) and hands
each whole line, with where and when it came, to `_line`, which the event stream parser defines.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._events import Comment, Event, Notice

__all__ = ["LineBuffer", "find_blank", "lines"]

Item = Event | Comment | Notice
Held = tuple[int, float | None, int] | None
"""Set while the pending bytes are whole lines kept uncut: (offset, t, chunk), the bytes from stream offset
`offset` on came with chunk `chunk` at `t`. The accelerator keeps such lines (of an event not ended yet,
then the start of a line) unread until the next chunk, which then starts at an event's first byte
again; `_lines` reads them later with the times they came at."""


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


def find_blank(buf: bytes, sep: bytes, start: int, stop: int) -> int:
    """`buf.find(sep, start, stop)` for a blank line's `sep` (LF LF or CRLF CRLF), hopping from LF to LF:
    CPython looks for a one-byte needle with memchr, some 20 times faster than for a longer one."""
    back = len(sep) // 2 - 1  # the separator starts this many bytes before its first LF
    lf = buf.find(10, start + back, stop)
    while lf >= 0 and not buf.startswith(sep, lf - back, stop):
        lf = buf.find(10, lf + 1, stop)
    return lf - back if lf >= 0 else -1


class LineBuffer:
    """The line half of the event stream parser: chunks in, whole lines out to `_line`.

    A chunk that ends no line is appended to the pending pieces (`_parts`; the parser's `feed` does it
    itself, as most reads of a token stream cut small are such). One that does goes through `_join` (the
    pending bytes, then the chunk), `_after_cr_line_end` (an LF opening the chunk completes the CRLF of a
    CR that ended the last one), `_lines` (each whole line to `_line`), and `_keep` (the unfinished line
    waits for the next chunk). Offsets count bytes of the stream from 0; `_offset` is where the pending
    bytes start.
    """

    def __init__(self, line_limit: int) -> None:
        self._limit = line_limit  # the longest line read; a longer one is dropped (see `_over_limit`)
        self._run = 0  # at least the length of the unfinished line: `_over_limit` tells exactly when it matters
        self._dropping: int | None = None  # where the line being dropped started, while its end has not come
        self._parts: list[bytes] = []  # the pending bytes: the pieces of the unfinished line that came so far
        self._parts_t: float | None = None  # arrival time of their first byte
        self._offset = 0  # stream offset of the pending bytes (of the next byte when there are none)
        self._after_cr = False  # the last byte was a CR that ended a line: an LF next belongs to it
        self._held: Held = None  # see Held
        self._chunk = -1  # index of the current chunk
        self._t: float | None = None  # its arrival time
        self._lf = self._crlf = self._cr = 0
        self._first_crlf: int | None = None

    def _line(self, start: int, raw: bytes, began: float | None, held: Held, out: list[Item]) -> None:
        """One whole line `raw` (without its line end) at stream offset `start`, whose first byte came at
        `began`; its end came with the current chunk, or (`held` set) with the held chunk."""
        raise NotImplementedError

    def _join(self, data: bytes) -> tuple[bytes, int]:
        """The pending bytes then `data`, which ends a line (or follows a CR that ended one), and where `data`
        starts in them."""
        parts = self._parts
        if not parts:
            return data, 0
        parts.append(data)
        buf = b"".join(parts)
        return buf, len(buf) - len(data)

    def _after_cr_line_end(self, buf: bytes, out: list[Item]) -> int:
        """The last chunk ended in a CR that ended a line: where the lines of `buf` start, past an LF that
        makes that CR a CRLF."""
        if not buf:
            return 0
        self._after_cr = False  # nothing is pending after a CR that ended a line: `buf` is this chunk
        if buf[0] == 10:
            self._count_crlf(self._offset - 1, out)
            return 1
        self._count_cr(self._offset - 1, out)
        return 0

    def _lines(self, buf: bytes, pos: int, split: int, t: float | None, out: list[Item],
               to_blank: bool = False, limit: int = -1) -> int:  # fmt: skip
        """Hand the lines of `buf` from `pos` that end in it to `_line` (with `to_blank`: up to the first blank
        line; with `limit`: up to the line end that reaches it); return where the next line starts. `buf[:split]` came before this chunk, at `_parts_t` (with
        `_held`: whole lines kept uncut, from `_held[0]` on at `_held[1]`); the rest at `t`."""
        base, held = self._offset, self._held
        n = len(buf)
        for start, stop, nxt in lines(buf, pos, pos if held else max(pos, split)):
            if buf[stop] == 10:
                self._lf += 1
            elif nxt - stop == 2:
                self._count_crlf(base + stop, out)
            elif nxt == n:
                self._after_cr = True  # CR or CRLF: the next chunk tells
            else:
                self._count_cr(base + stop, out)
            if start >= split:
                began = t
            else:
                began = held[1] if held and base + start >= held[0] else self._parts_t
            self._line(base + start, buf[start:stop], began, held if stop < split else None, out)
            pos = nxt
            if (to_blank and start == stop) or nxt == limit:
                break
        return pos

    def _over_limit(self, out: list[Item]) -> None:
        """The unfinished line may be over the limit (`_run` is): if it is, read the whole lines held before it,
        then drop its bytes and the bytes that follow up to its line end (`_drop`), so that memory stays flat."""
        parts = self._parts
        buf = b"".join(parts)
        run = len(buf) - 1 - max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        self._run = run
        if run <= self._limit:
            self._parts = [buf] if buf else []
            return
        pos = self._lines(buf, 0, len(buf), self._t, out) if self._held else 0
        self._dropping = self._offset + pos
        self._offset += len(buf)
        self._parts = []
        self._held = None
        self._run = 0

    def _drop(self, data: bytes, out: list[Item]) -> int:
        """While a line over the limit is dropped: where in `data` its line end ends (0: `data` is all of the
        line). Its line end is counted as `_lines` counts one, and a notice says where it started and how long
        it was."""
        lf, cr = data.find(10), data.find(13)
        end = cr if lf < 0 or 0 <= cr < lf else lf
        if end < 0:
            self._offset += len(data)
            return 0
        start = self._dropping
        assert start is not None
        self._dropping = None
        self._offset += end  # at the line end
        nxt = end + 1
        if data[end] == 10:
            self._lf += 1
        elif nxt < len(data) and data[nxt] == 10:
            self._count_crlf(self._offset, out)
            nxt += 1
        elif nxt == len(data):
            self._after_cr = True  # CR or CRLF: the next chunk tells
        else:
            self._count_cr(self._offset, out)
        out.append(self._too_long(start, self._offset - start))
        self._offset += nxt - end
        return nxt

    def _too_long(self, start: int, size: int) -> Notice:
        return Notice(kind="line-too-long", message=f"a line of {size} bytes (over the line limit of {self._limit}) "
                      f"was dropped, from byte {start}", offset=start, t=self._t)  # fmt: skip

    def _keep(self, rest: bytes, pos: int, split: int, t: float | None) -> None:
        """`buf[:pos]` is read: `rest`, the bytes after it, the start of a line, waits for the chunk that ends it."""
        self._parts = [rest] if rest else []
        if pos >= split:
            self._parts_t = t
        self._held = None
        self._offset += pos

    def _count_cr(self, offset: int, out: list[Item]) -> None:
        self._cr += 1
        if self._cr == 1:
            out.append(Notice(kind="line-ending", message="a line ends in a lone CR", offset=offset, t=self._t))

    def _count_crlf(self, offset: int, out: list[Item], n: int = 1) -> None:
        """`n` CRLF line ends, the first at `offset`."""
        self._crlf += n
        if self._first_crlf is None:
            self._first_crlf = offset
            out.append(Notice(kind="line-ending", message="a line ends in CRLF", offset=offset, t=self._t))
