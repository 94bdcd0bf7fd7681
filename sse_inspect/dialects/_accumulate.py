"""The bookkeeping every dialect shares: a per-stream `Reader`, per-choice channels, keyed tool calls.

Dialects differ only in grammar; keeping the state, the end-marker rule and the
junk-tolerant accessors here leaves each dialect module with its grammar alone.
"""

from __future__ import annotations

import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]  # the C one when there is one
from json.encoder import encode_basestring_ascii as encode_ascii  # type: ignore[attr-defined]
from typing import Any, ClassVar, NamedTuple
from urllib.parse import urlsplit

from .._events import Event
from .._fastjson import encode_string, loads
from ._base import END, ERROR, INVALID_JSON, TEXT, Answer, Choice, Dialect, InbandError, ToolCall

__all__ = [
    "DONE",
    "END",
    "ERROR",
    "INVALID_JSON",
    "KEPT",
    "STRONG",
    "TEXT",
    "WEAK",
    "Channel",
    "ChoiceState",
    "Envelope",
    "PendingCall",
    "Reader",
    "ToolCalls",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "confidence",
    "event_kind",
    "inband_error",
    "payloads",
    "url_path",
]

KEPT = 1000
"""How many indices of end markers and of invalid payloads a reader keeps (the counts go on)."""

DONE = "[DONE]"
"""The OpenAI sentinel: never JSON, never counted as invalid JSON in any dialect."""

STRONG = 80
"""Detection points for content only this dialect sends."""
WEAK = 30
"""Detection points for content this dialect is likely, not certain, to send."""
_URL_POINTS = 15
"""Detection points for a matching URL: less than any content hint plus a URL elsewhere."""


class Channel:
    """Streamed text pieces, joined a thousand at a time as they pile up: a million one-token
    strings would take ten times the memory of their text."""

    __slots__ = ("_joined", "_pieces", "_size")

    def __init__(self) -> None:
        self._joined: list[str] = []
        self._pieces: list[str] = []
        self._size = 0

    def append(self, piece: str) -> None:
        pieces = self._pieces
        pieces.append(piece)
        self._size += len(piece)
        if len(pieces) == 1024:
            self._joined.append("".join(pieces))
            pieces.clear()

    def __bool__(self) -> bool:
        return bool(self._pieces or self._joined)

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
        return "".join(self._joined) + "".join(self._pieces)


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int | None:
    """`value` when it is a JSON integer (booleans are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _label(value: object) -> str | None:
    """A code or type as text: strings as they are, numbers written out, anything else None."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def inband_error(value: object, event_index: int) -> InbandError | None:
    """The error an `error` member describes (an object or a bare string), or None when it holds none."""
    if isinstance(value, str):
        return InbandError(message=value, event_index=event_index) if value else None
    if not isinstance(value, dict) or not value:
        return None
    message = as_str(value.get("message")) or json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return InbandError(
        message=message,
        event_index=event_index,
        code=_label(value.get("code")),
        type=_label(value.get("type")) or _label(value.get("status")),
    )


def event_kind(event: Event, payload: dict[str, Any]) -> str:
    """The event's name: its `event:` field when set, else the JSON `type` (proxies drop `event:` lines)."""
    if event.type != "message":
        return event.type
    return as_str(payload.get("type")) or event.type


def payloads(events: Sequence[Event]) -> Iterable[tuple[Event, dict[str, Any]]]:
    """Each event with its data as a JSON object ({} when it is not one), for detection."""
    for event in events:
        try:
            value = loads(event.data)
        except (ValueError, RecursionError):
            value = None
        yield event, as_dict(value)


def url_path(url: str | None) -> str:
    """The lower-cased path of `url` without a trailing slash ("" when there is no URL)."""
    if not url:
        return ""
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    return path.lower().rstrip("/")


def confidence(content: int, url_matches: bool) -> int:
    """A detection score: content points, plus a few when the URL fits."""
    return min(100, content + (_URL_POINTS if url_matches else 0))


class PendingCall:
    """One tool call being assembled: first id and name win, argument pieces are joined as streamed."""

    __slots__ = ("_final", "id", "name", "parts", "position")

    def __init__(self, position: int) -> None:
        self.position = position
        self.id: str | None = None
        self.name = ""
        self.parts = Channel()
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
        return ToolCall(
            name=self.name, arguments=str(self.parts) or self._final, id=self.id, index=self.position
        )


