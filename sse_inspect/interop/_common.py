"""What the format modules share: an exchange found in a file, and how an error message ends a stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._capture import Capture, End, Response
from .._redact import Redactor
from .._secrets import redact_text

__all__ = ["Found", "end_from_error", "is_chunked"]


@dataclass(frozen=True, slots=True)
class Found:
    """One exchange of an imported file, as a capture."""

    index: int
    """Its position in the file (HAR entry, flow, request of a curl trace), from 0."""
    capture: Capture

    @property
    def streamed(self) -> bool:
        """Whether the response is an event stream."""
        response = self.capture.response
        ctype = (response.header("content-type") or "") if response is not None else ""
        return ctype.split(";")[0].strip().lower() == "text/event-stream"

    def label(self) -> str:
        """`#N METHOD URL -> STATUS`, the URL's secrets redacted: labels end up in terminals and logs."""
        request, response = self.capture.request, self.capture.response
        what = f"{request.method} {_redacted_url(request.url)}" if request is not None else "?"
        return f"#{self.index} {what} -> {response.status if response is not None else '-'}"


def _redacted_url(url: str) -> str:
    try:
        url = Redactor().redact_url(url)
    except ValueError:  # not a URL urllib can split: its tokens are still redacted
        pass
    return redact_text(url)[0]


_CLIENT = ("client disconnected", "(cancel)", "err_aborted")
_SERVER = ("peer closed", "server closed", "stream reset", "connection closed", "reset by peer", "connection reset",
           "err_incomplete_chunked_encoding", "err_connection_closed", "err_empty_response")  # fmt: skip


def end_from_error(message: str, t: float | None = None) -> End:
    """The end of a stream that failed with `message` (mitmproxy's, Chrome's `net::ERR_...`, curl's)."""
    lower = message.lower()
    if any(s in lower for s in _CLIENT):
        kind = "client-disconnected"
    elif any(s in lower for s in _SERVER):
        kind = "server-disconnected"
    else:
        kind = "error"
    return End(kind=kind, t=t, error=message)


def is_chunked(response: Response) -> bool:
    """Whether an HTTP/1.x response body comes in chunked framing."""
    encoding = (response.header("transfer-encoding") or "").lower()
    return response.http_version.upper().startswith("HTTP/1") and "chunked" in encoding


def capture_meta(capture: Capture) -> dict[str, Any]:
    """What a capture holds beyond its exchange and chunks, for formats with no place of their own for it."""
    end = capture.end
    return {
        "recorded_at": capture.recorded_at,
        "recorder": capture.recorder,
        "timed": capture.timed,
        "response_t": capture.response.t if capture.response is not None else None,
        "end": None if end is None else {"kind": end.kind, "t": end.t, "error": end.error},
        "extra": capture.extra,
    }
