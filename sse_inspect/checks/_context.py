"""What every check reads once the analysis pass is over: the analysis, the thresholds, the head of the body."""

from __future__ import annotations

from dataclasses import dataclass

from .._analysis import Analysis
from .._capture import Capture
from ._model import Thresholds

__all__ = ["HEAD", "Context"]

HEAD = 200
"""Bytes of the body kept to quote an error response."""


@dataclass(frozen=True)
class Context:
    analysis: Analysis
    thresholds: Thresholds
    head: bytes = b""
    """The first `HEAD` bytes of the body (kept by the hygiene probe, which reads the body anyway)."""

    @property
    def capture(self) -> Capture:
        return self.analysis.capture

    @property
    def timed(self) -> bool:
        """Whether arrival times can be trusted: a timed capture of at least one chunk."""
        timing = self.analysis.timing
        return timing.timed and timing.chunks > 0

    @property
    def http_ok(self) -> bool:
        response = self.capture.response
        return response is None or 200 <= response.status < 300
