"""What a dialect rebuilds (`Answer`, `Choice`, `ToolCall`, `InbandError`) and the `Dialect` base.

A dialect knows one provider's stream grammar: how to recognise it and how to
rebuild, from the dispatched events, what the user of that API saw.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._events import Event

if TYPE_CHECKING:
    from ._accumulate import Reader

__all__ = ["END", "ERROR", "INVALID_JSON", "TEXT", "Answer", "Choice", "Dialect", "InbandError", "ToolCall"]

TEXT, END, INVALID_JSON, ERROR = 1, 2, 4, 8
"""What `Reader.feed` says of an event, as flags: it carried output; it was an end marker; its data
should have been JSON and was not; it reported an in-band error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool (function) call, its arguments joined exactly as streamed."""

    name: str
    arguments: str
    id: str | None = None
    index: int = 0
    """Position of the call within its message."""

    @property
    def arguments_valid_json(self) -> bool:
        """Whether the joined arguments parse as JSON (an empty string does not)."""
        try:
            json.loads(self.arguments)
        except ValueError:
            return False
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """One alternative answer (`n > 1` in OpenAI Chat); most streams have one."""

    index: int = 0
    text: str = ""
    """The visible answer text."""
    reasoning: str = ""
    """Reasoning / thinking / thought-summary text, kept apart from the answer."""
    refusal: str = ""
    plan: str = ""
    """A tool plan in words (Cohere's `tool_plan`), kept apart from the answer."""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    """The model's own finish reason (`stop`, `end_turn`, `STOP`, ...), as sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InbandError:
    """An error reported inside a stream whose HTTP status said success."""

    message: str
    event_index: int
    code: str | None = None
    type: str | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What the user of the API saw, rebuilt from the events, and how the stream ended."""

    dialect: str
    choices: tuple[Choice, ...] = (Choice(),)
    usage: dict[str, Any] | None = None
    """The last usage object seen (cumulative in Anthropic and Gemini streams)."""
    errors: tuple[InbandError, ...] = ()
    end_marker: str | None = None
    """The marker this dialect ends a stream with, as text (None: the dialect has none)."""
    end_marker_events: tuple[int, ...] = ()
    """Indices of the events that were end markers (the first 1000): none = missing, two or more = duplicated."""
    end_markers: int = 0
    """How many end markers came (at least `len(end_marker_events)`)."""
    text_events: tuple[int, ...] = ()
    """Indices of the events that carried visible text, reasoning or tool-call pieces
    (empty from an analysis that kept no events: `Timing.text_events` counts them)."""
    invalid_json: tuple[int, ...] = ()
    """Indices of events whose data should be JSON in this dialect and is not (the first 1000)."""
    invalid_payloads: int = 0
    """How many such events came (at least `len(invalid_json)`)."""
    model: str | None = None
    response_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Dialect-specific facts worth showing (e.g. Responses' final status)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "end_markers", max(self.end_markers, len(self.end_marker_events)))
        object.__setattr__(self, "invalid_payloads", max(self.invalid_payloads, len(self.invalid_json)))

    @property
    def text(self) -> str:
        return self.choices[0].text if self.choices else ""

    @property
    def reasoning(self) -> str:
        return self.choices[0].reasoning if self.choices else ""

    @property
    def refusal(self) -> str:
        return self.choices[0].refusal if self.choices else ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.choices[0].tool_calls if self.choices else ()

    @property
    def finish_reason(self) -> str | None:
        return self.choices[0].finish_reason if self.choices else None

    @property
    def end_marker_seen(self) -> bool:
        return bool(self.end_marker_events)

    @property
    def complete(self) -> bool | None:
        """True when the end marker arrived and no in-band error did; None when the dialect has no marker."""
        if self.end_marker is None:
            return None
        return self.end_marker_seen and not self.errors


class Dialect(ABC):
    """One provider's stream grammar. Subclasses set the class attributes and two methods."""

    name: ClassVar[str]
    """Short name used on the command line (`--dialect openai-chat`)."""
    title: ClassVar[str]
    end_marker: ClassVar[str | None] = None
    sends_done: ClassVar[bool] = False
    """Whether this API's servers end a stream with a `data: [DONE]` sentinel (a `[DONE]` in a stream
    of an API that sends none was added on the way, and its clients crash on it)."""
    end_closes_stream: ClassVar[bool] = True
    """Whether the end marker ends the stream, so that an event after it is a fault (False where the
    "end marker" is a field of an ordinary event, as Gemini's `finishReason`, or there is none)."""

    @classmethod
    @abstractmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """How sure (0-100) that a stream starting with `events`, fetched from `url`, speaks this dialect."""

    @abstractmethod
    def reader(self) -> Reader:
        """A new reader of one stream in this grammar: `feed` it the events in order."""

    def rebuild(self, events: Iterable[Event]) -> Answer:
        """Rebuild the answer from all the events of one stream, in order."""
        reader = self.reader()
        feed = reader.feed
        text = tuple(e.index for e in events if feed(e) & TEXT)
        return reader.answer(self, text)

