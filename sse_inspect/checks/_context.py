"""What every check reads: the analysis, the thresholds, and a few things derived once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .._analysis import Analysis
from .._capture import Capture
from ._model import Thresholds

__all__ = ["Context"]


@dataclass
class Context:
    analysis: Analysis
    thresholds: Thresholds

    @property
    def capture(self) -> Capture:
        return self.analysis.capture

    @cached_property
    def body(self) -> bytes:
        """The content-decoded body."""
        return b"".join(c.data for c in self.analysis.chunks)

    @cached_property
    def timed(self) -> bool:
        """Whether arrival times can be trusted: a timed capture of at least one chunk."""
        chunks = self.capture.chunks
        return self.capture.timed and bool(chunks) and all(c.t is not None for c in chunks)

    @property
    def http_ok(self) -> bool:
        response = self.capture.response
        return response is None or 200 <= response.status < 300
