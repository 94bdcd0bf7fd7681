"""JSON streamed without SSE: NDJSON (JSON Lines) and the streamed JSON array, and telling framings apart.

Two framers beside the event-stream parser (`_parser.py`), with its contract: sans-I/O (bytes and their
arrival times in, no sockets, no clocks), any cut of the same bytes gives the same items (only `t`,
`t_first` and `chunk` follow the cuts), content never raises, memory stays bounded, cost grows with the
bytes at any chunk size.

    p = NDJSONParser()   # or JSONArrayParser()
    items = [x for chunk in capture.chunks for x in p.feed(chunk.data, chunk.t)] + p.close()

The items are the parser's `Event`s, so that a dialect reads any framing the same way (it JSON-decodes
`event.data`): `type` "message", `id` "", `retry` None, `data` the JSON text exactly as sent (decoded as
UTF-8). The framers find the texts; they do not parse them (the dialect does).

- `NDJSONParser`: one JSON text per line (https://github.com/ndjson/ndjson-spec, https://jsonlines.org),
  as Ollama's native API sends (`/api/chat`, `/api/generate`, `application/x-ndjson`).
- `JSONArrayParser`: one JSON array written piece by piece (RFC 8259 section 5), an item per element, as
  Gemini's `:streamGenerateContent` sends without `alt=sse`.
- `sniff_framing`: which of "sse", "ndjson", "json-array", "eventstream" a body is, from its Content-Type
  and first bytes.

Notices (`Notice.kind`) beside those of the event-stream parser ("bom", "invalid-utf8", "line-too-long"):

- "not-json-line" (NDJSON): a line that does not start with `{` or `[` (after JSON whitespace): not the
  objects a stream of this kind sends; still an item, the dialect judges it.
- "blank-line" (NDJSON, the first only; all counted in `stats.blank`): a line of nothing or JSON whitespace
  (a keep-alive some servers send). Skipped here, as the ndjson-spec allows, but a client that decodes
  every line it gets fails on it: the ollama library's `json.loads(line)` of each `iter_lines()` line raises.
- "splitlines-break" (NDJSON, the first only; all counted in `stats.split`): a line holding a character
  other than LF that Python's `str.splitlines()` ends a line at: a lone CR, VT, FF, FS, GS, RS, NEL (U+0085),
  LS or PS (U+2028, U+2029). httpx's `iter_lines`, which the ollama library reads with, splits there, so
  such a client gets two pieces of JSON, neither valid. Legal in a JSON text only as a CR between tokens
  or NEL, LS, PS inside a string (Go's encoding/json, Ollama's, escapes LS and PS but not NEL).
- "unterminated-line" (NDJSON): the stream ended in a line without its LF. Still an item: clients'
  `iter_lines` yield it.
- "not-an-array" (array): the body does not open with `[` after whitespace (or is empty): no items, the
  rest is ignored.
- "missing-comma" (array): an element followed by something other than `,` or `]`: read as the next
  element.
- "empty-element" (array): a `,` where an element should be (`[,` or `,,`): skipped. (A `,` before the
  `]`, as in `[1,]`, closes the array without one.)
- "trailing-data" (array): something other than whitespace after the closing `]`: ignored.
- "unterminated-array" (array): the stream ended before the closing `]`. The last element is an item if
  it is whole (an object, array or string closed); a partial one, or a bare scalar (a number may be cut
  short), is not.
- "element-too-long" (array): an element over the limit, dropped.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._events import Event, Notice
from ._eventstream import HEADERS_LIMIT, MESSAGE_LIMIT, SMALLEST
from ._limits import SSE_LINE_LIMIT
from ._linebuffer import Item

if TYPE_CHECKING:
    from ._ndjson_accel import Accelerator

__all__ = [
    "FRAMINGS", "JSONArrayParser", "JSONArrayStats", "NDJSONParser", "NDJSONStats", "framing_by_type", "sniff_framing",
]  # fmt: skip

# (Item: `_linebuffer.Item`, what every framer emits, so that one `Framer` type fits them all)

_BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"  # JSON whitespace (RFC 8259 section 2: "ws")
_SPLITLINES = re.compile(rb"[\r\x0b\x0c\x1c-\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")
"""What `str.splitlines()` ends a line at besides LF, as UTF-8 bytes: one search of the line finds any."""


class _Framer:
    """What both framers share: the feed/close contract, chunk and time bookkeeping, and the BOM.

    A subclass reads the bytes in `_scan(data, base, out)` (`base`: stream offset of `data[0]`) and ends
    the stream in `_end(out)`. A UTF-8 byte order mark opening the stream is skipped with a "bom" notice,
    however the chunks cut it: its first bytes wait (at most two) until the third tells.
    """

    PIECE = 65536
    """`feed_iter` feeds a big buffer in pieces of this many bytes."""

    LINE_LIMIT = SSE_LINE_LIMIT
    """The default `limit` (16 MiB), the event-stream parser's line limit."""

    def __init__(self, limit: int = LINE_LIMIT) -> None:
        self._limit = limit
        self._offset = 0  # stream offset of the next byte
        self._chunk = -1  # index of the current chunk
        self._t: float | None = None  # its arrival time
        self._closed = False
        self._head: bytes | None = b""  # the stream's first bytes while they may still be a BOM; None: told
        self._head_t: float | None = None
        self._bom = False
        self._invalid_utf8 = 0
        self._items = 0

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        """Take the next chunk of the body, which arrived at time `t`; return what it completed."""
        if self._closed:
            raise RuntimeError("feed() after close(): this framer's stream has ended")
        self._chunk += 1
        self._t = t
        out: list[Item] = []
        if self._head is not None:
            data = self._after_head(data, t, out)
            if self._head is not None:
                return out
        base = self._offset
        self._offset += len(data)
        self._scan(data, base, out)
        return out

    def _after_head(self, data: bytes, t: float | None, out: list[Item]) -> bytes:
        """While the stream's first bytes may be a BOM: what of `data` is read after it (its bytes not yet read)."""
        assert self._head is not None
        head = self._head + data
        if not head:
            return b""
        if len(head) < 3 and _BOM.startswith(head):  # still a BOM's first bytes: the next byte tells
            if not self._head:
                self._head_t = t
            self._head = head
            return b""
        self._head = None
        if head.startswith(_BOM):
            self._bom = True
            out.append(Notice(kind="bom", message="a UTF-8 byte order mark opens the stream: skipped",
                              offset=0, t=self._head_t if self._head_t is not None else t))  # fmt: skip
            self._offset = 3
            return head[3:]
        # No BOM: the held bytes are the body's first; read them as a chunk of their own that came at their time.
        held = len(head) - len(data)
        if held:
            self._t = self._head_t
            self._scan(head[:held], 0, out)
            self._offset = held
            self._t = t
        return data

    def feed_block(self, datas: Sequence[bytes], ts: Sequence[float | None]) -> list[list[Item]]:
        """`[self.feed(data, t) for data, t in zip(datas, ts)]`: the next chunks, and what each completed."""
        return [self.feed(data, t) for data, t in zip(datas, ts, strict=True)]

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]:
        """The items `feed(data, t)` returns, made a piece at a time: for a big `data` such as a whole body.

        `data` goes through `feed` in pieces of `PIECE` bytes, all of them one chunk that arrived at `t` (any cut
        gives the same items), so that only a piece's items are alive at a time. Take them all before the next
        `feed`, `feed_iter` or `close`."""
        piece, pos = self.PIECE, 0
        while len(data) - pos > piece:
            yield from self.feed(data[pos : pos + piece], t)
            self._chunk -= 1  # the next piece is the same chunk
            pos += piece
        yield from self.feed(data[pos:] if pos else data, t)

    def close(self) -> list[Item]:
        """End of stream: what the unfinished bytes make, and what the stream lacked."""
        if self._closed:
            return []
        out: list[Item] = []
        if self._head:  # a body of one or two bytes that began a BOM: read them as they are, when they came
            head, self._head = self._head, None
            t, self._t = self._t, self._head_t
            self._scan(head, 0, out)
            self._offset, self._t = len(head), t
        self._head = None
        self._closed = True
        self._end(out)
        return out

    def _scan(self, data: bytes, base: int, out: list[Item]) -> None:
        raise NotImplementedError

    def _end(self, out: list[Item]) -> None:
        raise NotImplementedError

    def _text(self, raw: bytes, start: int, t: float | None, out: list[Item]) -> str:
        """`raw` (at stream offset `start`) decoded as UTF-8; bytes that are not UTF-8 read as U+FFFD, with a notice."""
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            self._invalid_utf8 += 1
            bad = raw[exc.start : exc.start + 8]
            out.append(Notice(kind="invalid-utf8", offset=start + exc.start, t=t,
                              message=f"bytes that are not UTF-8 (read as U+FFFD): {bad!r}"))  # fmt: skip
            return raw.decode("utf-8", "replace")

    def _event(self, text: str, start: int, end: int, t_first: float | None) -> Event:
        event = Event(self._items, "message", text, "", None, start, end, t_first, self._t, self._chunk)
        self._items += 1
        return event


