"""How a stream ended (`Outcome`), decided in this one place for the checks, the verdict and every view.

    analysis.outcome.state    State.COMPLETE, ENDED, ERRORED, NO_END_MARKER or CUT
    analysis.outcome.cause    why it ended: Cause.END_MARKER, SERVER_DISCONNECTED, CLOSED_CLEANLY, ...

Four facts decide it: the response's status, the dialect's end marker (does the dialect have one,
did it come), the in-band errors, and the recording's end line (how the connection ended, or
none: the recorder stopped first). `State` and `Cause` are `StrEnum`s: each equals its string
("cut", "server-disconnected"), as JSON writes it.

What a cause is called depends on who reads it: `WORDS` holds every wording, keyed by cause and
`Audience` (the replay's last line, the missing-end-marker finding, the reason a replayed
connection is cut, the terminal's outcome line), and `say` fills one in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum

from ._capture import End

__all__ = [
    "ADVICE", "WORDS", "Audience", "Cause", "Outcome", "State", "abrupt_end", "decide_outcome",
    "end_cause", "say",
]  # fmt: skip


class State(StrEnum):
    """How the stream ended, in one word."""

    COMPLETE = "complete"
    """The dialect's end marker came and no in-band error did."""
    ENDED = "ended"
    """The dialect has no end marker and the recording saw the server end the stream."""
    ERRORED = "errored"
    """An in-band error came."""
    NO_END_MARKER = "no-end-marker"
    """The dialect has an end marker and it never came."""
    CUT = "cut"
    """The dialect has no end marker and the recording did not see the stream end cleanly."""


class Cause(StrEnum):
    """Why the stream ended, most telling first: the first that holds is the cause."""

    IN_BAND_ERROR = "in-band-error"
    """The stream ended after an in-band error."""
    END_MARKER = "end-marker"
    """The end marker came."""
    RECORDING_STOPPED = "recording-stopped"
    """The capture has no end line: the recorder stopped first."""
    SERVER_DISCONNECTED = "server-disconnected"
    """The connection was cut mid-stream."""
    CLIENT_DISCONNECTED = "client-disconnected"
    """The client went away first."""
    ERROR = "error"
    """The stream failed (the recorder saw an error)."""
    CLOSED_INSIDE_EVENT = "closed-inside-event"
    """The server closed cleanly, but inside an event."""
    CLOSED_CLEANLY = "closed-cleanly"
    """The server closed cleanly."""


class Audience(Enum):
    """Who reads a cause's words."""

    REPLAY = "replay"
    """The line `sse-inspect replay` ends with when the stream did not end cleanly."""
    FINDING = "finding"
    """How the stream ended, in the missing-end-marker finding ("no [DONE] after 12 events: <how>")."""
    TRANSPORT = "transport"
    """Why a replayed connection (server, httpx or requests transport) is cut rather than ended."""
    VIEW = "view"
    """The recording's end on the terminal's outcome line ("· recording <words>")."""


WORDS: dict[tuple[Cause, Audience], str] = {
    # the replay's last line: {at} is " at 1.234 s" (or ""), {paren} is " (the error)" (or "")
    (Cause.RECORDING_STOPPED, Audience.REPLAY):
        "the recording stops here: it was cut off (no end line), so how the stream ended is unknown",
    (Cause.SERVER_DISCONNECTED, Audience.REPLAY):
        "the stream was cut{at}: the server, or a hop on the way, closed the connection before its end{paren}",
    (Cause.CLIENT_DISCONNECTED, Audience.REPLAY): "the client left{at}, before the stream ended{paren}",
    (Cause.ERROR, Audience.REPLAY): "the stream failed{at}{paren}",
    # the missing-end-marker finding: {event} is the in-band error's event, {colon} is ": the error" (or "")
    (Cause.IN_BAND_ERROR, Audience.FINDING): "the stream ended after the in-band error at event #{event}",
    (Cause.RECORDING_STOPPED, Audience.FINDING): "the recording stopped first",
    (Cause.SERVER_DISCONNECTED, Audience.FINDING): "the connection was cut mid-stream{paren}",
    (Cause.CLIENT_DISCONNECTED, Audience.FINDING): "the client went away first{paren}",
    (Cause.ERROR, Audience.FINDING): "the stream failed{colon}",
    (Cause.CLOSED_INSIDE_EVENT, Audience.FINDING): "the server closed inside an event",
    (Cause.CLOSED_CLEANLY, Audience.FINDING):
        "the server closed the stream cleanly without it (or a hop or recorder dropped it)",
    # a replayed connection's cut: {kind} is the end line's kind
    (Cause.RECORDING_STOPPED, Audience.TRANSPORT): "recording cut off",
    (Cause.SERVER_DISCONNECTED, Audience.TRANSPORT): "{kind}{colon}",
    (Cause.CLIENT_DISCONNECTED, Audience.TRANSPORT): "{kind}{colon}",
    (Cause.ERROR, Audience.TRANSPORT): "{kind}{colon}",
    # the terminal's outcome line (the error follows, styled apart)
    (Cause.RECORDING_STOPPED, Audience.VIEW): "INCOMPLETE (no end line)",
    (Cause.SERVER_DISCONNECTED, Audience.VIEW): "{kind}",
    (Cause.CLIENT_DISCONNECTED, Audience.VIEW): "{kind}",
    (Cause.ERROR, Audience.VIEW): "{kind}",
}  # fmt: skip
"""Every wording of a cause, by cause and audience (a pair not here is one its audience never meets)."""

