"""The values the parser emits: `Event`, `Comment` and `Notice`.

All three are immutable: a parser hands them out and nobody changes them afterwards.
Offsets count bytes of the (content-decoded) response body from 0; times are the
arrival times given to `EventStreamParser.feed`, in seconds, or None when untimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Comment", "Event", "Notice"]


class Event(NamedTuple):
    """One dispatched event, with where and when it came from.

    A named tuple rather than a frozen dataclass: one is made per event on the parser's hot
    path, and a tuple is made several times faster. Fields:

    - `index`: position among the dispatched events of the stream, from 0;
    - `type`: the `event:` field, or "message" when the event had none;
    - `data`: the `data:` lines joined with LF (the trailing LF removed, as the spec says);
    - `id`: the last event ID in effect at dispatch ("" when none was ever set);
    - `retry`: the reconnection time in ms in effect at dispatch, or None when never set;
    - `start`: offset of the event's first field line;
    - `end`: offset just past the character that ended the blank line (for CRLF: past the CR);
    - `t_first`: arrival time of the event's first byte (of the stream's BOM, for a first event behind one);
    - `t`: arrival time of the byte that completed the event (when a client could see it);
    - `chunk`: index of the chunk that completed the event.
    """

    index: int  # type: ignore[assignment]  # a field named as tuple.index: the issue's JSON key
    type: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None
    start: int = 0
    end: int = 0
    t_first: float | None = None
    t: float | None = None
    chunk: int = 0

    def __repr__(self) -> str:
        data = self.data if len(self.data) <= 40 else self.data[:37] + "..."
        return f"<Event #{self.index} {self.type!r} data={data!r} @{self.start}:{self.end} t={self.t}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment:
    """A comment line (`: text`): ignored by clients, used by servers as a keep-alive."""

    text: str
    """The line after its colon (a leading space is kept, exactly as sent)."""
    offset: int
    t: float | None = None
    """Arrival time of the byte that completed the line."""
    chunk: int = 0
    """Index of the chunk that completed the line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """Something legal but noteworthy the parser saw: what a client may mishandle.

    Kinds: "bom", "line-ending" (first lone CR or CRLF line end), "invalid-utf8",
    "ignored-field", "invalid-id", "invalid-retry", "unterminated-event", "line-too-long" (a line over
    the parser's line limit, dropped), "event-too-long" (an event whose data is over that limit, dropped).
    Decoding the body adds "decode-error" (it stops decoding) and "decode-bomb" (it expands past the bomb
    ratio: decoding stopped).
    """

    kind: str
    message: str
    offset: int
    t: float | None = None
