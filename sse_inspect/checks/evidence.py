"""The numbers behind a finding's message, one frozen value per kind (`Finding.evidence`).

Views read them as attributes (`report.evidence(Bursts)`). They hold no JSON: `check --json`
makes its objects from them at the edge (`cli/_check.py`, `evidence_json`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Burst",
    "Bursts",
    "Bytes",
    "Comments",
    "ContentLength",
    "Encoding",
    "EndMissing",
    "ErrorEvent",
    "Evidence",
    "FixedSizeFlush",
    "HeadersHeld",
    "InvalidEvents",
    "Leak",
    "Leaks",
    "LineEnds",
    "Lines",
    "Silence",
    "SingleFlush",
    "Status",
    "TimeoutCut",
]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Base of the evidence values."""


@dataclass(frozen=True, slots=True)
class Bytes(Evidence):
    """`incomplete-event`: the bytes after the last blank line."""

    bytes: int


@dataclass(frozen=True, slots=True)
class Lines(Evidence):
    """`invalid-utf8`, `ignored-fields`: how many lines."""

    lines: int


@dataclass(frozen=True, slots=True)
class Comments(Evidence):
    """`heartbeats`: how many comment lines."""

    comments: int


@dataclass(frozen=True, slots=True)
class LineEnds(Evidence):
    """`cr-line-endings`: lines ended by LF, CRLF and a lone CR."""

    lf: int
    crlf: int
    cr: int


@dataclass(frozen=True, slots=True)
class ContentLength(Evidence):
    """`content-length-on-stream`: the header's length and how long the body took to arrive."""

    length: int | None
    """None: the value is not a number."""
    spread_s: float | None
    """From the body's first chunk to its last (None: untimed, or no body)."""
    streamed: bool
    """The body arrived spread out (over `burst_min_silence_ms` or more): nothing held it whole."""


@dataclass(frozen=True, slots=True)
class Encoding(Evidence):
    """`utf-16`: the encoding the body looks like; `compressed-stream`: the Content-Encoding."""

    encoding: str


@dataclass(frozen=True, slots=True)
class Status(Evidence):
    """`http-error`: the response's status."""

    status: int


@dataclass(frozen=True, slots=True)
class Leak(Evidence):
    """One secret: where (a header, the response body), what kind, at which body byte."""

    where: str
    kind: str
    offset: int | None


@dataclass(frozen=True, slots=True)
class Leaks(Evidence):
    """`secret-in-capture`: the secrets found (the first 100)."""

    leaks: tuple[Leak, ...]


@dataclass(frozen=True, slots=True)
class EndMissing(Evidence):
    """`missing-end-marker`: the recording's end (None: no end line) and the model's finish reason."""

    end: str | None
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class InvalidEvents(Evidence):
    """`invalid-json`: the indices of the events whose data is not JSON (the first 20)."""

    events: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ErrorEvent(Evidence):
    """`error-event`: the in-band error's code and type, as the server sent them."""

    code: str | None
    type: str | None


@dataclass(frozen=True, slots=True)
class SingleFlush(Evidence):
    """`single-flush`: the release that brought (nearly) the whole answer."""

    events: int
    """Text events it brought (`text_events`): 1 when one event held the whole answer, which no hop does
    (a hop holds bytes, it never merges events): the application wrote it so."""
    bytes: int
    held_s: float
    """The silence before it, in seconds (rounded to the µs)."""
    t: float
    """When it began."""
    chars: int | None = None
    """The characters of output (text, reasoning, refusal) of the whole answer, when they decided the
    finding (an answer of fewer text events than `burst_min_events`); None otherwise."""

    @property
    def text_events(self) -> int:
        return self.events

    @property
    def silence(self) -> float:
        return self.held_s


@dataclass(frozen=True, slots=True)
class Burst(Evidence):
    """One release judged a buffering burst."""

    t: float
    """When it began."""
    events: int
    """Text events it brought."""
    bytes: int
    silence_s: float
    """The silence before it, in seconds (rounded to the µs)."""
    span_ms: float
    """From its first chunk to its last, in milliseconds (rounded to the µs)."""


@dataclass(frozen=True, slots=True)
class Bursts(Evidence):
    """`buffering-burst`: every burst, how many text events they held, and the stream's pace."""

    bursts: tuple[Burst, ...]
    events_held: int
    pace_ms: float
    lumps: bool = False
    """True: the bursts are lumps of a few events, read after read (a hop merging small writes), not
    many events after one long hold."""


@dataclass(frozen=True, slots=True)
class FixedSizeFlush(Evidence):
    """`fixed-size-flush`: the size, how many chunks had it, how many of them were cut inside an event
    (None: the chunks seen are not the body's, so that cannot be told)."""

    size: int
    chunks: int
    cut_inside_event: int | None


@dataclass(frozen=True, slots=True)
class Silence(Evidence):
    """`long-silence`: a time without a byte, from `start` to `end` (seconds since the request)."""

    gap_s: float
    start: float
    end: float
    final: bool
    """Whether the stream ended (or was cut) after it."""


@dataclass(frozen=True, slots=True)
class HeadersHeld(Evidence):
    """`headers-held`: when the response headers came and when the first body byte did (seconds since
    the request): together, and late."""

    headers_t: float
    first_byte_t: float


@dataclass(frozen=True, slots=True)
class TimeoutCut(Evidence):
    """`idle-timeout-cut`, `total-timeout-cut`: the stream was cut after `seconds` (the final silence, or
    the whole duration), close to the well-known limit `limit_s` of the hops named (catalogue names, e.g.
    ("nginx", "aws-alb") for 60 s idle)."""

    seconds: float
    limit_s: float
    hops: tuple[str, ...]
