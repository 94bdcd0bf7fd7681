"""An httpx and httpx2 transport that answers every request with a capture, in process: no sockets.

The SDKs take an `http_client`: openai 1.x-2.x and anthropic 0.x build on httpx; openai 3.x and
anthropic 1.x and later on httpx2, httpx's fork (same API, another package). One transport serves
both: it answers each request with a response of the package the request came from, so the
same `CaptureTransport` goes into an `httpx.Client` or an `httpx2.Client`. The SDK's own
`DefaultHttpxClient` is always the right one:

    transport = CaptureTransport(load_capture("captures/x.jsonl"), rechunk="bytes:1")
    openai.OpenAI(api_key="test", http_client=openai.DefaultHttpxClient(transport=transport))
    anthropic.Anthropic(api_key="test", http_client=anthropic.DefaultHttpxClient(transport=transport))

The body comes as the capture's chunks (re-cut if asked); a capture that did not end cleanly
raises the package's `RemoteProtocolError` after its last chunk, as a cut connection does.
Importing this module needs httpx or httpx2 (either is enough).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._capture import Capture, Chunk
from ._outcome import abrupt_end
from ._rechunk import RechunkSpec, ReplayChunks, replay_chunks
from .server import HOP_BY_HOP

__all__ = ["CaptureTransport", "PACKAGES"]


def _packages() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for name in ("httpx", "httpx2"):
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            continue
    if not found:
        raise ImportError(
            "sse_inspect.httpx_transport needs httpx or httpx2: pip install httpx (openai<3, anthropic<1) "
            "or httpx2 (openai>=3, anthropic>=1), or just the SDK you test"
        )
    return found


PACKAGES: dict[str, ModuleType] = _packages()
"""The httpx packages installed ("httpx", "httpx2"): the transport serves the clients of each."""

if TYPE_CHECKING:
    import httpx

    _Bases: tuple[type, ...] = (httpx.BaseTransport, httpx.AsyncBaseTransport)
else:
    # One package's base classes only: the httpx2 SDKs refuse any object with an httpx class in its
    # MRO ("this SDK uses httpx2"), while httpx's clients take any object with the methods. So
    # httpx2's bases when it is installed, and the transport still serves httpx clients beside it.
    _base_package = PACKAGES.get("httpx2") or PACKAGES["httpx"]
    _Bases = (_base_package.BaseTransport, _base_package.AsyncBaseTransport)


class _Flavor:
    """The classes of one package that a response is built from."""

    def __init__(self, package: ModuleType) -> None:
        self.package = package
        self.error: type[Exception] = package.RemoteProtocolError

        class SyncStream(package.SyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, body: Iterator[bytes]) -> None:
                self.body = body

            def __iter__(self) -> Iterator[bytes]:
                return self.body

        class AsyncStream(package.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, body: Iterator[bytes]) -> None:
                self.body = body

            async def __aiter__(self) -> AsyncIterator[bytes]:
                for data in self.body:
                    yield data

        self.sync, self.async_ = SyncStream, AsyncStream


_FLAVORS = {name: _Flavor(package) for name, package in PACKAGES.items()}


class CaptureTransport(*_Bases):  # type: ignore[misc]
    """Serves `capture` to every request, sync or async, of httpx or httpx2 clients.
    No timing: chunks come as fast as read."""

    def __init__(self, capture: Capture, *, rechunk: str | RechunkSpec | None = None) -> None:
        self.capture = capture
        self.chunks: ReplayChunks = replay_chunks(capture.chunks, rechunk)
        self.requests: list[Any] = []
        """Every request received (an httpx.Request or an httpx2.Request), for assertions."""

    def _flavor(self, request: Any) -> _Flavor:
        package = type(request).__module__.partition(".")[0]
        flavor = _FLAVORS.get(package)
        if flavor is None:
            raise TypeError(f"CaptureTransport serves httpx and httpx2 requests, not {type(request).__qualname__}")
        return flavor

    def _response(self, request: Any, flavor: _Flavor, stream: Any) -> Any:
        self.requests.append(request)
        r = self.capture.response
        headers = [(k, v) for k, v in r.headers if k.lower() not in HOP_BY_HOP] if r else [
            ("Content-Type", "text/event-stream")
        ]  # fmt: skip
        return flavor.package.Response(r.status if r else 200, headers=headers, stream=stream, request=request)

    def handle_request(self, request: Any) -> Any:
        flavor = self._flavor(request)
        request.read()
        return self._response(request, flavor, flavor.sync(self._body(flavor.error)))

    async def handle_async_request(self, request: Any) -> Any:
        flavor = self._flavor(request)
        await request.aread()
        return self._response(request, flavor, flavor.async_(self._body(flavor.error)))

    def _body(self, error: type[Exception]) -> Iterator[bytes]:
        for chunk in self.chunks:
            yield chunk.data
        reason = abrupt_end(self.capture.end)
        if reason is not None:
            raise error(f"the recorded stream ended abruptly ({reason})")
