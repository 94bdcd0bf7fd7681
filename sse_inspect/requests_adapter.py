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
as a cut connection does. With faults (`faults=["cut:event=50%"]`, see `_faults`) it walks the same
`ReplayPlan` as the replay server and ends as urllib3 ends over a socket: a cut (a close mid-body or a
reset) is the `ProtocolError` requests turns into `ChunkedEncodingError`, a stall longer than the read
timeout the `ReadTimeoutError` it turns into `ConnectionError` (after waiting the timeout), a `status:`
fault an error answer. Only stalls and a slow link wait. Importing this module needs requests.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

try:
    import requests
    from requests.adapters import BaseAdapter
    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers
    from urllib3 import Timeout
    from urllib3.connectionpool import connection_from_url
    from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("sse_inspect.requests_adapter needs requests: pip install requests") from None

from ._capture import Capture
from ._decoding import BodyDecoder, ContentDecodingError
from ._fault_plan import CLOSE, COMPLETE, ReplayPlan, Send
from ._faults import Fault, FaultSet
from ._rechunk import RechunkSpec, ReplayChunks, parse_rechunk_spec
from .server import reason_phrase

__all__ = ["CaptureAdapter"]

# What urllib3 raises, over a socket, when a chunked body ends in each way (checked against the replay
# server in tests/test_inprocess_faults.py): a FIN mid-body, a reset.
CLOSED = "Response ended prematurely"
RESET_BY_PEER = "Connection broken: ConnectionResetError(104, 'Connection reset by peer')"

Timeouts = float | tuple[float | None, float | None] | Timeout | None
"""What requests passes to `send` as `timeout`: one for both, (connect, read), or urllib3's Timeout."""


class CaptureAdapter(BaseAdapter):
    """Serves `capture` to every request sent through the prefixes it is mounted on, re-cut as `rechunk`
    says and with `faults` (specs such as "cut:event=50%", or a FaultSet; a FaultSpecError when bad).
    `dialect` names whose end markers and in-band error the faults use (default: detected). No timing
    but the faults'."""

    def __init__(
        self,
        capture: Capture,
        *,
        rechunk: str | RechunkSpec | None = None,
        faults: FaultSet | str | Fault | Iterable[str | Fault] = (),
        dialect: str | None = None,
    ) -> None:
        super().__init__()
        self.capture = capture
        self.faults = FaultSet.of(faults)
        spec = parse_rechunk_spec(rechunk) if isinstance(rechunk, str) else rechunk
        self.plan = ReplayPlan(capture, rechunk=spec, faults=self.faults, dialect=dialect)
        """What each request is answered with: the bytes, the waits and the end."""
        self.chunks: ReplayChunks = self.plan.chunks
        self.requests: list[requests.PreparedRequest] = []
        """Every request received, for assertions."""

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Timeouts = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        self.requests.append(request)
        plan = self.plan
        r = self.capture.response
        headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
        if plan.status is not None:  # the error answer instead of the stream
            status, error_headers, payload = plan.error_response()
            reason = ""
            sent: Iterable[tuple[str, str]] = [*error_headers, ("Content-Length", str(len(payload)))]
            body: Iterator[bytes] = iter([payload])
        else:
            status, reason = (r.status, r.reason or "") if r else (200, "")
            sent = plan.headers
            body = self._body(request.url or "", _read_timeout(timeout), time.monotonic())
        for name, value in sent:
            headers[name] = f"{headers[name]}, {value}" if name in headers else value  # as urllib3 folds them
        response = requests.Response()
        response.status_code = status
        response.reason = reason or reason_phrase(status)
        response.headers = headers
        response.encoding = get_encoding_from_headers(headers)
        response.raw = _Body(body, headers.get("content-encoding"))
        response.url = request.url or ""
        response.request = request
        response.connection = self  # type: ignore[assignment]  # requests expects its HTTPAdapter here
        return response

    def close(self) -> None:
        pass

    def _body(self, url: str, timeout: float | None, start: float) -> Iterator[bytes]:
        """The plan's bytes for a request that arrived at `start` (monotonic), each after its wait, the
        waits as long as a socket's read would block; at the end, what urllib3 raises there."""
        for step in self.plan.steps(None):
            wait = start + step.at - time.monotonic() if step.at else 0.0  # (at 0: due since the request came)
            if timeout is not None and wait > timeout:  # a socket's read gives up first
                time.sleep(timeout)
                raise ReadTimeoutError(_pool(url), url, "Read timed out.")
            if wait > 0:
                time.sleep(wait)
            if isinstance(step, Send):
                yield step.data
            elif step.how == COMPLETE:
                return
            elif step.how == CLOSE:
                raise ProtocolError(CLOSED)
            elif step.recorded is not None:  # the recording's own end, not a fault's
                raise ProtocolError(f"Connection broken: the recorded stream ended abruptly ({step.recorded})")
            else:
                raise ProtocolError(RESET_BY_PEER, ConnectionResetError(104, "Connection reset by peer"))



def _pool(url: str) -> Any:
    """The connection pool urllib3 names in a timeout's message (`HTTPConnectionPool(host='replay', port=80)`);
    made, never connected."""
    try:
        return connection_from_url(url)
    except ValueError:  # no host in the URL
        return None


def _read_timeout(timeout: Timeouts) -> float | None:
    """The read timeout in what requests passes to `send`: seconds, or None (no timeout)."""
    if isinstance(timeout, tuple):
        timeout = timeout[1]
    elif isinstance(timeout, Timeout):
        timeout = timeout.read_timeout  # type: ignore[assignment]
    return float(timeout) if isinstance(timeout, int | float) else None


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