class ToolCalls:
    """The tool calls of one message, in arrival order, each reachable under several keys."""

    def __init__(self) -> None:
        self._calls: list[PendingCall] = []
        self._keys: dict[Hashable, PendingCall] = {}

    @property
    def last(self) -> PendingCall | None:
        return self._calls[-1] if self._calls else None

    def find(self, key: Hashable) -> PendingCall | None:
        return self._keys.get(key)

    def new(self) -> PendingCall:
        call = PendingCall(len(self._calls))
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
    """The channels of one choice while the stream is read."""

    def __init__(self) -> None:
        self.text = Channel()
        self.reasoning = Channel()
        self.refusal = Channel()
        self.plan = Channel()
        self.tools = ToolCalls()
        self.finish_reason: str | None = None

    def finish(self, reason: object) -> None:
        """Keep a non-empty finish reason (later `null`s, as in usage chunks, do not erase it)."""
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def build(self, index: int) -> Choice:
        return Choice(
            index=index,
            text=str(self.text),
            reasoning=str(self.reasoning),
            refusal=str(self.refusal),
            plan=str(self.plan),
            tool_calls=self.tools.build(),
            finish_reason=self.finish_reason,
        )


class Envelope(NamedTuple):
    """What a token event of one stream looks like around its text: `head` + a JSON string + `tail`, or
    `head` + a JSON string + `middle` + a JSON string (padding, skipped) + `tail`."""

    type: str
    """The events' `event:` type."""
    head: str
    """The data up to and with the text's opening quote."""
    middle: str | None
    """The data from the text's closing quote to the padding's opening quote (None: no padding)."""
    tail: str
    """The data after the last string's closing quote."""
    channel: Channel
    """Where the text goes."""


_Offer = tuple[str, Channel, Callable[[Any], tuple[dict[str, Any], str]]]


def _rfind_string(data: str, value: str) -> tuple[int, int] | None:
    """Where the last JSON string of `value` in `data` starts and ends, as written by a JSON writer
    that keeps non-ASCII characters or by one that escapes them; None when it is written neither way."""
    for quoted in (encode_string(value), encode_ascii(value)):
        at = data.rfind(quoted)
        if at >= 0:
            return at, at + len(quoted)
    return None


def _other(value: str) -> str:
    """A string no server sends, other than `value`: put in the place of a string to check that it sits there."""
    return "\ue000\ue001" if value != "\ue000\ue001" else "\ue002"


_TRIES = 8
"""Envelopes a reader learns before it has to earn more with hits (one per `_HITS_PER_TRY`)."""
_HITS_PER_TRY = 64


