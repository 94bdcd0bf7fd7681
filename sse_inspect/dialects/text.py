"""Text streams: an application's own stream of answer text, the shape most apps put in front of a model.

The tutorial app reads a provider's stream and yields each delta as `data: <delta>`, often ending
with a `data: [DONE]` it forwards; others wrap each piece in a small JSON object of their own
(`{"content": ...}`, `{"token": ...}`, Ollama's `{"response": ...}`) or send it as a JSON string.
What such a client shows is the pieces one after another, so that is the answer. docs/dialects.md
says how a stream is claimed as text, and why the pieces are joined with nothing between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from .._fastjson import loads
from ._accumulate import DONE
from ._answer import Answer
from ._base import Dialect, Reader
from ._detect import SHAPE, payloads

__all__ = ["JSON_PAYLOADS", "PLAIN_PAYLOADS", "TEXT_FIELDS", "Text", "text_of"]

TEXT_FIELDS = ("content", "text", "token", "response", "delta")
"""The members of a JSON object that plainly carry a piece of the answer, tried in this order (the
first that holds a string is the piece): the names apps and simple servers give it."""
_GLUED_DONE = "\n" + DONE
"""An event's last data line `[DONE]`: the end marker glued to the answer when a hop stripped the blank
lines between events (not-an-event-stream says so); it is no part of the answer's text."""
PLAIN_PAYLOADS = "plain text"
JSON_PAYLOADS = "JSON"
"""What `Answer.extra["payloads"]` says of a text stream: its data was plain text (a client shows
each as it is and never parses it), or every payload was JSON (a client parses each one)."""


def text_of(data: str, payload: dict[str, Any]) -> str | None:
    """The piece of text an event's data carries in a text stream (None: it carries none, as a JSON
    object without a text field); `payload` is the data as a JSON object, {} when it is not one."""
    if payload:
        for name in TEXT_FIELDS:
            value = payload.get(name)
            if isinstance(value, str):
                return value
        return None
    try:
        value = loads(data)
    except (ValueError, RecursionError):
        return data  # plain text, the common case
    if isinstance(value, str):
        return value  # a JSON string: the app encoded each piece (to keep its newlines)
    return None if isinstance(value, dict) else data  # a number or a list is the text as written


class _TextReader(Reader):
    expects_json = False  # plain text is this grammar's normal payload

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._json = 0
        self._plain = 0

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return event.data == DONE

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        data = event.data
        if data == DONE or not data:
            return
        if data.endswith(_GLUED_DONE):  # a hop stripped the blank lines: [DONE] came as the event's last line
            data = data[: -len(_GLUED_DONE)]
        piece = text_of(data, payload)
        if payload or piece != data:
            self._json += 1
        else:
            self._plain += 1
        if piece is not None:
            self.add(self.choice().text, piece)

    def answer(self, dialect: Dialect, text_events: tuple[int, ...] = ()) -> Answer:
        if self._plain or self._json:
            self.extra["payloads"] = PLAIN_PAYLOADS if self._plain else JSON_PAYLOADS
        return super().answer(dialect, text_events)


class Text(Dialect):
    """The text is every piece in order, joined with nothing between them: plain data as it is, a
    JSON string's value, or the first string among `TEXT_FIELDS` of a JSON object (an object with
    none adds nothing). `data: [DONE]` is the end marker when it comes: `complete` is True then,
    and None for a stream that never sends it (no end marker was promised, none is missing).
    Clients stop at it, so events after it are left out of the answer (and reported).
    """

    name = "text"
    title = "Text stream"
    end_marker = "data: [DONE]"
    end_marker_optional = True
    sends_done = True
    end_closes_stream = True
    reader = _TextReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Claimed when at least a third of the events with data carry a piece of text by the rules
        above (a plain-text stream: all of them), or when the only events are `[DONE]`s; the URL says
        nothing (apps choose their own paths)."""
        carrying = others = 0
        done = False
        for event, payload in payloads(events):
            if event.data == DONE:
                done = True
            elif event.data:
                if text_of(event.data, payload) is None:
                    others += 1
                else:
                    carrying += 1
        if carrying and 2 * carrying >= others or done and not (carrying or others):
            return SHAPE
        return 0
