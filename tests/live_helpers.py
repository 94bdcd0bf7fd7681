"""Driving a live session as a proxy would, on a test clock: real `StreamRecorder`s writing real capture files."""

from __future__ import annotations

from pathlib import Path

from sse_inspect import Capture, End, Request, Response
from sse_inspect._redact import Redactor
from sse_inspect.live import LiveSession
from sse_inspect.recorder import CaptureWriter, Stage, StreamRecorder

SSE = (("Content-Type", "text/event-stream"),)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recording:
    """One stream recorded into `folder` as a proxy records it, on `clock`, told to `session`."""

    def __init__(self, session: LiveSession, clock: Clock, folder: Path, request: Request, response: Response) -> None:
        self.clock = clock
        writer = CaptureWriter.create(folder, request=request, response=response, redactor=Redactor(), recorder="test")
        self.recorder = StreamRecorder(writer, clock(), attach=0, schedule=lambda f: None, clock=clock)
        self.session = session
        session.on_capture(Stage.STARTED, self.recorder)

    def chunk(self, t: float, data: bytes) -> None:
        """`data` arrives `t` seconds after the request."""
        self.clock.now = self.recorder.sent_at + t
        self.recorder.take(data)
        self.recorder.flush()

    def wait(self, t: float) -> None:
        self.clock.now = self.recorder.sent_at + t
        self.session.tick()

    def end(self, t: float, kind: str = "complete", error: str | None = None) -> Path:
        self.clock.now = self.recorder.sent_at + t
        self.recorder.finish(kind, error)
        self.session.on_capture(Stage.ENDED, self.recorder)
        return self.recorder.path


def replay(capture: Capture, session: LiveSession, clock: Clock, folder: Path) -> Path:
    assert capture.request is not None and capture.response is not None
    rec = Recording(session, clock, folder, capture.request, capture.response)
    for c in capture.chunks:
        rec.chunk(c.t or 0.0, c.data)
    end = capture.end or End(kind="complete", t=None)
    return rec.end(end.t if end.t is not None else (capture.chunks[-1].t or 0.0), end.kind, end.error)


def chat(*pieces: str) -> list[bytes]:
    """OpenAI Chat Completions events, one per piece (no [DONE])."""
    return [b'data: {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "%s"}}]}\n\n'
            % p.encode() for p in pieces]  # fmt: skip


def chat_recording(session: LiveSession, clock: Clock, folder: Path, url: str = "https://api.example/v1/chat/completions",
                   ) -> Recording:  # fmt: skip
    return Recording(session, clock, folder, Request(method="POST", url=url), Response(status=200, headers=SSE, t=0.01))
