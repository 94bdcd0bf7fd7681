"""An httpx transport that answers every request with a capture, in process: no sockets.

For clients built on httpx (the OpenAI and Anthropic SDKs take an `http_client`):

    client = httpx.Client(transport=CaptureTransport(load_capture("captures/x.jsonl"), rechunk="bytes:1"))
    openai.OpenAI(api_key="test", http_client=client)

The body comes as the capture's chunks (re-cut if asked); a capture that did not end
cleanly raises `httpx.RemoteProtocolError` after its last chunk, as a cut connection does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from ._capture import Capture, Chunk
from ._rechunk import RechunkSpec, parse_rechunk_spec, rechunk
from .server import HOP_BY_HOP

__all__ = ["CaptureTransport"]


class CaptureTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Serves `capture` to every request, sync or async. No timing: chunks come as fast as read."""

    def __init__(self, capture: Capture, *, rechunk: str | RechunkSpec | None = None) -> None:
        spec = parse_rechunk_spec(rechunk) if isinstance(rechunk, str) else rechunk
        self.capture = capture
        self.chunks: tuple[Chunk, ...] = tuple(_rechunk(capture, spec))
        self.requests: list[httpx.Request] = []
        """Every request received, for assertions."""

    def _response(self, request: httpx.Request, stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> httpx.Response:
        self.requests.append(request)
        r = self.capture.response
        headers = [(k, v) for k, v in r.headers if k.lower() not in HOP_BY_HOP] if r else [
            ("Content-Type", "text/event-stream")
        ]  # fmt: skip
        return httpx.Response(r.status if r else 200, headers=headers, stream=stream, request=request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        return self._response(request, _SyncStream(self))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return self._response(request, _AsyncStream(self))

    def _body(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            yield chunk.data
        end = self.capture.end
        if end is None or end.kind != "complete":
            reason = f"{end.kind}: {end.error}" if end and end.error else (end.kind if end else "recording cut off")
            raise httpx.RemoteProtocolError(f"the recorded stream ended abruptly ({reason})")


def _rechunk(capture: Capture, spec: RechunkSpec | None) -> list[Chunk]:
    return rechunk(capture.chunks, spec) if spec else list(capture.chunks)


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, transport: CaptureTransport) -> None:
        self.transport = transport

    def __iter__(self) -> Iterator[bytes]:
        return self.transport._body()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, transport: CaptureTransport) -> None:
        self.transport = transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for data in self.transport._body():
            yield data
