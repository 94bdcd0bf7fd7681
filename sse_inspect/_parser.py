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

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, chain, repeat

from ._events import Comment, Event, Notice
from ._linebuffer import LineSplitter

__all__ = ["EventStreamParser", "ParseStats", "parse_events"]

Item = Event | Comment | Notice

_BOM = b"\xef\xbb\xbf"


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
        self._lines = LineSplitter()
        self._chunk = -1
        self._t: float | None = None
        self._partial_t: float | None = None  # arrival time of the pending bytes' first byte
        self._partial_chunk = 0  # and the index of its chunk
        self._first_line = True
        self._closed = False
        # The spec's buffers. The data buffer is kept as a list of lines, joined at dispatch.
        self._data: list[str] = []
        self._event_type = ""
        self._last_event_id = ""  # the spec's "last event ID buffer"
        self._last_event_id_string = ""  # the event source's, set from the buffer at each blank line
        self._retry: int | None = None
        # Provenance of the event being built.
        self._start: int | None = None
        self._t_first: float | None = None
        self._events = 0
        self._comments = 0
        self._bom = False
        self._invalid_utf8 = 0
        self._seen_cr = False
        self._seen_crlf = False

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
        s = self._lines
        return ParseStats(
            bytes=s.offset, events=self._events, comments=self._comments, lf=s.lf, crlf=s.crlf,
            cr=s.cr, bom=self._bom, invalid_utf8=self._invalid_utf8,
        )  # fmt: skip

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        """Take the next chunk of the body, which arrived at time `t`; return what it completed."""
        if self._closed:
            raise RuntimeError("feed() after close(): this parser's stream has ended")
        self._chunk += 1
        self._t = t
        lines = self._lines
        taken = lines.absorb(data)
        if taken:  # no line ends here: the unfinished line grows, nothing to parse
            if taken == 2:
                self._partial_t, self._partial_chunk = t, self._chunk
            return []
        out: list[Item] = []
        if self._start is None and not self._data and not self._event_type and not lines.after_cr:
            taken = self._blocks(data, t, out)
            if taken:
                rest = data[taken:]
                if not (_ends_an_event(rest) if b"\r" in rest else rest[:1] == b"\n" or b"\n\n" in rest):
                    lines.hold(rest)  # wait for the next chunk: it may end more whole events
                    if rest:
                        self._partial_t, self._partial_chunk = t, self._chunk
                    if lines.first_crlf is not None:
                        self._line_ending_notices(out)
                    return out
                data = rest
        self._lines_of(lines.feed(data), lines.offset - len(data), t, out)
        partial = lines.partial_start
        if partial is not None and partial >= lines.offset - len(data):
            self._partial_t, self._partial_chunk = t, self._chunk
        if lines.first_cr is not None or lines.first_crlf is not None:
            self._line_ending_notices(out)
        return out

    def _lines_of(self, done: list[tuple[int, bytes]], base: int, t: float | None, out: list[Item]) -> None:
        """Interpret finished lines; those that started (or ended) before `base` came with earlier chunks."""
        held, held_chunk = self._partial_t, self._partial_chunk
        for start, raw in done:
            now = start + len(raw) >= base  # its line end came with this chunk
            self._line(start, raw, held if start < base else t, t if now else held, self._chunk if now else held_chunk, out)

    def _blocks(self, data: bytes, t: float | None, out: list[Item]) -> int:
        """The fast path: whole events of the two shapes LLM servers send, without going line by line.

        Applies when no event is being built and the bytes up to the chunk's last blank line
        are blocks that are all `data: V` or all `event: T` + `data: V`, with LF line ends, or
        CRLF ones throughout (Gemini). Counting separators in C proves the shape; the events are
        exactly those the line rules give. Returns how many bytes of `data` it consumed (0: the
        line path takes them all).
        """
        lines = self._lines
        head = lines.pending()  # the start of the first block, from earlier chunks
        if b"\r" in data or b"\r" in head:
            nl, sep = b"\r\n", b"\r\n\r\n"
        else:
            nl, sep = b"\n", b"\n\n"
        end = data.rfind(sep)
        if end < 0:
            return 0
        if self._first_line:
            if (head or data).startswith(b"\xef"):
                return 0  # perhaps a BOM: the line path strips it
            self._first_line = False
        region = head + data[:end] if head else data[:end]
        breaks = region.count(nl)
        if len(nl) == 2 and not (region.count(b"\r") == breaks == region.count(b"\n")):
            return 0  # a lone CR or LF among the CRLFs
        start = lines.pending_start
        t_first = self._partial_t if head else t
        tail = len(nl) + 1  # from a block's end to its event's end: past the blank line's first character
        try:
            if breaks == 0 and region.startswith(b"data: "):  # one `data: V` block: a live stream's usual chunk
                event = Event(self._events, "message", region[6:].decode("utf-8"), self._last_event_id, self._retry,
                              start, start + len(region) + tail, t_first, t, self._chunk)  # fmt: skip
                out.append(event)
                self._events += 1
            elif breaks == 1 and region.startswith(b"event: "):  # one `event: T` + `data: V` block
                kind, found, value = region.partition(nl + b"data: ")
                if not found:
                    return 0
                out.append(Event(self._events, kind[7:].decode("utf-8") or "message", value.decode("utf-8"),
                                 self._last_event_id, self._retry, start, start + len(region) + tail, t_first, t,
                                 self._chunk))  # fmt: skip
                self._events += 1
            elif not self._batch(region, nl, sep, breaks, start, t_first, t, out):
                return 0
        except UnicodeDecodeError:
            return 0  # the line path decodes with replacement and says where
        self._last_event_id_string = self._last_event_id
        stop = end + len(sep)
        if len(nl) == 1:
            lines.skip(stop, lf=breaks + 2)
        else:
            first = region.find(nl)
            lines.skip(stop, crlf=breaks + 2, first_crlf=start + (first if first >= 0 else len(region)))
        return stop

    def _batch(self, region: bytes, nl: bytes, sep: bytes, breaks: int, start: int, t_first: float | None,
               t: float | None, out: list[Item]) -> bool:  # fmt: skip
        """Many blocks at once (whole-body and 64 KiB reads): False when they are not all one shape."""
        n = region.count(sep) + 1  # the shape is proven by counting before anything is split
        types: Iterable[str]
        if breaks == 2 * (n - 1) and region.startswith(b"data: ") and region.count(sep + b"data: ") == n - 1:
            blocks = region.split(sep)
            types = repeat("message", n)
            datas = [b[6:].decode("utf-8") for b in blocks]
        elif breaks == 3 * n - 2 and region.startswith(b"event: ") and region.count(sep + b"event: ") == n - 1:
            blocks = region.split(sep)
            data_line = nl + b"data: "
            parts = [b.partition(data_line) for b in blocks]
            if any(not p[1] or nl in p[2] for p in parts):
                return False  # some block is not exactly `event: T` + `data: V`
            types = [p[0][7:].decode("utf-8") or "message" for p in parts]
            datas = [p[2].decode("utf-8") for p in parts]
        else:
            return False
        step = len(sep)
        starts = list(accumulate((len(b) + step for b in blocks), initial=start))
        ends = starts[1:] if step == 2 else [s - 1 for s in starts[1:]]  # CRLF: the event ends past the CR
        index = self._events
        out += map(
            Event._make,
            zip(
                range(index, index + n), types, datas, repeat(self._last_event_id), repeat(self._retry), starts,
                ends, chain((t_first,), repeat(t, n - 1)), repeat(t), repeat(self._chunk),
            ),
        )  # fmt: skip
        self._events = index + n
        return True

    def close(self) -> list[Item]:
        """End of stream: an unfinished event is discarded, as the spec says, and reported."""
        if self._closed:
            return []
        self._closed = True
        out: list[Item] = []
        self._lines_of(self._lines.feed(b""), self._lines.offset, self._t, out)  # lines the fast path held
        rest = self._lines.close()
        self._line_ending_notices(out)
        if rest is not None or self._start is not None:
            offset = self._start if self._start is not None else rest[0]  # type: ignore[index]
            size = self._lines.offset - offset
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

    def _line(
        self, start: int, raw: bytes, t: float | None, t_done: float | None, chunk_done: int, out: list[Item]
    ) -> None:
        """One finished line, which started arriving at `t` and was finished at `t_done`, in chunk `chunk_done`."""
        if self._first_line:
            self._first_line = False
            if raw.startswith(_BOM):
                raw = raw[3:]
                self._bom = True
                out.append(Notice(kind="bom", message="a UTF-8 byte order mark opens the stream", offset=0, t=t))
                start += 3
        try:
            line = raw.decode("utf-8")
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
        if not line:
            self._dispatch(start, out)
            return
        colon = line.find(":")
        if colon == 0:
            self._comments += 1
            out.append(Comment(text=line[1:], offset=start, t=t_done, chunk=chunk_done))
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
        """A blank line: dispatch the event being built, if it has data (WHATWG steps 1-5)."""
        self._last_event_id_string = self._last_event_id
        if self._data:
            out.append(
                Event(
                    index=self._events,
                    type=self._event_type or "message",
                    data="\n".join(self._data),
                    id=self._last_event_id,
                    retry=self._retry,
                    start=self._start if self._start is not None else start,
                    end=start + 1,
                    t_first=self._t_first,
                    t=self._t,
                    chunk=self._chunk,
                )
            )
            self._events += 1
            self._data = []
        self._event_type = ""
        self._start = None
        self._t_first = None

    def _line_ending_notices(self, out: list[Item]) -> None:
        s = self._lines
        if not self._seen_cr and s.first_cr is not None:
            self._seen_cr = True
            out.append(
                Notice(kind="line-ending", message="a line ends in a lone CR", offset=s.first_cr, t=self._t)
            )
        if not self._seen_crlf and s.first_crlf is not None:
            self._seen_crlf = True
            out.append(Notice(kind="line-ending", message="a line ends in CRLF", offset=s.first_crlf, t=self._t))


def _ends_an_event(rest: bytes) -> bool:
    """Whether `rest` (which starts a line) holds a blank line, or ends in a CR an LF may follow:
    then it cannot wait uncut, as its event would be dispatched later than it arrived."""
    return (
        rest.endswith(b"\r") or rest.startswith((b"\n", b"\r"))
        or b"\n\n" in rest or b"\r\r" in rest or b"\n\r" in rest
    )  # fmt: skip


def parse_events(body: bytes) -> list[Event]:
    """All the events of a whole body: a convenience for tests and scripts."""
    parser = EventStreamParser()
    return [x for x in parser.feed(body) + parser.close() if isinstance(x, Event)]
