"""What a dialect rebuilds from a stream: the `Answer`, its `Choice`s, their `ToolCall`s, and `InbandError`s.

Each channel of text (a choice's text, reasoning, refusal and plan, a call's arguments) is a `Passage`,
held as the reader was told (`Holding`): whole by default, or in memory that does not grow with it.

Plain frozen values, made once at the end of a stream by `Reader.answer`.
"""

from __future__ import annotations

import codecs
import enum
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from .._limits import ARGUMENTS_CHECKED, PIECE

__all__ = [
    "EMPTY", "GLIMPSED", "Answer", "Choice", "Counted", "Glimpsed", "Holding", "InbandError", "Passage", "Spooled",
    "TextNotKept", "ToolCall", "Whole",
]  # fmt: skip

SPOOL_BLOCK = 1 << 16
"""Bytes of a spooled text read back at a time (a piece of text of at most 256 KiB)."""
GLIMPSED = 10_000
"""Characters of each end of a long text a `Holding.GLIMPSE` keeps (what `show` prints of it)."""


class Holding(enum.Enum):
    """How a reader holds the text of a stream's channels: all of it, or only what a command will show.

    WHOLE is the library's default: `Choice.text` and the others are the text. The other ways hold
    memory that does not grow with the answer, for the commands that read huge captures."""

    WHOLE = "whole"
    """In memory, whole."""
    SPOOL = "spool"
    """In memory up to `SPOOL_AT` characters, then in a temporary file (UTF-8): read back in pieces
    (`Passage.pieces`), as `sse-inspect text` writes it."""
    GLIMPSE = "glimpse"
    """Whole up to 2 * GLIMPSED characters; past that, its length, first and last GLIMPSED characters (`show`)."""
    COUNT = "count"
    """Its length alone (`check`)."""


class TextNotKept(LookupError):
    """Asked for text that its `Holding` did not keep (the middle of a glimpse, any of a count)."""


class Passage(ABC):
    """One channel's text as a reader held it (see `Holding`): its length always (`len`), the text
    whole (`str`), in pieces (`pieces`), or only its ends (`head`, `tail`) as far as it was kept."""

    __slots__ = ()

    @abstractmethod
    def __len__(self) -> int:
        """Characters of the text, kept or not."""

    @property
    @abstractmethod
    def kept(self) -> bool:
        """Whether the whole text is here (else `str` and `pieces` raise TextNotKept)."""

    @abstractmethod
    def pieces(self) -> Iterator[str]:
        """The whole text, in order, in pieces of at most PIECE characters (any number of them; none
        when it is empty); raises TextNotKept when it was not kept."""

    def head(self, n: int) -> str:
        """The first `n` characters (all of a shorter text); raises TextNotKept past what was kept."""
        parts: list[str] = []
        for piece in self.pieces():
            parts.append(piece[:n])
            n -= len(parts[-1])
            if n <= 0:
                break
        return "".join(parts)

    def tail(self, n: int) -> str:
        """The last `n` characters (all of a shorter text); raises TextNotKept past what was kept."""
        end = ""
        for piece in self.pieces():
            end = (end + piece)[-n:] if n > 0 else ""
        return end

    def __bool__(self) -> bool:
        return len(self) > 0

    def __str__(self) -> str:
        return "".join(self.pieces())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Passage):
            return NotImplemented
        if len(self) != len(other) or self.kept != other.kept:
            return False
        if self.kept:
            return str(self) == str(other)
        return self._ends() == other._ends()

    def _ends(self) -> tuple[str, ...]:
        """What is kept of a text not kept whole."""
        return ()

    def __hash__(self) -> int:
        return hash(len(self))

    def __repr__(self) -> str:
        shown = repr(self.head(40)) if self.kept or len(self) == 0 else "(not kept)"
        return f"{type(self).__name__}({len(self):,} characters: {shown}{'...' if len(self) > 40 else ''})"


class Whole(Passage):
    """Text held in memory."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __len__(self) -> int:
        return len(self.text)

    @property
    def kept(self) -> bool:
        return True

    def pieces(self) -> Iterator[str]:
        text = self.text
        yield from (text[i : i + PIECE] for i in range(0, len(text), PIECE))

    def head(self, n: int) -> str:
        return self.text[:n]

    def tail(self, n: int) -> str:
        return self.text[-n:] if n > 0 else ""

    def __str__(self) -> str:
        return self.text


EMPTY = Whole("")


class Spooled(Passage):
    """Text held in a temporary file, UTF-8 (lone surrogates, which JSON escapes can make, as
    surrogatepass writes them): its first `size` bytes. The file goes when the last passage using it does."""

    __slots__ = ("block", "file", "length", "size")

    def __init__(self, file: IO[bytes], size: int, length: int, *, block: int = SPOOL_BLOCK) -> None:
        self.file, self.size, self.length, self.block = file, size, length, block

    def __len__(self) -> int:
        return self.length

    @property
    def kept(self) -> bool:
        return True

    def pieces(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        left, at = self.size, 0
        while left > 0:
            self.file.seek(at)  # (seeked every time: two passages of one file may be read in turns)
            block = self.file.read(min(self.block, left))
            if not block:
                raise OSError("the spooled text's temporary file was cut short")
            at += len(block)
            left -= len(block)
            piece = decoder.decode(block, final=left <= 0)
            if piece:
                yield piece


class Glimpsed(Passage):
    """Only a long text's length and its first and last characters."""

    __slots__ = ("first", "last", "length")

    def __init__(self, length: int, first: str, last: str) -> None:
        self.length, self.first, self.last = length, first, last

    def __len__(self) -> int:
        return self.length

    @property
    def kept(self) -> bool:
        return False

    def pieces(self) -> Iterator[str]:
        raise TextNotKept(f"only {len(self.first) + len(self.last):,} of the {self.length:,} characters were kept")

    def head(self, n: int) -> str:
        if n > len(self.first):
            raise TextNotKept(f"only the first {len(self.first):,} characters were kept")
        return self.first[:n]

    def tail(self, n: int) -> str:
        if n > len(self.last):
            raise TextNotKept(f"only the last {len(self.last):,} characters were kept")
        return self.last[-n:] if n > 0 else ""

    def _ends(self) -> tuple[str, ...]:
        return self.first, self.last


