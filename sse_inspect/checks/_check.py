"""What a check is (`Check`), what it may need of a capture (`Need`), and what it reads once the
analysis pass is over (`Context`).

A check is one family of finding codes in a module of its own: it says what it needs (a recorded
response, a success status, arrival times), watches the one analysis pass as an `Observer` if it
must see the stream (keeping only what its findings quote, so memory stays flat), then yields its
findings. `check_capture` runs every check of `CHECKS` the same way; see docs/checks.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from .._analysis import Analysis, Observer
from .._capture import Capture, Chunk
from ..dialects import Dialect
from ._model import CODES, Finding, Severity, Skipped, Thresholds
from .evidence import Evidence

__all__ = ["HEAD", "BodyHead", "Check", "Context", "Need"]

HEAD = 200
"""Bytes of the body kept to quote an error response (and to tell its encoding)."""


class Need(Enum):
    """What a check may need of a capture; without it, the check is skipped (and the report says why)."""

    RESPONSE = "a recorded status and headers (not a raw body)"
    HTTP_OK = "a success (2xx) status"
    TIMED = "per-chunk arrival times"


@dataclass(frozen=True)
class Context:
    """The analysis, the thresholds and the head of the body: what every check reads after the pass."""

    analysis: Analysis
    thresholds: Thresholds
    head: bytes = b""
    """The first `HEAD` bytes of the body."""

    @property
    def capture(self) -> Capture:
        return self.analysis.capture

    @property
    def dialect(self) -> Dialect:
        """The dialect the stream was read in: its facts (`end_marker`, `sends_done`, `end_closes_stream`)."""
        return self.analysis.grammar

    @property
    def timed(self) -> bool:
        """Whether arrival times can be trusted: a timed capture whose every chunk is timed. A capture of no
        chunk is timed too when its source kept times (its headers' and its end's say how long nothing came:
        a hop's idle limit cuts a stream before its first byte as well); what needs a chunk says so itself."""
        return self.analysis.timing.timed

    @property
    def http_ok(self) -> bool:
        return self.analysis.outcome.http_ok

    def has(self, need: Need) -> bool:
        if need is Need.RESPONSE:
            return self.capture.response is not None
        if need is Need.HTTP_OK:
            return self.http_ok
        return self.timed


class Check(Observer, ABC):
    """One family of findings. Made afresh for each capture, it watches the analysis pass (override
    the `Observer` calls it needs; the others cost nothing), then `findings` yields what it found.

    A subclass sets `family` (the `Code.family` of its codes in `CODES`), `needs`, and `findings`.
    """

    family: ClassVar[str]
    needs: ClassVar[Mapping[Need, str]] = {}
    """What the check needs, each with the reason the report gives when a capture lacks it (tried in order)."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds

    @classmethod
    def codes(cls) -> tuple[str, ...]:
        """The codes of this family, in the order of `CODES`."""
        return tuple(c.name for c in CODES.values() if c.family == cls.family)

    def unmet(self, ctx: Context) -> str | None:
        """Why this check cannot run on this capture, or None when it has all it needs."""
        return next((why for need, why in self.needs.items() if not ctx.has(need)), None)

    @abstractmethod
    def findings(self, ctx: Context) -> Iterable[Finding]:
        """What the check found, once the pass is over (only called when it has all it needs)."""

    def skips(self, ctx: Context) -> Iterable[Skipped]:
        """Once `findings` has run: the codes this check could not judge on this capture after all,
        each with the reason (a timing check on a stream with no event it could time). A code skipped
        here was neither found nor passed: the report lists it, and an OK verdict says so. Most
        checks judge all their codes whenever they run."""
        return ()

    def review(self, ctx: Context, findings: list[Finding]) -> list[Finding]:
        """Once every check has run: `findings` (of every family), with this family's reconsidered in
        the light of the others'. Most checks keep them all."""
        return findings

    def found(
        self,
        code: str,
        message: str,
        *,
        severity: Severity | None = None,
        t: float | None = None,
        event_index: int | None = None,
        offset: int | None = None,
        evidence: Evidence | None = None,
        advice: str | None = None,
    ) -> Finding:
        """A finding of one of this family's codes, as severe as the code says unless `severity` is given."""
        assert CODES[code].family == self.family, f"{code} is not a {self.family} code"
        return Finding(code=code, severity=severity or CODES[code].severity, message=message, t=t,
                       event_index=event_index, offset=offset, evidence=evidence, advice=advice)  # fmt: skip


class BodyHead(Observer):
    """Keeps the first `HEAD` bytes of the (decoded) body."""

    def __init__(self) -> None:
        self.head = b""

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> bool:
        if len(self.head) < HEAD:
            self.head += chunk.data[: HEAD - len(self.head)]
        return len(self.head) >= HEAD  # then no more chunks
