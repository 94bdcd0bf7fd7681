"""The public surface: one front door, sorted, and a core that imports no I/O edge; the layers kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import sse_inspect

from . import layering


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
    """At run time too: importing every module of the core (the lazily loaded checks, report and playback
    included) loads no CLI, terminal, proxy, network or event-loop library."""
    core = [m for m in layering.modules() if layering.layer_of(m) in layering.core_layers()]
    code = f"import importlib, sys\nfor m in {core!r}: importlib.import_module(m)\nprint(' '.join(sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in run.stdout.split()}
    assert len(core) > 30
    assert loaded & layering.EDGE_LIBRARIES <= layering.RUNTIME_ALLOWED.keys()


# -- the layers (tests/layering.py says what they are) ---------------------------------------


def test_no_module_breaks_the_layering() -> None:
    """Every import, lazy and TYPE_CHECKING ones included: no cycle, none upward, no edge library in the core."""
    assert layering.problems(layering.graph()) == []


def test_every_layer_entry_names_a_module() -> None:
    """A stale entry would let a new module of that name in unasked."""
    names = [m[len("sse_inspect.") :] if m != "sse_inspect" else "" for m in layering.modules()]
    for layer, patterns in layering.LAYERS:
        for pattern in patterns:
            matched = [n for n in names if n == pattern or (pattern.endswith(".*") and n.startswith(pattern[:-1]))]
            assert matched, f"layer {layer!r}: {pattern!r} names no module"


def _plant(root: Path, files: dict[str, str]) -> dict[str, list[layering.Import]]:
    package = root / "sse_inspect"
    for name, source in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(source))
    return layering.graph(package)


def test_the_checker_finds_what_is_planted(tmp_path: Path) -> None:
    """The checker itself: each rule caught, wherever the import hides (a function, TYPE_CHECKING,
    importlib), and nothing reported where the rules hold."""
    imports = _plant(tmp_path, {
        "_capture.py": """
            from ._errors import CaptureError          # down: fine
            def text():
                from ._analysis import analyze          # up, lazily
        """,
        "_errors.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from ._events import Event              # same layer, for annotations: no cycle
        """,
        "_events.py": "from . import _errors\n",
        "_analysis.py": "import importlib\nimportlib.import_module('sse_inspect.checks')\n",
        "checks/__init__.py": "from .._analysis import x\n",
        "_parser.py": "def f():\n    import click\n",
        "_secrets.py": "import asyncio.subprocess\n",
        "_rechunk.py": "from sse_inspect import _dialect_cycle\n",
        "_dialect_cycle.py": "from ._rechunk import y\n",
        "cli/__init__.py": "import click, rich\nfrom .. import _capture\n",
    })  # fmt: skip
    assert sorted(layering.problems(imports)) == sorted([
        "sse_inspect._dialect_cycle is in no layer: add it to LAYERS in tests/layering.py",
        "upward import: sse_inspect._analysis -> sse_inspect.checks (line 2) (analysis imports checks and report)",
        "upward import: sse_inspect._capture -> sse_inspect._analysis (line 4) (values and parsing imports analysis)",
        "the core imports an edge: sse_inspect._parser -> click (line 2)",
        "the core imports an edge: sse_inspect._secrets -> asyncio (line 1)",
        "import cycle: sse_inspect._analysis -> sse_inspect.checks -> sse_inspect._analysis",
        "import cycle: sse_inspect._dialect_cycle -> sse_inspect._rechunk -> sse_inspect._dialect_cycle",
    ])  # fmt: skip


def test_a_computed_import_in_the_core_needs_a_reason(tmp_path: Path) -> None:
    """An import the source cannot name is reported in the core unless COMPUTED_IMPORTS says why; an
    edge may make them (the CLI's lazy subcommands)."""
    imports = _plant(tmp_path, {
        "_parser.py": "import importlib\ndef f(name):\n    return importlib.import_module(name)\n",
        "_decoding.py": "import importlib\nNAME = 'zlib'\nimportlib.import_module(NAME)\n",
        "cli/__init__.py": "def load(name):\n    return __import__(name)\n",
    })  # fmt: skip
    assert layering.problems(imports) == [
        ("the core imports by a computed name, unchecked: sse_inspect._parser -> ? (line 3) (by a computed name)"
        " (say why in COMPUTED_IMPORTS)")
    ]


def test_a_type_checking_import_still_may_not_go_up(tmp_path: Path) -> None:
    imports = _plant(tmp_path, {"_capture.py": "import typing\nif typing.TYPE_CHECKING:\n    from .report import R\n",
                                "report.py": "R = 1\n"})  # fmt: skip
    assert layering.problems(imports) == [
        ("upward import: sse_inspect._capture -> sse_inspect.report (line 3) (under TYPE_CHECKING)"
        " (values and parsing imports checks and report)")
    ]


def test_the_architecture_drawing_is_the_code_s() -> None:
    """docs/architecture.md shows the imports and modules as they are (`python -m tests.layering --write`)."""
    assert layering.documented(layering.DOC.read_text(encoding="utf-8")) == layering.generated(), (
        "docs/architecture.md is out of date: run `python -m tests.layering --write`"
    )