ADVICE: dict[Cause, str] = {
    Cause.RECORDING_STOPPED: (
        "the recording was cut off (the recorder stopped or was killed before the stream ended), "
        "so this capture cannot tell whether the stream was complete: record it again"
    ),
    Cause.CLIENT_DISCONNECTED: (
        "the client closed the connection (its read timeout, a user's cancel, or the recorder's own "
        "--timeout or Ctrl-C): no hop cut this stream; record again with a longer timeout, or find "
        "why the client gave up"
    ),
}
"""What to do about a missing end marker, for the causes where the finding can say."""

_STATE_WORDS = {
    State.COMPLETE: "COMPLETE",
    State.ENDED: "ENDED (this dialect has no end marker)",
    State.ERRORED: "ERRORED",
    State.NO_END_MARKER: "NO END MARKER",
}


_CAUSE_VALUES = frozenset(Cause)  # members are their strings: `kind in` works on 3.11 too


def end_cause(end: End | None) -> Cause | None:
    """The cause the recording's end line gives on its own: None when it says the stream ended cleanly."""
    if end is None:
        return Cause.RECORDING_STOPPED
    if end.kind == "complete":
        return None
    return Cause(end.kind) if end.kind in _CAUSE_VALUES else Cause.ERROR  # an end kind outside END_KINDS: a failure


def say(cause: Cause, audience: Audience, end: End | None = None, *, event: int | None = None) -> str:
    """`cause` in `audience`'s words, filled in from the recording's end line (and the in-band error's `event`)."""
    error = end.error if end is not None else None
    return WORDS[cause, audience].format(
        at=f" at {end.t:.3f} s" if end is not None and end.t is not None else "",
        paren=f" ({error})" if error else "",
        colon=f": {error}" if error else "",
        kind=end.kind if end is not None else "",
        event=event,
    )


def abrupt_end(end: End | None) -> str | None:
    """Why a replay of a stream that ended with `end` must end abruptly, as a cut connection does
    (it did not end cleanly, or the recording was cut off first: no end line), or None."""
    cause = end_cause(end)
    return None if cause is None else say(cause, Audience.TRANSPORT, end)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one stream ended: its `state`, the `cause`, the HTTP status and the recording's end line."""

    state: State
    cause: Cause
    http_ok: bool
    """Whether the status was a success (2xx), or no response was recorded (a raw body)."""
    end: End | None
    """The recording's end line (None: the capture has none)."""
    end_marker_missing: bool
    """Whether the dialect has an end marker and it never came (after an in-band error too)."""

    @property
    def ok(self) -> bool:
        """Whether the stream ended as it should: complete, or ended where the dialect has no marker."""
        return self.state in (State.COMPLETE, State.ENDED)

    @property
    def connection_cut(self) -> bool:
        """Whether the recording saw the connection end otherwise than cleanly (an end line not `complete`)."""
        return self.end is not None and self.end.kind != "complete"

    @property
    def end_cause(self) -> Cause | None:
        """What the recording's end line says on its own (None: a clean end), whatever decided `cause`:
        a stream cut after its end marker has the cause END_MARKER and the end cause SERVER_DISCONNECTED."""
        return end_cause(self.end)

    @property
    def words(self) -> str:
        """The state in capitals, as the views print it: `COMPLETE`, `NO END MARKER`, `CUT (recording ...)`."""
        if self.state is State.CUT:
            return f"CUT (recording {self.end.kind if self.end else 'incomplete'})"
        return _STATE_WORDS[self.state]


def decide_outcome(
    *, errored: bool, end_marker: str | None, end_marker_seen: bool, end: End | None, status: int | None,
    unterminated: bool,
) -> Outcome:
    """Decide how a stream ended from what the dialect's reader saw (`errored`: an in-band error came;
    the dialect's `end_marker`, None if it has none; whether it came), `end` the recording's end line,
    `status` the response's (None: a raw body), `unterminated` whether bytes after the last event formed none.

    `Answer.complete` is this decision seen from the answer alone: True exactly when the state is
    COMPLETE, False when it is ERRORED or NO_END_MARKER with an end marker, None (no end marker) for
    ENDED, CUT, and ERRORED without one."""
    if errored:
        state = State.ERRORED
    elif end_marker is not None:
        state = State.COMPLETE if end_marker_seen else State.NO_END_MARKER
    else:
        state = State.ENDED if end is not None and end.kind == "complete" else State.CUT
    from_end = end_cause(end)
    if errored:
        cause = Cause.IN_BAND_ERROR
    elif end_marker_seen and end_marker is not None:
        cause = Cause.END_MARKER
    elif from_end is not None:
        cause = from_end
    else:
        cause = Cause.CLOSED_INSIDE_EVENT if unterminated else Cause.CLOSED_CLEANLY
    return Outcome(
        state=state,
        cause=cause,
        http_ok=status is None or 200 <= status < 300,
        end=end,
        end_marker_missing=end_marker is not None and not end_marker_seen,
    )