class Reader(ABC):
    """Reads one stream event by event (`feed`) into per-choice state; one subclass per dialect.

    Keeps per-choice and per-call state, and at most `KEPT` indices of end markers and of invalid
    payloads (the counts go on), so a pass over a huge capture holds no per-event state.
    Every JSON payload with a top-level `error` member (and every event named `error`)
    becomes an `InbandError`. When `stops_at_end`, events after the first end marker are
    not read (a client stops there; openai-python breaks at `[DONE]`): further end markers
    are still recorded and the others are counted in `extra["ignored_after_end"]`.

    Token events repeat one envelope around their text (the same id, model, index, ...). A
    dialect that has read one the long way may `learn` it; the next events with that same
    envelope then cost one string scan, with the same result as reading them the long way.
    """

    stops_at_end: ClassVar[bool] = True
    expects_json: ClassVar[bool] = True
    padding: ClassVar[tuple[str, ...]] = ()
    """Top-level string fields that change every event and carry nothing the dialect reads (OpenAI's
    `obfuscation`): an envelope skips their values."""

    def __init__(self) -> None:
        self._choices: dict[int, ChoiceState] = {}
        self._marked = False
        self._envelope: Envelope | None = None
        self._offer: _Offer | None = None
        self._tries = self._hits = 0
        self._ignored_after_end = 0
        self.usage: dict[str, Any] | None = None
        self.errors: list[InbandError] = []
        self.end_marker_events: list[int] = []
        self.end_markers = 0
        self.invalid_json: list[int] = []
        self.invalid_payloads = 0
        self.model: str | None = None
        self.response_id: str | None = None
        self.extra: dict[str, Any] = {}

    @abstractmethod
    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        """Whether this event is one of the dialect's end markers."""

    @abstractmethod
    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        """Take one event; `payload` is its data as a JSON object, {} when it is not one."""

    def feed(self, event: Event) -> int:
        """Take the next event; what it was, as `TEXT` | `END` | `INVALID_JSON` | `ERROR` flags."""
        envelope = self._envelope
        if envelope is not None:
            data, head, tail = event.data, envelope.head, envelope.tail
            if data.startswith(head) and data.endswith(tail) and event.type == envelope.type:
                try:
                    piece, stop = scanstring(data, len(head))
                    middle = envelope.middle
                    if middle is not None:
                        stop = scanstring(data, stop + len(middle))[1] if data.startswith(middle, stop) else -1
                except ValueError:  # no JSON string there: the long way says what it is
                    stop = -1
                if stop == len(data) - len(tail) and piece:
                    envelope.channel.append(piece)
                    self._hits += 1
                    return TEXT
        self._marked = False
        errors, invalid = len(self.errors), self.invalid_payloads
        payload = self._load(event)
        kind = event_kind(event, payload)
        end = self.is_end(event, kind, payload)
        if not (self.stops_at_end and self.end_markers):
            self._error(event, kind, payload)
            self.step(event, kind, payload)
        elif not end:
            self._ignored_after_end += 1
        flags = TEXT if self._marked else 0
        if end:
            self._envelope = None  # what follows is read the long way (not at all, when `stops_at_end`)
            self.end_markers += 1
            if len(self.end_marker_events) < KEPT:
                self.end_marker_events.append(event.index)
            flags |= END
        if self.invalid_payloads != invalid:
            flags |= INVALID_JSON
        if len(self.errors) != errors:
            flags |= ERROR
        if self._offer is not None:
            if flags == TEXT and not self.end_markers:
                self._learn(event, self._offer)
            self._offer = None
        return flags

    def answer(self, dialect: Dialect, text_events: tuple[int, ...] = ()) -> Answer:
        extra = dict(self.extra)
        if self._ignored_after_end:
            extra["ignored_after_end"] = self._ignored_after_end
        choices = tuple(state.build(index) for index, state in sorted(self._choices.items()))
        return Answer(
            dialect=dialect.name,
            choices=choices or (Choice(),),
            usage=self.usage,
            errors=tuple(self.errors),
            end_marker=dialect.end_marker,
            end_marker_events=tuple(self.end_marker_events),
            end_markers=self.end_markers,
            text_events=text_events,
            invalid_json=tuple(self.invalid_json),
            invalid_payloads=self.invalid_payloads,
            model=self.model,
            response_id=self.response_id,
            extra=extra,
        )

    def first_choice(self) -> ChoiceState | None:
        """The choice `answer()` lists first (the lowest index), as read so far; None before any."""
        return self._choices[min(self._choices)] if self._choices else None

    def choice(self, index: int = 0) -> ChoiceState:
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = ChoiceState()
        return state

    def add(self, channel: Channel, piece: object) -> bool:
        """Append a non-empty text piece to a channel and mark the current event as carrying output;
        whether it was one."""
        if isinstance(piece, str) and piece:
            channel.append(piece)
            self.mark()
            return True
        return False

    def mark(self) -> None:
        """Record that the current event carried output (text, reasoning, refusal, plan or a tool-call piece)."""
        self._marked = True

    def learn(self, piece: str, channel: Channel, where: Callable[[Any], tuple[dict[str, Any], str]]) -> None:
        """Offer the envelope of the event being read: all it did was append `piece`, the string at
        `where` in its payload, to `channel`, and any event that differs from it only in that string
        would do the same with its string (the dialect vouches for this: nothing may depend on the
        order of such events). Learnt when the event turns out to be text and nothing else."""
        if self._tries < _TRIES + self._hits // _HITS_PER_TRY:
            self._offer = (piece, channel, where)

    def _learn(self, event: Event, offer: _Offer) -> None:
        """Keep the offered envelope when the strings found in the data are the ones read: with other
        strings in their places, the payload holds those other strings there (the text where the
        dialect read it; the padding, if any, under its key)."""
        self._tries += 1
        piece, channel, where = offer
        data = event.data
        found = _rfind_string(data, piece)  # the text comes after the ids and names that could read the same
        if found is None:
            return
        head, tail = data[: found[0] + 1], data[found[1] :]
        probe = _other(piece)
        try:
            payload = loads(f"{head}{probe}\"{tail}")
            place, key = where(payload)
            if place[key] != probe:
                return
            middle = None
            pad = next((k for k in self.padding if type(payload.get(k)) is str), None)
            if pad is not None:  # a field that changes every event, read by nobody: its value is skipped
                found = _rfind_string(tail, payload[pad])
                if found is None:
                    return
                middle, tail = tail[: found[0] + 1], tail[found[1] :]
                filler = _other(payload[pad])
                payload = loads(f"{head}{probe}\"{middle}{filler}\"{tail}")
                place, key = where(payload)
                if place[key] != probe or payload[pad] != filler:
                    return
        except (ValueError, RecursionError, LookupError, TypeError):
            return
        self._envelope = Envelope(event.type, head, middle, tail, channel)

    def identify(self, *, model: object = None, response_id: object = None) -> None:
        """Keep the first non-empty model and response id (Azure's first chunk has empty ones)."""
        if self.model is None and isinstance(model, str) and model:
            self.model = model
        if self.response_id is None and isinstance(response_id, str) and response_id:
            self.response_id = response_id

    def _load(self, event: Event) -> dict[str, Any]:
        try:
            value = loads(event.data)
        except (ValueError, RecursionError):
            if self.expects_json and event.data != DONE:
                self.invalid_payloads += 1
                if len(self.invalid_json) < KEPT:
                    self.invalid_json.append(event.index)
            return {}
        return as_dict(value)

    def _error(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        error = inband_error(payload["error"], event.index) if "error" in payload else None
        if error is None and kind == "error":
            error = InbandError(
                message=as_str(payload.get("message")) or event.data or "error event",
                event_index=event.index,
                code=_label(payload.get("code")),
            )
        if error is not None:
            self.errors.append(error)
