"""Record one stream straight from its server with httpx, like `curl -N`: no proxy needed."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._capture import Request, Response
from ._errors import SSEInspectError
from ._redact import Redactor
from .recorder import CaptureWriter

__all__ = ["FetchInterrupted", "FetchTimeout", "fetch"]


class FetchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a fetch. `path` is the capture written so far (every chunk received, then an end
    line `client-disconnected`, "interrupted (Ctrl-C)"), or None when no response had come yet."""

    def __init__(self, path: Path | None) -> None:
        super().__init__()
        self.path = path


class FetchTimeout(SSEInspectError):
    """fetch's own `timeout` fired: no response, or no byte of the body, for that long.

    `path` is the capture written so far (its end line `client-disconnected`: fetch gave up and
    closed the connection; the server had not ended the stream), or None when no response came.
    """

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class _Clock:
    """Seconds since the request was sent: started by httpx's request hook, right before the request
    goes out (not before the client is built: loading the CA bundle alone takes tens of ms)."""

    def __init__(self) -> None:
        self.sent_at: float | None = None

    def start(self, request: object) -> None:
        self.sent_at = time.monotonic()

    def now(self) -> float:
        assert self.sent_at is not None, "the request hook did not run"
        return time.monotonic() - self.sent_at


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

    The capture goes to `path`, or to a new file named after the URL in `directory`. Times count
    from when the request is sent.

    The body is read raw (Content-Encoding left as sent, like the proxy addon). The end line
    says how it ended: complete, server-disconnected (cut or reset) or client-disconnected (fetch
    gave up: Ctrl-C, which raises `FetchInterrupted`, or no byte for `timeout` seconds, which
    raises `FetchTimeout`; both carry the capture's path).
    """
    import httpx

    redactor = redactor or Redactor()
    request_body = body.decode("utf-8", "replace") if body else None
    clock = _Clock()
    shown = redactor.redact_url(url)
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, event_hooks={"request": [clock.start]}) as client:
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
                        t=clock.now(),
                    ),
                    redactor=redactor,
                    recorder="fetch, httpx",
                    path=path,
                )
                try:
                    _read(response, writer, clock, on_chunk, timeout)
                except KeyboardInterrupt:
                    if not writer.closed:
                        writer.end("client-disconnected", clock.now(), "interrupted (Ctrl-C)")
                    raise FetchInterrupted(writer.path) from None
    except httpx.TimeoutException as exc:  # before the response's headers: no capture
        if isinstance(exc, httpx.ConnectTimeout):
            what = "no connection"
        elif isinstance(exc, httpx.WriteTimeout | httpx.PoolTimeout):
            what = "the request could not be sent"
        else:
            what = "no response headers"
        raise FetchTimeout(f"timed out: {method} {shown}: {what} after {_secs(timeout)} "
                           f"(fetch's --timeout {_secs(timeout)}); no capture written") from None  # fmt: skip
    except httpx.HTTPError as exc:
        raise SSEInspectError(f"{method} {shown}: {exc}") from None
    except FetchInterrupted:
        raise
    except KeyboardInterrupt:  # before the response: nothing written
        raise FetchInterrupted(None) from None
    except OSError as exc:
        raise SSEInspectError(f"cannot write the capture: {exc}") from None
    return writer.path


def _read(response: Any, writer: CaptureWriter, clock: _Clock, on_chunk: Callable[[float, bytes], None] | None,
          timeout: float) -> None:  # fmt: skip
    import httpx

    chunks = 0
    last = clock.now()  # the headers' arrival, until a chunk comes
    try:
        for data in response.iter_raw():
            last = clock.now()
            writer.chunk(last, data)
            chunks += 1
            if on_chunk is not None:
                on_chunk(last, data)
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        writer.end("server-disconnected", clock.now(), str(exc) or type(exc).__name__)
        return
    except httpx.TimeoutException:
        t = clock.now()
        gave_up = f"fetch's --timeout {_secs(timeout)}: no byte for {t - last:.3f} s, fetch closed the connection"
        writer.end("client-disconnected", t, gave_up)
        since = f"after chunk {chunks} (at {last:.3f} s)" if chunks else f"after the headers (at {last:.3f} s)"
        raise FetchTimeout(
            f"timed out: the server sent nothing for {_secs(timeout)} {since}, so fetch's --timeout "
            f"{_secs(timeout)} fired and fetch closed the connection; the server had not ended the stream",
            path=writer.path,
        ) from None
    writer.end("complete", clock.now())


def _secs(seconds: float) -> str:
    return f"{seconds:g} s"
