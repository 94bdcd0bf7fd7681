"""The state a `Reader` keeps of one stream, and junk-tolerant accessors for the payloads it reads.

`ChoiceState` holds one choice's channels (`Channel`: text pieces as streamed, held whole, spooled,
glimpsed or counted as the reader's `Holding` says) and its tool calls (`ToolCalls` of `PendingCall`s,
found under the keys a dialect gives them); `build` turns them into the values of `_answer`. The
`as_*` accessors give a default for anything of the wrong JSON type, so a grammar reads a malformed
payload without a guard at every step.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Hashable
from typing import IO, Any

from .._errors import SSEInspectError
from .._events import Event
from ._answer import GLIMPSED, Choice, Counted, Glimpsed, Holding, InbandError, Passage, Spooled, ToolCall, Whole

__all__ = [
    "CHANNELS",
    "DONE",
    "SPOOL_AT",
    "Channel",
    "CountChannel",
    "GlimpseChannel",
    "SpoolChannel",
    "ChoiceState",
    "PendingCall",
    "ToolCalls",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "compact_json",
    "event_kind",
    "inband_error",
    "label",
]

DONE = "[DONE]"
"""The OpenAI sentinel: never JSON, never counted as invalid JSON in any dialect."""
_NEVER = 1 << 62
"""A `_due` no text reaches."""
SPOOL_AT = 1 << 16
"""Characters of a channel a `SpoolChannel` holds in memory (at most 256 KiB) before it writes them to its file."""


class Channel:
    """Streamed text pieces, held whole (`Holding.WHOLE`): joined a thousand at a time as they pile up,
    since a million one-token strings would take ten times the memory of their text.

    The other holdings are subclasses (`CHANNELS[holding]`) with the same `append` and `extend` (the envelope
    accelerator calls them for every token): what they do with the pieces when a thousand have come, or
    `_due` characters, is their `_settle`; `passage()` is the text as the answer holds it."""

    __slots__ = ("_due", "_joined", "_pieces", "_size")

    def __init__(self) -> None:
        self._joined: list[str] = []
        self._pieces: list[str] = []
        self._size = 0
        self._due = _NEVER
        """The length at which the pieces are settled, whatever their number (a subclass's; never, here)."""

    def append(self, piece: str) -> None:
        pieces = self._pieces
        pieces.append(piece)
        self._size += len(piece)
        if len(pieces) == 1024 or self._size >= self._due:
            self._settle()

    def extend(self, pieces: list[str]) -> None:
        """`append` of each piece (a block's tokens read by envelope, at once)."""
        held = self._pieces
        held += pieces
        self._size += sum(map(len, pieces))
        if len(held) >= 1024 or self._size >= self._due:
            self._settle()

    def _settle(self) -> None:
        """What becomes of the pieces when a thousand have come, or `_due` characters: here, joined into one."""
        self._joined.append("".join(self._pieces))
        self._pieces.clear()

    def __bool__(self) -> bool:
        return self._size > 0

    def __len__(self) -> int:
        """Characters so far."""
        return self._size

    def since(self, start: int) -> str:
        """The text after its first `start` characters, gathered from the end: it costs the length of
        that text, not of the whole channel (a replay asks after every chunk)."""
        wanted = self._size - start
        if wanted <= 0:
            return ""
        parts: list[str] = []
        for part in itertools.chain(reversed(self._pieces), reversed(self._joined)):
            parts.append(part)
            wanted -= len(part)
            if wanted <= 0:
                break
        return "".join(reversed(parts))[start - self._size :]

    def __str__(self) -> str:
        return self._whole()

    def _whole(self) -> str:
        """The whole text held in memory, joined once and then kept as the only piece: the parts are let
        go, so the text is held once (twice only while it is joined), however many times it is asked for."""
        if len(self._joined) + len(self._pieces) > 1:
            whole = "".join([*self._joined, *self._pieces])
            self._joined, self._pieces = [whole], []
        return "".join(self._joined) + "".join(self._pieces)

    def passage(self) -> Passage:
        """The text so far, as the answer holds it."""
        return Whole(self._whole())


class SpoolChannel(Channel):
    """`Holding.SPOOL`: pieces in memory up to SPOOL_AT characters, then written on to a temporary file."""

    __slots__ = ("_at", "_file", "_spilled", "_written")

    def __init__(self, *, at: int = SPOOL_AT) -> None:
        super().__init__()
        self._at = at
        self._file: IO[bytes] | None = None
        self._written = 0
        """Bytes in the file."""
        self._spilled = 0
        """Characters in the file."""
        self._due = at
        """The length at which the pieces in memory are settled, whatever their number."""

    def _settle(self) -> None:
        """Join the pieces; once `at` characters are held, write them all to the file."""
        self._joined.append("".join(self._pieces))
        self._pieces.clear()
        if self._size - self._spilled >= self._at:
            self._spill()
        self._due = self._spilled + self._at

    def _spill(self) -> None:
        try:
            if self._file is None:
                import tempfile  # loaded once a text spills: it loads `random`, which start-up does without

                self._file = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as long as the passages reading it)
            self._joined.extend(self._pieces)
            self._pieces.clear()
            for part in self._joined:
                self._written += self._file.write(part.encode("utf-8", "surrogatepass"))
            self._joined.clear()
            self._spilled = self._size
            self._file.flush()
        except OSError as exc:  # a full or read-only temporary folder: one line, not a traceback
            raise SSEInspectError(f"cannot spool the answer's text to a temporary file: {exc.strerror or exc}",
                                  hint="set TMPDIR to a folder with room") from exc  # fmt: skip

    def since(self, start: int) -> str:
        return str(self)[start:]

    def __str__(self) -> str:
        return str(self.passage())

    def passage(self) -> Passage:
        if self._file is None:
            return super().passage()
        self._spill()
        return Spooled(self._file, self._written, self._size)


