"""Findings from the response's status and headers: what decides whether a stream can flow."""

from __future__ import annotations

from collections.abc import Iterator

from ._context import Context
from ._model import Finding, Severity

__all__ = ["check_headers"]

BUFFERING_PROXIES = ("nginx", "openresty", "tengine", "varnish", "squid", "apache")
"""Server or Via header values of hops that buffer responses unless told not to (nginx and its
forks honour X-Accel-Buffering). A bare `Via: 1.1 google` names no such hop."""


def check_headers(ctx: Context) -> Iterator[Finding]:
    response = ctx.capture.response
    assert response is not None
    if not 200 <= response.status < 300:
        yield Finding(code="http-error", severity=Severity.ERROR,
                      message=f"HTTP {response.status} {response.reason}".rstrip() + _body_hint(ctx),
                      evidence={"status": response.status})  # fmt: skip
        return
    ctype = response.header("content-type")
    if (ctype or "").split(";")[0].strip().lower() != "text/event-stream":
        yield Finding(code="wrong-content-type", severity=Severity.WARNING,
                      message=f"Content-Type is {ctype!r}, not text/event-stream")  # fmt: skip
    encoding = response.header("content-encoding")
    if encoding and encoding.strip().lower() != "identity":
        t = ctx.analysis.timing.ttfb if ctx.timed else None
        yield Finding(code="compressed-stream", severity=Severity.WARNING, t=t,
                      message=f"Content-Encoding: {encoding} on an event stream ({ctx.analysis.timing.bytes} bytes on "
                              f"the wire for {ctx.analysis.timing.decoded_bytes} decoded)",
                      evidence={"encoding": encoding})  # fmt: skip
    length = response.header("content-length")
    if length is not None:
        yield Finding(code="content-length", severity=Severity.WARNING,
                      message=f"Content-Length: {length} on an event stream")  # fmt: skip
    cache = (response.header("cache-control") or "").lower()
    if "no-cache" not in cache and "no-store" not in cache:
        yield Finding(code="no-cache-header", severity=Severity.INFO,
                      message="no Cache-Control: no-cache" + (f" (Cache-Control: {cache})" if cache else ""))  # fmt: skip
    accel = (response.header("x-accel-buffering") or "").strip().lower()
    hop = next(
        (f"{name}: {value}" for name in ("Server", "Via") if (value := response.header(name))
         and any(p in value.lower() for p in BUFFERING_PROXIES)),
        None,
    )  # fmt: skip
    if accel != "no" and hop:
        yield Finding(code="x-accel-buffering", severity=Severity.INFO,
                      message=f"{hop} shows a proxy that buffers unless the upstream sends X-Accel-Buffering: no "
                              "(nginx removes that header on its way, so it cannot show here)")  # fmt: skip


def _body_hint(ctx: Context) -> str:
    text = ctx.head.decode("utf-8", "replace").strip().replace("\n", " ")
    return f": {text}" if text else ""
