"""A requests transport adapter that answers every request with a capture, in process: no sockets.

    session = requests.Session()
    session.mount("https://api.openai.com/", CaptureAdapter(load_capture("captures/x.jsonl"), rechunk="bytes:1"))
    with session.post("https://api.openai.com/v1/chat/completions", json=..., stream=True) as r:
        for line in r.iter_lines(): ...

Any prefix works (`session.mount("http://replay/", ...)`). The body reaches the client as a
chunked response does through urllib3: `iter_content(chunk_size=None)` yields the capture's
chunks as cut (re-cut if asked); `iter_content(n)` and `iter_lines()` pieces of at most `n` bytes
of one chunk, never joining two. A Content-Encoding (gzip, br, zstd) is undone as urllib3 does.
A capture that did not end cleanly raises requests' `ChunkedEncodingError` after its last chunk,
as a cut connection does. Importing this module needs requests.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator, Mapping

try:
    import requests
    from requests.adapters import BaseAdapter
    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers
    from urllib3.exceptions import DecodeError, ProtocolError
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("sse_inspect.requests_adapter needs requests: pip install requests") from None

from ._capture import Capture, Chunk
from ._decoding import BodyDecoder, ContentDecodingError
from ._outcome import abrupt_end
from ._rechunk import RechunkSpec, ReplayChunks, replay_chunks
from .server import HOP_BY_HOP

__all__ = ["CaptureAdapter"]


class CaptureAdapter(BaseAdapter):
    """Serves `capture` to every request sent through the prefixes it is mounted on. No timing."""

    def __init__(self, capture: Capture, *, rechunk: str | RechunkSpec | None = None) -> None:
        super().__init__()
        self.capture = capture
        self.chunks: ReplayChunks = replay_chunks(capture.chunks, rechunk)
        self.requests: list[requests.PreparedRequest] = []
        """Every request received, for assertions."""

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float | None, float | None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        self.requests.append(request)
        r = self.capture.response
        status = r.status if r else 200
        headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
        for name, value in r.headers if r else (("Content-Type", "text/event-stream"),):
            if name.lower() in HOP_BY_HOP:
                continue
            headers[name] = f"{headers[name]}, {value}" if name in headers else value  # as urllib3 folds them
        response = requests.Response()
        response.status_code = status
        response.reason = (r.reason if r else "") or http.client.responses.get(status, "")
        response.headers = headers
        response.encoding = get_encoding_from_headers(headers)
        response.raw = _Body(self._body(), headers.get("content-encoding"))
        response.url = request.url or ""
        response.request = request
        response.connection = self  # type: ignore[assignment]  # requests expects its HTTPAdapter here
        return response

    def close(self) -> None:
        pass

    def _body(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            yield chunk.data
        reason = abrupt_end(self.capture.end)
        if reason is not None:
            raise ProtocolError(f"Connection broken: the recorded stream ended abruptly ({reason})")


class _Body:
    """What requests reads a response from (`Response.raw`): the parts of urllib3's HTTPResponse it uses."""

    def __init__(self, chunks: Iterator[bytes], content_encoding: str | None) -> None:
        self._chunks = chunks
        self._encoding = content_encoding
        self._decoder: BodyDecoder | None = None
        self._left = b""
        self.closed = False

    def _decoded(self, data: bytes, decode: bool, last: bool = False) -> bytes:
        if not decode or not self._encoding:
            return data
        try:
            if self._decoder is None:
                self._decoder = BodyDecoder(self._encoding)
            return self._decoder.decode(data) + (self._decoder.flush() if last else b"")
        except ContentDecodingError as exc:
            message = f"Received response with content-encoding: {self._encoding}, but failed to decode it: {exc}"
            raise DecodeError(message) from None

    def stream(self, amt: int | None = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        """Each chunk as it comes (`amt` None), else in pieces of at most `amt` bytes of one chunk."""
        decode = decode_content is not False
        for data in self._chunks:
            data = self._decoded(data, decode)
            if amt is None:
                if data:
                    yield data
                continue
            for start in range(0, len(data), amt):
                yield data[start : start + amt]
        tail = self._decoded(b"", decode, last=True)
        if tail:
            yield tail
        self.closed = True

    def read(self, amt: int | None = None, decode_content: bool | None = None, cache_content: bool = False) -> bytes:
        data = self._left
        pieces = self.stream(None, decode_content)
        while amt is None or len(data) < amt:
            piece = next(pieces, None)
            if piece is None:
                break
            data += piece
        if amt is None:
            self._left = b""
            return data
        self._left = data[amt:]
        return data[:amt]

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass
