"""Fixtures shared by the test modules; pytester for the plugin's own tests; the `e2e` marker.

A test that starts a real process (mitmdump, nginx, the hop lab's servers, Chromium, curl, a
subprocess `sse-inspect serve` or `record`) is marked `e2e`, so that `pytest -m "not e2e"` is a fast inner loop:
- a test that uses one of `E2E_FIXTURES` gets the marker here, at collection: new tests that start
  mitmdump through `start_proxy` need nothing more;
- a test that starts such a process itself carries the marker in its module (`pytest.mark.e2e`);
- and this is enforced: while a test without the marker runs, starting one of those processes
  raises (an audit hook on `subprocess.Popen`), so a forgotten marker fails the test that forgot it,
  and `-m "not e2e"` can never start one.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

from .recording_fixtures import server, start_proxy  # noqa: F401  (fixtures, registered by being here)

pytest_plugins = ["pytester"]

# A shell starts a background job (`pytest ... &`, a CI runner's detached script) with SIGINT ignored,
# and an ignored signal stays ignored across exec: the Ctrl-C tests' children would never see theirs.
# A handler of our own is reset to the default at exec, so every child gets SIGINT as a terminal's.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

E2E_FIXTURES = frozenset({"start_proxy", "start_record", "chromium", "nginx_runs", "lab", "gzip_app"})
"""Fixtures that start real processes (or servers: uvicorn for `gzip_app`)."""

REAL_PROGRAMS = frozenset(
    {"mitmdump", "mitmproxy", "mitmweb", "nginx", "chromium", "chromium-browser", "curl", "uvicorn",
     "gunicorn", "apache2", "haproxy", "caddy", "node"}  # the last five: the hop lab (tests/hop_lab.py)
)  # fmt: skip
SERVING_COMMANDS = frozenset({"serve", "record"})
"""`sse-inspect` commands that run a server (record: mitmproxy inside)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


def real_process(argv: object) -> str | None:
    """What real process `argv` (as `subprocess.Popen` got it) starts, or None for any other."""
    if isinstance(argv, str | bytes | os.PathLike):
        args = [os.fsdecode(argv)]
    else:
        args = [os.fsdecode(a) for a in argv]  # type: ignore[attr-defined]
    if not args:
        return None
    name = Path(args[0]).name
    if name in REAL_PROGRAMS:
        return name
    if (name == "sse-inspect" or "sse_inspect" in args) and SERVING_COMMANDS.intersection(args):
        return "sse-inspect " + next(a for a in args if a in SERVING_COMMANDS)
    return None


_unmarked: str | None = None
"""The node id of the test running now when it has no `e2e` marker."""


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "subprocess.Popen" and _unmarked is not None:
        what = real_process(args[1])
        if what is not None:
            raise RuntimeError(
                f"{_unmarked} starts {what}: mark it e2e (`pytestmark = pytest.mark.e2e`, or a fixture in E2E_FIXTURES)"
            )


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    global _unmarked
    _unmarked = None if item.get_closest_marker("e2e") else item.nodeid
    try:
        return (yield)
    finally:
        _unmarked = None
