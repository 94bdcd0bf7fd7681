"""mitmproxy flow files (`mitmdump -w FILE`, the `save` addon), read with mitmproxy's own `FlowReader`.

A flow keeps its response body whole (`raw_content`: de-chunked, still content-encoded), so each
HTTP flow with a body becomes an untimed capture; the request and response timestamps give the
time of the response head and of the end. A flow whose body was streamed and not kept (no
`raw_content`) is left out. mitmproxy is an optional extra, imported only here.
"""

from __future__ import annotations

import io
import re
from datetime import datetime

from .._capture import Capture, Chunk, End, Request, Response, rfc3339
from .._errors import CaptureError
from ._common import Found, end_from_error

__all__ = ["INSTALL_HINT", "looks_like_flows", "read_flows"]

INSTALL_HINT = "reading mitmproxy flow files needs mitmproxy: pip install 'sse-inspect[record]'"
_TNETSTRING = re.compile(rb"(\d{1,12}):")


def looks_like_flows(data: bytes) -> bool:
    """Whether `data` starts with a tnetstring dictionary, as every flow file does."""
    m = _TNETSTRING.match(data)
    if m is None:
        return False
    end = m.end() + int(m.group(1))
    return end < len(data) and data[end : end + 1] == b"}"


def read_flows(data: bytes, path: str | None) -> list[Found]:
    """Every HTTP flow with a response body, as a capture; `index` counts all flows in the file."""
    try:
        from mitmproxy import http
        from mitmproxy.exceptions import FlowReadException
        from mitmproxy.io import FlowReader
    except ImportError:
        raise CaptureError("a mitmproxy flow file", path=path, hint=INSTALL_HINT) from None
    found = []
    try:
        for index, flow in enumerate(FlowReader(io.BytesIO(data)).stream()):
            if isinstance(flow, http.HTTPFlow) and flow.response is not None and flow.response.raw_content is not None:
                found.append(Found(index, _capture(flow, path)))
    except (FlowReadException, ValueError, KeyError, TypeError) as exc:
        raise CaptureError(f"not a readable mitmproxy flow file: {exc}", path=path) from None
    if not found:
        raise CaptureError("a mitmproxy flow file without any HTTP response body", path=path)
    return found


def _capture(flow: object, path: str | None) -> Capture:
    from mitmproxy import http

    assert isinstance(flow, http.HTTPFlow) and flow.response is not None
    request, response = flow.request, flow.response
    sent = request.timestamp_end or request.timestamp_start

    def since(ts: float | None) -> float | None:
        return None if ts is None else round(max(ts - sent, 0.0), 6)

    body = response.raw_content or b""
    end_t = since(response.timestamp_end)
    return Capture(
        chunks=(Chunk(None, body),) if body else (),
        request=Request(
            method=request.method,
            url=request.pretty_url,
            http_version=request.http_version,
            headers=tuple(request.headers.items(multi=True)),
            body=request.raw_content.decode("utf-8", "replace") if request.raw_content else None,
        ),
        response=Response(
            status=response.status_code,
            reason=response.reason,
            http_version=response.http_version,
            headers=tuple(response.headers.items(multi=True)),
            t=since(response.timestamp_start),
        ),
        end=end_from_error(flow.error.msg, end_t) if flow.error else End(kind="complete", t=end_t),
        recorded_at=rfc3339(datetime.fromtimestamp(request.timestamp_start).astimezone()),
        recorder="mitmproxy flow import; untimed: a flow keeps the whole body, no per-chunk arrival times",
        timed=False,
        path=path,
    )
