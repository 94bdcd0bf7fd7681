"""Findings from the response's status and headers: what decides whether a stream can flow."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

from ._check import Check, Context, Need
from ._model import Finding
from .evidence import Encoding, Status
from .hops import BUFFERING, read_hops

__all__ = ["HeadersCheck"]


class HeadersCheck(Check):
    """Reads the status and the streaming headers once the pass is over. It watches none of the
    stream's events (an error response is quoted from `ctx.head`, the body's first bytes)."""

    family = "headers"
    needs: ClassVar[Mapping[Need, str]] = {Need.RESPONSE: "a raw body: no status or headers were recorded"}

    def findings(self, ctx: Context) -> Iterator[Finding]:
        response = ctx.capture.response
        assert response is not None
        if not ctx.http_ok:
            yield self.found("http-error", f"HTTP {response.status} {response.reason}".rstrip() + _body_hint(ctx),
                             evidence=Status(response.status))  # fmt: skip
            return
        ctype = response.header("content-type")
        if (ctype or "").split(";")[0].strip().lower() != "text/event-stream":
            yield self.found("wrong-content-type", f"Content-Type is {ctype!r}, not text/event-stream")
        encoding = response.header("content-encoding")
        if encoding and encoding.strip().lower() != "identity":
            timing = ctx.analysis.timing
            yield self.found("compressed-stream", f"Content-Encoding: {encoding} on an event stream ({timing.bytes} "
                             f"bytes on the wire for {timing.decoded_bytes} decoded)",
                             t=timing.ttfb if ctx.timed else None, evidence=Encoding(encoding))  # fmt: skip
        length = response.header("content-length")
        if length is not None:
            yield self.found("content-length-on-stream", f"Content-Length: {length} on an event stream: something "
                             "held the whole body (or the server never streamed)")  # fmt: skip
        cache = (response.header("cache-control") or "").lower()
        if "no-cache" not in cache and "no-store" not in cache:
            shown = f" (Cache-Control: {cache})" if cache else ""
            yield self.found("no-cache-header", f"no Cache-Control: no-cache{shown}")
        accel = (response.header("x-accel-buffering") or "").strip().lower()
        nginx = next((hop for hop in read_hops(ctx.capture) if hop.name == "nginx"), None)
        if accel != "no" and nginx is not None:  # only nginx (and its forks) honour X-Accel-Buffering
            yield self.found("x-accel-buffering", f"{nginx.header}: {nginx.value} shows nginx, which buffers unless "
                             "the upstream sends X-Accel-Buffering: no (nginx removes that header on its way, so it "
                             "cannot show here)")  # fmt: skip

    def review(self, ctx: Context, findings: list[Finding]) -> list[Finding]:
        """nginx strips X-Accel-Buffering on its way to the client, so a fixed stream can never show the
        header: advise it only where the timing shows buffering, or cannot tell (an untimed capture)."""
        if ctx.timed and not any(f.code in BUFFERING for f in findings):
            return [f for f in findings if f.code != "x-accel-buffering"]
        return findings


def _body_hint(ctx: Context) -> str:
    text = ctx.head.decode("utf-8", "replace").strip().replace("\n", " ")
    return f": {text}" if text else ""
