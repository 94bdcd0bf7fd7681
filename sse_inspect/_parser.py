"""The event stream parser: bytes in, events out, exactly as the WHATWG HTML standard says.

Sans-I/O: no sockets, no clocks. The caller feeds chunks with their arrival times and
closes the stream at its end. Spec: https://html.spec.whatwg.org/multipage/server-sent-events.html
("Parsing an event stream" and "Interpreting an event stream").

    p = EventStreamParser()
    items = [x for chunk in capture.chunks for x in p.feed(chunk.data, chunk.t)] + p.close()

A whole body held in one buffer goes through `p.feed_iter(body, t)`: the items `feed` would return,
made a piece at a time, so that memory stays flat.

Any way of cutting the same bytes into chunks gives the same events (only arrival times
and chunk indices follow the cuts; a notice may come one chunk later, as a CR ending a
chunk is told from a CRLF only by the next byte). Content never raises: what a client may mishandle
comes out as `Notice` values beside the events.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, chain, islice, repeat
from operator import add

from ._events import Comment, Event, Notice
from ._linebuffer import lines

__all__ = ["EventStreamParser", "ParseStats", "parse_events"]

Item = Event | Comment | Notice
Held = tuple[int, float | None, int] | None  # see EventStreamParser._held

_BOM = b"\xef\xbb\xbf"
_new = tuple.__new__  # Event(...) runs a Python-level __new__; this makes the same tuple in C
_SLICE = 65536  # big reads are checked in C in slices of about this many bytes; feed_iter's pieces too
_DATA = (b"data: ", 6, "message", 2)  # a block shape: head, its length, event type, line ends
_SMALL = 1024  # reads up to this size (with what waited) go block by block; bigger ones in slices
_SHORT = 64  # reads shorter than this that end no event just wait (see feed)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseStats:
    """Counts over the whole stream so far."""

    bytes: int
    events: int
    comments: int
    lf: int
    """Lines ended by LF alone."""
    crlf: int
    cr: int
    """Lines ended by a lone CR (legal, but many clients split on LF only)."""
    bom: bool
    invalid_utf8: int
    """Lines that held bytes that are not UTF-8 (decoded with U+FFFD)."""


class EventStreamParser:
    """Turns the bytes of one `text/event-stream` body into events, comments and notices."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # the unfinished line: the pieces of it that came so far
        self._parts_t: float | None = None  # arrival time of its first byte
        self._offset = 0  # stream offset of the unfinished line (of the next byte when there is none)
        self._after_cr = False  # the last byte was a CR that ended a line: an LF next belongs to it
        # When _parts holds whole lines, kept uncut by the fast path (see feed): (offset, t, chunk), the lines
        # from `offset` on came with chunk `chunk` at `t`. (Fewer than 30 attributes: CPython 3.11 then
        # shares their keys across instances, and every attribute access is faster.)
        self._held: Held = None
        self._shapes = [_DATA, _DATA]  # the fast path's last block shape, with LF and with CRLF line ends
        self._chunk = -1
        self._t: float | None = None
        self._first_line = True
        self._closed = False
        # The spec's buffers. The data buffer is kept as a list of lines, joined at dispatch.
        self._data: list[str] = []
        self._event_type = ""
        self._last_event_id = ""  # the spec's "last event ID buffer"
        self._last_event_id_string = ""  # the event source's, set from the buffer at each blank line
        self._retry: int | None = None
        # Provenance of the event being built: None when no field line came since the last blank line.
        self._start: int | None = None
        self._t_first: float | None = None
        self._events = 0
        self._comments = 0
        self._bom = False
        self._invalid_utf8 = 0
        self._lf = self._crlf = self._cr = 0
        self._first_cr: int | None = None
        self._first_crlf: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last event ID string: what a reconnecting client would send as Last-Event-ID."""
        return self._last_event_id_string

    @property
    def retry(self) -> int | None:
        """The reconnection time in ms set by the stream, or None."""
        return self._retry

    @property
    def stats(self) -> ParseStats:
        return ParseStats(
            bytes=self._offset + sum(map(len, self._parts)), events=self._events, comments=self._comments,
            lf=self._lf, crlf=self._crlf, cr=self._cr, bom=self._bom, invalid_utf8=self._invalid_utf8,
        )  # fmt: skip

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        """Take the next chunk of the body, which arrived at time `t`; return what it completed."""
        if self._closed:
            raise RuntimeError("feed() after close(): this parser's stream has ended")
        self._chunk += 1
        self._t = t
        parts = self._parts
        # `10 in data`, not `b"\n" in data`: CPython first tries a bytes needle as an int, at ~0.1 µs.
        if 10 not in data and 13 not in data and not self._after_cr:  # no line ends here: the line grows
            if parts:
                parts.append(data)
            elif data:
                self._parts = [data]
                self._parts_t = t
            return []
        held = self._held
        if (
            len(data) < _SHORT and not held and self._start is None and not self._after_cr and not self._first_line
            and data[0] != 10 and data[-1] != 10 and 13 not in data and data.find(b"\n\n") < 0
        ):  # fmt: skip
            # A short read that ends no event (LF, no blank line): its lines wait uncut, as held lines do (the
            # next read will likely complete their block), without joining them now.
            self._held = (self._offset + sum(map(len, parts)), t, self._chunk)
            if parts:
                parts.append(data)
            else:
                self._parts = [data]
                self._parts_t = t
            return []
        if parts:  # the pending bytes, then this chunk: buf[:split] came earlier
            parts.append(data)
            buf = b"".join(parts)
        else:
            buf = data
        n = len(buf)
        split = n - len(data)
        out: list[Item] = []
        pos = 0
        if self._after_cr or self._start is not None or self._first_line:
            if self._after_cr:  # the last chunk ended in a CR that ended a line: an LF first belongs to it
                if not data:
                    return out
                self._after_cr = False
                if data[0] == 10:
                    pos = 1
                    self._count_crlf(self._offset - 1, out)
                else:
                    self._count_cr(self._offset - 1, out)
            if self._start is not None and pos < n:  # an event in progress: a blank line first ends it
                pos = self._blank(buf, pos, out)
            if self._start is not None or self._after_cr or self._first_line:
                return self._read(buf, pos, split, held, t, out)
        if n <= _SMALL:
            # The fast path: a live stream's usual read holds a block or two of the shapes LLM servers send
            # (`data: V`, or `event: T` + `data: V`), then the start of the next event. The events are those
            # the line rules give: no event is in progress at `pos`; `head` (the last block's `data: ` or
            # `event: T` line + `data: `, checked by _shape) matches there, and the data line runs to `end`,
            # the first LF (CR when `buf` holds one) after it; `tail`, the rest of its line end and the blank line,
            # follows, with no CR in an LF buffer (`crlf` is whether `buf` holds one) nor an LF in a CRLF one's
            # value. Anything else, and the stream's first CRLF (its notice), goes on by the general path from `pos`.
            crlf = 13 in buf
            if crlf:
                if self._first_crlf is None:
                    return self._read(buf, pos, split, held, t, out)
                head, size, kind, lines = self._shapes[1]
                end_byte, nl, tail = 13, 2, b"\n\r\n"
            else:
                head, size, kind, lines = self._shapes[0]
                end_byte, nl, tail = 10, 1, b"\n"
            index = self._events
            waits = False
            while True:
                if pos:
                    rest = buf[pos:]
                    if 10 not in rest and (not crlf or 13 not in rest):  # it begins a line (`pos` > `split`: see _hold)
                        self._parts = [rest] if rest else []
                        if held:
                            self._held = None
                        self._parts_t = t
                        self._events = index
                        self._offset += pos
                        return out
                start = pos + size
                if buf[pos:start] != head:
                    shape = self._shape(buf, pos, crlf)
                    if shape is None:  # what is left may wait: lines and the start of one, or one `event:` line
                        waits = pos > 0 and not crlf and (
                            _can_wait(rest) or (rest.startswith(b"event:") and rest.find(10) == len(rest) - 1)
                        )  # fmt: skip
                        break
                    head, size, kind, lines = shape
                    start = pos + size
                end = buf.find(end_byte, start)
                if end < 0 or buf[end + 1 : end + 2 * nl] != tail:
                    if end >= 0 and (b"\r\n\r" if crlf else b"\n").startswith(buf[end:]):  # the read ends there
                        self._events = index
                        if self._begin(buf, pos, start, end, kind if lines == 3 else "", lines, crlf, split, t, out):
                            return out
                    else:
                        waits = end < 0 and not crlf and (pos > 0 or not held)  # `event: T`, part of `data: V` (LF)
                    break
                raw = buf[start:end]
                if crlf and 10 in raw:
                    break
                try:
                    value = raw.decode()
                except UnicodeDecodeError:
                    break  # the line path decodes with replacement and says where
                base = self._offset
                out.append(_new(Event, (index, kind, value, self._last_event_id, self._retry, base + pos,
                                        base + end + nl + 1, self._parts_t if pos < split else t, t, self._chunk)))  # fmt: skip
                index += 1
                if crlf:
                    self._crlf += lines
                else:
                    self._lf += lines
                pos = end + 2 * nl
            self._events = index
            if waits:  # as `_hold` does (a `pos` past 0 is past `split`)
                if pos:
                    self._parts = [rest]
                    self._held = (self._offset + pos, t, self._chunk)
                    self._parts_t = t
                    self._offset += pos
                else:
                    self._hold(buf, pos, split, t)
                return out
        return self._read(buf, pos, split, held, t, out)

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]:
        """The items `feed(data, t)` returns, made as they are taken: for a big `data` such as a whole body.

        `data` goes through `feed` in pieces of about 64 KiB, all of them one chunk that arrived at `t`, so
        that only a piece's items are alive at a time and the cost per byte stays flat however big `data`
        is. Take them all before the next `feed`, `feed_iter` or `close`.
        """
        # Cut after blank lines of the kind `_read` cuts blocks at (CRLF when the bytes hold a CR), the last
        # piece keeping the last of them and 64 KiB or more (too much for the small-read paths), each piece
        # goes the way `feed(data, t)` goes through the same bytes: the same items, with the same provenance.
        pos, last = 0, len(data) - _SLICE
        if last > _SLICE:  # room for two pieces
            sep = b"\r\n\r\n" if 13 in data or any(13 in part for part in self._parts) else b"\n\n"
            last = min(last, data.rfind(sep))
            while pos + _SLICE < last and (cut := _find_blank(data, sep, pos + _SLICE, last)) >= 0:
                cut += len(sep)
                yield from self.feed(data[pos:cut], t)
                self._chunk -= 1  # the next piece is the same chunk
                pos = cut
        yield from self.feed(data[pos:] if pos else data, t)

    def _read(self, buf: bytes, pos: int, split: int, held: Held, t: float | None, out: list[Item]) -> list[Item]:
        """The general path, from `pos` (where a line starts): a lone line ending the read; the event in
        progress finished line by line; many blocks of the usual shapes cut and checked in C (`_blocks`);
        then line by line, or whole lines wait uncut (`_hold`). Returns what the chunk completed.

        `buf[:split]` came before this chunk (with `held`: whole lines kept uncut).
        """
        self._parts = []
        self._held = None
        base = self._offset
        if buf.find(10, pos) == len(buf) - 1 and 13 not in buf and not held:  # one line, ending the read (LF)
            self._lf += 1
            self._line(base + pos, buf[pos:-1], t if pos >= split else self._parts_t, None, out)
            self._offset = base + len(buf)
            return out
        if self._start is not None or self._first_line:  # finish the event in progress line by line
            pos = self._lines(buf, pos, base, split, held, t, out, True)
        if self._start is None and not self._after_cr and not self._first_line and pos < len(buf):
            sep = b"\r\n\r\n" if 13 in buf else b"\n\n"
            end = buf.rfind(sep, pos)  # the last blank line
            stop = self._blocks(buf, pos, end, sep, base, split, held, t, out) if end >= 0 else pos
            rest = buf[stop:]
            if 10 in rest or 13 in rest:
                if len(sep) == 2:  # LF only: past the last blank line there is none
                    waits = rest[-1] != 10 and rest[0] != 10 and (stop > 0 or not held)
                else:
                    waits = (stop > 0 or not held) and _can_wait(rest)
                if waits:
                    self._hold(buf, stop, split, t)
                    return out
            pos = stop
        rest = buf[pos:] if pos else buf
        if 10 in rest or 13 in rest:
            pos = self._lines(buf, pos, base, split, held, t, out, False)
            rest = buf[pos:]
        if rest:
            self._parts = [rest]
            if pos >= split:
                self._parts_t = t
        self._offset = base + pos
        return out

    def _lines(self, buf: bytes, pos: int, base: int, split: int, held: Held, t: float | None, out: list[Item],
               to_blank: bool, limit: int = -1) -> int:  # fmt: skip
        """Interpret the lines of `buf` from `pos` that end in it (with `to_blank`: up to the first blank
        line, which leaves no event in progress; with `limit`: up to the line end that reaches it);
        return the offset in `buf` where the next line starts.

        `buf[:split]` came before this chunk: an unfinished line, or with `held`, whole lines kept uncut
        (see `_held`).
        """
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

    def _blocks(self, buf: bytes, pos: int, end: int, sep: bytes, base: int, split: int, held: Held,
                t: float | None, out: list[Item]) -> int:  # fmt: skip
        """Many whole events of the two shapes LLM servers send at once, without going line by line.

        Takes the bytes from `pos` (where no event is in progress) to the separator `sep` at `end`,
        the last blank line in `buf`.
        Blocks that are all `data: V` or all `event: T` + `data: V`, with LF line ends or CRLF ones
        throughout (Gemini), are cut and checked in C; the events are exactly those the line rules
        give. Many blocks go in slices of about 64 KiB; from a slice of other shapes on, line by line.
        Returns the offset in `buf` past the last event taken (`pos`: none).
        """
        nl = sep[len(sep) // 2 :]
        stop = end + len(sep)
        # Many events at once: none of them can be part of a reference cycle, so the cyclic GC, which
        # would walk them all again and again as they pile up, is paused meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while pos < stop:
                cut = _find_blank(buf, sep, pos + _SLICE, end) if pos + _SLICE < end else -1
                cut = end if cut < 0 else cut
                first = len(out)
                ends = self._batch(buf, pos, cut, nl, sep, base, self._parts_t if pos < split else t, t, out)
                if not ends:  # other shapes: the rest goes line by line
                    self._lines(buf, pos, base, split, held, t, out, False, stop)
                    break
                if len(nl) == 1:
                    self._lf += ends
                else:
                    self._count_ends(buf, pos, base, ends, out, first)
                pos = cut + len(sep)
        finally:
            if collecting:
                gc.enable()
        return stop

    def _batch(self, buf: bytes, pos: int, cut: int, nl: bytes, sep: bytes, base: int, t_first: float | None,
               t: float | None, out: list[Item]) -> int:  # fmt: skip
        """The blocks of `buf[pos:cut]`, of one shape, all in C: their events appended, and the count of their
        line ends returned (0, nothing appended: not all of one shape, or not UTF-8)."""
        try:
            if buf.startswith(b"data: ", pos):  # split on the separator and the next field name: the values
                values = buf[pos + 6 : cut].split(sep + b"data: ")
                rest = b"".join(values)
                if 10 in rest or 13 in rest:
                    return 0  # some block is not exactly one `data: V` line
                types: Iterable[str] = repeat("message")
                sizes = list(map((6 + len(sep)).__add__, map(len, values)))
                ends = 2 * len(values)
            elif not buf.startswith(b"event: ", pos) or not buf.startswith(b"data: ", buf.find(nl, pos) + len(nl)):
                return 0
            elif nl == b"\n":
                # Its lines: `event: T`, `data: V` and a blank one, block after block (the last without its
                # blank line, which ends the region); split on the one-byte LF, the fastest split there is.
                lines = buf[pos:cut].split(b"\n")
                kinds, data_lines = lines[0::3], lines[1::3]
                if len(lines) % 3 != 2 or any(lines[2::3]):
                    return 0
                # Every data line starts with `data: ` if, joined by LF, they split on `\ndata: ` into as many.
                values = b"\n".join(data_lines).split(b"\ndata: ")
                if len(values) != len(data_lines) or not values[0].startswith(b"data: "):
                    return 0
                values[0] = values[0][6:]
                names = {}  # a few distinct event lines
                for kind in dict.fromkeys(kinds):
                    if not kind.startswith(b"event: "):
                        return 0
                    names[kind] = kind[7:].decode() or "message"
                types = list(map(names.__getitem__, kinds))
                sizes = list(map((3).__add__, map(add, map(len, kinds), map(len, data_lines))))
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
                    return 0  # not exactly `event: T` + `data: V` blocks: put back together, they differ
                names = {kind: kind.decode() or "message" for kind in dict.fromkeys(kinds)}  # a few distinct types
                types = list(map(names.__getitem__, kinds))
                sizes = list(map((13 + 3 * len(nl)).__add__, map(add, map(len, kinds), map(len, values))))
                ends = 3 * len(values)
            datas = list(map(bytes.decode, values))
        except UnicodeDecodeError:
            return 0  # the line path decodes with replacement and says where
        index = self._events
        back = len(nl) - 1  # an event ends where the next starts, or (CRLF) past its blank line's CR
        out += map(
            _new, repeat(Event),
            zip(
                range(index, index + len(datas)), types, datas, repeat(self._last_event_id), repeat(self._retry),
                accumulate(sizes, initial=base + pos), islice(accumulate(sizes, initial=base + pos - back), 1, None),
                chain((t_first,), repeat(t)), repeat(t), repeat(self._chunk),
            ),
        )  # fmt: skip
        self._events = index + len(datas)
        return ends

    def _count_ends(self, buf: bytes, pos: int, base: int, ends: int, out: list[Item], first: int) -> None:
        """`ends` CRLF line ends taken by `_batch` from `buf[pos:]`, whose events start at `out[first]`."""
        if self._first_crlf is None:  # its notice goes where the line rules put it: before the first event
            notice: list[Item] = []
            self._count_crlf(base + buf.find(b"\r\n", pos), notice, ends)
            out[first:first] = notice
        else:
            self._crlf += ends

    def close(self) -> list[Item]:
        """End of stream: an unfinished event is discarded, as the spec says, and reported."""
        if self._closed:
            return []
        self._closed = True
        out: list[Item] = []
        if self._after_cr:
            self._after_cr = False
            self._count_cr(self._offset - 1, out)
        buf = b"".join(self._parts)
        pos = 0
        if self._held:  # whole lines that waited: interpret them
            pos = self._lines(buf, 0, self._offset, len(buf), self._held, self._t, out, False)
        if pos < len(buf) or self._start is not None:
            offset = self._start if self._start is not None else self._offset + pos
            size = self._offset + len(buf) - offset
            out.append(
                Notice(
                    kind="unterminated-event",
                    message=f"the stream ended inside an event ({size} bytes after the last blank line): "
                    "clients discard it",
                    offset=offset,
                    t=self._t,
                )
            )
        return out

    def _line(self, start: int, raw: bytes, t: float | None, held: Held, out: list[Item]) -> None:
        """One line, which started arriving at `t`, finished by the current chunk or (`held`) by the one that held it."""
        if self._first_line:
            self._first_line = False
            if raw.startswith(_BOM):
                raw = raw[3:]
                self._bom = True
                out.append(Notice(kind="bom", message="a UTF-8 byte order mark opens the stream", offset=0, t=t))
                start += 3
        if not raw:
            self._dispatch(start, out)
            return
        try:
            line = raw.decode()
        except UnicodeDecodeError as exc:
            line = raw.decode("utf-8", "replace")
            self._invalid_utf8 += 1
            out.append(
                Notice(
                    kind="invalid-utf8",
                    message=f"bytes that are not UTF-8 (read as U+FFFD): {raw[exc.start : exc.start + 8]!r}",
                    offset=start + exc.start,
                    t=t,
                )
            )
        colon = line.find(":")
        if colon == 0:
            self._comments += 1
            if held:
                out.append(Comment(text=line[1:], offset=start, t=held[1], chunk=held[2]))
            else:
                out.append(Comment(text=line[1:], offset=start, t=self._t, chunk=self._chunk))
            return
        if colon < 0:
            name, value = line, ""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line.startswith(" ", colon + 1) else line[colon + 1 :]
        if self._start is None:
            self._start = start
            self._t_first = t
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" in value:
                out.append(Notice(kind="invalid-id", message="an id field holding NUL was ignored", offset=start, t=t))
            else:
                self._last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry = int(value)
            else:
                out.append(
                    Notice(
                        kind="invalid-retry",
                        message=f"retry value {value[:20]!r} is not ASCII digits: ignored",
                        offset=start,
                        t=t,
                    )
                )
        else:
            out.append(
                Notice(kind="ignored-field", message=f"unknown field {name[:40]!r} ignored", offset=start, t=t)
            )

    def _blank(self, buf: bytes, pos: int, out: list[Item]) -> int:
        """An event is in progress and `buf[pos]` starts a line: when that line is blank, count its line end and
        dispatch, as `_lines` would. Returns where the next line starts."""
        first = buf[pos]
        if first == 10:
            self._lf += 1
            nxt = pos + 1
        elif first != 13:
            return pos
        elif pos + 1 == len(buf):
            self._after_cr = True  # CR or CRLF: the next chunk tells
            nxt = pos + 1
        elif buf[pos + 1] == 10:
            self._count_crlf(self._offset + pos, out)
            nxt = pos + 2
        else:
            self._count_cr(self._offset + pos, out)
            nxt = pos + 1
        self._dispatch(self._offset + pos, out)
        return nxt

    def _shape(self, buf: bytes, pos: int, crlf: bool) -> tuple[bytes, int, str, int] | None:
        """The fast path's block shape at `pos`, where the last block's did not match: (head, its length, type,
        lines), kept for the next blocks; None when it is neither `data: ` nor an `event: T` line (its type
        decoded) + `data: `."""
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

    def _begin(self, buf: bytes, pos: int, start: int, end: int, event_type: str, lines: int, crlf: bool,
               split: int, t: float | None, out: list[Item]) -> bool:  # fmt: skip
        """The fast path's block at `pos` is cut in its line ends: its data line, `buf[start:end]`, then its line
        end (LF, CR or CRLF) or CRLF and the blank line's CR end `buf`. Its event begins, as `_lines` would begin
        it, and with that CR it is dispatched (False, nothing done: the value holds an LF or is not UTF-8)."""
        value = buf[start:end]
        if crlf and 10 in value:
            return False
        try:
            self._data = [value.decode()]
        except UnicodeDecodeError:
            return False
        self._start = self._offset + pos
        self._t_first = self._parts_t if pos < split else t
        self._event_type = event_type
        if not crlf:
            self._lf += lines - 1
        elif end == len(buf) - 1:
            self._crlf += lines - 2
            self._after_cr = True  # as in _lines: the next chunk tells CR from CRLF
        else:
            self._crlf += lines - 1
            if end == len(buf) - 3:
                self._after_cr = True
                self._dispatch(self._offset + end + 2, out)
        self._offset += len(buf)
        self._parts = []
        self._held = None
        return True

    def _hold(self, buf: bytes, stop: int, split: int, t: float | None) -> None:
        """`buf[stop:]` is whole lines of an event not complete yet (no blank line), then the start of a line:
        it waits uncut, so that the next read starts at the event's first byte again and can take the fast
        path. Not twice in a row (that would be quadratic in the size of an event): only after an event
        (which leaves `stop` > `split`: the pending bytes hold no blank line and do not end a line) or when
        nothing waited before."""
        self._parts = [buf[stop:]]
        self._held = (self._offset + max(stop, split), t, self._chunk)  # buf[stop:split] came earlier
        if stop >= split:
            self._parts_t = t
        self._offset += stop

    def _dispatch(self, start: int, out: list[Item]) -> None:
        """A blank line at `start`: dispatch the event being built, if it has data (WHATWG steps 1-5)."""
        self._last_event_id_string = self._last_event_id
        if self._data:
            out.append(
                _new(Event, (self._events, self._event_type or "message", "\n".join(self._data), self._last_event_id,
                             self._retry, self._start, start + 1, self._t_first, self._t, self._chunk))
            )  # fmt: skip
            self._events += 1
            self._data = []
        self._event_type = ""
        self._start = None
        self._t_first = None

    def _count_cr(self, offset: int, out: list[Item]) -> None:
        self._cr += 1
        if self._first_cr is None:
            self._first_cr = offset
            out.append(Notice(kind="line-ending", message="a line ends in a lone CR", offset=offset, t=self._t))

    def _count_crlf(self, offset: int, out: list[Item], n: int = 1) -> None:
        """`n` CRLF line ends, the first at `offset`."""
        self._crlf += n
        if self._first_crlf is None:
            self._first_crlf = offset
            out.append(Notice(kind="line-ending", message="a line ends in CRLF", offset=offset, t=self._t))


def _find_blank(buf: bytes, sep: bytes, start: int, stop: int) -> int:
    """`buf.find(sep, start, stop)` for a blank line's `sep` (LF LF or CRLF CRLF), hopping from LF to LF:
    CPython looks for a one-byte needle with memchr, some 20 times faster than for a longer one."""
    back = len(sep) // 2 - 1  # the separator starts this many bytes before its first LF
    lf = buf.find(10, start + back, stop)
    while lf >= 0 and not buf.startswith(sep, lf - back, stop):
        lf = buf.find(10, lf + 1, stop)
    return lf - back if lf >= 0 else -1


def _can_wait(rest: bytes) -> bool:
    """Whether `rest` (which starts a line and ends some) may wait uncut for the next chunk: it must hold
    no blank line (its event would be dispatched later than it arrived) and end inside a line (so that
    the next chunk's bytes continue a line that began with this one)."""
    return not (
        rest[-1] == 10 or rest[-1] == 13 or rest[0] == 10 or rest[0] == 13 or rest.find(b"\n\n") >= 0
        or (13 in rest and (rest.find(b"\r\r") >= 0 or rest.find(b"\n\r") >= 0))
    )  # fmt: skip


def parse_events(body: bytes) -> list[Event]:
    """All the events of a whole body: a convenience for tests and scripts."""
    parser = EventStreamParser()
    events = [x for x in parser.feed_iter(body) if isinstance(x, Event)]
    return events + [x for x in parser.close() if isinstance(x, Event)]
