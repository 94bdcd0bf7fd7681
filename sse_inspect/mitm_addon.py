"""The mitmproxy addon: records every token-stream response (SSE above all), chunk by chunk, as it passes.

    mitmdump --listen-host 127.0.0.1 -s addons/sse_capture.py --set sse_capture_dir=./captures

A thin mitmproxy layer over `recorder.StreamRecorder`, which holds the batching and durability
policy: this module picks the flows, turns mitmproxy's flows and options into the recorder's
values, and hands each chunk to it. It never holds a byte back and never breaks traffic: the
stream callable hands every chunk on unchanged, and a recording that fails (disk full, folder
gone) is dropped with one warning while the proxy keeps proxying. That is the opposite of
mitmproxy's own `save` addon, which exits on a write error: a debugging tool must not become the
outage. A bad `sse_capture_dir` is refused when it is set (`--set`), before any traffic.

The body is attached to the flow after the stream (for mitmweb and `-w` files) only up to
`sse_capture_attach_limit` bytes: past it the flow keeps the stream's head and a comment saying
where the whole stream is, so a proxy that carries endless or huge streams stays flat in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Optional

from mitmproxy import ctx, exceptions, flowfilter, http
from mitmproxy.connection import ConnectionState
from mitmproxy.utils import human

from . import mitm_view
from ._capture import Request, Response
from ._live import STALL_S
from ._redact import Redactor
from .interop._common import end_from_error
from .recorder import (
    STREAM_TYPES,
    CaptureWriter,
    OnCapture,
    Stage,
    StreamRecorder,
    capture_dir_problem,
    capture_dir_warning,
    is_stream,
)

__all__ = ["ATTACH_LIMIT", "SSECapture", "end_kind", "flow_error"]

logger = logging.getLogger(__name__)

StreamFunc = Callable[[bytes], "Iterable[bytes] | bytes"]


ATTACH_LIMIT = "4m"
"""The default of `sse_capture_attach_limit`: enough for the whole of an ordinary LLM answer."""


def end_kind(error_message: str) -> str:
    """Map mitmproxy's flow error text to an end kind of the capture format."""
    return end_from_error(error_message).kind


def flow_error(flow: http.HTTPFlow) -> str:
    """The error text to record for a flow that failed: mitmproxy's, except that an HTTP/2 (or
    HTTP/3) connection closed by the client is said to be the client's doing. mitmproxy words it
    "peer closed connection" whichever side it was; when it was the client, the client's connection
    can no longer be read from as the error is reported (the server's may be closed too by then:
    mitmproxy has already cancelled the request upstream). When the server closes, mitmproxy
    keeps the client's connection open for its other streams."""
    message = flow.error.msg if flow.error else "unknown error"
    if message == "peer closed connection" and not flow.client_conn.state & ConnectionState.CAN_READ:
        return f"client disconnected ({message})"
    return message


