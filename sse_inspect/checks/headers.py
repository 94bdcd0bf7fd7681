"""Findings from the response's status and headers: what decides whether a stream can flow."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

from .._capture import Chunk
from ._check import Check, Context, Need
from ._model import Finding, Thresholds
from .evidence import ContentLength, Encoding, Status
from .hops import BUFFERING, read_hops

__all__ = ["HeadersCheck"]


class HeadersCheck(Check):
    """Reads the status and the streaming headers once the pass is over. It watches none of the
    stream's events (an error response is quoted from `ctx.head`, the body's first bytes)."""

    family = "headers"
    needs: ClassVar[Mapping[Need, str]] = {Need.RESPONSE: "a raw body: no status or headers were recorded"}

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.first_t: float | None = None  # the body's first and last chunk (to tell a held body from a
        self.last_t: float | None = None  # streamed one under a Content-Length)

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        if chunk.t is not None:
            if self.first_t is None:
                self.first_t = chunk.t
            self.last_t = chunk.t

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        """Only the first and the last timed chunk matter: a block's are looked for from its ends."""
        if self.first_t is None:
            self.first_t = next((c.t for _, c, _ in chunks if c.t is not None), None)
        last = chunks[-1][1].t if chunks else None
        if last is None:  # (an untimed last chunk: the last timed one before it, looked for from the end)
            last = next((c.t for _, c, _ in reversed(chunks) if c.t is not None), None)
        if last is not None:
            self.last_t = last

    def findings(self, ctx: Context) -> Iterator[Finding]:
        response = ctx.capture.response
        assert response is not None
        if not ctx.http_ok:
            yield self.found("http-error", f"HTTP {response.status} {response.reason}".rstrip() + _body_hint(ctx),
                             evidence=Status(response.status))  # fmt: skip
            return
        ctype = response.header("content-type")
        framing = ctx.analysis.framing
        expected = _EXPECTED_TYPES[framing]
        if (ctype or "").split(";")[0].strip().lower() not in expected:
            if framing == "sse":
                yield self.found("wrong-content-type", f"Content-Type is {ctype!r}, not text/event-stream")
            else:
                yield self.found("wrong-content-type", f"Content-Type is {ctype!r} on a {framing} stream, not "
                                 f"{expected[0]}", advice=f"send `Content-Type: {expected[0]}`: clients and hops "
                                 "tell a stream by it, and some proxies buffer or compress other types")  # fmt: skip
        encoding = response.header("content-encoding")
        if encoding and encoding.strip().lower() != "identity":
            timing = ctx.analysis.timing
            yield self.found("compressed-stream", f"Content-Encoding: {encoding} on an event stream ({timing.bytes} "
                             f"bytes on the wire for {timing.decoded_bytes} decoded)",
                             t=timing.ttfb if ctx.timed else None, evidence=Encoding(encoding))  # fmt: skip
        length = response.header("content-length")
        if length is not None:
            yield self._content_length(ctx, length)
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

    def _content_length(self, ctx: Context, value: str) -> Finding:
        """`content-length-on-stream`: a body held whole (or never streamed), unless its chunks arrived
        spread out, when the header is only wrong, and risky."""
        length = int(value) if value.strip().isdigit() else None
        shown = f"Content-Length: {value}" if length is not None else f"Content-Length: {value!r} (not a number)"
        spread = None
        if ctx.timed and self.first_t is not None and self.last_t is not None:
            spread = round(self.last_t - self.first_t, 6)
        streamed = spread is not None and spread * 1000 >= self.thresholds.burst_min_silence_ms
        evidence = ContentLength(length, spread, streamed)
        if streamed:
            return self.found("content-length-on-stream", f"{shown} on an event stream that arrived spread over "
                              f"{spread:.3f} s: the header is wrong for a stream, and risky (a hop may buffer the "
                              "body to honour it, a client may wait for that many bytes)", evidence=evidence,
                              advice="send no Content-Length on the stream (a generator's response has none): a hop "
                                     "may hold the whole body to honour it")  # fmt: skip
        return self.found("content-length-on-stream", f"{shown} on an event stream: something held the whole body "
                          "(or the server never streamed)", evidence=evidence)  # fmt: skip

    def review(self, ctx: Context, findings: list[Finding]) -> list[Finding]:
        """nginx strips X-Accel-Buffering on its way to the client, so a fixed stream can never show the
        header: advise it only where the timing shows buffering, or cannot tell (an untimed capture)."""
        if ctx.timed and not any(f.code in BUFFERING for f in findings):
            return [f for f in findings if f.code != "x-accel-buffering"]
        return findings


_NDJSON_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/json-lines",
                 "application/jsonlines", "application/x-jsonlines")  # fmt: skip
_EXPECTED_TYPES = {
    "sse": ("text/event-stream",),
    "ndjson": (*_NDJSON_TYPES, "application/json"),  # (Ollama sends x-ndjson; some servers plain JSON's type)
    "json-array": ("application/json",),  # Gemini's streamGenerateContent without alt=sse
    "eventstream": ("application/vnd.amazon.eventstream",),
}
"""The Content-Types right for each framing, the one to advise first."""


def _body_hint(ctx: Context) -> str:
    text = ctx.head.decode("utf-8", "replace").strip().replace("\n", " ")
    return f": {text}" if text else ""