# -- NDJSON ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NDJSONStats:
    """Counts over the whole stream so far."""

    bytes: int
    items: int
    blank: int
    """Lines of nothing or JSON whitespace only, skipped (some servers send them as keep-alives)."""
    lf: int
    """Lines ended by LF alone."""
    crlf: int
    """Lines ended by CRLF (the CR belongs to the line end)."""
    bom: bool
    invalid_utf8: int
    """Lines that held bytes that are not UTF-8 (decoded with U+FFFD)."""
    too_long: int
    """Lines over the limit, dropped."""
    split: int
    """Lines that `str.splitlines()` (httpx's `iter_lines`) would cut in pieces: see "splitlines-break"."""


class NDJSONParser(_Framer):
    """Turns an NDJSON / JSON Lines body into an `Event` per line holding a JSON text.

    The spec's rules (https://github.com/ndjson/ndjson-spec section 3, https://jsonlines.org): each JSON text
    is followed by LF; a CR before the LF belongs to the line end (the spec: "parsers MUST accept" CRLF,
    as `iter_lines` and the ollama library read it); the text is UTF-8. Per line:

    - nothing, or JSON whitespace only: no item, counted in `stats.blank` (ndjson-spec: "MAY" be ignored),
      a "blank-line" notice for the first;
    - anything else: an `Event` whose `data` is the line's text (without its line end), `start` its first
      byte, `end` just past its LF, `t_first` when its first byte came, `t`/`chunk` when its LF did;
      a "not-json-line" notice when it does not open with `{` or `[`;
    - a "splitlines-break" notice for the first line that `str.splitlines()` would cut (see the module's);
    - a line of more than `limit` bytes (its line end not counted) is dropped with a "line-too-long" notice,
      and no more than the limit and a chunk of it is held while it goes on.

    The stream's last line without its LF is an item at `close` (with an "unterminated-line" notice).

    `accelerate`: True takes slices of plain lines (`{...}` or `[...]` then LF, nothing else to say) through
    the accelerator (`_ndjson_accel.py`), which gives the items these rules give, at any cut; False reads every
    line here; None (the default) is True unless `SSE_INSPECT_NO_ACCEL=1` is in the environment.
    """

    def __init__(self, limit: int = _Framer.LINE_LIMIT, accelerate: bool | Accelerator | None = None) -> None:
        super().__init__(limit)
        if accelerate is None:  # on, unless SSE_INSPECT_NO_ACCEL=1 says otherwise
            accelerate = os.environ.get("SSE_INSPECT_NO_ACCEL", "") in ("", "0")
        if accelerate is True:
            from ._ndjson_accel import Accelerator  # (loaded by the first NDJSON stream read, not at start-up)

            accelerate = Accelerator()
        self._accel = accelerate or None
        self._pending = bytearray()  # the unfinished line's bytes so far (a bytearray grows in amortized linear time)
        self._line_start = 0  # stream offset of the unfinished line
        self._line_t: float | None = None  # arrival time of its first byte
        self._dropping = False  # the unfinished line is over the limit: its bytes are counted, not kept
        self._last_cr = False  # the unfinished line's last byte so far is a CR
        self._blank = self._lf = self._crlf = self._too_long = self._split = 0

    @property
    def stats(self) -> NDJSONStats:
        return NDJSONStats(bytes=self._offset + len(self._head or b""), items=self._items, blank=self._blank,
                           lf=self._lf, crlf=self._crlf, bom=self._bom, invalid_utf8=self._invalid_utf8,
                           too_long=self._too_long, split=self._split)  # fmt: skip

    def _scan(self, data: bytes, base: int, out: list[Item]) -> None:
        pos, n = 0, len(data)
        pending = self._pending
        accel = self._accel  # (a chunk of a few lines costs it more than it saves: the rules read it)
        again = 0 if accel is not None and n > accel.small else n  # where the accelerator may take lines (n: nowhere)
        while pos < n:
            if not pending and not self._dropping:  # a line starts here: its first byte came with this chunk
                if pos >= again:  # the accelerator takes the plain lines from here, and leaves the rest to the rules
                    assert accel is not None
                    pos, again = accel.take(self, data, pos, base, out)
                    if pos >= n:
                        return
                self._line_start = base + pos
                self._line_t = self._t
            lf = data.find(10, pos)
            if lf < 0:
                self._grow(data, pos, n, base)
                return
            if pending or self._dropping:
                self._grow(data, pos, lf, base)
                raw = bytes(pending) if not self._dropping else None
                pending.clear()
            else:
                raw = data[pos:lf]
            self._line(raw, base + lf, out)
            pos = lf + 1

    def _grow(self, data: bytes, pos: int, stop: int, base: int) -> None:
        """`data[pos:stop]` belongs to the unfinished line: kept, unless the line is over the limit."""
        if stop > pos:
            self._last_cr = data[stop - 1] == 13  # the line's last byte so far: a CR an LF would make a line end
        if self._dropping:
            return
        self._pending += data[pos:stop]
        # Over `limit + 1` bytes the line is over the limit whatever follows (the one byte more: a CR that an LF
        # would make part of the line end), so its bytes are dropped now rather than held.
        if len(self._pending) > self._limit + 1:
            self._dropping = True
            self._pending.clear()

    def _line(self, raw: bytes | None, lf: int, out: list[Item], terminated: bool = True) -> None:
        """The line from `_line_start` to its LF at stream offset `lf` (`raw`: its bytes, None when it is over
        the limit and dropped); `terminated` False: the stream's last line, ended by the stream's end at `lf`."""
        start = self._line_start
        cr = raw.endswith(b"\r") if raw is not None else self._last_cr and lf > start
        if terminated:
            if cr:
                self._crlf += 1
            else:
                self._lf += 1
        size = lf - start - cr  # (a CR is dropped before the stream's end too: clients' splitlines drop it)
        if raw is None or size > self._limit:  # the line limit: see the class docstring
            self._dropping = False
            self._too_long += 1
            out.append(Notice(kind="line-too-long", message=f"a line of {size} bytes (over the line limit of "
                              f"{self._limit}) was dropped, from byte {start}", offset=start, t=self._t))  # fmt: skip
            return
        if cr:
            raw = raw[:-1]
        if not raw.strip(_WS):
            self._blank += 1
            if self._blank == 1:
                out.append(Notice(kind="blank-line", offset=start, t=self._line_t,
                                  message="a blank line (skipped): a client that decodes every line, as the ollama "
                                  "library does, fails on it"))  # fmt: skip
            return
        text = self._text(raw, start, self._line_t, out)
        if raw[0] not in b"{[" and raw.lstrip(_WS)[:1] not in (b"{", b"["):  # (the usual line: one byte looked at)
            out.append(Notice(kind="not-json-line", message=f"a line that is not a JSON object or array: {raw[:20]!r}",
                              offset=start, t=self._line_t))  # fmt: skip
        if (m := _SPLITLINES.search(raw)) is not None:
            self._split += 1
            if self._split == 1:
                out.append(Notice(kind="splitlines-break", offset=start + m.start(), t=self._line_t,
                                  message=f"a line holds {m.group()!r}, where str.splitlines() (httpx's iter_lines, "
                                  "the ollama library's reader) cuts it in two"))  # fmt: skip
        out.append(self._event(text, start, lf + 1 if terminated else lf, self._line_t))

    def _end(self, out: list[Item]) -> None:
        if not self._pending and not self._dropping:
            return
        raw = None if self._dropping else bytes(self._pending)
        self._pending.clear()
        start, end = self._line_start, self._offset
        if raw is None or raw.strip(_WS):  # (whitespace after the last LF is no line: nothing for a client to read)
            out.append(Notice(kind="unterminated-line", message=f"the stream ended inside a line ({end - start} "
                              "bytes after the last LF); clients still read it", offset=start, t=self._t))  # fmt: skip
        self._line(raw, end, out, terminated=False)


