"""The values the parser emits: `Event`, `Comment` and `Notice`.

All three are frozen: a parser hands them out and nobody changes them afterwards.
Offsets count bytes of the (content-decoded) response body from 0; times are the
arrival times given to `EventStreamParser.feed`, in seconds, or None when untimed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Comment", "Event", "Notice"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One dispatched event, with where and when it came from."""

    index: int
    """Position among the dispatched events of the stream, from 0."""
    type: str = "message"
    """The `event:` field, or "message" when the event had none."""
    data: str = ""
    """The `data:` lines joined with LF (the trailing LF removed, as the spec says)."""
    id: str = ""
    """The last event ID in effect at dispatch ("" when none was ever set)."""
    retry: int | None = None
    """The reconnection time in ms in effect at dispatch, or None when never set."""
    start: int = 0
    """Offset of the event's first field line."""
    end: int = 0
    """Offset just past the character that ended the blank line (for CRLF: past the CR)."""
    t_first: float | None = None
    """Arrival time of the event's first byte."""
    t: float | None = None
    """Arrival time of the byte that completed the event (when a client could see it)."""
    chunk: int = 0
    """Index of the chunk that completed the event."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """Something legal but noteworthy the parser saw: what a client may mishandle.

    Kinds: "bom", "line-ending" (first lone CR or CRLF line end), "invalid-utf8",
    "ignored-field", "invalid-id", "invalid-retry", "unterminated-event".
    """

    kind: str
    message: str
    offset: int
    t: float | None = None
