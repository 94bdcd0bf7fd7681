"""The package type-checks: its annotations are part of the public API (it ships py.typed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .helpers import ROOT


def test_mypy_finds_nothing() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the [test] extra")
    done = subprocess.run([sys.executable, "-m", "mypy", "sse_inspect"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
