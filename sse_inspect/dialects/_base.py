"""The two classes a dialect subclasses: `Dialect` (recognise a grammar) and `Reader` (read one stream of it).

A `Reader` subclass writes the grammar alone, in two methods: `is_end` (is this event an end marker?)
and `step` (what does this event add?), with the helpers `choice`, `add`, `mark` and `identify`.
The base does the bookkeeping every dialect shares: it parses each event's data as JSON and counts
the payloads that are not, records in-band errors and end markers, stops reading at the end when the
dialect says clients do, and says of each event what it was, as `EventFlags`. docs/dialects.md walks
through a whole dialect.

Speed note (the end-to-end benchmark needs it): `EventFlags`'s `&` is int's, so testing a flag of every
event costs what testing an int does (enum's own `&` is Python code, tens of times slower); `feed`
computes with the plain-int names `TEXT`, `END`, ... and returns the `EventFlags` of the result.

A dialect also writes: the faults a replay adds in its provider's own shape, an in-band error
(`Dialect.fault_error`) and an error response (`Dialect.error_body`), built with the writers at the
end of this module (docs/faults.md says what each fault models).
"""

from __future__ import annotations

import enum
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from .._events import Event
from .._fastjson import loads
from ._accumulate import DONE, Channel, ChoiceState, as_dict, as_str, event_kind, inband_error, label
from ._answer import Answer, Choice, Holding, InbandError

__all__ = [
    "END",
    "ERROR",
    "INVALID_JSON",
    "JSON",
    "KEPT",
    "TEXT",
    "Dialect",
    "EventFlags",
    "Reader",
    "error_event",
    "event",
    "json_body",
    "phrase",
]

KEPT = 1000
"""How many indices of end markers and of invalid payloads a reader keeps (the counts go on)."""


class EventFlags(enum.IntFlag):
    """What `Reader.feed` says of an event: any of these flags, or none (`EventFlags(0)`).

    Test one with `flags & EventFlags.TEXT` (which gives a plain int).
    """

    TEXT = 1
    """The event carried output: answer text, reasoning, a refusal, a plan or a tool-call piece."""
    END = 2
    """The event was one of the dialect's end markers."""
    INVALID_JSON = 4
    """The event's data should have been JSON in this dialect and was not."""
    ERROR = 8
    """The event reported an in-band error."""

    # see the speed note above; mypy expects enum's `&`, which returns an EventFlags
    __and__ = int.__and__  # type: ignore[assignment]
    __rand__ = int.__rand__  # type: ignore[assignment]


TEXT, END, INVALID_JSON, ERROR = (flag.value for flag in EventFlags)
"""The flags as plain ints, for loops that test every event."""
_COMBINATIONS = tuple(EventFlags(value) for value in range(16))
"""Each combination of flags by its value, to return one without calling `EventFlags`."""


