"""What every check reads: the analysis, the thresholds, and the head of the body."""

from __future__ import annotations

from .._analysis import Analysis, Observer
from .._capture import Capture
from ._model import Thresholds

__all__ = ["Context"]

HEAD = 200
"""Bytes of the body kept to quote an error response."""


class Context(Observer):
    """Holds the analysis once the pass is over, and the head of the body (set by the hygiene probe,
    which reads the body anyway)."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self.head = b""
        self._analysis: Analysis | None = None

    def close(self, analysis: Analysis) -> None:
        self._analysis = analysis

    @property
    def analysis(self) -> Analysis:
        assert self._analysis is not None, "the analysis pass is not over"
        return self._analysis

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
