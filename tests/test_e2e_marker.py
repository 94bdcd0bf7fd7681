"""The `e2e` marker of tests/conftest.py: which processes count as real, and which tests carry it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import E2E_FIXTURES, real_process


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["/work/.venv/bin/mitmdump", "--mode", "regular"], "mitmdump"),
        (["/usr/sbin/nginx", "-p", "x"], "nginx"),
        (["curl", "-sS", "-N"], "curl"),
        ("chromium", "chromium"),
        ([sys.executable, "-m", "sse_inspect", "serve", "a.jsonl"], "sse-inspect serve"),
        ([b"/venv/bin/sse-inspect", b"record", b"--listen", b"127.0.0.1:1"], "sse-inspect record"),
        ([sys.executable, "-m", "sse_inspect", "text", "a.jsonl"], None),
        ([sys.executable, "-m", "mypy", "sse_inspect"], None),
        ([sys.executable, "-c", "print('record')"], None),
    ],
)
def test_real_processes_are_told_from_others(argv: object, what: str | None) -> None:
    assert real_process(argv) == what


def test_collected_tests_using_a_process_fixture_are_marked(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    uses = [item for item in items if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ()))]
    unmarked = [item.nodeid for item in uses if not item.get_closest_marker("e2e")]
    assert not unmarked, unmarked  # (none collected under -m "not e2e": nothing to check then)
    assert request.node.get_closest_marker("e2e") is None


def test_an_unmarked_test_cannot_start_a_real_process() -> None:
    with pytest.raises(RuntimeError, match="starts curl: mark it e2e"):
        subprocess.run(["curl", "--version"], capture_output=True, check=False)
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # any other process is fine
