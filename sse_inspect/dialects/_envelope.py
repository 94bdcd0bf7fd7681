"""An accelerator a `Reader` may opt into: token events read by their repeated envelope.

Speed module (the end-to-end benchmark needs it): a token event of OpenAI Chat or Anthropic repeats
one envelope around its text (the same id, model, index, ...). A reader that subclasses
`EnvelopeCache` and calls `learn` from its `step` at a token it read the long way learns that
envelope; the next events with the same envelope then cost one string scan instead of a JSON parse
and a `step`, with the same result. A reader without it, or made with `accelerate=False`, gives the
same answers, only slower; tests/dialects/test_envelopes.py proves it for every dialect that opts in.

Nothing is trusted blindly. An envelope is kept only when the event turns out to carry that one
piece of text and nothing else (no other `add` or `mark`, no end marker, error or invalid payload),
and when, with another string in the place of the text, the payload holds that string where `learn`
said the text sits (so an id or a name that reads the same as the text cannot be taken for it). A
hit needs the same event type, the same bytes around the text, and a JSON string in between;
anything else is read the long way.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from json.decoder import scanstring  # type: ignore[attr-defined]  # the C one when there is one
from json.encoder import encode_basestring_ascii as encode_ascii  # type: ignore[attr-defined]
from typing import Any, ClassVar, NamedTuple

from .._events import Event
from .._fastjson import encode_string, loads
from ._accumulate import Channel
from ._base import END, TEXT, EventFlags, Reader

__all__ = ["Envelope", "EnvelopeCache", "Place"]

Place = Callable[[Any], tuple[Any, Any]]
"""Where a token's text sits in its payload: payload -> (container, key), e.g. `(payload["delta"], "text")`."""

_TRIES = 8
"""Envelopes a reader learns before it has to earn more with hits (one per `_HITS_PER_TRY`)."""
_HITS_PER_TRY = 64
_TEXT_ONLY = EventFlags.TEXT
"""What a hit returns, as a global (a member looked up on its enum class costs more than the hit's scan)."""


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


class EnvelopeCache(Reader):
    """A `Reader` that reads token events by their envelope once it has learnt it (see the module docstring).

    A subclass calls `learn(piece, channel, place)` from `step` where it appended a token's text and
    did nothing else, and where any event differing from this one only in that text would do the
    same with its own text (nothing may depend on the order of such events).
    """

    padding: ClassVar[tuple[str, ...]] = ()
    """Top-level string fields that change every event and carry nothing the dialect reads (OpenAI's
    `obfuscation`): an envelope skips their values."""

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._envelope: Envelope | None = None
        self._offer: tuple[str, Channel, Place] | None = None
        self._outputs = 0
        """Pieces of output the event being read carried (`add` and `mark` calls)."""
        self._tries = self._hits = 0

    def learn(self, piece: str, channel: Channel, place: Place) -> None:
        """Offer the envelope of the event being read: all it did was append `piece`, the string at
        `place` in its payload, to `channel`. Learnt when the event turns out to be text and nothing else."""
        if self.accelerate and self._tries < _TRIES + self._hits // _HITS_PER_TRY:
            self._offer = (piece, channel, place)

    def add(self, channel: Channel, piece: object) -> bool:
        added = super().add(channel, piece)
        self._outputs += added
        return added

    def mark(self) -> None:
        super().mark()
        self._outputs += 1

    def feed(self, event: Event) -> EventFlags:
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
                    return _TEXT_ONLY
        return self._read(event)

    def _read(self, event: Event) -> EventFlags:
        """An event read the long way (`Reader.feed`), and perhaps its envelope learnt."""
        self._outputs = 0
        flags = super().feed(event)
        if flags & END:
            self._envelope = None  # what follows is read the long way (not at all, when `stops_at_end`)
        offer = self._offer
        if offer is not None:
            self._offer = None
            if flags == TEXT and self._outputs == 1 and not self.end_markers:
                self._learn(event, offer)
        return flags

    def feed_many(self, events: list[Event]) -> list[EventFlags]:
        """`feed` of each: the hits in one loop with the envelope's parts in locals, each miss the long way
        (`_read`). The hit is `feed`'s test, written again inline: a call per event would cost a quarter of
        a read (`feed` stays as it is for the readers of one event at a time: replays, kept analyses)."""
        out: list[EventFlags] = []
        i, n = 0, len(events)
        while i < n:
            envelope = self._envelope
            if envelope is not None:  # the hits, as `feed` reads them, until one misses
                head, tail, kind, middle = envelope.head, envelope.tail, envelope.type, envelope.middle
                pieces: list[str] = []
                append = pieces.append  # (given to the channel at once: `Channel.extend`)
                start = i
                while i < n:
                    event = events[i]
                    data = event.data
                    if not (data.startswith(head) and data.endswith(tail) and event.type == kind):
                        break
                    try:
                        piece, stop = scanstring(data, len(head))
                        if middle is not None:
                            stop = scanstring(data, stop + len(middle))[1] if data.startswith(middle, stop) else -1
                    except ValueError:  # no JSON string there: the long way says what it is
                        break
                    if stop != len(data) - len(tail) or not piece:
                        break
                    append(piece)
                    i += 1
                envelope.channel.extend(pieces)
                self._hits += i - start
                out += repeat(_TEXT_ONLY, i - start)
                if i == n:
                    break
            out.append(self._read(events[i]))  # a miss, or no envelope
            i += 1
        return out

    def _learn(self, event: Event, offer: tuple[str, Channel, Place]) -> None:
        """Keep the offered envelope when the strings found in the data are the ones read: with other
        strings in their places, the payload holds those other strings there (the text where the
        dialect read it; the padding, if any, under its key)."""
        self._tries += 1
        piece, channel, place = offer
        data = event.data
        found = _rfind_string(data, piece)  # the text comes after the ids and names that could read the same
        if found is None:
            return
        head, tail = data[: found[0] + 1], data[found[1] :]
        probe = _other(piece)
        try:
            payload = loads(f"{head}{probe}\"{tail}")
            container, key = place(payload)
            if container[key] != probe:
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
                container, key = place(payload)
                if container[key] != probe or payload[pad] != filler:
                    return
        except (ValueError, RecursionError, LookupError, TypeError):
            return
        self._envelope = Envelope(event.type, head, middle, tail, channel)


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