# -- the streamed JSON array -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JSONArrayStats:
    """Counts over the whole stream so far."""

    bytes: int
    items: int
    bom: bool
    invalid_utf8: int
    """Elements that held bytes that are not UTF-8 (decoded with U+FFFD)."""
    too_long: int
    """Elements over the limit, dropped."""
    closed: bool
    """The array's closing `]` came."""


# Where the scanner stops next, by what it is in (each a forward search from where it is: linear at any cut).
_NOT_WS = re.compile(rb"[^ \t\r\n]")
_IN_STRING = re.compile(rb'["\\]')  # a string ends at an unescaped quote; a backslash escapes the next byte
_IN_NESTED = re.compile(rb'[][{}"]')  # inside an object or array: what changes the depth or opens a string
_SCALAR_END = re.compile(rb"[ \t\r\n,\]]")  # a number, true, false or null ends at whitespace, `,` or `]`

# The scanner's places.
_OPEN, _BEFORE, _IN, _AFTER, _DONE, _IGNORE = range(6)
# (before the `[`; before an element; in one; after one; after the `]`; ignoring the rest of the body)


class JSONArrayParser(_Framer):
    """Turns one JSON array, written piece by piece, into an `Event` per top-level element.

    RFC 8259 section 5: `[`, then values separated by `,`, then `]`, with whitespace (space, tab, CR, LF)
    around any of them. Gemini's `:streamGenerateContent` (without `alt=sse`) writes `[`, each response object
    as it comes with a `,` (and line ends) before the next, then `]`: whatever the whitespace, it reads the same.

    Each element's `data` is its text exactly as sent (no re-serialisation), found by a scanner that follows
    depth, strings and escapes (so a `]` or `\\"` in a string ends nothing) without parsing. `start` is its
    first byte and `end` just past its last (the `,` and `]` between elements belong to no item); `t` and
    `chunk` tell when it became whole: an object, array or string with its closing byte, a bare scalar (a
    number, `true`...) with the byte after it. An element of more than `limit` bytes is dropped with an
    "element-too-long" notice; no more than the limit and a chunk of it is held.
    """

    def __init__(self, limit: int = _Framer.LINE_LIMIT) -> None:
        super().__init__(limit)
        self._state = _OPEN
        self._depth = 0  # nesting inside the element being read (0: a string or a scalar at the top)
        self._in_string = False
        self._escape = False  # the last byte was a backslash inside a string: the next one is escaped
        self._scalar = False  # the element is a bare scalar: it ends at the byte after it
        self._parts = bytearray()  # the element's bytes from chunks before this one (none while it is dropped)
        self._start = 0  # stream offset of the element
        self._t_first: float | None = None
        self._too_long = 0
        self._ended = False  # the closing `]` came

    @property
    def stats(self) -> JSONArrayStats:
        return JSONArrayStats(bytes=self._offset + len(self._head or b""), items=self._items, bom=self._bom,
                              invalid_utf8=self._invalid_utf8, too_long=self._too_long,
                              closed=self._ended)  # fmt: skip

    def _scan(self, data: bytes, base: int, out: list[Item]) -> None:
        pos, n = 0, len(data)
        seg = 0  # where the element being read starts in `data` (0: before it, in earlier chunks)
        while pos < n:
            state = self._state
            if state == _IN:
                end = self._element_end(data, pos)
                if end < 0:  # the element goes on into the next chunk
                    break
                self._element(data[seg:end], base + end, out)
                pos = end
                continue
            if state == _IGNORE:
                return
            m = _NOT_WS.search(data, pos)
            if m is None:
                return
            pos = m.start()
            c = data[pos]
            if state == _OPEN:
                if c == 0x5B:  # [
                    self._state = _BEFORE
                    pos += 1
                    continue
                self._state = _IGNORE
                out.append(Notice(kind="not-an-array", offset=base + pos, t=self._t,
                                  message=f"the body opens with {data[pos : pos + 1]!r}, not '[': ignored"))
                return
            if state == _DONE:
                self._state = _IGNORE
                out.append(Notice(kind="trailing-data", offset=base + pos, t=self._t,
                                  message=f"bytes after the array's closing ']' (from {data[pos : pos + 1]!r}): "
                                  "ignored"))  # fmt: skip
                return
            if c == 0x5D and state in (_BEFORE, _AFTER):  # ]: the array ends (an empty one too, or after a ',')
                self._state = _DONE
                self._ended = True
                pos += 1
                continue
            if c == 0x2C and state == _BEFORE:  # `[,` or `,,`: no element between
                out.append(Notice(kind="empty-element", offset=base + pos, t=self._t,
                                  message="a ',' where an element should be: skipped"))  # fmt: skip
                pos += 1
                continue
            if state == _AFTER:
                if c == 0x2C:  # ,
                    self._state = _BEFORE
                    pos += 1
                    continue
                out.append(Notice(kind="missing-comma", offset=base + pos, t=self._t,
                                  message=f"an element followed by {data[pos : pos + 1]!r}, not ',' or ']': read as "
                                  "the start of the next element"))  # fmt: skip
            # An element starts here.
            self._state = _IN
            self._start = base + pos
            self._t_first = self._t
            seg = pos
            self._scalar = c not in b'{["'
            if not self._scalar:
                self._in_string = c == 0x22
                self._depth = 0 if self._in_string else 1
                pos += 1
        if self._state == _IN:  # the element goes on: keep its bytes of this chunk, unless it is over the limit
            size = base + n - self._start
            if size > self._limit:
                self._parts.clear()
            else:
                self._parts += data[seg:]

    def _element_end(self, data: bytes, pos: int) -> int:
        """Where in `data` (from `pos`, inside an element) the element ends (just past its last byte), or -1:
        not in `data` (the scanner's state then says where it is for the next chunk)."""
        n = len(data)
        if self._scalar:
            m = _SCALAR_END.search(data, pos)
            return m.start() if m else -1
        while pos < n:
            if self._in_string:
                if self._escape:  # the byte after a backslash that ended the last chunk
                    self._escape = False
                    pos += 1
                    continue
                m = _IN_STRING.search(data, pos)
                if m is None:
                    return -1
                pos = m.end()
                if data[m.start()] == 0x5C:  # \: the next byte is escaped (it may be in the next chunk)
                    if pos == n:
                        self._escape = True
                        return -1
                    pos += 1
                    continue
                self._in_string = False
                if self._depth == 0:  # a string element
                    return pos
                continue
            m = _IN_NESTED.search(data, pos)
            if m is None:
                return -1
            pos = m.end()
            c = data[m.start()]
            if c == 0x22:
                self._in_string = True
            elif c in b"[{":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    return pos
        return -1

    def _element(self, tail: bytes, end: int, out: list[Item]) -> None:
        """The element from `_start` to `end` is whole; `tail` is its bytes in this chunk."""
        self._state = _AFTER
        start = self._start
        size = end - start
        if size > self._limit:  # see the class docstring
            self._parts.clear()
            self._too_long += 1
            out.append(Notice(kind="element-too-long", message=f"an element of {size} bytes (over the limit of "
                              f"{self._limit}) was dropped, from byte {start}", offset=start, t=self._t))  # fmt: skip
            return
        if self._parts:
            self._parts += tail
            raw = bytes(self._parts)
            self._parts.clear()
        else:
            raw = tail
        out.append(self._event(self._text(raw, start, self._t_first, out), start, end, self._t_first))

    def _end(self, out: list[Item]) -> None:
        state = self._state
        if state in (_DONE, _IGNORE):
            return
        if state == _OPEN:
            out.append(Notice(kind="not-an-array", message="the body is empty (or whitespace): no array",
                              offset=self._offset, t=self._t))  # fmt: skip
            return
        # An element not whole is no item; nor is a bare scalar, whole only at the byte after it (`12` may be `123`).
        what = "inside an element" if state == _IN else "before the closing ']'"
        out.append(Notice(kind="unterminated-array", message=f"the stream ended {what}: the array is not closed",
                          offset=self._start if state == _IN else self._offset, t=self._t))  # fmt: skip
        self._parts.clear()


