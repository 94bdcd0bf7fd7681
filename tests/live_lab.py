"""What `sse-inspect record --ui` runs, without the proxy: a `LiveSession` and its `LivePage` on an event
loop in a thread, fed by real `StreamRecorder`s writing real capture files.

    with LiveLab(tmp_path, stall_s=0.3) as lab:        # lab.url: the page, token and all
        rec = lab.open(load_capture("captures/nginx-unbuffered.jsonl"))
        lab.feed(rec, b"data: ...\\n\\n")               # as the proxy hands a chunk on
        lab.finish(rec, "server-disconnected", "peer closed the connection")

A recorder is driven on the loop exactly as the mitmproxy addon drives it: `take` each chunk (its flush
runs at the end of that loop iteration), `finish` at the end, and the session told of both stages.
Every call waits until the loop has done it, flush included, so a test can look at the page right after.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from sse_inspect import Capture, Chunk, Response, load_capture, parse_rechunk_spec, rechunk
from sse_inspect._redact import Redactor
from sse_inspect.live import LiveSession
from sse_inspect.live_page import LivePage
from sse_inspect.recorder import CaptureWriter, Stage, StreamRecorder

from .helpers import ROOT

T = TypeVar("T")

CAPTURES = ROOT / "captures"


def events_of(capture: Capture | str) -> list[bytes]:
    """A capture's body cut after each event: the chunks a well-behaved server would flush."""
    if isinstance(capture, str):
        capture = load_capture(CAPTURES / capture)
    return [c.data for c in rechunk(list(capture.chunks), parse_rechunk_spec("event"))]


class LiveLab:
    """A session and its page on a loop of their own; `close` (or the `with` block's end) stops them."""

    def __init__(self, directory: Path, *, stall_s: float = 2.0, tick: bool = True) -> None:
        self.directory = directory
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="live-lab", daemon=True)
        self._thread.start()
        self.session = LiveSession(stall_s=stall_s)
        self.page = LivePage(self.session)
        self.url = self.run(self._start(tick))

    async def _start(self, tick: bool) -> str:
        url = await self.page.start()
        self.session.views.append(self.page)
        if tick:  # stalls noticed and updates sent every TICK_S, as in `record`; without, only at `tick()`
            self.session.start()
        return url

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run a coroutine on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Call `fn` on the loop and wait for it, and for what it scheduled to run right away (a flush)."""

        async def calling() -> T:
            result = fn(*args)
            await asyncio.sleep(0)  # one more iteration: the recorder's flush, scheduled by `take`
            return result

        return self.run(calling())

    def open(self, capture: Capture | str, *, url: str | None = None) -> StreamRecorder:
        """Start recording a stream with `capture`'s request and response (its URL replaced by `url`)."""
        if isinstance(capture, str):
            capture = load_capture(CAPTURES / capture)
        assert capture.request is not None
        request = capture.request if url is None else dataclasses.replace(capture.request, url=url)
        response = capture.response or Response(status=200, headers=(("Content-Type", "text/event-stream"),))

        def opening() -> StreamRecorder:
            writer = CaptureWriter.create(self.directory, request=request, response=response, redactor=Redactor(),
                                          recorder="live lab")  # fmt: skip
            rec = StreamRecorder(writer, sent_at=time.monotonic(), attach=0, schedule=self.loop.call_soon)
            self.session.on_capture(Stage.STARTED, rec)
            return rec

        return self.call(opening)

    def feed(self, rec: StreamRecorder, *datas: bytes) -> None:
        """Hand chunks on, each in a loop iteration of its own (as separate socket reads are)."""
        for data in datas:
            self.call(rec.take, data)

    def feed_at_once(self, rec: StreamRecorder, *datas: bytes) -> None:
        """Hand chunks on in one loop iteration (as one socket read brings several): they share one time."""
        self.call(lambda: [rec.take(data) for data in datas])

    def finish(self, rec: StreamRecorder, kind: str = "complete", error: str | None = None) -> None:
        def finishing() -> None:
            rec.finish(kind, error)
            self.session.on_capture(Stage.ENDED, rec)

        self.call(finishing)

    def tick(self) -> None:
        """What the session's ticker does: look for stalls, let the views redraw (send what was gathered)."""
        self.call(self.session.tick)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        try:
            self.run(self.page.close())
            self.call(self.session.close)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    def __enter__(self) -> LiveLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hostile_capture() -> Capture:
    """A stream whose URL, answer and end say things a careless page would run as markup."""
    answer = [
        '<img src=x onerror="window.__pwned=1">',
        "</script><script>window.__pwned=2</script>",
        "<svg onload=window.__pwned=3></svg> <a href=javascript:window.__pwned=4>click</a>",
        "\u202eevil\u202c & &amp; &lt;b&gt;",
    ]
    events = [b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n']
    for piece in answer:
        delta = json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]})
        events.append(f"data: {delta}\n\n".encode())
    events.append(b"data: [DONE]\n\n")
    base = load_capture(CAPTURES / "nginx-unbuffered.jsonl")
    assert base.request is not None
    url = ('http://127.0.0.1:9/v1/chat/completions?q="><img src=x onerror=window.__pwned=5>'
           "<script>window.__pwned=6</script>")
    return Capture(
        chunks=tuple(Chunk(0.01 * (i + 1), e) for i, e in enumerate(events)),
        request=dataclasses.replace(base.request, url=url),
        response=base.response,
    )
