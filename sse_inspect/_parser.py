"""The event stream parser: bytes in, events out, exactly as the WHATWG HTML standard says.

Sans-I/O: no sockets, no clocks. The caller feeds chunks with their arrival times and
closes the stream at its end. Spec: https://html.spec.whatwg.org/multipage/server-sent-events.html
("Parsing an event stream" and "Interpreting an event stream").

    p = EventStreamParser()
    items = [x for chunk in capture.chunks for x in p.feed(chunk.data, chunk.t)] + p.close()

A whole body held in one buffer goes through `p.feed_iter(body, t)`: the items `feed` would return,
made a piece at a time, so that memory stays flat. Chunks read together (a capture's block of them) go
through `p.feed_block(datas, ts)`: the items `feed` gives each, a list per chunk.

One departure from the spec: a line over the parser's `line_limit` (16 MiB by default) is dropped, and so is
an event whose data comes to more than that, each with a notice, so that a hostile body cannot make the
parser hold a line or an event of any size.

Any way of cutting the same bytes into chunks gives the same events (only arrival times
and chunk indices follow the cuts; a notice may come one chunk later, as a CR ending a
chunk is told from a CRLF only by the next byte). Content never raises: what a client may mishandle
comes out as `Notice` values beside the events.

How it reads: `LineBuffer` (`_linebuffer.py`) cuts the chunks into lines; `_line` below applies the
field rules to each, and `_dispatch` makes the events, the one place they are made on this path. At
an event boundary, `feed` hands the chunk to an `Accelerator` (`_parser_accel.py`), which takes whole
events of the shapes LLM servers send faster than line by line and leaves the rest to these rules;
`EventStreamParser(accelerate=False)` reads every line here, and the property tests hold the two ways
to the same items.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._events import Comment, Event, Notice
from ._limits import SSE_LINE_LIMIT
from ._linebuffer import Held, Item, LineBuffer, find_blank
from ._parser_accel import HEADS, Accelerator

__all__ = ["EventStreamParser", "ParseStats", "parse_events"]

_BOM = b"\xef\xbb\xbf"
_BLANK = (b"\n\n", b"\r\n\r\n")  # how a chunk of whole events ends: a blank line (`feed_block`)


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


class EventStreamParser(LineBuffer):
    """Turns the bytes of one `text/event-stream` body into events, comments and notices.

    `accelerate`: True (the default) takes the usual LLM shapes through the accelerator; False reads every
    line by the rules alone (same items, slower); an `Accelerator` instance: that one.

    `line_limit`: the one departure from the spec, which sets no limit on a line. A line over this many bytes
    (its line end not counted) is dropped with its line end, as if it were not there, and a "line-too-long"
    notice says where it started and how long it was; while it goes on, no more than the limit and a chunk
    of it is held. Dropped rather than cut short: the rest of its event and of the stream read as they would
    without it, where a truncated `data:` line would make a corrupt payload.

    The same limit bounds an event: one whose data (its data lines joined by LF) would come to more than
    `line_limit` characters is dropped at its blank line, as if its data lines were not there (its `id` and
    `retry` still count), with an "event-too-long" notice; its data is not held past the limit. (An event of
    one data line is never over it: the line's limit comes first.)
    """

    PIECE = 65536
    """`feed_iter` feeds a big buffer in pieces of about this many bytes."""

    LINE_LIMIT = SSE_LINE_LIMIT
    """The default `line_limit`: no event stream sends a line near it."""

    def __init__(self, accelerate: bool | Accelerator = True, line_limit: int = LINE_LIMIT) -> None:
        super().__init__(line_limit)
        if accelerate is True:
            accelerate = Accelerator()
        self._accel = accelerate or None
        self._first_line = True
        self._closed = False
        # The spec's buffers. The data buffer is kept as a list of lines, joined at dispatch.
        self._data: list[str] = []
        self._data_size = -1  # the length the joined data would have (-1: no data line yet); over the limit: dropped
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
        if self._dropping is not None:  # a line over the limit is being dropped
            return self._dropped(data, t)
        parts = self._parts
        # `10 in data`, not `b"\n" in data`: CPython first tries a bytes needle as an int, at ~0.1 µs.
        if 10 not in data and 13 not in data and not self._after_cr:
            # No line ends here: the unfinished line grows, a piece more for the line buffer to join when its
            # end comes (most reads of a token stream cut small: a method call would cost more than this).
            if parts:
                parts.append(data)
            elif data:
                self._parts = [data]
                self._parts_t = t
            self._run += len(data)
            if self._run > self._limit:
                out: list[Item] = []
                self._over_limit(out)
                if self._dropping is not None:
                    self._first_line = False  # (were it the stream's first line, the next one is not)
                return out
            return []
        self._run = len(data)  # the unfinished line after this chunk lies in it
        if self._start is None and not self._after_cr and not self._first_line and self._accel is not None:
            # At an event boundary (no event in progress, no CR waiting for its LF, the first line read), the
            # usual read: the accelerator reads the chunk, taking what it can and leaving the rest to the rules.
            return self._accel.feed(self, data, t)
        buf, split = self._join(data)
        out = []
        pos = 0
        if self._after_cr:
            pos = self._after_cr_line_end(buf, out)
        if self._start is not None or self._first_line:  # finish the event in progress first
            pos = self._lines(buf, pos, split, t, out, to_blank=True)
        if self._start is None and not self._after_cr and not self._first_line and self._accel is not None:
            # At an event boundary now: the rest of the chunk (all of it came with this chunk, after the event's
            # blank line or the CR's LF) is a read of its own for the accelerator, when it ends a line.
            rest = buf[pos:]
            if 10 in rest or 13 in rest:
                self._keep(b"", pos, split, t)
                return out + self._accel.feed(self, rest, t)
        pos = self._lines(buf, pos, split, t, out)
        self._keep(buf[pos:], pos, split, t)
        return out

    def feed_block(self, datas: Sequence[bytes], ts: Sequence[float | None]) -> list[list[Item]]:
        """`[self.feed(data, t) for data, t in zip(datas, ts)]`: the next chunks, read together (a capture's
        block), and what each completed, item for item as `feed` gives them, the parser left as `feed` leaves
        it. At an event boundary, the accelerator takes as many of the chunks as it can at once, with no call
        per chunk (`Accelerator.feed_block`: chunks of whole events of the usual shapes), `feed` the rest."""
        feed = self.feed
        accel = self._accel
        out: list[list[Item]] = []
        i, n = 0, len(datas)
        # At each event boundary where a chunk opens and ends as a block of whole events would, the accelerator is
        # offered the chunks from there (up to the next empty one, which `feed` reads, to leave the parser as it
        # leaves it); `feed` reads what it does not take. So that no byte is read many times over, an offer is of
        # 64 chunks at first, then twice what it took from the last (doubling while it takes all); there is none
        # once it takes fewer than 16 chunks of an offer it did not take whole (cut events, other shapes), nor
        # after 16 chunks in a row that `feed` read: `feed` reads the rest of the block.
        window = 64 if accel is not None else 0
        empty = b"" in datas  # (a live recording has no empty chunks: this costs no more than their search)
        misses = 0
        while i < n and window and misses < 16:
            if (
                self._start is None and not self._parts and not self._after_cr and not self._first_line
                and self._dropping is None and not self._closed and datas[i].endswith(_BLANK)
                and datas[i].startswith(HEADS)
            ):  # fmt: skip
                j = min(datas.index(b"", i) if empty and b"" in datas[i:] else n, i + window)
                if j - i > 1:
                    assert accel is not None
                    got = accel.feed_block(self, list(datas[i:j]), list(ts[i:j]))
                    out += got
                    took = len(got)
                    window = 2 * window if took == j - i else 2 * took if took >= 16 else 0
                    i += took
                    misses = 0
                    continue
            out.append(feed(datas[i], ts[i]))
            i += 1
            misses += 1
        out += map(feed, datas[i:], ts[i:])
        return out

    def _dropped(self, data: bytes, t: float | None) -> list[Item]:
        """`feed` while a line over the limit is dropped: the rest of the chunk after its line end is read."""
        out: list[Item] = []
        nxt = self._drop(data, out)
        if self._dropping is None and nxt < len(data):
            self._chunk -= 1  # the same chunk
            out += self.feed(data[nxt:], t)
        return out

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]:
        """The items `feed(data, t)` returns, made as they are taken: for a big `data` such as a whole body.

        `data` goes through `feed` in pieces of about 64 KiB, all of them one chunk that arrived at `t`, so
        that only a piece's items are alive at a time and the cost per byte stays flat however big `data`
        is. Take them all before the next `feed`, `feed_iter` or `close`.
        """
        # Cut after blank lines (CRLF ones when the bytes hold a CR, the kind the accelerator takes), the
        # last piece keeping the last of them and PIECE bytes or more; each piece is the same chunk.
        piece = self.PIECE
        pos, last = 0, len(data) - piece
        if last > piece:  # room for two pieces
            sep = b"\r\n\r\n" if 13 in data or any(13 in part for part in self._parts) else b"\n\n"
            last = min(last, data.rfind(sep))
            while pos + piece < last and (cut := find_blank(data, sep, pos + piece, last)) >= 0:
                cut += len(sep)
                yield from self.feed(data[pos:cut], t)
                self._chunk -= 1  # the next piece is the same chunk
                pos = cut
        yield from self.feed(data[pos:] if pos else data, t)

    def close(self) -> list[Item]:
        """End of stream: an unfinished event is discarded, as the spec says, and reported."""
        if self._closed:
            return []
        self._closed = True
        out: list[Item] = []
        if self._run > self._limit and self._dropping is None:
            self._over_limit(out)
        dropping = self._dropping
        if dropping is not None:  # the stream ended inside a line over the limit
            out.append(self._too_long(dropping, self._offset - dropping))
        buf = b"".join(self._parts)
        pos = 0
        if self._held:  # whole lines that waited: read them now
            pos = self._lines(buf, 0, len(buf), self._t, out)
        if self._after_cr:  # the stream ended in a CR: a lone one
            self._after_cr = False
            self._count_cr(self._offset + len(buf) - 1, out)
        if self._data_size > self._limit:  # the stream ended inside an event over the limit
            out.append(self._event_too_long())
        if pos < len(buf) or self._start is not None or dropping is not None:
            if self._start is not None:
                offset = self._start
            else:
                offset = dropping if dropping is not None else self._offset + pos
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

    def _line(self, start: int, raw: bytes, began: float | None, held: Held, out: list[Item]) -> None:
        """One line at `start`, which started arriving at `began` (WHATWG "Interpreting an event stream")."""
        if len(raw) > self._limit:  # the one departure from the spec, which sets no limit: see `line_limit`
            self._first_line = False
            out.append(self._too_long(start, len(raw)))
            return
        if self._first_line:
            self._first_line = False
            if raw.startswith(_BOM):
                raw = raw[3:]
                self._bom = True
                out.append(Notice(kind="bom", message="a UTF-8 byte order mark opens the stream", offset=0, t=began))
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
                    t=began,
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
            self._t_first = began
        if name == "data":
            size = self._data_size + 1 + len(value)
            self._data_size = size
            if size <= self._limit:
                self._data.append(value)
            elif self._data:
                self._data = []  # over the limit: the event will be dropped (see `line_limit`)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" in value:
                out.append(Notice(kind="invalid-id", message="an id field holding NUL was ignored", offset=start, t=began))
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
                        t=began,
                    )
                )
        else:
            out.append(
                Notice(kind="ignored-field", message=f"unknown field {name[:40]!r} ignored", offset=start, t=began)
            )

    def _dispatch(self, start: int, out: list[Item]) -> None:
        """A blank line at `start`: dispatch the event being built, if it has data (WHATWG steps 1-5)."""
        self._last_event_id_string = self._last_event_id
        if self._data_size > self._limit:
            out.append(self._event_too_long())
        elif self._data and self._start is not None:  # (when data came, its line set `_start`)
            out.append(
                Event(
                    self._events, self._event_type or "message", "\n".join(self._data), self._last_event_id,
                    self._retry, self._start, start + 1, self._t_first, self._t, self._chunk,
                )
            )  # fmt: skip
            self._events += 1
            self._data = []
        self._data_size = -1
        self._event_type = ""
        self._start = None
        self._t_first = None

    def _event_too_long(self) -> Notice:
        return Notice(kind="event-too-long", message=f"an event whose data came to {self._data_size} characters (over "
                      f"the limit of {self._limit}) was dropped, from byte {self._start}", offset=self._start or 0,
                      t=self._t)  # fmt: skip


def parse_events(body: bytes) -> list[Event]:
    """All the events of a whole body: a convenience for tests and scripts."""
    parser = EventStreamParser()
    events = [x for x in parser.feed_iter(body) if isinstance(x, Event)]
    return events + [x for x in parser.close() if isinstance(x, Event)]
