"""Record one stream straight from its server with httpx, like `curl -N`: no proxy needed."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ._capture import Request, Response
from ._errors import SSEInspectError
from ._redact import Redactor
from .recorder import CaptureWriter

__all__ = ["fetch"]


def fetch(
    url: str,
    *,
    directory: Path,
    path: Path | None = None,
    method: str = "GET",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes | None = None,
    timeout: float = 60.0,
    redactor: Redactor | None = None,
    on_chunk: Callable[[float, bytes], None] | None = None,
) -> Path:
    """Send the request, write every body chunk with its arrival time to a capture, return its path.

    The capture goes to `path`, or to a new file named after the URL in `directory`.

    The body is read raw (Content-Encoding left as sent, like the proxy addon). The end line
    says how it ended: complete, server-disconnected (cut or reset), client-disconnected
    (Ctrl-C), or error (a timeout).
    """
    import httpx

    redactor = redactor or Redactor()
    request_body = body.decode("utf-8", "replace") if body else None
    sent_at = time.monotonic()
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            with client.stream(method, url, headers=list(headers), content=body) as response:
                writer = CaptureWriter.create(
                    directory,
                    request=Request(
                        method=method,
                        url=url,
                        http_version="HTTP/1.1",
                        headers=tuple(
                            (k.decode("latin-1"), v.decode("latin-1")) for k, v in response.request.headers.raw
                        ),
                        body=request_body,
                    ),
                    response=Response(
                        status=response.status_code,
                        reason=response.reason_phrase,
                        http_version=response.http_version,
                        headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw),
                        t=time.monotonic() - sent_at,
                    ),
                    redactor=redactor,
                    recorder="fetch, httpx",
                    path=path,
                )
                _read(response, writer, sent_at, on_chunk)
    except httpx.HTTPError as exc:
        raise SSEInspectError(f"{method} {redactor.redact_url(url)}: {exc}") from None
    except OSError as exc:
        raise SSEInspectError(f"cannot write the capture: {exc}") from None
    return writer.path


def _read(response: object, writer: CaptureWriter, sent_at: float, on_chunk: Callable[[float, bytes], None] | None) -> None:
    import httpx

    assert isinstance(response, httpx.Response)
    try:
        for data in response.iter_raw():
            t = time.monotonic() - sent_at
            writer.chunk(t, data)
            if on_chunk is not None:
                on_chunk(t, data)
    except KeyboardInterrupt:
        writer.end("client-disconnected", time.monotonic() - sent_at, "interrupted (Ctrl-C)")
        raise
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        writer.end("server-disconnected", time.monotonic() - sent_at, str(exc) or type(exc).__name__)
        return
    except httpx.TimeoutException as exc:
        writer.end("error", time.monotonic() - sent_at, f"timed out: {exc}")
        return
    writer.end("complete", time.monotonic() - sent_at)
