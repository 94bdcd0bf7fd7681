"""sse-inspect: record, replay and diagnose Server-Sent Events streams.

The core is sans-I/O: `EventStreamParser` turns bytes into events, `load_capture`
reads a recorded exchange (`open_capture` streams one too big to hold), `analyze` rebuilds
what the user of an LLM API saw.
"""

from __future__ import annotations

from ._analysis import Analysis, Observer, Timing, analyze
from ._capture import FORMAT, Capture, Chunk, End, Request, Response, capture_from_body, dump_capture
from ._diff import EventsDiff, TextDiff, TimingDiff, diff_events, diff_text, diff_timing
from ._errors import CaptureError, DialectError, RechunkSpecError, SSEInspectError
from ._events import Comment, Event, Notice
from ._loading import CaptureStream, load_capture, open_capture, parse_capture
from ._parser import EventStreamParser, ParseStats, parse_events
from ._rechunk import RechunkSpec, parse_rechunk_spec, rechunk
from ._version import __version__
from .dialects import (
    DIALECTS,
    Answer,
    Choice,
    Dialect,
    InbandError,
    Reader,
    Step,
    ToolCall,
    detect_dialect,
    get_dialect,
)

__all__ = [
    "Analysis",
    "Answer",
    "Capture",
    "CaptureError",
    "CaptureStream",
    "Choice",
    "Chunk",
    "Comment",
    "DIALECTS",
    "Dialect",
    "DialectError",
    "End",
    "Event",
    "EventStreamParser",
    "EventsDiff",
    "FORMAT",
    "InbandError",
    "Notice",
    "Observer",
    "ParseStats",
    "Reader",
    "RechunkSpec",
    "RechunkSpecError",
    "Request",
    "Response",
    "SSEInspectError",
    "Step",
    "TextDiff",
    "Timing",
    "TimingDiff",
    "ToolCall",
    "__version__",
    "analyze",
    "capture_from_body",
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
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = "sse_inspect"
del _name, _obj
