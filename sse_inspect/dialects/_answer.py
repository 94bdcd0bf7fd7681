"""What a dialect rebuilds from a stream: the `Answer`, its `Choice`s, their `ToolCall`s, and `InbandError`s.

Plain frozen values, made once at the end of a stream by `Reader.answer`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._limits import ARGUMENTS_CHECKED

__all__ = ["Answer", "Choice", "InbandError", "ToolCall"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool (function) call, its arguments joined exactly as streamed."""

    name: str
    arguments: str
    id: str | None = None
    index: int = 0
    """Position of the call within its message."""

    @property
    def arguments_valid_json(self) -> bool | None:
        """Whether the joined arguments parse as JSON (an empty string does not); None when that is not
        told: they nest too deeply for Python's parser (it stops at the recursion limit, about 1000
        levels), or are longer than ARGUMENTS_CHECKED (parsed, they would take many times their size)."""
        if len(self.arguments) > ARGUMENTS_CHECKED:
            return None
        try:
            json.loads(self.arguments)
        except RecursionError:
            return None
        except ValueError:
            return False
        return True

    @property
    def arguments_problem(self) -> str | None:
        """What a view says of arguments that are not valid JSON (None: they are). Parses them: ask once."""
        valid = self.arguments_valid_json
        if valid is None:
            if len(self.arguments) > ARGUMENTS_CHECKED:
                return f"arguments too long to check as JSON ({len(self.arguments):,} characters)"
            return "arguments nest too deeply to check as JSON"
        return None if valid else "arguments are not valid JSON"


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
