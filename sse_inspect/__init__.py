"""sse-inspect: record, replay and diagnose Server-Sent Events streams.

The core is sans-I/O: `EventStreamParser` turns bytes into events, `load_capture`
reads a recorded exchange (`open_capture` streams one too big to hold), `analyze` rebuilds
what the user of an LLM API saw (and how the stream ended: `Outcome`), `check_capture`
diagnoses it (a `Report` of `Finding`s).

The public names are loaded on first use (PEP 562 `__getattr__`): `import sse_inspect` costs
next to nothing, and the command line, which imports the modules it needs, starts without the
diff, the checks or the report unless it runs them. `from sse_inspect import X`, `sse_inspect.X`
and `from sse_inspect import *` work as for any module; a class says `sse_inspect` as its module
once it has been reached through this front door.
"""

from __future__ import annotations

import typing as _typing

from ._version import __version__

if _typing.TYPE_CHECKING:
    from ._analysis import Analysis, Observer, Timing, analyze
    from ._capture import FORMAT, Capture, Chunk, End, Request, Response, capture_from_body, dump_capture
    from ._diff import EventsDiff, TextDiff, TextTimingDiff, TimingDiff, diff_events, diff_text, diff_timing
    from ._errors import CaptureError, CheckSpecError, DialectError, RechunkSpecError, SSEInspectError
    from ._events import Comment, Event, Notice
    from ._loading import CaptureStream, load_capture, open_capture, parse_capture
    from ._outcome import Outcome
    from ._parser import EventStreamParser, ParseStats, parse_events
    from ._rechunk import RechunkSpec, parse_rechunk_spec, rechunk
    from .checks import Check, Finding, Report, Severity, Thresholds, check_capture
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

def _loaders() -> dict[str, _typing.Callable[[], _typing.Any]]:
    import importlib

    return {  # literal names, so that tests/layering.py reads every edge of the front door
        "Analysis Observer Timing analyze": lambda: importlib.import_module("sse_inspect._analysis"),
        "FORMAT Capture Chunk End Request Response capture_from_body dump_capture":
            lambda: importlib.import_module("sse_inspect._capture"),
        "EventsDiff TextDiff TextTimingDiff TimingDiff diff_events diff_text diff_timing":
            lambda: importlib.import_module("sse_inspect._diff"),
        "CaptureError CheckSpecError DialectError RechunkSpecError SSEInspectError":
            lambda: importlib.import_module("sse_inspect._errors"),
        "Comment Event Notice": lambda: importlib.import_module("sse_inspect._events"),
        "CaptureStream load_capture open_capture parse_capture": lambda: importlib.import_module("sse_inspect._loading"),
        "Outcome": lambda: importlib.import_module("sse_inspect._outcome"),
        "EventStreamParser ParseStats parse_events": lambda: importlib.import_module("sse_inspect._parser"),
        "RechunkSpec parse_rechunk_spec rechunk": lambda: importlib.import_module("sse_inspect._rechunk"),
        "Check Finding Report Severity Thresholds check_capture": lambda: importlib.import_module("sse_inspect.checks"),
        "DIALECTS Answer Choice Dialect EventFlags Holding InbandError Passage Reader TextNotKept ToolCall detect_dialect "
            "get_dialect":
            lambda: importlib.import_module("sse_inspect.dialects"),
    }  # fmt: skip


_SOURCES = {name: names for names in _loaders() for name in names.split()}
"""Each public name (but `__version__`): the names that come from its module, loaded together on first use."""


def __getattr__(name: str) -> _typing.Any:
    names = _SOURCES.get(name)
    if names is None:
        raise AttributeError(f"module 'sse_inspect' has no attribute {name!r}")
    import importlib

    importlib.import_module("sse_inspect._analysis")  # the layer that gives `Capture.text` its answer: a capture
    module = _loaders()[names]()  # taken from the front door always has it (only the CLI starts without it)
    for export in names.split():  # once loaded, its names are plain attributes (and say sse_inspect)
        obj = globals()[export] = getattr(module, export)
        if isinstance(obj, type):
            obj.__module__ = "sse_inspect"
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