class Reader(ABC):
    """Reads one stream, event by event (`feed`), and gives what it read as an `Answer` (`answer`).

    A subclass implements `is_end` and `step`; it may set `stops_at_end` and `expects_json`, and
    keep state of its own in `__init__(self, *, accelerate=True)`, calling
    `super().__init__(accelerate=accelerate)`. `accelerate` matters only to a reader with an
    accelerator (`EnvelopeCache`), which reads every event the long way when it is False; elsewhere it
    has no effect, so that `dialect.reader(accelerate=False)` works for every dialect.

    The base keeps per-choice state (`choice`), the last usage object, the model and response id,
    the in-band errors, `extra` facts, and at most `KEPT` indices of end markers and of invalid
    payloads (the counts go on), so a pass over a huge capture holds no per-event state.
    Every JSON payload with a top-level `error` member (and every event named `error`) becomes an
    `InbandError` before `step` sees the event. When `stops_at_end`, events after the first end
    marker are not stepped (a client stops there; openai-python breaks at `[DONE]`): further end
    markers are still recorded and the others are counted in `extra["ignored_after_end"]`.
    """

    stops_at_end: ClassVar[bool] = True
    """What the client reads: whether clients stop reading at the first end marker, so that later
    events are not in the answer (False: they read the body to its end). Whether such an event is a
    fault is the dialect's `end_closes_stream`."""
    expects_json: ClassVar[bool] = True
    """Whether every event's data should be JSON (`[DONE]` excepted); the others are counted as invalid."""

    def __init__(self, *, accelerate: bool = True) -> None:
        self.accelerate = accelerate
        """Whether an accelerator may take events (no effect on a reader without one)."""
        self.holding = Holding.WHOLE
        """How the answer's text is held (set it before the first event): whole by default; spooled,
        glimpsed or counted for a command that must not hold a huge answer in memory."""
        self._choices: dict[int, ChoiceState] = {}
        self._marked = False
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

    # The grammar: what a dialect writes.

    @abstractmethod
    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        """Whether this event is one of the dialect's end markers (`kind`: the event's name, see `event_kind`)."""

    @abstractmethod
    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        """Take one event; `payload` is its data as a JSON object, {} when it is not one."""

    # The helpers a grammar uses.

    def choice(self, index: int = 0) -> ChoiceState:
        """The state of choice `index` (made on first use): its channels, tool calls and finish reason."""
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = ChoiceState(self.holding)
        return state

    def first_choice(self) -> ChoiceState | None:
        """The choice `answer()` lists first (the lowest index), as read so far; None before any."""
        return self._choices[min(self._choices)] if self._choices else None

    def add(self, channel: Channel, piece: object) -> bool:
        """Append a non-empty text piece to a channel and mark the current event as carrying output;
        whether it was one."""
        if isinstance(piece, str) and piece:
            channel.append(piece)
            self._marked = True
            return True
        return False

    def mark(self) -> None:
        """Record that the current event carried output that `add` did not append (a tool call's name)."""
        self._marked = True

    def identify(self, *, model: object = None, response_id: object = None) -> None:
        """Keep the first non-empty model and response id (Azure's first chunk has empty ones)."""
        if self.model is None and isinstance(model, str) and model:
            self.model = model
        if self.response_id is None and isinstance(response_id, str) and response_id:
            self.response_id = response_id

    # What callers use.

    def feed(self, event: Event) -> EventFlags:
        """Take the next event; what it was, as `EventFlags`."""
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
            self.end_markers += 1
            if len(self.end_marker_events) < KEPT:
                self.end_marker_events.append(event.index)
            flags |= END
        if self.invalid_payloads != invalid:
            flags |= INVALID_JSON
        if len(self.errors) != errors:
            flags |= ERROR
        return _COMBINATIONS[flags]

    def feed_many(self, events: list[Event]) -> list[EventFlags]:
        """`feed` of each event in turn, their flags in a list: what the analysis pass calls with a block's
        events (a reader may read them faster together, with the same result)."""
        return list(map(self.feed, events))

    def answer(self, dialect: Dialect, text_events: tuple[int, ...] = ()) -> Answer:
        """What was read so far, as the `dialect`'s answer; `text_events` are the indices of the events
        whose flags had `TEXT` (the caller keeps them, or not)."""
        extra = dict(self.extra)
        if self._ignored_after_end:
            extra["ignored_after_end"] = self._ignored_after_end
        choices = tuple(state.build(index) for index, state in sorted(self._choices.items()))
        return Answer(
            dialect=dialect.name,
            choices=choices or (Choice(),),
            usage=self.usage,
            errors=tuple(self.errors),
            end_marker=dialect.expected_marker(seen=self.end_markers > 0),
            end_marker_events=tuple(self.end_marker_events),
            end_markers=self.end_markers,
            text_events=text_events,
            invalid_json=tuple(self.invalid_json),
            invalid_payloads=self.invalid_payloads,
            model=self.model,
            response_id=self.response_id,
            extra=extra,
        )

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
                code=label(payload.get("code")),
            )
        if error is not None:
            self.errors.append(error)


