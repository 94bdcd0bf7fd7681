"""A capture played back chunk by chunk, without I/O, and the one pacing rule every replay keeps.

    playback = Playback(load_capture("captures/openai-chat-text.jsonl"))
    for step in playback:              # one step a chunk, then one for the end
        print(step.text, end="")       # the answer text that chunk added
    playback.answer()                  # the answer so far: here, all of it

Each step says when its chunk was recorded, the chunk, what it parsed to (events, comments,
notices) and what it added to the answer; the last step says how the stream ended (its `Outcome`).
The way from the capture to the parsed chunks and the dialect is `analyze`'s (`_analysis.body`,
`parse_chunks`, `detect`), so a replay parses and reads exactly what an analysis does. Each event is
parsed once and read by the dialect's reader once, so a replay costs what one analysis does however
long the stream. Nothing here waits: `Pacing` says when a recorded moment plays, and the caller
sleeps (`sse-inspect replay`) or awaits (`sse-inspect serve`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ._analysis import Parsed, body, detect, framer_for, parse_chunks
from ._capture import Capture, Chunk
from ._events import Comment, Event, Notice
from ._outcome import Outcome, decide_outcome
from ._framing import UNTERMINATED
from ._rechunk import RechunkSpec
from .dialects import Answer, EventFlags

__all__ = ["Pacing", "Playback", "PlaybackStep", "TextFollower"]

Item = Event | Comment | Notice


class _Text(Protocol):
    def since(self, start: int) -> str: ...


class _Choice(Protocol):
    """What a replay reads of the reader's first choice (`Reader.first_choice()`): its text as streamed."""

    @property
    def text(self) -> _Text: ...


class _Reader(Protocol):
    def first_choice(self) -> _Choice | None: ...


@dataclass(frozen=True, slots=True)
class Pacing:
    """When a replay plays each recorded moment: recorded time `t` plays `t / speed` seconds after the
    replay started (1 = as recorded, 10 = ten times faster); with no speed (None or 0), or for a
    moment with no recorded time, at once."""

    speed: float | None

    def delay(self, t: float | None, elapsed: float) -> float:
        """Seconds to wait, `elapsed` seconds after the start, before recorded time `t` plays (0: now)."""
        if not self.speed or t is None:
            return 0.0
        return max(t / self.speed - elapsed, 0.0)

    def position(self, elapsed: float, t: float) -> float:
        """The recorded time the replay is at, `elapsed` seconds after its start; `t` (where it has
        got to) when it does not wait."""
        return elapsed * self.speed if self.speed else t


@dataclass(frozen=True, slots=True)
class PlaybackStep:
    """What one chunk brought to a replay; the last step (`chunk` None) is the end of the stream."""

    t: float | None
    """When the chunk arrived (seconds since the request; None: untimed). The last step's: when the
    stream ended, or when its last chunk arrived if the recording does not say."""
    chunk: Chunk | None
    """The body chunk as parsed (content-decoded, re-cut if asked); None: the end of the stream."""
    items: tuple[Item, ...]
    """The events, comments and notices the chunk completed, in order."""
    text: str
    """What the answer's text (its first choice's) gained, or all of it when `restarted`."""
    restarted: bool
    """The text does not go on from the text before: a choice with a lower index came, and its text
    (`text`) is now the answer's first (a rare server's `n > 1` order)."""
    events: int
    """Events so far, this step's included."""
    bytes: int
    """Body bytes so far, this step's included."""
    outcome: Outcome | None = None
    """On the last step, how the stream ended, decided as `analyze` decides it (None on the other steps)."""


class Playback:
    """One replay of a capture: iterate it once for its `PlaybackStep`s; `answer()` is the answer so far.

    The body is content-decoded and re-cut (`rechunk`) by `analyze`'s own steps, so the steps' chunks
    are the analysis's. Unless `dialect` names one, the dialect is told from the first events as
    `analyze` tells it: the constructor reads ahead as far as those events (DETECT_EVENTS), no further.
    """

    def __init__(self, capture: Capture, *, rechunk: RechunkSpec | None = None, dialect: str | None = None) -> None:
        self.capture = capture
        notices: list[Notice] = []  # the body's decoding problems: they come with the end
        parsed = parse_chunks(body(capture, capture.chunks, notices, rechunk), framer_for(capture), notices)
        self.dialect, self._parsed = detect(parsed, capture.request.url if capture.request else None, dialect)
        self._reader = self.dialect.reader()
        self._text_events: list[int] = []
        self._follow = TextFollower(self._reader)

    def answer(self) -> Answer:
        """The answer from the events read so far (all of them once the last step is taken). It is
        built when asked: it costs the length of the answer, so a view asks when it redraws."""
        return self._reader.answer(self.dialect, tuple(self._text_events))

    def __iter__(self) -> Iterator[PlaybackStep]:
        """The steps: one a chunk, then the end. One pass: a second iteration yields nothing."""
        read, text_events = self._reader.feed, self._text_events
        events = size = 0
        unterminated = False
        last_t: float | None = None
        parsed: Iterator[Parsed] = self._parsed
        self._parsed = iter(())
        for _, chunk, items in parsed:
            for item in items:
                if isinstance(item, Event):
                    events += 1
                    if read(item) & EventFlags.TEXT:
                        text_events.append(item.index)
                elif isinstance(item, Notice) and item.kind in UNTERMINATED:
                    unterminated = True
            text, restarted = self._follow.new_text()
            if chunk is None:
                end = self.capture.end
                t = end.t if end is not None and end.t is not None else last_t
                yield PlaybackStep(t, None, tuple(items), text, restarted, events, size, self._outcome(unterminated))
                return
            size += len(chunk.data)
            last_t = chunk.t
            yield PlaybackStep(chunk.t, chunk, tuple(items), text, restarted, events, size)

    def _outcome(self, unterminated: bool) -> Outcome:
        """How the stream ended, from what the reader saw (the answer is not built for it)."""
        response = self.capture.response
        return decide_outcome(
            errored=bool(self._reader.errors),
            end_marker=self.dialect.expected_marker(seen=bool(self._reader.end_marker_events)),
            end_marker_seen=bool(self._reader.end_marker_events),
            end=self.capture.end,
            status=response.status if response else None,
            unterminated=unterminated,
        )


class TextFollower:
    """What a reader's first choice's text gained since the last asking: how a replay, and a live view,
    show an answer growing. Asking costs the length of the new text, not of the whole."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self._choice: _Choice | None = None  # the first choice, as far as the steps have shown it
        self._shown = 0  # how much of its text they have shown

    def new_text(self) -> tuple[str, bool]:
        """What the first choice's text gained since the last call (restarted: all of a new first choice's)."""
        choice = self.reader.first_choice()
        if choice is None:
            return "", False
        if choice is self._choice:
            new = choice.text.since(self._shown)
            self._shown += len(new)
            return new, False
        before = str(self._choice.text)[: self._shown] if self._choice is not None else ""
        text = str(choice.text)
        self._choice, self._shown = choice, len(text)
        if text.startswith(before):
            return text[len(before) :], False
        return text, True
