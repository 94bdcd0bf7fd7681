"""An accelerator for the event stream parser: whole events of the shapes LLM servers send, taken at once.

This module only makes the parser faster; it is not needed to read the spec, and
`EventStreamParser(accelerate=False)` runs without it. `benchmarks/parsers.py` needs it: it is what
makes sse-inspect faster than the SSE parsers Python programs use, and it is the one module of the
parser that uses speed idioms (`tuple.__new__`, C-level splits and maps, a cyclic-GC pause).

The contract, two methods: `Accelerator.feed(parser, data, t) -> items`, the parser's `feed(data, t)`
at an event boundary, with the block loop inside it (a Python call is about a tenth of a live stream's
read, so that read makes one call here and no more); and `Accelerator.feed_block(parser, datas, ts) ->
items per chunk`, the parser's `feed` for each of as many of the first chunks as it takes (see below),
with no call per chunk (`EventStreamParser.feed_block` hands it a capture's block of chunks).

- The parser calls it only at an event boundary: no event is in progress, no CR waits for its LF, the
  stream's first line is read; `data` ends a line and the parser has counted the chunk. A chunk that
  finishes an event in progress is read by the rules up to that event's blank line, and what follows
  comes here as a read of its own (of the same chunk) when it ends a line.
- It takes whole events from the pending bytes then `data`, as many as it can of two shapes (`data: V`
  blocks, or `event: T` + `data: V` blocks, with LF or CRLF line ends throughout); it declines by
  taking none. In a big read, from a slice of other shapes on it hands the lines up to the last blank
  line to the parser's rules (`_lines`), so that what follows that blank line is judged alike however
  the bytes were cut (`feed_iter` cuts a big read into pieces).
- It returns their events and counts them in the parser (`_events`, `_lf`, `_crlf`, and the notice of
  the stream's first CRLF, through `_count_crlf`). It reads the parser's provenance and spec state
  (`_offset`, `_parts_t`, `_chunk`, `_last_event_id`, `_retry`, `_held`, `_first_crlf`) and changes
  nothing else but the line buffer's state, as the line buffer's own steps would.
- What follows the events it took it leaves as the line buffer would, those steps made inline: the
  start of a line is kept (as `_keep` keeps it); whole lines of an event that has not ended, then the
  start of a line, with no blank line, wait unread and uncut until the next chunk (`Held`), which then
  starts at an event boundary again and can be taken here (reading those lines a chunk later changes no
  item, but that a notice about one of them says the later time, as a notice about a CR ending a chunk
  always does; nor how they are timed); a CR that ends the read and a CRLF block's blank line waits for
  the next byte, as `_lines` leaves it (`_after_cr`); anything else the rules read (`_lines`, `_keep`).
  A short read that ends no event (lines with no blank line: the next read will likely end their
  block) waits so before it is even joined.

`feed_block` is called at an event boundary as `feed` is, with nothing pending either (no pending bytes,
none held), and chunks none of which is empty. It takes the chunks from the first up to the first that
ends inside an event (none if the first does), when all of them, joined, are whole events of one of the
two shapes up to their last blank line (`_split`, in C, as a big read's slices are), the stream's first
CRLF has been told (the parser's `feed` tells it, in the order the rules do) and the joined chunks are
within the line limit. Each event it gives to the chunk its blank line ends in, timed and numbered as
that chunk (its first byte came with it too), and it leaves the parser as `feed` leaves it after the
last chunk taken (counts, offset, chunk number and time, `_run`, nothing pending); it returns the
items of the chunks it took, a list per chunk (none: it took none, and changed nothing).

The events it makes are those the line rules give, field for field; `tests/test_parser_accel.py`
holds it to `accelerate=False` at every cut, and `tests/test_parser_block.py` holds `feed_block` to
`feed`, chunk after chunk, for blocks of any chunks.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from itertools import accumulate, chain, count, islice, repeat
from operator import add, sub
from typing import TYPE_CHECKING

from ._events import Event
from ._linebuffer import find_blank

if TYPE_CHECKING:
    from ._linebuffer import Item
    from ._parser import EventStreamParser

__all__ = ["HEADS", "HOLD", "KEEP", "READ", "Accelerator"]

# What `buf[pos:]` is once the events are taken (see the module docstring):
READ = 0  # anything: the parser reads it line by line
HOLD = 1  # whole lines of an event not ended yet, then the start of a line, no blank line: kept unread
KEEP = 2  # the start of a line only (no line end): kept, as the line buffer keeps an unfinished line

SHORT = 64  # a read shorter than this that ends no event waits unjoined (see Accelerator.feed)
_new = tuple.__new__  # Event(...) runs a Python-level __new__; this makes the same tuple in C
_DATA = (b"data: ", 6, "message", 2)  # a block shape: head, its length, event type, line ends
HEADS = (b"data: ", b"event: ")  # how a block of either shape opens


class Accelerator:
    """Takes whole events of the usual shapes for one parser (it keeps the last block shape it saw).

    `small`: reads up to this size go block by block (a live stream's block or two); bigger ones are cut
    in slices of about `slice` bytes, each split and checked in C. The tests make both small to send
    small bodies through the slices.
    """

    def __init__(self, small: int = 1024, slice: int = 65536) -> None:  # noqa: A002 - the word for it
        self.small = small
        self.slice = slice
        self._shapes = [_DATA, _DATA]  # the last block shape, with LF and with CRLF line ends

    def feed(self, p: EventStreamParser, data: bytes, t: float | None) -> list[Item]:
        """`p.feed(data, t)` at an event boundary (no event in progress, no CR waiting for its LF, the stream's
        first line read), for a chunk that ends a line; `p` has counted the chunk. Takes as many whole events
        as it can from the pending bytes and `data`, leaves the rest to `p` (see the module docstring), and
        returns what the chunk completed.

        A small read (a live stream's block or two) goes block by block: at `pos`, `head` (the last block's
        `data: ` or `event: T` line + `data: `, see _shape) matches, and the data line runs to `end`, the
        first LF (CR in a buffer that holds one) after it; `tail`, the rest of its line end and the blank
        line, follows, with no CR in an LF buffer nor an LF in a CRLF one's value. A big one: `_slices`.
        The line buffer's steps (`_join`, `_keep`) are made inline here: a call is a tenth of such a read.
        """
        parts = p._parts
        if (
            len(data) < SHORT and not p._held and data[0] != 10 and data[-1] != 10 and 13 not in data
            and data.find(b"\n\n") < 0
        ):  # fmt: skip
            # A short read that ends no event (LF line ends, no blank line) waits uncut as held lines do (see
            # `Held`; they end no event, so none is late), and without a join: the next read will
            # likely end their block. (`_held` unset: the pending bytes are the start of a line.)
            p._held = (p._offset + sum(map(len, parts)), t, p._chunk)
            if parts:
                parts.append(data)
            else:
                p._parts = [data]
                p._parts_t = t
            return []
        if parts:  # as `_join` makes it: the pending bytes, then this chunk; buf[:split] came earlier
            parts.append(data)
            buf = b"".join(parts)
        else:
            buf = data
        n = len(buf)
        split = n - len(data)
        out: list[Item] = []
        pos = 0
        then = READ  # what `buf[pos:]` is, once the events are taken
        crlf = 13 in buf
        if n > p._limit:
            pass  # a line in it may be over the parser's line limit: the rules read it all (READ), and drop that line
        elif n > self.small or (crlf and p._first_crlf is None):
            pos, rest, then = self._slices(p, buf, split, t, crlf, out)
        else:
            if crlf:
                head, size, kind, lines = self._shapes[1]
                end_byte, nl, tail = 13, 2, b"\n\r\n"
            else:
                head, size, kind, lines = self._shapes[0]
                end_byte, nl, tail = 10, 1, b"\n"
            index = p._events
            base = p._offset
            rest = buf
            cr_at_end = False  # the read ends in the last block's blank line's CR (CRLF)
            while True:
                start = pos + size
                if buf[pos:start] != head:
                    shape = self._shape(buf, pos, crlf)
                    if shape is None:  # what is left may wait: lines and the start of one, or one `event:` line
                        if (pos > 0 or not p._held) and not crlf and (
                            _can_wait(rest) or (rest.startswith(b"event:") and rest.find(10) == len(rest) - 1)
                        ):  # fmt: skip
                            then = HOLD
                        break
                    head, size, kind, lines = shape
                    start = pos + size
                end = buf.find(end_byte, start)
                stop = end + 2 * nl  # past the blank line
                if end < 0 or buf[end + 1 : stop] != tail:
                    if crlf and stop == n + 1 and end > 0 and buf[end + 1 :] == b"\n\r":
                        cr_at_end = True  # the block is whole: its blank line ends in the read's last byte
                        stop = n
                    elif pos > 0 or not p._held:
                        if end < 0:  # the read ends in the block's data line (LF): `event: T`, part of `data: V`
                            then = HOLD if not crlf else READ
                        elif (b"\r\n" if crlf else b"\n").startswith(buf[end:]) and not (
                            crlf and 10 in buf[start:end]
                        ):  # fmt: skip
                            then = HOLD  # or in its line end, before the blank line: LF, CR or CRLF
                    if not cr_at_end:
                        break
                raw = buf[start:end]
                if crlf and 10 in raw:
                    break
                try:
                    value = raw.decode()
                except UnicodeDecodeError:
                    break  # the line path decodes with replacement and says where
                out.append(_new(Event, (index, kind, value, p._last_event_id, p._retry, base + pos,
                                        base + end + nl + 1, p._parts_t if pos < split else t, t, p._chunk)))  # fmt: skip
                index += 1
                if crlf:
                    p._crlf += lines
                else:
                    p._lf += lines
                pos = stop
                rest = buf[pos:]
                if 10 not in rest and (not crlf or 13 not in rest):
                    then = KEEP  # the start of a line (`pos` > `split`)
                    break
            p._events = index
            if cr_at_end and pos == n:  # (taken) whether that CR is a CRLF the next read tells, as after `_lines`
                p._crlf -= 1
                p._after_cr = True
        # `rest` is `buf[pos:]`
        if then == KEEP:  # as `_keep` leaves it (`pos` > `split`: the rest follows a line end of this chunk)
            p._parts = [rest] if rest else []
            p._parts_t = t
            p._held = None
            p._offset += pos
        elif then == HOLD:  # whole lines and the start of one wait uncut, unread (see `Held`)
            p._parts = [rest]
            if pos < split:  # nothing taken: buf[pos:split] came earlier
                p._held = (p._offset + split, t, p._chunk)
            else:
                p._held = (p._offset + pos, t, p._chunk)
                p._parts_t = t
            p._offset += pos
        else:  # READ
            pos = p._lines(buf, pos, split, t, out)
            p._keep(buf[pos:], pos, split, t)
        return out

    def feed_block(self, p: EventStreamParser, datas: list[bytes], ts: list[float | None]) -> list[list[Item]]:
        """`[p.feed(data, t) for data, t in zip(datas, ts)]` for as many of the first chunks as it can take at
        once (`datas`: none empty; `p` at an event boundary with nothing pending, its first line read): the
        chunks joined and their events split in C (`_split`), each event given to the chunk its bytes end in.
        It takes the chunks up to the first that ends inside an event, or when they are not all whole events of
        one shape up to the last blank line, up to the first that does not open as a block does, if those are;
        none when a line may be over the limit or the stream's first CRLF has not been told (`feed` tells it).
        The parser is left as `feed` leaves it after the last chunk taken."""
        buf = b"".join(datas)
        crlf = 13 in buf
        if len(buf) > p._limit or (crlf and p._first_crlf is None):
            return []  # the rules say where a line is too long; `feed` gives the first CRLF's notice
        sep, nl = (b"\r\n\r\n", b"\r\n") if crlf else (b"\n\n", b"\n")
        cut = buf.rfind(sep)
        blocks = _split(buf, 0, cut, nl, sep, sized=False) if cut > 0 else None
        if blocks is None:
            # Not all of one shape: perhaps up to a chunk of something else (a keep-alive comment), then again
            # from the chunk after it. Those chunks (if there are any) all open as a block does: no third try.
            try:
                other = list(map(bytes.startswith, datas, repeat(HEADS))).index(False, 1)
            except ValueError:
                return []
            return self.feed_block(p, datas[:other], ts[:other])
        types, values, _, ends = blocks
        if len(values) == len(datas) and all(map(bytes.endswith, datas, repeat(sep))):
            # The usual: an event a chunk (each chunk ends in a blank line, so at the end of an event, see `_split`;
            # as many events as chunks: each chunk is one).
            sizes = list(map(len, datas))
            taken = None
            times: list[float | None] = ts
            numbers: Iterable[int] = range(p._chunk + 1, p._chunk + 1 + len(datas))
            took, events = len(datas), len(values)
        else:  # how many events end in each chunk, up to the first chunk that ends inside one (0)
            sizes = list(map(len(sep).__add__, map(len, buf[:cut].split(sep))))  # (the blank lines are the blocks')
            chunk_ends = list(accumulate(map(len, datas)))
            bounds = accumulate(sizes)  # where each event's bytes end
            taken = list(map(dict(zip(bounds, count(1))).get, chunk_ends, repeat(0)))
            took = taken.index(0) if 0 in taken else len(datas)
            if not took:
                return []
            del taken[took:]
            events = taken[-1]
            counts = list(map(sub, taken, chain((0,), taken)))
            times = list(chain.from_iterable(map(repeat, ts, counts)))
            numbers = chain.from_iterable(map(repeat, count(p._chunk + 1), counts))
        index = p._events
        base = p._offset
        back = len(nl) - 1  # an event ends where the next starts, or (CRLF) past its blank line's CR
        made: list[Item] = list(map(
            _new, repeat(Event),
            zip(
                range(index, index + events), types, values, repeat(p._last_event_id), repeat(p._retry),
                accumulate(sizes, initial=base), islice(accumulate(sizes, initial=base - back), 1, None),
                times, times, numbers,
            ),
        ))  # fmt: skip
        # The parser as `feed` leaves it after the last chunk taken: all of it read, nothing pending.
        p._events = index + events
        lines = ends // len(values) * events  # (each block has as many lines)
        if crlf:
            p._crlf += lines
        else:
            p._lf += lines
        p._offset += sum(sizes[:events])  # (the chunks taken end where their last event does)
        p._chunk += took
        p._t = p._parts_t = ts[took - 1]
        p._run = len(datas[took - 1])
        if taken is None:
            return list(map(list, zip(made)))
        return [made[start:stop] for start, stop in zip(chain((0,), taken), taken)]

    def _shape(self, buf: bytes, pos: int, crlf: bool) -> tuple[bytes, int, str, int] | None:
        """The block shape at `pos`, where the last block's did not match: (head, its length, type, lines),
        kept for the next blocks; None when it is neither `data: ` nor an `event: T` line (its type decoded)
        + `data: `."""
        if buf.startswith(b"data: ", pos):
            shape = _DATA
        else:
            eol = buf.find(13 if crlf else 10, pos)
            nl = 2 if crlf else 1
            if not (buf.startswith(b"event: ", pos) and buf.startswith(b"\r\ndata: " if crlf else b"\ndata: ", eol)):
                return None
            name = buf[pos + 7 : eol]
            if crlf and 10 in name:
                return None
            try:
                shape = (buf[pos : eol + nl + 6], eol + nl + 6 - pos, name.decode() or "message", 3)
            except UnicodeDecodeError:
                return None
        self._shapes[crlf] = shape
        return shape

    def _slices(self, p: EventStreamParser, buf: bytes, split: int, t: float | None, crlf: bool,
                out: list[Item]) -> tuple[int, bytes, int]:  # fmt: skip
        """A big read: the bytes from the start to the last blank line in `buf`, in slices of about `slice` bytes
        cut at blank lines, each all of one shape (`_batch`); from a slice of other shapes on, the parser's
        line rules read them (`_lines`). Then what follows the last blank line may wait, as in `feed`.
        Returns where the taken bytes end, the bytes after that, and what they are (READ, KEEP or HOLD)."""
        sep = b"\r\n\r\n" if crlf else b"\n\n"
        pos = 0
        end = buf.rfind(sep)
        if end >= 0:
            nl = sep[len(sep) // 2 :]
            stop = end + len(sep)
            # Many events at once: none of them can be part of a reference cycle, so the cyclic GC, which
            # would walk them all again and again as they pile up, is paused meanwhile.
            collecting = gc.isenabled()
            gc.disable()
            try:
                while pos < stop:
                    cut = find_blank(buf, sep, pos + self.slice, end) if pos + self.slice < end else -1
                    cut = end if cut < 0 else cut
                    first = len(out)
                    ends = self._batch(p, buf, pos, cut, nl, sep, p._parts_t if pos < split else t, t, out)
                    if not ends:  # other shapes: the parser's rules read them, up to the last blank line
                        pos = p._lines(buf, pos, split, t, out, limit=stop)
                        break
                    if len(nl) == 1:
                        p._lf += ends
                    elif p._first_crlf is None:  # its notice goes where the line rules put it: before the first event
                        notice: list[Item] = []
                        p._count_crlf(p._offset + buf.find(b"\r\n", pos), notice, ends)
                        out[first:first] = notice
                    else:
                        p._crlf += ends
                    pos = cut + len(sep)
            finally:
                if collecting:
                    gc.enable()
        rest = buf[pos:]
        if 10 not in rest and 13 not in rest:
            return pos, rest, KEEP
        if crlf:
            waits = (pos > 0 or not p._held) and _can_wait(rest)
        else:
            waits = rest[-1] != 10 and rest[0] != 10 and (pos > 0 or not p._held)  # past the last LF LF: none
        return pos, rest, HOLD if waits else READ

    def _batch(self, p: EventStreamParser, buf: bytes, pos: int, cut: int, nl: bytes, sep: bytes,
               t_first: float | None, t: float | None, out: list[Item]) -> int:  # fmt: skip
        """The blocks of `buf[pos:cut]`, of one shape, all in C: their events appended, and the count of their
        line ends returned (0, nothing appended: not all of one shape, or not UTF-8)."""
        blocks = _split(buf, pos, cut, nl, sep)
        if blocks is None:
            return 0
        types, datas, sizes, ends = blocks
        index = p._events
        base = p._offset
        back = len(nl) - 1  # an event ends where the next starts, or (CRLF) past its blank line's CR
        out += map(
            _new, repeat(Event),
            zip(
                range(index, index + len(datas)), types, datas, repeat(p._last_event_id), repeat(p._retry),
                accumulate(sizes, initial=base + pos), islice(accumulate(sizes, initial=base + pos - back), 1, None),
                chain((t_first,), repeat(t)), repeat(t), repeat(p._chunk),
            ),
        )  # fmt: skip
        p._events = index + len(datas)
        return ends


def _split(buf: bytes, pos: int, cut: int, nl: bytes, sep: bytes,
           sized: bool = True) -> tuple[Iterable[str], list[str], list[int], int] | None:  # fmt: skip
    """The blocks of `buf[pos:cut]` (`cut`: where the last one's blank line starts), if all are of one shape, split
    in C: their event types, their data, the size of each (its blank line's bytes included; with `sized` False,
    none) and the count of their line ends; None when they are not all of one shape, or not UTF-8.

    In blocks of one shape, a blank line (`sep`) is found only where a block ends: no line of theirs is empty."""
    try:
        if buf.startswith(b"data: ", pos):  # split on the separator and the next field name: the values
            values = buf[pos + 6 : cut].split(sep + b"data: ")
            rest = b"".join(values)
            if 10 in rest or 13 in rest:
                return None  # some block is not exactly one `data: V` line
            types: Iterable[str] = repeat("message")
            sizes = list(map((6 + len(sep)).__add__, map(len, values))) if sized else []
            ends = 2 * len(values)
        elif not buf.startswith(b"event: ", pos) or not buf.startswith(b"data: ", buf.find(nl, pos) + len(nl)):
            return None
        elif nl == b"\n":
            # Its lines: `event: T`, `data: V` and a blank one, block after block (the last without its
            # blank line, which ends the region); split on the one-byte LF, the fastest split there is.
            lines = buf[pos:cut].split(b"\n")
            kinds, data_lines = lines[0::3], lines[1::3]
            if len(lines) % 3 != 2 or any(lines[2::3]):
                return None
            # Every data line starts with `data: ` if, joined by LF, they split on `\ndata: ` into as many.
            values = b"\n".join(data_lines).split(b"\ndata: ")
            if len(values) != len(data_lines) or not values[0].startswith(b"data: "):
                return None
            values[0] = values[0][6:]
            names = {}  # a few distinct event lines
            for kind in dict.fromkeys(kinds):
                if not kind.startswith(b"event: "):
                    return None
                names[kind] = kind[7:].decode() or "message"
            types = list(map(names.__getitem__, kinds))
            sizes = list(map((3).__add__, map(add, map(len, kinds), map(len, data_lines)))) if sized else []
            ends = 3 * len(values)
        else:
            # CRLF: T1, V1, T2, V2, ...: one replace, one split
            body, next_event, data_line = buf[pos + 7 : cut], sep + b"event: ", nl + b"data: "
            items = body.replace(next_event, data_line).split(data_line)
            kinds, values = items[0::2], items[1::2]
            rest = b"".join(items)
            if (
                len(items) % 2 or 10 in rest or 13 in rest
                or next_event.join(map(data_line.join, zip(kinds, values))) != body
            ):  # fmt: skip
                return None  # not exactly `event: T` + `data: V` blocks: put back together, they differ
            names = {kind: kind.decode() or "message" for kind in dict.fromkeys(kinds)}  # a few distinct types
            types = list(map(names.__getitem__, kinds))
            sizes = list(map((13 + 3 * len(nl)).__add__, map(add, map(len, kinds), map(len, values)))) if sized else []
            ends = 3 * len(values)
        return types, list(map(bytes.decode, values)), sizes, ends
    except UnicodeDecodeError:
        return None  # the line path decodes with replacement and says where


def _can_wait(rest: bytes) -> bool:
    """Whether `rest` (which starts a line and ends some) may wait uncut for the next chunk: it must hold
    no blank line (its event would be dispatched later than it arrived) and end inside a line (so that
    the next chunk's bytes continue a line that began with this one)."""
    return not (
        rest[-1] == 10 or rest[-1] == 13 or rest[0] == 10 or rest[0] == 13 or rest.find(b"\n\n") >= 0
        or (13 in rest and (rest.find(b"\r\r") >= 0 or rest.find(b"\n\r") >= 0))
    )  # fmt: skip