class Dialect(ABC):
    """One provider's stream grammar: recognise it (`detect`) and read it (`reader`).

    A subclass sets `name`, `title`, `end_marker` and `reader` (its `Reader` subclass), and writes `detect`.
    """

    name: ClassVar[str]
    """Short name used on the command line (`--dialect openai-chat`)."""
    title: ClassVar[str]
    end_marker: ClassVar[str | None] = None
    """The marker this dialect ends a stream with, as text for people (None: it has none)."""
    reader: ClassVar[type[Reader]]
    """The `Reader` of one stream in this grammar: `dialect.reader()` makes a new one; `feed` it the events in order."""
    end_marker_optional: ClassVar[bool] = False
    """Whether a whole stream may end without the end marker: this grammar's servers send it or not
    (an app's text stream, with or without `data: [DONE]`). When it does not come, nothing was
    promised: the answer has no end marker (`complete` None) and none is reported missing."""
    sends_done: ClassVar[bool] = True
    """Whether this API's servers may end a stream with a `data: [DONE]` sentinel (False: a `[DONE]` in
    its stream was added on the way, and its clients crash on it). True by default, as every dialect
    not known to send none was treated before this attribute existed."""
    end_closes_stream: ClassVar[bool] = True
    """Whether the end marker ends the stream, so that an event after it is a fault (False where the
    "end marker" is a field of an ordinary event, as Gemini's `finishReason`, or there is none).
    What the client reads after it is the reader's `stops_at_end`; a reader that stops at the end
    marker needs this True, or the events it leaves out are lost without a finding."""
    framings: ClassVar[tuple[str, ...]] = ("sse",)
    """The framings this API streams in (`_ndjson.FRAMINGS`: "sse", "ndjson", "json-array", "eventstream"): its
    `fault_error` writes in these. A replay refuses an `error:` fault on a stream framed otherwise."""
    sends_batches: ClassVar[bool] = False
    """Whether this API's own servers send the answer in batches of tokens, a short answer whole in one
    event after the model's think (Gemini). A few big events after a silence are then the provider's
    own shape, not a hop's or an app's hold, and `single-flush` does not judge them by their size."""

    @classmethod
    @abstractmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """How sure (0-100) that a stream starting with `events`, fetched from `url`, speaks this dialect."""

    def expected_marker(self, *, seen: bool) -> str | None:
        """The end marker a stream is held to, given whether one came: `end_marker`, or None when the
        marker is optional and did not come."""
        return None if self.end_marker_optional and not seen else self.end_marker

    # The faults a replay adds (sse_inspect/_faults.py, docs/faults.md), in this provider's own shape.

    def fault_error(self, events_sent: int) -> bytes:
        """The bytes of this provider's in-band error, sent after `events_sent` events of a stream (then
        the stream ends): whole events, each ending in a blank line, with LF line ends, unless the
        provider's own error is something else (Gemini's is no event at all, see its override).

        The base writes a shape every reader here records as an in-band error, by both conventions
        clients use: an event named `error` (a browser's EventSource hands it to the `error`
        listeners, never to `onmessage`; Anthropic's clients raise on the name) whose data is an
        object with an `error` member (openai-python and the OpenAI-compatible clients raise on the
        member, whatever the event's name).
        """
        return error_event("The server had an error while streaming the answer.")

    def fault_error_in(self, framing: str, events_sent: int) -> bytes:
        """`fault_error` in the stream's `framing` (one of `framings`): what a replay sends. The same bytes
        unless the provider streams in several framings and writes its error in each (Gemini's array)."""
        return self.fault_error(events_sent)

    def for_request(self, body: str | None) -> Dialect:
        """This dialect for a replay of the exchange whose request body was `body` (None: not recorded):
        itself, unless what it writes in a fault answers the request (a JSON-RPC error carries the request's
        `id`, which its client matches to the call it made)."""
        return self

    def error_body(self, status: int) -> tuple[str, bytes]:
        """The content type and body of this provider's error response for HTTP `status` (a 4xx or a
        5xx), sent instead of the stream. The base writes JSON in the OpenAI-compatible shape, the
        one most clients read: `{"error": {"message", "type", "code"}}`, the status's reason phrase
        as the message."""
        reason = phrase(status)
        error = {"message": reason, "type": reason.lower().replace(" ", "_"), "code": status}
        return JSON, json_body({"error": error}, indent=2)

    def rebuild(self, events: Iterable[Event]) -> Answer:
        """Rebuild the answer from all the events of one stream, in order."""
        reader = self.reader()
        feed = reader.feed
        text = tuple(e.index for e in events if feed(e) & TEXT)
        return reader.answer(self, text)


# The bytes of the faults a replay adds (`Dialect.fault_error`, `Dialect.error_body`): an event is written
# as the providers here write theirs (an optional `event:` line, one `data:` line of compact JSON, a
# blank line, LF line ends), an error body as JSON, compact or indented as the provider sends it.

JSON = "application/json"
"""The content type of every error body written here."""

_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Site Overloaded",
}
"""Reason phrases (RFC 9110; 529 is no standard's, Anthropic's "overloaded"). Written out here, not taken
from `http.HTTPStatus`: the stream tools import nothing of the network (tests/layering.py)."""


def phrase(status: int) -> str:
    """The reason phrase of `status`, or a plain "Client Error" / "Server Error" for one not listed."""
    return _PHRASES.get(status) or ("Client Error" if status < 500 else "Server Error")


def event(payload: object, *, name: str | None = None) -> bytes:
    """One whole event: `event: name` when named, `data:` the payload as compact JSON, a blank line."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {_compact(payload)}\n\n".encode()


def error_event(message: str, *, error_type: str = "server_error") -> bytes:
    """An event named `error` whose data holds an `error` object: what every reader here records as an
    in-band error, by either of the two conventions clients use (see `Dialect.fault_error`)."""
    return event({"error": {"message": message, "type": error_type}}, name="error")


def json_body(payload: object, *, indent: int | None = None) -> bytes:
    """`payload` as an HTTP body: compact JSON, or indented by `indent` and ending in a line end."""
    if indent is None:
        return _compact(payload).encode()
    return (json.dumps(payload, indent=indent, ensure_ascii=False) + "\n").encode()


def _compact(payload: object) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
