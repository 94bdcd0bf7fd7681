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
With faults (`faults=["cut:event=50%"]`, see `_faults`) it walks the same `ReplayPlan` as the
replay server and ends as a socket would make the package end: a cut is the `RemoteProtocolError`
of a close mid-body, a reset cut the `ReadError` of a reset, a stall longer than the request's read
timeout the `ReadTimeout` (after waiting the timeout), a `status:` fault an error answer. There is
no other timing: only stalls and a slow link wait (`time.sleep`, or anyio's sleep for async clients,
which both packages stand on: asyncio or trio alike). Importing this module needs httpx or httpx2 (either is enough).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._capture import Capture
from ._fault_plan import CLOSE, COMPLETE, ReplayPlan, Send
from ._faults import Fault, FaultSet
from ._rechunk import RechunkSpec, ReplayChunks, parse_rechunk_spec

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

# What the package raises, over a socket, when a chunked body ends in each way (checked against the
# replay server in tests/test_inprocess_faults.py): h11's words for a FIN mid-body, the errno of a reset.
CLOSED = "peer closed connection without sending complete message body (incomplete chunked read)"
RESET_BY_PEER = "[Errno 104] Connection reset by peer"


class _Flavor:
    """The classes of one package that a response is built from."""

    def __init__(self, package: ModuleType) -> None:
        self.package = package
        import anyio  # httpx's and httpx2's own dependency: here once one of them is

        class SyncStream(package.SyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, body: Iterator[tuple[float, bytes]]) -> None:
                self.body = body

            def __iter__(self) -> Iterator[bytes]:
                for wait, data in self.body:
                    if wait > 0:
                        time.sleep(wait)
                    if data:
                        yield data

        class AsyncStream(package.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, body: Iterator[tuple[float, bytes]]) -> None:
                self.body = body

            async def __aiter__(self) -> AsyncIterator[bytes]:
                for wait, data in self.body:
                    if wait > 0:
                        await anyio.sleep(wait)  # asyncio or trio, whichever the client runs on
                    if data:
                        yield data

        self.sync, self.async_ = SyncStream, AsyncStream


_FLAVORS = {name: _Flavor(package) for name, package in PACKAGES.items()}


class CaptureTransport(*_Bases):  # type: ignore[misc]
    """Serves `capture` to every request, sync or async, of httpx or httpx2 clients, re-cut as `rechunk`
    says and with `faults` (specs such as "cut:event=50%", or a FaultSet; a FaultSpecError when bad).
    `dialect` names whose end markers and in-band error the faults use (default: detected). No timing
    but the faults': chunks come as fast as read."""

    def __init__(
        self,
        capture: Capture,
        *,
        rechunk: str | RechunkSpec | None = None,
        faults: FaultSet | str | Fault | Iterable[str | Fault] = (),
        dialect: str | None = None,
    ) -> None:
        self.capture = capture
        self.faults = FaultSet.of(faults)
        spec = parse_rechunk_spec(rechunk) if isinstance(rechunk, str) else rechunk
        self.plan = ReplayPlan(capture, rechunk=spec, faults=self.faults, dialect=dialect)
        """What each request is answered with: the bytes, the waits and the end."""
        self.chunks: ReplayChunks = self.plan.chunks
        self.requests: list[Any] = []
        """Every request received (an httpx.Request or an httpx2.Request), for assertions."""

    def _flavor(self, request: Any) -> _Flavor:
        package = type(request).__module__.partition(".")[0]
        flavor = _FLAVORS.get(package)
        if flavor is None:
            raise TypeError(f"CaptureTransport serves httpx and httpx2 requests, not {type(request).__qualname__}")
        return flavor

    def _response(self, request: Any, flavor: _Flavor, stream_class: type) -> Any:
        self.requests.append(request)
        package, plan = flavor.package, self.plan
        if plan.status is not None:  # the error answer instead of the stream
            status, headers, payload = plan.error_response()
            headers.append(("Content-Length", str(len(payload))))
            stream = stream_class(iter([(0.0, payload)]))  # a stream, as a transport's answer is: not read yet
            return package.Response(status, headers=headers, stream=stream, request=request)
        r = self.capture.response
        stream = stream_class(self._body(package, request, time.monotonic()))
        return package.Response(r.status if r else 200, headers=list(plan.headers), stream=stream, request=request)

    def handle_request(self, request: Any) -> Any:
        flavor = self._flavor(request)
        request.read()
        return self._response(request, flavor, flavor.sync)

    async def handle_async_request(self, request: Any) -> Any:
        flavor = self._flavor(request)
        await request.aread()
        return self._response(request, flavor, flavor.async_)

    def _body(self, package: ModuleType, request: Any, start: float) -> Iterator[tuple[float, bytes]]:
        """The plan as (seconds to wait, bytes to give) for a request that arrived at `start` (monotonic),
        the waits as long as a socket's read would block; at the end, what the package raises there.
        The stream sleeps each wait before it asks for the next piece, so a raise comes after its wait."""
        timeout = request.extensions.get("timeout", {}).get("read")
        for step in self.plan.steps(None):
            wait = start + step.at - time.monotonic() if step.at else 0.0  # (at 0: due since the request came)
            if timeout is not None and wait > timeout:  # a socket's read gives up first
                yield timeout, b""
                raise package.ReadTimeout("timed out", request=request)
            if isinstance(step, Send):
                yield wait, step.data
                continue
            yield wait, b""
            if step.how == COMPLETE:
                return
            if step.how == CLOSE:
                raise package.RemoteProtocolError(CLOSED, request=request)
            if step.recorded is not None:  # the recording's own end, not a fault's
                raise package.RemoteProtocolError(f"the recorded stream ended abruptly ({step.recorded})", request=request)
            reset = ConnectionResetError(104, "Connection reset by peer")
            raise package.ReadError(RESET_BY_PEER, request=request) from reset

