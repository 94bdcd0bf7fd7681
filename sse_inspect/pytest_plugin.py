"""pytest fixtures that replay recorded streams to the client code under test.

Loaded automatically when sse-inspect is installed (entry point `pytest11`). Cheap to load:
the server, httpx and requests are imported only when a fixture is used.

    def test_client_survives_any_cut(sse_replay, sse_rechunk):
        url = sse_replay("captures/openai-chat-text.jsonl", rechunk=sse_rechunk)
        assert my_client(url) == load_capture("captures/openai-chat-text.jsonl").text

    def test_client_fails_loudly_or_gives_it_all(sse_replay, sse_fault):
        url = sse_replay("captures/openai-chat-text.jsonl", faults=sse_fault)
        try:
            text = my_client(url)
        except MyClientError:  # failed loudly: fine
            return
        assert text == load_capture("captures/openai-chat-text.jsonl").text  # else the whole answer

- `sse_replay(capture, rechunk=None, speed=None, faults=None, dialect=None) -> str`: a real HTTP server
  on 127.0.0.1 (a free port) replaying the capture; returns the URL of the captured path (`.base_url`
  holds the server's root). `speed=None` replays instantly; 1 keeps the recorded timing.
- `sse_transport(capture, rechunk=None, faults=None, dialect=None)`: an in-process transport, no
  sockets, for httpx and httpx2 clients alike (so for every openai and anthropic SDK: pass
  `SDK.DefaultHttpxClient(transport=...)`).
- `sse_requests_adapter(capture, rechunk=None, faults=None, dialect=None)`: the same for requests, to
  `session.mount(prefix, ...)`.
- `sse_rechunk`: a test that takes it runs once per cut of `RECHUNK_MATRIX`.
- `sse_fault`: a test that takes it runs once per fault of `FAULT_MATRIX`.

`faults` is one spec ("cut:event=50%"), a list of them, or a `FaultSet` (`sse_inspect._faults`);
`dialect` names whose end markers and in-band error they use (default: detected). A bad spec fails
the test with the one-line message that says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from ._capture import Capture
from ._errors import FaultSpecError, RechunkSpecError
from ._faults import FAULT_MATRIX, Fault, FaultSet
from ._loading import load_capture
from ._rechunk import RECHUNK_MATRIX, RechunkSpec, parse_rechunk_spec

__all__ = ["FAULT_MATRIX", "RECHUNK_MATRIX", "ReplayURL"]

Faults = str | Iterable[str | Fault] | FaultSet | None
"""What the fixtures take as `faults`: one spec, several, or a FaultSet; None for none."""


class ReplayURL(str):
    """The URL of the replayed path; `.base_url` is the server's root (for SDK base URLs)."""

    base_url: str

    def __new__(cls, url: str, base_url: str) -> ReplayURL:
        self = super().__new__(cls, url)
        self.base_url = base_url
        return self


def _capture(source: str | os.PathLike[str] | Capture) -> Capture:
    return source if isinstance(source, Capture) else load_capture(source)


def _specs(rechunk: str | None, faults: Faults) -> tuple[RechunkSpec | None, FaultSet]:
    """The re-cut and the faults a fixture was asked for; a bad spec fails the test in one line."""
    __tracebackhide__ = True
    try:
        spec = parse_rechunk_spec(rechunk) if rechunk else None
        return spec, FaultSet.of(faults)
    except (RechunkSpecError, FaultSpecError) as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def sse_replay() -> Iterator[Callable[..., ReplayURL]]:
    """Factory: start a replay server for a capture (re-cut, with faults); every server stops after the test."""
    from .server import ReplayServerThread

    servers: list[ReplayServerThread] = []

    def start(
        source: str | os.PathLike[str] | Capture,
        rechunk: str | None = None,
        speed: float | None = None,
        faults: Faults = None,
        dialect: str | None = None,
    ) -> ReplayURL:
        capture = _capture(source)
        spec, fault_set = _specs(rechunk, faults)
        server = ReplayServerThread([capture], speed=speed, rechunk_spec=spec, faults=fault_set, dialect=dialect)
        servers.append(server.start())
        path = "/"
        if capture.request is not None:
            parts = urlsplit(capture.request.url)
            path = parts.path + (f"?{parts.query}" if parts.query else "") or "/"
        return ReplayURL(server.url + path, server.url)

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def sse_transport() -> Callable[..., Any]:
    """Factory: an in-process httpx / httpx2 transport serving a capture (no sockets; no timing but the faults')."""
    from .httpx_transport import CaptureTransport

    def make(
        source: str | os.PathLike[str] | Capture,
        rechunk: str | None = None,
        faults: Faults = None,
        dialect: str | None = None,
    ) -> CaptureTransport:
        spec, fault_set = _specs(rechunk, faults)
        return CaptureTransport(_capture(source), rechunk=spec, faults=fault_set, dialect=dialect)

    return make


@pytest.fixture
def sse_requests_adapter() -> Callable[..., Any]:
    """Factory: an in-process requests adapter serving a capture, to mount on a Session."""
    from .requests_adapter import CaptureAdapter

    def make(
        source: str | os.PathLike[str] | Capture,
        rechunk: str | None = None,
        faults: Faults = None,
        dialect: str | None = None,
    ) -> CaptureAdapter:
        spec, fault_set = _specs(rechunk, faults)
        return CaptureAdapter(_capture(source), rechunk=spec, faults=fault_set, dialect=dialect)

    return make


@pytest.fixture
def sse_rechunk(request: pytest.FixtureRequest) -> str:
    """One cut of RECHUNK_MATRIX: the test runs once per cut."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def sse_fault(request: pytest.FixtureRequest) -> str:
    """One fault of FAULT_MATRIX: the test runs once per fault."""
    return request.param  # type: ignore[no-any-return]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sse_rechunk" in metafunc.fixturenames:
        metafunc.parametrize("sse_rechunk", RECHUNK_MATRIX, indirect=True)
    if "sse_fault" in metafunc.fixturenames:
        metafunc.parametrize("sse_fault", FAULT_MATRIX, indirect=True)
