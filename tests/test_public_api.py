"""The public surface: one front door, sorted, and a core that imports no I/O edge."""

from __future__ import annotations

import subprocess
import sys
import types

import sse_inspect


def test_all_is_sorted_and_complete() -> None:
    public = sorted(
        n for n in dir(sse_inspect)
        if not n.startswith("_") and n != "annotations" and not isinstance(getattr(sse_inspect, n), types.ModuleType)
    )  # fmt: skip
    assert sse_inspect.__all__ == sorted(sse_inspect.__all__)
    assert set(public) <= set(sse_inspect.__all__) | {"__version__"}
    for name in sse_inspect.__all__:
        assert hasattr(sse_inspect, name), name


def test_exported_classes_say_sse_inspect() -> None:
    assert sse_inspect.Event.__module__ == "sse_inspect"
    assert repr(sse_inspect.EventStreamParser).startswith("<class 'sse_inspect.EventStreamParser'")


def test_core_imports_no_edge() -> None:
    """The sans-I/O core pulls in no CLI, terminal, proxy, network or event loop module."""
    code = "import sys, sse_inspect; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert not loaded & {"click", "rich", "mitmproxy", "asyncio", "socket", "httpx"}