class Counted(Passage):
    """Only a text's length."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    @property
    def kept(self) -> bool:
        return self.length == 0

    def pieces(self) -> Iterator[str]:
        if self.length:
            raise TextNotKept(f"only the length of this text ({self.length:,} characters) was kept")
        return iter(())

    def head(self, n: int) -> str:
        return str(self)[:n]

    def tail(self, n: int) -> str:
        return str(self)[-n:] if n > 0 else ""


def _passage(text: str | Passage) -> Passage:
    return Whole(text) if isinstance(text, str) else text


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """One tool (function) call, its arguments joined exactly as streamed.

    `ToolCall(name=..., arguments=...)`: `arguments` a str or a `Passage`; `arguments` reads as a str,
    `held_arguments` is the `Passage` (spooled to a file past a size under `Holding.SPOOL` and
    `Holding.GLIMPSE`, only counted under `Holding.COUNT`)."""

    name: str
    held_arguments: Passage
    id: str | None
    index: int
    """Position of the call within its message."""

    def __init__(self, *, name: str, arguments: str | Passage, id: str | None = None, index: int = 0) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "held_arguments", _passage(arguments))
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "index", index)

    @property
    def arguments(self) -> str:
        return str(self.held_arguments)

    @property
    def arguments_valid_json(self) -> bool | None:
        """Whether the joined arguments parse as JSON (an empty string does not); None when that is not
        told: they nest too deeply for Python's parser (it stops at the recursion limit, about 1000
        levels), are longer than ARGUMENTS_CHECKED (parsed, they would take many times their size), or
        were not kept (`Holding.COUNT`)."""
        if len(self.held_arguments) > ARGUMENTS_CHECKED or not self.held_arguments.kept:
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
            if len(self.held_arguments) > ARGUMENTS_CHECKED:
                return f"arguments too long to check as JSON ({len(self.held_arguments):,} characters)"
            if not self.held_arguments.kept:
                return "arguments not kept to check as JSON"
            return "arguments nest too deeply to check as JSON"
        return None if valid else "arguments are not valid JSON"


@dataclass(frozen=True, slots=True, init=False)
class Choice:
    """One alternative answer (`n > 1` in OpenAI Chat); most streams have one.

    `Choice(text=..., reasoning=..., ...)`: each a str or a `Passage`. `text`, `reasoning`, `refusal`
    and `plan` read as str (raising TextNotKept where the `Holding` kept only a glimpse or a count);
    `held_text` and the others are the `Passage`s, for a view that must not hold a huge answer."""

    index: int
    held_text: Passage
    """The visible answer text."""
    held_reasoning: Passage
    """Reasoning / thinking / thought-summary text, kept apart from the answer."""
    held_refusal: Passage
    held_plan: Passage
    """A tool plan in words (Cohere's `tool_plan`), kept apart from the answer."""
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    """The model's own finish reason (`stop`, `end_turn`, `STOP`, ...), as sent."""

    def __init__(self, *, index: int = 0, text: str | Passage = "", reasoning: str | Passage = "",
                 refusal: str | Passage = "", plan: str | Passage = "", tool_calls: tuple[ToolCall, ...] = (),
                 finish_reason: str | None = None) -> None:  # fmt: skip
        for name, value in (("index", index), ("held_text", _passage(text)),
                            ("held_reasoning", _passage(reasoning)), ("held_refusal", _passage(refusal)),
                            ("held_plan", _passage(plan)), ("tool_calls", tool_calls),
                            ("finish_reason", finish_reason)):  # fmt: skip
            object.__setattr__(self, name, value)

    @property
    def text(self) -> str:
        return str(self.held_text)

    @property
    def reasoning(self) -> str:
        return str(self.held_reasoning)

    @property
    def refusal(self) -> str:
        return str(self.held_refusal)

    @property
    def plan(self) -> str:
        return str(self.held_plan)

    @property
    def output_chars(self) -> int:
        """Characters of output: text, reasoning and refusal (not a tool call's arguments: many servers
        send a whole call in one event)."""
        return len(self.held_text) + len(self.held_reasoning) + len(self.held_refusal)


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
    def output_chars(self) -> int:
        """The first choice's characters of output (`Choice.output_chars`), however its text was held."""
        return self.choices[0].output_chars if self.choices else 0

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