class GlimpseChannel(Channel):
    """`Holding.GLIMPSE`: the whole text while it is short (up to 2 * `glimpsed` characters), then its
    first `glimpsed` characters and a tail of at least its last `glimpsed`."""

    __slots__ = ("_first", "_glimpsed")

    def __init__(self, *, glimpsed: int = GLIMPSED) -> None:
        super().__init__()
        self._glimpsed = glimpsed
        self._first: str | None = None
        """The first characters, once the text is longer than 2 * `glimpsed` (None till then)."""
        self._due = 2 * glimpsed

    def _settle(self) -> None:
        """Join what is held; past 2 * `glimpsed` characters, keep the first ones and the last ones."""
        glimpsed = self._glimpsed
        held = "".join([*self._joined, *self._pieces])
        self._pieces.clear()
        if self._first is None and self._size > 2 * glimpsed:
            self._first = held[:glimpsed]
        if self._first is not None:
            held = held[-glimpsed:] if glimpsed else ""
        self._joined = [held]
        self._due = self._size + glimpsed if self._first is not None else 2 * glimpsed + 1

    def since(self, start: int) -> str:
        return str(self)[start:]

    def __str__(self) -> str:
        return str(self.passage())

    def passage(self) -> Passage:
        self._settle()
        if self._first is None:
            return Whole(self._joined[0])
        return Glimpsed(self._size, self._first, self._joined[0])


class CountChannel(Channel):
    """`Holding.COUNT`: only the length."""

    __slots__ = ()

    def append(self, piece: str) -> None:
        self._size += len(piece)

    def extend(self, pieces: list[str]) -> None:
        self._size += sum(map(len, pieces))

    def since(self, start: int) -> str:
        return str(self)[start:]

    def __str__(self) -> str:
        return str(self.passage())

    def passage(self) -> Passage:
        return Counted(self._size)


CHANNELS: dict[Holding, type[Channel]] = {
    Holding.WHOLE: Channel,
    Holding.SPOOL: SpoolChannel,
    Holding.GLIMPSE: GlimpseChannel,
    Holding.COUNT: CountChannel,
}
"""The channel that holds text as each `Holding` says."""
_ARGUMENTS = {Holding.GLIMPSE: Holding.SPOOL}
"""A tool call's arguments are held as the text is, but spooled where the text is glimpsed: a view
shows them and whether they are valid JSON, which only the whole tells (and they are seldom long)."""


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int | None:
    """`value` when it is a JSON integer (booleans are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def label(value: object) -> str | None:
    """A code or type as text: strings as they are, numbers written out, anything else None."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def compact_json(value: object, *, ensure_ascii: bool = True) -> str | None:
    """`value` (a parsed payload's part) written back as compact JSON; None when it nests too deeply
    to write: a payload that parsed just short of the recursion limit may not write a few calls deeper."""
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
    except RecursionError:
        return None


