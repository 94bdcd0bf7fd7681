"""The event stream parser: bytes in, events out, exactly as the WHATWG HTML standard says.

Sans-I/O: no sockets, no clocks. The caller feeds chunks with their arrival times and
closes the stream at its end. Spec: https://html.spec.whatwg.org/multipage/server-sent-events.html
("Parsing an event stream" and "Interpreting an event stream").

    p = EventStreamParser()
    items = [x for chunk in capture.chunks for x in p.feed(chunk.data, chunk.t)] + p.close()

Any way of cutting the same bytes into chunks gives the same events (only arrival times
and chunk indices follow the cuts; a notice may come one chunk later, as a CR ending a
chunk is told from a CRLF only by the next byte). Content never raises: what a client may mishandle
comes out as `Notice` values beside the events.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, chain, islice, repeat
from operator import add

from ._events import Comment, Event, Notice
from ._linebuffer import lines

__all__ = ["EventStreamParser", "ParseStats", "parse_events"]

Item = Event | Comment | Notice

_BOM = b"\xef\xbb\xbf"
_new = tuple.__new__  # Event(...) runs a Python-level __new__; this makes the same tuple in C
_SLICE = 65536  # the fast path takes many events in slices of about this many bytes


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
        self._held = False  # _parts holds whole lines, kept uncut after the fast path (see feed)
        self._held_at = 0
        self._held_t: float | None = None
        self._held_chunk = 0
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
        # `10 in data`, not `b"\n" in data`: CPython first tries a bytes needle as an int, at ~0.1 µs.
        if 10 not in data and 13 not in data and not self._after_cr:  # no line ends here: the line grows
            if self._parts:
                self._parts.append(data)
            elif data:
                self._parts = [data]
                self._parts_t = t
            return []
        out: list[Item] = []
        base = self._offset
        pos = 0
        held = self._held
        if self._parts:  # the pending bytes, then this chunk: buf[:split] came earlier
            self._parts.append(data)
            buf = b"".join(self._parts)
            self._parts = []
            self._held = False
            split = len(buf) - len(data)
        else:
            buf, split = data, 0
        if self._after_cr:
            if not data:
                return out
            self._after_cr = False
            if data[0] == 10:
                pos = 1
                self._count_crlf(base - 1, out)
            else:
                self._count_cr(base - 1, out)
        if self._start is not None or self._first_line:  # finish the event in progress line by line
            pos = self._lines(buf, pos, base, split, held, t, out, True)
        if self._start is None and not self._after_cr and not self._first_line and pos < len(buf):
            sep = b"\r\n\r\n" if 13 in buf else b"\n\n"
            end = buf.rfind(sep, pos)  # the last blank line
            stop = self._blocks(buf, pos, end, sep, base, split, held, t, out) if end >= 0 else pos
            rest = buf[stop:]
            if 10 in rest or 13 in rest:
                if len(sep) == 2:  # LF only: past the last blank line there is none, nor before `pos` when end < 0
                    waits = rest[-1] != 10 and (stop > pos or (end < 0 and not held and rest[0] != 10))
                else:
                    waits = (stop > pos or not held) and _can_wait(rest)
                if waits:
                    # Whole lines of an event not complete yet: they wait uncut, so that the next chunk
                    # can start at the event's first byte again and take the fast path.
                    self._parts = [rest]
                    self._held = True
                    self._held_at = base + max(stop, split)  # rest[:held_at] came with the earlier pending bytes
                    self._held_t, self._held_chunk = t, self._chunk
                    if stop >= split:
                        self._parts_t = t
                    self._offset = base + stop
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

    def _lines(self, buf: bytes, pos: int, base: int, split: int, held: bool, t: float | None, out: list[Item],
               to_blank: bool, limit: int = -1) -> int:  # fmt: skip
        """Interpret the lines of `buf` from `pos` that end in it (with `to_blank`: up to the first blank
        line, which leaves no event in progress; with `limit`: up to the line end that reaches it);
        return the offset in `buf` where the next line starts.

        `buf[:split]` came before this chunk: an unfinished line, or with `held`, whole lines kept uncut
        (those from `_held_at` on came with chunk `_held_chunk`).
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
                began = self._held_t if held and base + start >= self._held_at else self._parts_t
            self._line(base + start, buf[start:stop], began, stop < split, out)
            pos = nxt
            if (to_blank and start == stop) or nxt == limit:
                break
        return pos

    def _blocks(self, buf: bytes, pos: int, end: int, sep: bytes, base: int, split: int, held: bool,
                t: float | None, out: list[Item]) -> int:  # fmt: skip
        """The fast path: whole events of the two shapes LLM servers send, without going line by line.

        Takes the bytes from `pos` (where no event is in progress) to the separator `sep` at `end`,
        the last blank line in `buf`.
        Blocks that are all `data: V` or all `event: T` + `data: V`, with LF line ends or CRLF ones
        throughout (Gemini), are cut and checked in C; the events are exactly those the line rules
        give. Many blocks go in slices of about 64 KiB; from a slice of other shapes on, line by line.
        Returns the offset in `buf` past the last event taken (`pos`: none).
        """
        nl = sep[len(sep) // 2 :]
        stop = end + len(sep)
        try:  # one block: a live stream's usual chunk
            if buf.startswith(b"data: ", pos):
                name, value, ends = b"message", buf[pos + 6 : end], 2
            elif buf.startswith(b"event: ", pos):
                eol = buf.find(nl, pos, end)
                name, value, ends = buf[pos + 7 : eol], buf[eol + len(nl) + 6 : end], 3
                if eol < 0 or not buf.startswith(b"data: ", eol + len(nl), end) or 10 in name or 13 in name:
                    name = b""  # not one `event: T` + `data: V` block
            else:
                name = b""
            if name and 10 not in value and 13 not in value:
                out.append(_new(Event, (self._events, name.decode(), value.decode(), self._last_event_id,
                                        self._retry, base + pos, base + stop - len(nl) + 1,
                                        self._parts_t if pos < split else t, t, self._chunk)))  # fmt: skip
                self._events += 1
                if len(nl) == 1:
                    self._lf += ends
                else:
                    self._count_ends(buf, pos, base, ends, out)
                return stop
        except UnicodeDecodeError:
            return pos  # the line path decodes with replacement and says where
        # Many events at once: none of them can be part of a reference cycle, so the cyclic GC, which
        # would walk them all again and again as they pile up, is paused meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while pos < stop:
                cut = buf.find(sep, pos + _SLICE, end) if pos + _SLICE < end else -1
                cut = end if cut < 0 else cut
                ends = self._batch(buf[pos:cut], nl, sep, base + pos, self._parts_t if pos < split else t, t, out)
                if not ends:  # other shapes: the rest goes line by line
                    self._lines(buf, pos, base, split, held, t, out, False, stop)
                    break
                if len(nl) == 1:
                    self._lf += ends
                else:
                    self._count_ends(buf, pos, base, ends, out)
                pos = cut + len(sep)
        finally:
            if collecting:
                gc.enable()
        return stop

    def _batch(self, region: bytes, nl: bytes, sep: bytes, start: int, t_first: float | None, t: float | None,
               out: list[Item]) -> int:  # fmt: skip
        """Blocks of one shape, all in C: their events appended, and the count of their line ends
        returned (0, nothing appended: not all of one shape, or not UTF-8)."""
        try:
            if region.startswith(b"data: "):  # split on the separator and the next field name: the values
                values = region[6:].split(sep + b"data: ")
                rest = b"".join(values)
                if 10 in rest or 13 in rest:
                    return 0  # some block is not exactly one `data: V` line
                types: Iterable[str] = repeat("message")
                sizes = list(map((6 + len(sep)).__add__, map(len, values)))
                ends = 2 * len(values)
            elif region.startswith(b"event: ") and region.startswith(b"data: ", region.find(nl) + len(nl)):
                # T1, V1, T2, V2, ...: one replace, one split
                body, next_event, data_line = region[7:], sep + b"event: ", nl + b"data: "
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
            else:
                return 0
            datas = list(map(bytes.decode, values))
        except UnicodeDecodeError:
            return 0  # the line path decodes with replacement and says where
        index = self._events
        back = len(nl) - 1  # an event ends where the next starts, or (CRLF) past its blank line's CR
        out += map(
            _new, repeat(Event),
            zip(
                range(index, index + len(datas)), types, datas, repeat(self._last_event_id), repeat(self._retry),
                accumulate(sizes, initial=start), islice(accumulate(sizes, initial=start - back), 1, None),
                chain((t_first,), repeat(t)), repeat(t), repeat(self._chunk),
            ),
        )  # fmt: skip
        self._events = index + len(datas)
        return ends

    def _count_ends(self, buf: bytes, pos: int, base: int, ends: int, out: list[Item]) -> None:
        """`ends` CRLF line ends taken by the fast path from `buf[pos:]`."""
        if self._first_crlf is None:
            self._count_crlf(base + buf.find(b"\r\n", pos), out, ends)
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
            pos = self._lines(buf, 0, self._offset, len(buf), True, self._t, out, False)
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

    def _line(self, start: int, raw: bytes, t: float | None, held: bool, out: list[Item]) -> None:
        """One line, which started arriving at `t`, finished by the current chunk or (`held`) by chunk `_held_chunk`."""
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
                out.append(Comment(text=line[1:], offset=start, t=self._held_t, chunk=self._held_chunk))
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
    return [x for x in parser.feed(body) + parser.close() if isinstance(x, Event)]
