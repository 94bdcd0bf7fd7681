"""Any event stream: the fallback when no known grammar fits.

Knows nothing of the payloads, so it shows them as they are rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import DONE
from ._base import Dialect, Reader

__all__ = ["Generic"]


class _GenericReader(Reader):
    stops_at_end = False
    expects_json = False

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._first = True

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return event.data == DONE

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if event.data == DONE:
            return
        text = self.choice().text
        if not self._first:
            text.append("\n")
        self._first = False
        self.add(text, event.data)


class Generic(Dialect):
    """Text is the data of every event but `[DONE]`, joined with LF; it has no end marker.

    `end_marker_events` lists the `[DONE]` events, for information only (`complete`
    stays None). Nothing is expected to be JSON, but a JSON object with an `error`
    member, or an event named `error`, is still reported as an in-band error.
    `text_events` are the events with non-empty data.
    """

    name = "generic"
    title = "Generic event stream"
    end_marker = None
    sends_done = True
    end_closes_stream = False
    reader = _GenericReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        return 1
