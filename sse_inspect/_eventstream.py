"""The AWS event stream framing (`application/vnd.amazon.eventstream`): bytes in, messages out as events.

Bedrock's `ConverseStream` and `InvokeModelWithResponseStream` (and Transcribe, Kinesis, S3 Select) send
their responses as binary messages. The format, as the Smithy "Amazon Event Stream Specification"
(https://smithy.io/2.0/aws/amazon-eventstream.html), the S3 Select appendix
(https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html) and Transcribe's
(https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html) describe it, all integers big-endian:

    message  = prelude headers payload message-crc
    prelude  = total-length:u32 headers-length:u32 prelude-crc:u32     (the CRC32 of the first 8 bytes)
    headers  = header*                                                  (headers-length bytes of them)
    header   = name-length:u8 name:utf8 value-type:u8 value
    payload  = the bytes up to the message CRC (total-length - headers-length - 16 of them)
    message-crc = u32, the CRC32 of every byte of the message before it

    value-type  value
    0 true      (no bytes)               5 long        i64
    1 false     (no bytes)               6 byte array  u16 length, then the bytes
    2 byte      i8                       7 string      u16 length, then UTF-8
    3 short     i16                      8 timestamp   i64, milliseconds since the epoch
    4 integer   i32                      9 uuid        16 bytes

The CRC is CRC32 as gzip and zlib compute it (`zlib.crc32`); a timestamp is read signed, as botocore
and the specification's `int64 millis_since_epoch` read it. Three headers say what a message is
(`:message-type`): an `event` named by `:event-type`, an `exception` named by `:exception-type` (the
service's modelled error, its payload the error's body), or an `error` (`:error-code`, `:error-message`).

Sans-I/O, with the same contract as `EventStreamParser`: the caller feeds chunks with their arrival times
and closes the stream at its end; any cut of the same bytes gives the same items (only `t`, `t_first` and
`chunk` follow the cuts); content never raises.

    p = EventStreamFrameParser()
    items = [x for chunk in capture.chunks for x in p.feed(chunk.data, chunk.t)] + p.close()

An item per message: an `Event` (so that the dialects' readers, which take events and JSON-decode their
`data`, read these streams as they read SSE ones) with

- `type`: for an event, its `:event-type` (Bedrock's `messageStart`, `contentBlockDelta`, `messageStop`,
  `metadata`, `chunk`, ...); for an exception, its `:exception-type` (`throttlingException`,
  `modelStreamErrorException`, ...); for an error, "error", so that the readers' rule that an event named
  `error` is an in-band error applies; "message" (SSE's default) when the header is missing. A message
  with no `:message-type`, or another one, is read as an event, as botocore reads it;
- `data`: the payload as UTF-8 text (JSON in Bedrock); for an error, the JSON object
  `{"code": <:error-code>, "message": <:error-message>}` (null where a header is missing);
- `start`/`end`: the offsets of the message's first byte and just past its CRC; `t_first`/`t` when its
  first and last byte came; `chunk` the chunk that completed it; `id` "" and `retry` None.

Every message's headers are kept, as a dict of plain values as botocore gives them (bool, int, bytes, str;
a timestamp as its int milliseconds, a uuid as its 16 bytes), for the last `keep_headers` messages:
`headers_of(event.index)` (`last_headers` for the last one). A header sent twice keeps its last value.

Notices (`Notice.kind`), what a client may mishandle:

- "bad-prelude-crc": a prelude whose CRC does not match: the lengths cannot be trusted, so framing is
  lost; one notice, and the rest of the body is not read as messages (botocore raises ChecksumMismatch).
- "bad-length": a prelude (its CRC right) whose total length is under 16 bytes or whose headers run past
  the payload's end: framing is lost, as above.
- "message-too-long": a message longer than `message_limit`, or with more than 128 KiB of headers. By
  default the limit is the largest message the specification lets a service send (24 MiB of payload, 128
  KiB of headers: "Services MUST validate these additional size restrictions. Clients MUST NOT validate
  them."), so no legal stream meets it: it is here for bounded memory, as the SSE parser's line limit is.
  The message is dropped, not held: its bytes are skipped, its CRC is not checked, and the messages after
  it are read (its length is trusted: its prelude's CRC was right). botocore raises InvalidPayloadLength
  past 24 MiB of payload and InvalidHeadersLength past 128 KiB of headers; botocore releases before 2025
  (boto/botocore#3371) and the other SDKs of then raised past 16 MiB, the limit of that time.
- "bad-message-crc": a message whose CRC does not match: still an item (what a client that does not
  check would read), the notice at its `start` flags it. The specification: "If either checksum is
  invalid, the stream MUST be terminated"; botocore raises ChecksumMismatch.
- "bad-header": a header whose value type is unknown or whose value runs past the headers' end, or a
  header past the 1000th (`_limits.MAX_HEADERS`: a real message has three or four): the message's headers
  stop there (the message is still an item).
- "duplicate-header": a header name sent twice in a message ("Any given header name MUST only appear
  once in a message"; botocore raises DuplicateHeader); one notice a message, at the first.
- "invalid-utf8": a payload, header name or string value that is not UTF-8 (read with U+FFFD).
- "unterminated-frame": at close, the body ended inside a message (it is not an item).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

from ._events import Event, Notice
from ._limits import MAX_HEADERS
from ._linebuffer import Item

__all__ = [
    "BOOL_FALSE", "BOOL_TRUE", "BYTE", "BYTE_ARRAY", "HEADERS_LIMIT", "INTEGER", "LONG", "MESSAGE_LIMIT", "SHORT",
    "STRING", "TIMESTAMP", "UUID", "EventStreamFrameParser", "HeaderValue", "Typed", "encode_message",
]  # fmt: skip

HeaderValue = bool | int | bytes | str
"""A header's value as the parser gives it (botocore's Python values)."""

# Value types (the specification's `header_value_type`).
BOOL_TRUE, BOOL_FALSE, BYTE, SHORT, INTEGER, LONG, BYTE_ARRAY, STRING, TIMESTAMP, UUID = range(10)

PRELUDE = 12
"""total-length, headers-length, prelude CRC: 4 bytes each."""
CRC = 4
SMALLEST = PRELUDE + CRC
"""A message with no headers and no payload: 16 bytes."""

HEADERS_LIMIT = 128 << 10
"""The most bytes of headers a message may have: one with more is dropped ("message-too-long")."""

MESSAGE_LIMIT = PRELUDE + HEADERS_LIMIT + (24 << 20) + CRC
"""The default `message_limit`: the longest message the specification lets a service send ("The payload
of a message MUST NOT exceed 25,165,824 bytes (24 MB). The encoded headers of a message MUST NOT exceed
131,072 bytes (128 kB)."), as botocore's `_MAX_PAYLOAD_LENGTH` and `_MAX_HEADERS_LENGTH` have it since
boto/botocore#3438 (2025; 16 MiB of payload until boto/botocore#3371 removed that cap)."""

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_FIXED = {BYTE: struct.Struct(">b"), SHORT: struct.Struct(">h"), INTEGER: struct.Struct(">i"),
          LONG: struct.Struct(">q"), TIMESTAMP: struct.Struct(">q")}  # fmt: skip
_U16 = struct.Struct(">H")


class EventStreamFrameParser:
    """Turns the bytes of one `application/vnd.amazon.eventstream` body into events and notices.

    `message_limit`: a message longer than this many bytes is dropped with a "message-too-long" notice,
    its bytes skipped, never held. `keep_headers`: how many of the last messages' headers `headers_of`
    keeps.
    """

    PIECE = 65536
    """`feed_iter` feeds a big buffer in pieces of this many bytes."""

    def __init__(self, message_limit: int = MESSAGE_LIMIT, keep_headers: int = 64) -> None:
        self._limit = max(message_limit, SMALLEST)
        self._keep = max(keep_headers, 1)
        self._parts: list[bytes] = []  # the bytes of the message not yet whole, as they came
        self._have = 0  # their length
        self._need = PRELUDE  # bytes from `_offset` needed to read on: the prelude, then the whole message
        self._offset = 0  # body offset of the first byte of `_parts`: the next message's first byte
        self._t_first: float | None = None  # when that byte came
        self._skip = 0  # bytes still to skip of a message over the limit
        self._dropped = 0  # the offset of that message
        self._lost = False  # framing lost: the rest of the body is not read
        self._headers: dict[int, dict[str, HeaderValue]] = {}
        self._events = 0
        self._chunk = -1
        self._t: float | None = None
        self._closed = False

    # -- the API ----------------------------------------------------------------------------------------

    @property
    def last_headers(self) -> dict[str, HeaderValue] | None:
        """The headers of the last message made an item, or None before the first."""
        return self._headers.get(self._events - 1)

    def headers_of(self, index: int) -> dict[str, HeaderValue] | None:
        """The headers of the message that became event `index`, or None when it is not one of the last
        `keep_headers` (or no such event was made)."""
        return self._headers.get(index)

    @property
    def messages(self) -> int:
        """Messages made items so far."""
        return self._events

    @property
    def bytes_fed(self) -> int:
        """Bytes fed so far."""
        return self._offset + self._have

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        """Take the next chunk of the body, which arrived at time `t`; return what it completed."""
        if self._closed:
            raise RuntimeError("feed() after close(): this parser's stream has ended")
        self._chunk += 1
        self._t = t
        out: list[Item] = []
        if self._skip:  # inside a message over the limit: its bytes go by unheld
            n = min(self._skip, len(data))
            self._skip -= n
            self._offset += n
            data = data[n:]
        if self._lost:
            self._offset += len(data)
            return out
        if not data:
            return out
        if not self._have:
            self._t_first = t  # the next message's first byte
        self._parts.append(data)
        self._have += len(data)
        if self._have < self._need:  # not yet a prelude, or not yet the whole message: wait, joining nothing
            return out
        buf = b"".join(self._parts)
        fresh = len(buf) - len(data)  # the bytes from here on came with this chunk
        pos = self._messages(buf, fresh, out)
        # Keep the start of the next message. If it began in an earlier chunk, no message ended in this one
        # and `_t_first` is still its time.
        rest = buf[pos:]
        self._offset += pos
        self._parts = [rest] if rest else []
        self._have = len(rest)
        if rest and pos >= fresh:
            self._t_first = t
        return out

    def feed_block(self, datas: Sequence[bytes], ts: Sequence[float | None]) -> list[list[Item]]:
        """`[self.feed(data, t) for data, t in zip(datas, ts)]`: the items each chunk completed."""
        return list(map(self.feed, datas, ts))

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]:
        """The items `feed(data, t)` returns, made as they are taken: for a big `data` such as a whole body.

        `data` goes through `feed` in pieces of `PIECE` bytes, all of them one chunk that arrived at `t`, so
        that only a piece's items are alive at a time. Take them all before the next call."""
        piece = self.PIECE
        if len(data) <= piece:
            yield from self.feed(data, t)
            return
        for pos in range(0, len(data), piece):
            if pos:
                self._chunk -= 1  # the next piece is the same chunk
            yield from self.feed(data[pos : pos + piece], t)

    def close(self) -> list[Item]:
        """End of stream: a message cut short is reported, not made an item."""
        if self._closed:
            return []
        self._closed = True
        if self._lost or not (self._have or self._skip):
            return []
        if self._skip:  # inside a message over the limit, already reported
            at, came = self._dropped, self._offset - self._dropped
        else:
            at, came = self._offset, self._have
        return [Notice(kind="unterminated-frame", message=f"the stream ended inside a message ({came} bytes of "
                       "it came): clients discard it", offset=at, t=self._t)]

    # -- the format's rules -------------------------------------------------------------------------------

    def _messages(self, buf: bytes, fresh: int, out: list[Item]) -> int:
        """Read the whole messages of `buf` (from body offset `_offset`; the bytes from `fresh` on came with
        this chunk) into `out`; return where the first one not whole starts, with `_need` set for it."""
        pos = 0
        end = len(buf)
        view = memoryview(buf)
        while end - pos >= PRELUDE:
            total, headers_length, prelude_crc = _PRELUDE.unpack_from(buf, pos)
            at = self._offset + pos
            if zlib.crc32(view[pos : pos + 8]) != prelude_crc:
                self._framing_lost(at, "bad-prelude-crc", f"a prelude whose CRC does not match: framing is lost "
                                   f"from byte {at} ({buf[pos : pos + PRELUDE]!r})", out)
                return end
            if total < SMALLEST or headers_length > total - SMALLEST:
                self._framing_lost(at, "bad-length", f"a prelude of total length {total} with {headers_length} "
                                   f"bytes of headers: framing is lost from byte {at}", out)
                return end
            if total > self._limit or headers_length > HEADERS_LIMIT:
                what = (f"{total} bytes (over the limit of {self._limit})" if total > self._limit else
                        f"{headers_length} bytes of headers (over the limit of {HEADERS_LIMIT})")  # fmt: skip
                out.append(Notice(kind="message-too-long", message=f"a message of {what} was dropped, from byte {at}",
                                  offset=at, t=self._t))
                if end - pos < total:  # skip the rest of it as it comes
                    self._skip = total - (end - pos)
                    self._dropped = at
                    self._need = PRELUDE
                    return end
                pos += total
                continue
            if end - pos < total:
                self._need = total
                return pos
            began = self._t_first if pos < fresh else self._t
            self._message(view[pos : pos + total], at, began, out)
            pos += total
        self._need = PRELUDE
        return pos

    def _framing_lost(self, at: int, kind: str, message: str, out: list[Item]) -> None:
        out.append(Notice(kind=kind, message=message + ": the rest of the body is not read", offset=at, t=self._t))
        self._lost = True

    def _message(self, msg: memoryview, at: int, began: float | None, out: list[Item]) -> None:
        """One whole message at body offset `at`, whose first byte came at `began`: an event."""
        total = len(msg)
        headers_length = _U32.unpack_from(msg, 4)[0]
        if zlib.crc32(msg[: total - CRC]) != _U32.unpack_from(msg, total - CRC)[0]:
            out.append(Notice(kind="bad-message-crc", message=f"a message whose CRC does not match, from byte {at} "
                              "(read as sent; clients that check reject it)", offset=at, t=self._t))
        headers = self._read_headers(msg[PRELUDE : PRELUDE + headers_length], at + PRELUDE, out)
        payload_at = PRELUDE + headers_length
        data = _text(msg[payload_at : total - CRC], at + payload_at, "payload", out, self._t)
        message_type = headers.get(":message-type")
        if message_type == "error":
            code, text = headers.get(":error-code"), headers.get(":error-message")
            data = json.dumps({"code": code if isinstance(code, str) else None,
                               "message": text if isinstance(text, str) else None})  # fmt: skip
            name: HeaderValue | None = "error"
        elif message_type == "exception":
            name = headers.get(":exception-type")
        else:
            name = headers.get(":event-type")
        index = self._events
        out.append(Event(index, name if isinstance(name, str) and name else "message", data, "", None, at, at + total,
                         began, self._t, self._chunk))  # fmt: skip
        self._events += 1
        self._headers[index] = headers
        self._headers.pop(index - self._keep, None)

    def _read_headers(self, raw: memoryview, at: int, out: list[Item]) -> dict[str, HeaderValue]:
        """The headers of a message, `raw` at body offset `at` (the specification's `header` rule, repeated)."""
        headers: dict[str, HeaderValue] = {}
        pos, end = 0, len(raw)
        duplicate = False
        count = 0
        while pos < end:
            start = pos
            count += 1
            if count > MAX_HEADERS:  # bounded: a hostile 128 KiB of headers would be ~40,000 of them
                self._bad_header(at + start, f"comes after {MAX_HEADERS} of them", out)
                break
            name_end = pos + 1 + raw[pos]
            if name_end + 1 > end:
                self._bad_header(at + start, "runs past the headers' end", out)
                break
            name = _text(raw[pos + 1 : name_end], at + pos + 1, "header name", out, self._t)
            kind = raw[name_end]
            pos = name_end + 1
            value: HeaderValue
            if kind == BOOL_TRUE or kind == BOOL_FALSE:  # the value is the type: no bytes
                value = kind == BOOL_TRUE
            elif kind in _FIXED:
                fixed = _FIXED[kind]
                if pos + fixed.size > end:
                    self._bad_header(at + start, "runs past the headers' end", out)
                    break
                value = fixed.unpack_from(raw, pos)[0]
                pos += fixed.size
            elif kind == BYTE_ARRAY or kind == STRING:
                if pos + 2 > end or pos + 2 + _U16.unpack_from(raw, pos)[0] > end:
                    self._bad_header(at + start, "runs past the headers' end", out)
                    break
                size = _U16.unpack_from(raw, pos)[0]
                value = raw[pos + 2 : pos + 2 + size].tobytes()
                if kind == STRING:
                    value = _text(raw[pos + 2 : pos + 2 + size], at + pos + 2, "header value", out, self._t)
                pos += 2 + size
            elif kind == UUID:
                if pos + 16 > end:
                    self._bad_header(at + start, "runs past the headers' end", out)
                    break
                value = raw[pos : pos + 16].tobytes()
                pos += 16
            else:
                self._bad_header(at + start, f"has the unknown value type {kind}", out)
                break
            if name in headers and not duplicate:
                duplicate = True
                out.append(Notice(kind="duplicate-header", message=f"the header {name[:40]!r} is sent twice in a "
                                  f"message (the last value is kept)", offset=at + start, t=self._t))
            headers[name] = value
        return headers

    def _bad_header(self, at: int, why: str, out: list[Item]) -> None:
        out.append(Notice(kind="bad-header", message=f"a header that {why}, at byte {at}: the message's headers stop "
                          "there", offset=at, t=self._t))