# -- which framing --------------------------------------------------------------------------------------------

FRAMINGS = ("sse", "ndjson", "json-array", "eventstream")
"""What `sniff_framing` tells apart: the framer each needs."""

_BY_TYPE = {
    "text/event-stream": "sse",
    "application/x-ndjson": "ndjson",  # Ollama's native API
    "application/ndjson": "ndjson",
    "application/jsonl": "ndjson",
    "application/json-lines": "ndjson",
    "application/jsonlines": "ndjson",
    "application/x-jsonlines": "ndjson",
    "application/vnd.amazon.eventstream": "eventstream",  # AWS Bedrock's response streams
}


def framing_by_type(content_type: str | None) -> str | None:
    """The framing a Content-Type names (its media type, parameters and case aside), or None when it names
    no stream format (`application/json`, `text/plain`, none): then the bytes tell (`sniff_framing`)."""
    if not content_type:
        return None
    return _BY_TYPE.get(content_type.split(";", 1)[0].strip().lower())


def sniff_framing(content_type: str | None, head: bytes) -> str:
    """Which framing a body uses, one of `FRAMINGS`, from its Content-Type and its first bytes `head`.

    The Content-Type decides when it names a streaming format (its media type, parameters and case aside):
    `text/event-stream` is "sse"; `application/x-ndjson`, `application/ndjson`, `application/jsonl`,
    `application/json-lines`, `application/jsonlines` and `application/x-jsonlines` are "ndjson";
    `application/vnd.amazon.eventstream` is "eventstream". Any other (`application/json` as Gemini sends
    with its array, `text/plain`, none) leaves it to the bytes:

    1. an AWS event stream prelude (`_eventstream`): 12 bytes, a total length (big-endian) from the smallest
       message (16 bytes) to the longest a service may send (`MESSAGE_LIMIT`), a headers length of at most
       128 KiB that fits inside it, and the prelude's CRC32 (of the first 8 bytes) in bytes 8-11 -> "eventstream";
    2. after a UTF-8 BOM and JSON whitespace: `[` -> "json-array"; `{` -> "ndjson" (a single JSON object is
       one line of it);
    3. anything else -> "sse": a line opening with an SSE field (`data:`, `event:`, `id:`, `retry:`) or a
       comment (`:`), and bytes that say nothing (an empty head too), which the event-stream parser, the
       tool's own, reads and reports on.
    """
    framing = framing_by_type(content_type)
    if framing is not None:
        return framing
    if len(head) >= 12:
        total, headers, crc = struct.unpack(">III", head[:12])
        sane = SMALLEST <= total <= MESSAGE_LIMIT and headers <= min(HEADERS_LIMIT, total - SMALLEST)
        if sane and zlib.crc32(head[:8]) == crc:
            return "eventstream"
    text = head.removeprefix(_BOM).lstrip(_WS)
    if text.startswith(b"["):
        return "json-array"
    if text.startswith(b"{"):
        return "ndjson"
    return "sse"
