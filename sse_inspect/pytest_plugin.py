"""pytest fixtures that replay recorded streams to the client code under test.

Loaded automatically when sse-inspect is installed (entry point `pytest11`). Cheap to load:
the server, httpx and requests are imported only when a fixture is used.

    def test_client_survives_any_cut(sse_replay, sse_rechunk):
        url = sse_replay("captures/openai-chat-text.jsonl", rechunk=sse_rechunk)
        assert my_client(url) == load_capture("captures/openai-chat-text.jsonl").text

- `sse_replay(capture, rechunk=None, speed=None) -> str`: a real HTTP server on 127.0.0.1 (a free
  port) replaying the capture; returns the URL of the captured path (`.base_url` holds the
  server's root). `speed=None` replays instantly; 1 keeps the recorded timing.
- `sse_transport(capture, rechunk=None)`: an in-process transport, no sockets, for httpx and httpx2
  clients alike (so for every openai and anthropic SDK: pass `SDK.DefaultHttpxClient(transport=...)`).
- `sse_requests_adapter(capture, rechunk=None)`: the same for requests, to `session.mount(prefix, ...)`.
- `sse_rechunk`: a test that takes it runs once per cut of `RECHUNK_MATRIX`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from ._capture import Capture
from ._loading import load_capture
from ._rechunk import parse_rechunk_spec

__all__ = ["RECHUNK_MATRIX", "ReplayURL"]

RECHUNK_MATRIX = (
    "original", "whole", "event", "line", "bytes:1", "bytes:7", "crlf", "utf8", "random:1", "random:2", "random:3",
)  # fmt: skip
"""The standard cuts: whole, per event, per line, 1 and 7 bytes, inside every CRLF and every
multi-byte character, and three random seeds. A correct client gives the same answer for all."""


class ReplayURL(str):
    """The URL of the replayed path; `.base_url` is the server's root (for SDK base URLs)."""

    base_url: str

    def __new__(cls, url: str, base_url: str) -> ReplayURL:
        self = super().__new__(cls, url)
        self.base_url = base_url
        return self


def _capture(source: str | os.PathLike[str] | Capture) -> Capture:
    return source if isinstance(source, Capture) else load_capture(source)


@pytest.fixture
def sse_replay() -> Iterator[Callable[..., ReplayURL]]:
    """Factory: start a replay server for a capture; every server stops after the test."""
    from .server import ReplayServerThread

    servers: list[ReplayServerThread] = []

    def start(source: str | os.PathLike[str] | Capture, rechunk: str | None = None, speed: float | None = None) -> ReplayURL:
        capture = _capture(source)
        spec = parse_rechunk_spec(rechunk) if rechunk else None
        server = ReplayServerThread([capture], speed=speed, rechunk_spec=spec).start()
        servers.append(server)
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
    """Factory: an in-process httpx / httpx2 transport serving a capture (no sockets, no timing)."""
    from .httpx_transport import CaptureTransport

    def make(source: str | os.PathLike[str] | Capture, rechunk: str | None = None) -> CaptureTransport:
        return CaptureTransport(_capture(source), rechunk=rechunk)

    return make


@pytest.fixture
def sse_requests_adapter() -> Callable[..., Any]:
    """Factory: an in-process requests adapter serving a capture, to mount on a Session."""
    from .requests_adapter import CaptureAdapter

    def make(source: str | os.PathLike[str] | Capture, rechunk: str | None = None) -> CaptureAdapter:
        return CaptureAdapter(_capture(source), rechunk=rechunk)

    return make


@pytest.fixture
def sse_rechunk(request: pytest.FixtureRequest) -> str:
    """One cut of RECHUNK_MATRIX: the test runs once per cut."""
    return request.param  # type: ignore[no-any-return]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sse_rechunk" in metafunc.fixturenames:
        metafunc.parametrize("sse_rechunk", RECHUNK_MATRIX, indirect=True)