def _text(raw: memoryview, at: int, what: str, out: list[Item], t: float | None) -> str:
    """`raw` decoded as UTF-8; bytes that are not are read as U+FFFD, with a notice."""
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        out.append(Notice(kind="invalid-utf8", message=f"a {what} with bytes that are not UTF-8 (read as U+FFFD): "
                          f"{raw[exc.start : exc.start + 8].tobytes()!r}", offset=at + exc.start, t=t))
        return str(raw, "utf-8", "replace")


# -- the encoder: messages for tests and fixtures ----------------------------------------------------------


class Typed(NamedTuple):
    """A header value with its value type given: `Typed(LONG, 5)`, `Typed(TIMESTAMP, ms)`, `Typed(UUID, b16)`,
    `Typed(BYTE, -1)`. (`encode_message` types plain values itself.)"""

    type: int
    value: HeaderValue


def encode_message(headers: Mapping[str, HeaderValue | Typed] | Iterable[tuple[str, HeaderValue | Typed]],
                   payload: bytes = b"") -> bytes:  # fmt: skip
    """One message, as the specification lays it out: the headers in their order, then `payload`.

    A plain value's type: bool true/false, int integer (i32), str string, bytes byte array; any other type
    through `Typed`. Names may be repeated in the pair form (to make a "duplicate-header" case). Raises
    ValueError for what the format cannot hold (a name over 255 bytes, a value over 65535, an int out of its
    type's range), TypeError for a value of the wrong type: it makes fixtures, it does not read content."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    raw = b"".join(_header(name, value) for name, value in pairs)
    total = PRELUDE + len(raw) + len(payload) + CRC
    prelude = struct.pack(">II", total, len(raw))
    message = prelude + _U32.pack(zlib.crc32(prelude)) + raw + payload
    return message + _U32.pack(zlib.crc32(message))


def _header(name: str, value: HeaderValue | Typed) -> bytes:
    if not isinstance(value, Typed):
        if isinstance(value, bool):
            value = Typed(BOOL_TRUE if value else BOOL_FALSE, value)
        elif isinstance(value, int):
            value = Typed(INTEGER, value)
        elif isinstance(value, str):
            value = Typed(STRING, value)
        else:
            value = Typed(BYTE_ARRAY, value)
    kind, v = value
    key = name.encode()
    if len(key) > 255:
        raise ValueError(f"a header name of {len(key)} bytes: at most 255")
    try:
        if kind in (BOOL_TRUE, BOOL_FALSE):
            body = b""
        elif kind in _FIXED:
            body = _FIXED[kind].pack(v)
        elif kind in (BYTE_ARRAY, STRING):
            body = v.encode() if isinstance(v, str) else _bytes(v)
            body = _U16.pack(len(body)) + body
        elif kind == UUID:
            body = _bytes(v)
            if len(body) != 16:
                raise ValueError(f"a uuid of {len(body)} bytes: it is 16")
        else:
            raise ValueError(f"no value type {kind}")
    except struct.error as exc:
        raise ValueError(f"header {name!r}: {exc}") from None
    return bytes([len(key)]) + key + bytes([kind]) + body


def _bytes(value: HeaderValue) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"bytes expected, not {type(value).__name__}")
    return value
