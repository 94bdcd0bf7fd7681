"""One framer for any body: the framing told by the Content-Type, or by the first bytes when it says nothing.

LLM token streams come in four framings (`_ndjson.FRAMINGS`): SSE (`_parser.EventStreamParser`), NDJSON and
the streamed JSON array (`_ndjson`), the AWS event stream (`_eventstream`). Each framer emits `Event` items, so
everything above (the dialects, the analysis, the checks, the replays) reads them all the same way; this
module picks the one a body needs.

    framer = BodyFramer(content_type="application/x-ndjson")   # or None: the first bytes tell
    items = [x for chunk in chunks for x in framer.feed(chunk.data, chunk.t)] + framer.close()
    framer.framing    # "ndjson"

Sans-I/O, with the framers' contract (feed, feed_block, feed_iter, close; any cut gives the same items).
When the Content-Type names no stream format, `sniff_framing` reads the first bytes, and a body's first
chunks wait until they tell: an AWS event stream's first byte is 0x00 or 0x01 (its total length, big-endian,
is at most 24 MiB and some), so any other first byte rules it out and the first byte after a BOM and JSON
whitespace tells the rest; a body opening with 0x00 or 0x01 waits for its 12-byte prelude. The held chunks
are then fed to the framer one by one, with their own times, so nothing is lost or re-timed: only the
items they completed come back from a later call. At most `SNIFF_LIMIT` bytes wait (a body of nothing but
whitespace that long is read as SSE).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from ._eventstream import EventStreamFrameParser
from ._linebuffer import Item
from ._ndjson import _BOM, _WS, JSONArrayParser, NDJSONParser, framing_by_type, sniff_framing
from ._parser import EventStreamParser, ParseStats

__all__ = ["SNIFF_LIMIT", "UNTERMINATED", "BodyFramer", "Framer", "new_framer", "tell_framing"]

SNIFF_LIMIT = 65536
"""The most bytes that wait for the framing to be told from them."""

UNTERMINATED = frozenset({"unterminated-event", "unterminated-line", "unterminated-array", "unterminated-frame"})
"""The notices by which each framer says the body ended inside an item."""


class Framer(Protocol):
    """What every framer does (`EventStreamParser`, `NDJSONParser`, `JSONArrayParser`, `EventStreamFrameParser`)."""

    def feed(self, data: bytes, t: float | None = None) -> list[Item]: ...

    def feed_block(self, datas: Sequence[bytes], ts: Sequence[float | None]) -> list[list[Item]]: ...

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]: ...

    def close(self) -> list[Item]: ...


def new_framer(framing: str) -> Framer:
    """A new framer for `framing`, one of `_ndjson.FRAMINGS` ("sse", "ndjson", "json-array", "eventstream")."""
    if framing == "ndjson":
        return NDJSONParser()
    if framing == "json-array":
        return JSONArrayParser()
    if framing == "eventstream":
        return EventStreamFrameParser()
    if framing == "sse":
        return EventStreamParser()
    raise ValueError(f"unknown framing {framing!r}")


def tell_framing(content_type: str | None, datas: Iterable[bytes]) -> str:
    """The framing of a body whose chunks are `datas`: the Content-Type's, or what its first bytes tell (read
    as far as they need to, at most `SNIFF_LIMIT` of them)."""
    framing = framing_by_type(content_type)
    if framing is not None:
        return framing
    head = b""
    for data in datas:
        head += data[:SNIFF_LIMIT]
        framing = _told(head)
        if framing is not None:
            return framing
    return sniff_framing(None, head)


class BodyFramer:
    """The framer a body needs, chosen from `content_type` or (when it names no stream format) the first bytes.

    `framing` is None until told (at the first bytes that tell, at the latest at `close`); `stats` gives the
    counts every framer keeps, as `ParseStats` (comments and lone CRs are SSE's alone: 0 elsewhere).
    """

    def __init__(self, content_type: str | None = None, *, framing: str | None = None) -> None:
        self.framing: str | None = framing or framing_by_type(content_type)
        self.framer: Framer | None = None if self.framing is None else new_framer(self.framing)
        self._held: list[tuple[bytes, float | None]] = []
        self._head = b""  # the held bytes, joined (at most SNIFF_LIMIT and a chunk of them)
        self._closed = False

    @property
    def stats(self) -> ParseStats:
        framer = self.framer
        if isinstance(framer, EventStreamParser):
            return framer.stats
        if isinstance(framer, NDJSONParser):
            s = framer.stats
            return ParseStats(bytes=s.bytes, events=s.items, comments=0, lf=s.lf, crlf=s.crlf, cr=0, bom=s.bom,
                              invalid_utf8=s.invalid_utf8)  # fmt: skip
        if isinstance(framer, JSONArrayParser):
            a = framer.stats
            return ParseStats(bytes=a.bytes, events=a.items, comments=0, lf=0, crlf=0, cr=0, bom=a.bom,
                              invalid_utf8=a.invalid_utf8)  # fmt: skip
        if isinstance(framer, EventStreamFrameParser):
            return ParseStats(bytes=framer.bytes_fed, events=framer.messages, comments=0, lf=0, crlf=0, cr=0,
                              bom=False, invalid_utf8=0)  # fmt: skip
        return ParseStats(bytes=len(self._head), events=0, comments=0, lf=0, crlf=0, cr=0, bom=False, invalid_utf8=0)

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        """Take the next chunk of the body, which arrived at time `t`; return what it completed."""
        if self.framer is not None:
            return self.framer.feed(data, t)
        if self._closed:
            raise RuntimeError("feed() after close(): this framer's stream has ended")
        self._held.append((data, t))
        self._head += data
        framing = _told(self._head)
        if framing is None:
            return []
        return self._start(framing)

    def feed_block(self, datas: Sequence[bytes], ts: Sequence[float | None]) -> list[list[Item]]:
        """`[self.feed(data, t) for data, t in zip(datas, ts)]`, a block at once once the framer is known."""
        if self.framer is not None:
            return self.framer.feed_block(datas, ts)
        return [self.feed(data, t) for data, t in zip(datas, ts, strict=True)]

    def feed_iter(self, data: bytes, t: float | None = None) -> Iterator[Item]:
        """The items `feed(data, t)` returns, made a piece at a time (the framer's own `feed_iter`)."""
        if self.framer is not None:
            yield from self.framer.feed_iter(data, t)
            return
        yield from self.feed(data, t)

    def close(self) -> list[Item]:
        """End of stream: the framing is told by what came (SSE for an empty body), and the framer closed."""
        if self.framer is None:
            if self._closed:
                return []
            items = self._start(sniff_framing(None, self._head))
            self._closed = True
            assert self.framer is not None
            return items + self.framer.close()
        self._closed = True
        return self.framer.close()

    def _start(self, framing: str) -> list[Item]:
        """Make the framer for `framing` and feed it the held chunks, each with its own time."""
        self.framing = framing
        framer = self.framer = new_framer(framing)
        held, self._held, self._head = self._held, [], b""
        return [item for data, t in held for item in framer.feed(data, t)]


def _told(head: bytes) -> str | None:
    """The framing the body's first bytes `head` tell, or None while they cannot yet (see the module's docstring)."""
    if len(head) >= SNIFF_LIMIT:
        return sniff_framing(None, head)
    if head[:1] in (b"\x00", b"\x01"):  # perhaps an event stream's prelude: it takes 12 bytes to tell
        return sniff_framing(None, head) if len(head) >= 12 else None
    text = head
    if _BOM.startswith(text[:3]) and len(text) < 3:
        return None  # a BOM's first bytes, or nothing yet
    text = text.removeprefix(_BOM).lstrip(_WS)
    return sniff_framing(None, head) if text else None
