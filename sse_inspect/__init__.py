"""sse-inspect: record, replay and diagnose Server-Sent Events streams.

The core is sans-I/O: `EventStreamParser` turns bytes into events, `load_capture`
reads a recorded exchange (`open_capture` streams one too big to hold), `analyze` rebuilds
what the user of an LLM API saw (and how the stream ended: `Outcome`), `check_capture`
diagnoses it (a `Report` of `Finding`s).
"""

from __future__ import annotations

import typing as _typing

from ._analysis import Analysis, Observer, Timing, analyze
from ._capture import FORMAT, Capture, Chunk, End, Request, Response, capture_from_body, dump_capture
from ._diff import EventsDiff, TextDiff, TextTimingDiff, TimingDiff, diff_events, diff_text, diff_timing
from ._errors import CaptureError, CheckSpecError, DialectError, RechunkSpecError, SSEInspectError
from ._events import Comment, Event, Notice
from ._loading import CaptureStream, load_capture, open_capture, parse_capture
from ._outcome import Outcome
from ._parser import EventStreamParser, ParseStats, parse_events
from ._rechunk import RechunkSpec, parse_rechunk_spec, rechunk
from ._version import __version__
from .dialects import (
    DIALECTS,
    Answer,
    Choice,
    Dialect,
    EventFlags,
    Holding,
    InbandError,
    Passage,
    Reader,
    TextNotKept,
    ToolCall,
    detect_dialect,
    get_dialect,
)

if _typing.TYPE_CHECKING:
    from .checks import Check, Finding, Report, Severity, Thresholds, check_capture

_CHECKS = frozenset({"Check", "Finding", "Report", "Severity", "Thresholds", "check_capture"})
"""Names of `sse_inspect.checks`, loaded on first use: reading a capture needs none of the checks."""


def __getattr__(name: str) -> _typing.Any:
    if name in _CHECKS:
        from . import checks

        for loaded in _CHECKS:  # once loaded, they are exports like the others (and say so)
            obj = globals()[loaded] = getattr(checks, loaded)
            if isinstance(obj, type):
                obj.__module__ = "sse_inspect"
        return globals()[name]
    raise AttributeError(f"module 'sse_inspect' has no attribute {name!r}")


__all__ = [
    "Analysis",
    "Answer",
    "Capture",
    "CaptureError",
    "CaptureStream",
    "Check",
    "CheckSpecError",
    "Choice",
    "Chunk",
    "Comment",
    "DIALECTS",
    "Dialect",
    "DialectError",
    "End",
    "Event",
    "EventFlags",
    "EventStreamParser",
    "EventsDiff",
    "FORMAT",
    "Finding",
    "Holding",
    "InbandError",
    "Notice",
    "Observer",
    "Outcome",
    "ParseStats",
    "Passage",
    "Reader",
    "RechunkSpec",
    "RechunkSpecError",
    "Report",
    "Request",
    "Response",
    "SSEInspectError",
    "Severity",
    "TextDiff",
    "TextNotKept",
    "TextTimingDiff",
    "Thresholds",
    "Timing",
    "TimingDiff",
    "ToolCall",
    "__version__",
    "analyze",
    "capture_from_body",
    "check_capture",
    "detect_dialect",
    "diff_events",
    "diff_text",
    "diff_timing",
    "dump_capture",
    "get_dialect",
    "load_capture",
    "open_capture",
    "parse_capture",
    "parse_events",
    "parse_rechunk_spec",
    "rechunk",
]

for _name in __all__:
    _obj = globals().get(_name)  # not the checks' names: loaded on first use
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = "sse_inspect"
del _name, _obj
