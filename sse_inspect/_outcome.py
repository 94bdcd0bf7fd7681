"""How a stream ended (`Outcome`), decided in this one place for the checks, the verdict and both views.

    analysis.outcome.state    "complete", "ended", "errored", "no-end-marker" or "cut"
    analysis.outcome.cause    why it ended: "end-marker", "server-disconnected", "closed-cleanly", ...

Four facts decide it: the response's status, the dialect's end marker (does the dialect have one,
did it come), the in-band errors, and the recording's end line (how the connection ended, or
none: the recorder stopped first).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._capture import End
from .dialects._base import Answer

__all__ = ["CAUSES", "STATES", "Outcome", "decide_outcome"]

STATES = ("complete", "ended", "errored", "no-end-marker", "cut")
"""complete: the dialect's end marker came and no in-band error did; ended: the dialect has no end
marker and the recording saw the server end the stream; errored: an in-band error came; no-end-marker:
the dialect has an end marker and it never came; cut: the dialect has no end marker and the
recording did not see the stream end cleanly."""

CAUSES = (
    "in-band-error",  # the stream ended after an in-band error
    "end-marker",  # the end marker came
    "recording-stopped",  # the capture has no end line: the recorder stopped first
    "server-disconnected",  # the connection was cut mid-stream
    "client-disconnected",  # the client went away first
    "error",  # the stream failed (the recorder saw an error)
    "closed-inside-event",  # the server closed cleanly, but inside an event
    "closed-cleanly",  # the server closed cleanly
)
"""Why the stream ended, most telling first: the first that holds is the cause."""

_WORDS = {
    "complete": "COMPLETE",
    "ended": "ENDED (this dialect has no end marker)",
    "errored": "ERRORED",
    "no-end-marker": "NO END MARKER",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one stream ended: its `state`, the `cause`, the HTTP status and the recording's end line."""

    state: str
    """One of `STATES`."""
    cause: str
    """One of `CAUSES`."""
    http_ok: bool
    """Whether the status was a success (2xx), or no response was recorded (a raw body)."""
    end: End | None
    """The recording's end line (None: the capture has none)."""
    end_marker_missing: bool
    """Whether the dialect has an end marker and it never came (after an in-band error too)."""

    @property
    def ok(self) -> bool:
        """Whether the stream ended as it should: complete, or ended where the dialect has no marker."""
        return self.state in ("complete", "ended")

    @property
    def connection_cut(self) -> bool:
        """Whether the recording saw the connection end otherwise than cleanly (an end line not `complete`)."""
        return self.end is not None and self.end.kind != "complete"

    @property
    def words(self) -> str:
        """The state in capitals, as the views print it: `COMPLETE`, `NO END MARKER`, `CUT (recording ...)`."""
        if self.state == "cut":
            return f"CUT (recording {self.end.kind if self.end else 'incomplete'})"
        return _WORDS[self.state]


def decide_outcome(answer: Answer, end: End | None, status: int | None, *, unterminated: bool) -> Outcome:
    """Decide how a stream ended: `answer` as the dialect rebuilt it, `end` the recording's end line,
    `status` the response's (None: a raw body), `unterminated` whether bytes after the last event formed none."""
    if answer.errors:
        state = "errored"
    elif answer.end_marker is not None:
        state = "complete" if answer.end_marker_seen else "no-end-marker"
    else:
        state = "ended" if end is not None and end.kind == "complete" else "cut"
    if answer.errors:
        cause = "in-band-error"
    elif answer.end_marker_seen and answer.end_marker is not None:
        cause = "end-marker"
    elif end is None:
        cause = "recording-stopped"
    elif end.kind != "complete":
        cause = end.kind
    else:
        cause = "closed-inside-event" if unterminated else "closed-cleanly"
    return Outcome(
        state=state,
        cause=cause,
        http_ok=status is None or 200 <= status < 300,
        end=end,
        end_marker_missing=answer.end_marker is not None and not answer.end_marker_seen,
    )