def inband_error(value: object, event_index: int) -> InbandError | None:
    """The error an `error` member describes (an object or a bare string), or None when it holds none."""
    if isinstance(value, str):
        return InbandError(message=value, event_index=event_index) if value else None
    if not isinstance(value, dict) or not value:
        return None
    message = (as_str(value.get("message")) or compact_json(value, ensure_ascii=False)
               or "(an error object nested too deeply to show)")
    return InbandError(
        message=message,
        event_index=event_index,
        code=label(value.get("code")),
        type=label(value.get("type")) or label(value.get("status")),
    )


def event_kind(event: Event, payload: dict[str, Any]) -> str:
    """The event's name: its `event:` field when set, else the JSON `type` (proxies drop `event:` lines)."""
    if event.type != "message":
        return event.type
    return as_str(payload.get("type")) or event.type


class PendingCall:
    """One tool call being assembled: first id and name win, argument pieces are joined as streamed."""

    __slots__ = ("_final", "id", "name", "parts", "position")

    def __init__(self, position: int, holding: Holding = Holding.WHOLE) -> None:
        self.position = position
        self.id: str | None = None
        self.name = ""
        self.parts = CHANNELS[_ARGUMENTS.get(holding, holding)]()
        """The argument pieces."""
        self._final = ""

    def update(self, *, id: object = None, name: object = None, arguments: object = None) -> bool:
        """Take what a fragment carries; True when it carried a piece (a name or argument text)."""
        if isinstance(id, str) and id and self.id is None:
            self.id = id
        piece = False
        if isinstance(name, str) and name and not self.name:
            self.name = name
            piece = True
        if isinstance(arguments, str) and arguments:
            self.parts.append(arguments)
            piece = True
        return piece

    def fallback(self, arguments: object) -> bool:
        """Whole arguments sent apart from the deltas; the first is used when no delta carried any. True when used."""
        if not isinstance(arguments, str) or self.parts or self._final:
            return False
        self._final = arguments
        return bool(arguments)

    def build(self) -> ToolCall:
        arguments = self.parts.passage() if self.parts else self._final
        return ToolCall(name=self.name, arguments=arguments, id=self.id, index=self.position)


class ToolCalls:
    """The tool calls of one message, in arrival order, each reachable under several keys."""

    def __init__(self, holding: Holding = Holding.WHOLE) -> None:
        self._holding = holding
        self._calls: list[PendingCall] = []
        self._keys: dict[Hashable, PendingCall] = {}

    @property
    def last(self) -> PendingCall | None:
        return self._calls[-1] if self._calls else None

    def find(self, key: Hashable) -> PendingCall | None:
        return self._keys.get(key)

    def new(self) -> PendingCall:
        call = PendingCall(len(self._calls), self._holding)
        self._calls.append(call)
        return call

    def get(self, *keys: Hashable | None) -> PendingCall:
        """The call known under the first known key (None keys are skipped), else a new one; all keys then name it."""
        call = next((self._keys[key] for key in keys if key is not None and key in self._keys), None)
        return self.bind(call or self.new(), *keys)

    def bind(self, call: PendingCall, *keys: Hashable | None) -> PendingCall:
        """Make every non-None key name `call` (a key reused by a server moves to the newer call)."""
        for key in keys:
            if key is not None:
                self._keys[key] = call
        return call

    def build(self) -> tuple[ToolCall, ...]:
        return tuple(call.build() for call in self._calls)


class ChoiceState:
    """The channels of one choice while the stream is read, holding their text as `holding` says."""

    def __init__(self, holding: Holding = Holding.WHOLE) -> None:
        make = CHANNELS[holding]
        self.text = make()
        self.reasoning = make()
        self.refusal = make()
        self.plan = make()
        self.tools = ToolCalls(holding)
        self.finish_reason: str | None = None

    def finish(self, reason: object) -> None:
        """Keep a non-empty finish reason (later `null`s, as in usage chunks, do not erase it)."""
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def build(self, index: int) -> Choice:
        return Choice(
            index=index,
            text=self.text.passage(),
            reasoning=self.reasoning.passage(),
            refusal=self.refusal.passage(),
            plan=self.plan.passage(),
            tool_calls=self.tools.build(),
            finish_reason=self.finish_reason,
        )