def _seconds(text: str) -> float:
    """`sse_live_stall`'s value: a number of seconds above 0, or an OptionsError saying what it is not."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise exceptions.OptionsError(f"sse_live_stall: {text!r} is not a number of seconds above 0 (e.g. 2, 0.5)")
    return value


def _chain(take: StreamFunc, inner: StreamFunc) -> StreamFunc:
    """Record the wire bytes, then hand them to the stream callable another addon had set."""

    def stream(data: bytes) -> Iterable[bytes] | bytes:
        take(data)
        return inner(data)

    return stream


class SSECapture:
    """Records `text/event-stream` responses (or other streamed types) into sse-capture/1 files."""

    def __init__(self, on_capture: OnCapture | None = None) -> None:
        self.active: dict[str, StreamRecorder] = {}
        self.filter: flowfilter.TFilter | None = None
        self.on_capture = on_capture
        self.live: Any = None
        """The live session (`sse_live`, `sse_live_json`, `sse_live_ui`), once running."""
        self._live_json: Any = None
        self._page: Any = None
        self._page_task: asyncio.Task[None] | None = None  # (held while the page starts)

    def load(self, loader: Any) -> None:
        mitm_view.register()
        loader.add_option("sse_capture_dir", str, "./captures", "Folder for the sse-capture/1 files.")
        loader.add_option(
            "sse_capture_filter", Optional[str], None, "Record only flows matching this mitmproxy filter expression."
        )
        loader.add_option(
            "sse_capture_types",
            str,
            ",".join(STREAM_TYPES),
            "Comma-separated response content types to record (default: the token streams: SSE, NDJSON, "
            "JSON Lines, AWS event stream; with SSE, Gemini's :streamGenerateContent JSON array too).",
        )
        loader.add_option("sse_redact", bool, True, "Redact credentials (headers, key= query parameters).")
        loader.add_option(
            "sse_redact_extra", Sequence[str], [], "More header or query parameter names to redact."
        )
        loader.add_option("sse_capture_request_body", bool, True, "Store the request body (the prompt).")
        loader.add_option(
            "sse_capture_attach_body", bool, True, "After the stream, attach its body to the flow for mitmproxy's views."
        )
        loader.add_option(
            "sse_live", bool, False,
            "Watch the streams live in the log: a line as each starts, stalls, bursts and ends (with its verdict).",
        )
        loader.add_option(
            "sse_live_json", Optional[str], None,
            "Append the live view as JSON lines to this file (one per start, event, stall, burst, finished stream).",
        )
        loader.add_option(
            "sse_live_ui", bool, False, "Serve the live page on 127.0.0.1 (its URL is logged when it is up)."
        )
        loader.add_option("sse_live_ui_port", int, 0, "The live page's port on 127.0.0.1 (0: a free one).")
        loader.add_option(  # (mitmproxy has no float options)
            "sse_live_stall", str, f"{STALL_S:g}", "Seconds of silence after which a live stream is stalled (e.g. 2, 0.5)."
        )
        loader.add_option(
            "sse_capture_attach_limit",
            str,
            ATTACH_LIMIT,
            "Attach at most this much of a stream's body to its flow (e.g. 512k, 4m, 1g; 0: nothing); "
            "a longer stream's flow gets its head and a comment. The capture file always has all of it.",
        )

    def configure(self, updated: set[str]) -> None:
        if "sse_capture_dir" in updated:
            problem = capture_dir_problem(ctx.options.sse_capture_dir)
            if problem is not None:
                raise exceptions.OptionsError(f"sse_capture_dir: {problem}")
            if (warning := capture_dir_warning(ctx.options.sse_capture_dir)) is not None:
                logger.warning("sse-inspect: %s", warning)
        if "sse_capture_attach_limit" in updated:
            self._attach_limit()
        if "sse_live_stall" in updated:
            _seconds(ctx.options.sse_live_stall)
        if "sse_capture_filter" in updated:
            spec = ctx.options.sse_capture_filter
            try:
                self.filter = flowfilter.parse(spec) if spec else None
            except ValueError as exc:
                raise exceptions.OptionsError(f"sse_capture_filter: {exc}") from None

    def running(self) -> None:
        # the sign that options are set and recording is on: tests wait for it, not only for the port
        logger.info("sse-inspect: recording event streams into %s", ctx.options.sse_capture_dir)
        if self.live is None and (ctx.options.sse_live or ctx.options.sse_live_json or ctx.options.sse_live_ui):
            try:
                self._start_live()
            except Exception as exc:  # noqa: BLE001 - recording goes on without its live view
                logger.warning("sse-inspect: the live view could not start: %s", exc)

    def _start_live(self) -> None:
        """The live session and the views the options ask for (imported only then: rich, the checks)."""
        from .cli._live import JsonView, LinesView
        from .live import LiveSession

        session = LiveSession(then=self.on_capture, stall_s=_seconds(ctx.options.sse_live_stall))
        if ctx.options.sse_live:
            session.views.append(LinesView(lambda line: logger.info("sse-inspect: %s", line.plain.strip())))
        if ctx.options.sse_live_json:
            self._live_json = open(ctx.options.sse_live_json, "a", encoding="utf-8")  # noqa: SIM115 - closed in `done`
            session.views.append(JsonView(self._live_json))
        loop = asyncio.get_running_loop()
        if ctx.options.sse_live_ui:
            from .live_page import LivePage

            self._page = LivePage(session)
            session.views.append(self._page)
            self._page_task = loop.create_task(self._open_page(ctx.options.sse_live_ui_port))
        self.on_capture, self.live = session.on_capture, session
        session.start(loop)

    async def _open_page(self, port: int) -> None:
        try:
            url = await self._page.start(port=port)
        except Exception as exc:  # noqa: BLE001
            logger.warning("sse-inspect: the live page could not start: %s", exc)
            return
        logger.warning("sse-inspect: live page at %s (this machine only)", url)

    def _attach_limit(self) -> int:
        """How many body bytes to attach to a flow (0: none), from the two options."""
        try:
            limit = human.parse_size(ctx.options.sse_capture_attach_limit.strip().lower())
        except ValueError:
            limit = None
        if limit is None or limit < 0:
            raise exceptions.OptionsError(
                f"sse_capture_attach_limit: {ctx.options.sse_capture_attach_limit!r} is not a size (e.g. 512k, 4m)"
            )
        return limit if ctx.options.sse_capture_attach_body else 0

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or response.raw_content is not None:
            # With its body already there (a flow read from a file, `mitmdump -r`), nothing streams:
            # nothing to record, and `response` must not replace that body with the empty stream's.
            return
        ctype = response.headers.get("content-type")
        url = flow.request.pretty_url
        types = [t for t in ctx.options.sse_capture_types.split(",") if t.strip()]
        recorded = is_stream(ctype, url, types)
        if not recorded and not is_stream(ctype, url):
            return
        try:
            if recorded and (self.filter is None or self.filter(flow)):
                self._start(flow)
        except Exception as exc:  # noqa: BLE001 - recording trouble must not touch the traffic
            logger.warning("sse-inspect: not recording %s: %s", flow.request.pretty_url, exc)
        if not response.stream:
            # Recorded or not, a token stream must flow: mitmproxy would otherwise hold the
            # whole body until the server closes it (mitmproxy#4469).
            response.stream = True

    def _start(self, flow: http.HTTPFlow) -> None:
        request, response = flow.request, flow.response
        assert response is not None
        # The request was sent when mitmproxy finished reading it; turn that wall time into monotonic.
        sent_wall = request.timestamp_end or request.timestamp_start
        sent_at = time.monotonic() - (time.time() - sent_wall)
        body = None
        if ctx.options.sse_capture_request_body and request.raw_content:
            body = request.raw_content.decode("utf-8", "replace")
        writer = CaptureWriter.create(
            ctx.options.sse_capture_dir,
            request=Request(
                method=request.method,
                url=request.pretty_url,
                http_version=request.http_version,
                headers=tuple(request.headers.items(multi=True)),
                body=body,
            ),
            response=Response(
                status=response.status_code,
                reason=response.reason,
                http_version=response.http_version,
                headers=tuple(response.headers.items(multi=True)),
                t=(response.timestamp_start or sent_wall) - sent_wall,
            ),
            redactor=Redactor(ctx.options.sse_redact_extra, enabled=ctx.options.sse_redact),
            recorder=f"mitmproxy addon, {ctx.options.mode[0] if ctx.options.mode else 'regular'} mode",
        )
        recorder = StreamRecorder(
            writer, sent_at, attach=self._attach_limit(), schedule=asyncio.get_running_loop().call_soon
        )
        response.stream = _chain(recorder.take, response.stream) if callable(response.stream) else recorder.take
        self.active[flow.id] = recorder
        if self.on_capture is not None:
            self.on_capture(Stage.STARTED, recorder)

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish(flow, "complete")

    def error(self, flow: http.HTTPFlow) -> None:
        message = flow_error(flow)
        self._finish(flow, end_kind(message), message)

    def done(self) -> Awaitable[None] | None:
        mitm_view.unregister()
        for flow_id in list(self.active):
            self._finish_id(flow_id, "error", "proxy shut down while the stream was open")
        # With a live view, what is left to do waits on the loop: mitmproxy awaits what a hook returns
        return self._close_live() if self.live is not None else None

    async def _close_live(self) -> None:
        """The checks of the streams just closed told to the views, then the views closed."""
        await self.live.settle()
        if self._page is not None:
            await self._page.close()
        self.live.close()
        if self._live_json is not None:
            self._live_json.close()

    def _finish(self, flow: http.HTTPFlow, kind: str, error: str | None = None) -> None:
        recorder = self._finish_id(flow.id, kind, error)
        if recorder is not None and recorder.body is not None and flow.response is not None:
            # The body was already streamed; this only lets mitmproxy's views and -w files show it.
            flow.response.raw_content = recorder.body.getvalue()
            if recorder.attach_cut:
                note = (
                    f"sse-inspect: body cut to its first {len(flow.response.raw_content):,} of {recorder.bytes:,} "
                    f"bytes (sse_capture_attach_limit); the whole stream is in {recorder.path}"
                )
                flow.comment = f"{flow.comment}\n{note}" if flow.comment else note
                logger.info("%s", note)

    def _finish_id(self, flow_id: str, kind: str, error: str | None) -> StreamRecorder | None:
        recorder = self.active.pop(flow_id, None)
        if recorder is None:
            return None
        try:
            recorder.finish(kind, error)
            if self.on_capture is not None:
                self.on_capture(Stage.ENDED, recorder)
        except Exception as exc:  # noqa: BLE001
            logger.warning("sse-inspect: could not close the capture of a flow: %s", exc)
        return recorder
