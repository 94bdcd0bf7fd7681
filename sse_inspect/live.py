"""Watching streams while they are recorded: one session, the views it tells.

    session = LiveSession([view])            # views: `LiveView`s (the terminal table, JSON lines, the page)
    SSECapture(on_capture=session.on_capture) # or RecordingProxy(on_capture=...): each recording tells it
    session.start(loop)                       # ticks: stalls are noticed while nothing comes

A thin layer over the library: each recording's `StreamRecorder.tap` feeds a `_live.LiveStream` (the
sans-I/O model) the bytes as they are written to the file, and the session hands each step to the
views. When a stream ends, its file is checked, off the event loop, by the `check_capture` every
command uses, and the views are told the `Report`: the verdict a finished stream leaves is the one
`sse-inspect show` gives its file.

Everything but that check runs on the proxy's event loop, and quickly: a view must not block it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ._capture import End
from ._live import STALL_S, LiveStep, LiveStream, Stall
from ._loading import open_capture
from .checks import Report, Thresholds, check_capture
from .dialects import Holding
from .recorder import OnCapture, Stage, StreamRecorder

__all__ = ["FINISHED_KEPT", "TICK_S", "BaseView", "Entry", "LiveSession", "LiveView", "judge"]

logger = logging.getLogger(__name__)

TICK_S = 0.25
"""How often the session looks for stalls and lets the views redraw."""
FINISHED_KEPT = 200
"""Finished streams the session remembers (their verdicts), the oldest forgotten first."""


@dataclass(eq=False)
class Entry:
    """One recorded stream, as the views see it: its number, its live model, then its verdict."""

    id: int
    """1, 2, ... in the order the streams started."""
    stream: LiveStream
    path: Path
    sent_at: float
    """The monotonic time the request was sent."""
    clock: Callable[[], float] = field(repr=False)
    report: Report | None = None
    """The file's check, once the stream ended and it is done."""
    problem: str | None = None
    """Why the file could not be checked, when it could not."""

    @property
    def url(self) -> str:
        return self.stream.url

    @property
    def open(self) -> bool:
        return self.stream.ended is None

    def now(self) -> float:
        """Seconds since the request was sent."""
        return self.clock() - self.sent_at


class LiveView(Protocol):
    """What a live view is told, on the event loop. A view implements what it shows; `BaseView` none of it."""

    def started(self, entry: Entry) -> None: ...

    def stepped(self, entry: Entry, step: LiveStep) -> None: ...

    def stalled(self, entry: Entry, stall: Stall) -> None: ...

    def ended(self, entry: Entry, step: LiveStep) -> None: ...

    def judged(self, entry: Entry) -> None: ...

    def redraw(self) -> None: ...


class BaseView:
    """A view that shows nothing: subclass it and override what you show."""

    def started(self, entry: Entry) -> None:
        pass

    def stepped(self, entry: Entry, step: LiveStep) -> None:
        pass

    def stalled(self, entry: Entry, stall: Stall) -> None:
        pass

    def ended(self, entry: Entry, step: LiveStep) -> None:
        pass

    def judged(self, entry: Entry) -> None:
        pass

    def redraw(self) -> None:
        pass


def judge(path: str | Path, thresholds: Thresholds | None = None) -> Report:
    """The check of a capture file, as `show` and `check` make it (its answer's text counted, not kept)."""
    with open_capture(path) as stream:
        return check_capture(stream, thresholds=thresholds, keep=False, holding=Holding.COUNT)


_Judged = tuple[Report | None, str | None]
"""A file's check, or why it could not be made."""


class LiveSession:
    """The streams being recorded and the ones that ended, told to `views` as they go."""

    def __init__(
        self,
        views: Sequence[LiveView] = (),
        *,
        stall_s: float = STALL_S,
        thresholds: Thresholds | None = None,
        clock: Callable[[], float] | None = None,
        then: OnCapture | None = None,
    ) -> None:
        self.views = list(views)
        self.stall_s = stall_s
        self.thresholds = thresholds or Thresholds()
        self.clock = clock or time.monotonic
        self.then = then
        """Told of each recording after the session (the `record` command's own lines, say)."""
        self.entries: dict[int, Entry] = {}
        """The streams in flight, by number."""
        self.finished: deque[Entry] = deque(maxlen=FINISHED_KEPT)
        self.judging: dict[int, Future[_Judged]] = {}
        self._ids = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- what the recorder tells

    def on_capture(self, stage: Stage, recorder: StreamRecorder) -> None:
        if stage is Stage.STARTED:
            self._ids += 1
            entry = Entry(self._ids, LiveStream(recorder.head, stall_s=self.stall_s, thresholds=self.thresholds),
                          recorder.path, recorder.sent_at, self.clock)  # fmt: skip
            self.entries[entry.id] = entry
            recorder.tap = _Tap(self, entry)
            self._tell("started", entry)
        if self.then is not None:
            self.then(stage, recorder)

    def _chunks(self, entry: Entry, times: Sequence[float], datas: Sequence[bytes]) -> None:
        step = entry.stream.feed(times, datas)
        self._tell("stepped", entry, step)

    def _end(self, entry: Entry, end: End) -> None:
        step = entry.stream.close(end)
        self.entries.pop(entry.id, None)
        self.finished.append(entry)
        self._tell("ended", entry, step)
        self._judge(entry)

    # -- the checks, off the loop

    def _judge(self, entry: Entry) -> None:
        if self._loop is None:  # no loop (a test, a shutdown): at once
            self._judged(entry, _judging(entry.path, self.thresholds))
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sse-inspect-judge")
        future = self._pool.submit(_judging, entry.path, self.thresholds)
        self.judging[entry.id] = future
        loop = self._loop

        def done(f: Future[_Judged]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: `close` judges what is left
                loop.call_soon_threadsafe(self._judged_later, entry, f)

        future.add_done_callback(done)

    def _judged_later(self, entry: Entry, future: Future[_Judged]) -> None:
        if self.judging.get(entry.id) is future:  # (else `settle` or `close` told it already)
            self._told(entry.id)

    def _judged(self, entry: Entry, result: _Judged) -> None:
        entry.report, entry.problem = result
        self._tell("judged", entry)

    # -- the clock

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start ticking on `loop` (the running one): stalls are noticed, the views redraw."""
        self._loop = loop or asyncio.get_running_loop()
        self._ticker = self._loop.call_later(TICK_S, self._tick)

    def _tick(self) -> None:
        self.tick()
        if self._loop is not None and not self._loop.is_closed():
            self._ticker = self._loop.call_later(TICK_S, self._tick)

    def tick(self) -> None:
        """Look for stalls now, and let the views redraw."""
        for entry in list(self.entries.values()):
            stall = entry.stream.tick(entry.now())
            if stall is not None:
                self._tell("stalled", entry, stall)
        self._tell("redraw")

    async def settle(self) -> None:
        """Wait, on the loop, for the checks still running (the streams a shutdown closed), so the views
        are told their verdicts before the loop ends."""
        while self.judging:
            entry_id, future = next(iter(self.judging.items()))
            await asyncio.wrap_future(future)
            self._told(entry_id)

    def _told(self, entry_id: int) -> None:
        """Tell the views the check of `entry_id` (whose future is done) unless they were told already."""
        future = self.judging.pop(entry_id, None)
        if future is None:
            return
        entry = next((e for e in self.finished if e.id == entry_id), None)
        if entry is not None:
            self._judged(entry, future.result())

    def close(self) -> None:
        """Stop ticking; judge the streams whose check has not come back (the loop is gone), at once."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._loop = None
        for entry_id in list(self.judging):
            self._told(entry_id)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _tell(self, what: str, *args: object) -> None:
        for view in list(self.views):
            try:
                getattr(view, what)(*args)
            except Exception as exc:  # noqa: BLE001 - a view's trouble must not touch the recording
                logger.warning("sse-inspect: the live view %s failed and is closed (recording goes on): %r",
                               type(view).__name__, exc)  # fmt: skip
                self.views.remove(view)


def _judging(path: Path, thresholds: Thresholds) -> _Judged:
    try:
        return judge(path, thresholds), None
    except Exception as exc:  # noqa: BLE001 - a file that cannot be checked is said so, in one line
        return None, f"{type(exc).__name__}: {exc}"


class _Tap:
    """A recording's tap (`recorder.Tap`) into the session. Should the live model fail on a stream (a bug:
    nothing in a stream's bytes may make it raise), that stream leaves the views with one warning, instead
    of showing as open for ever; its recording goes on, whole."""

    def __init__(self, session: LiveSession, entry: Entry) -> None:
        self.session, self.entry = session, entry
        self.lost = False

    def chunks(self, times: Sequence[float], datas: Sequence[bytes]) -> None:
        if not self.lost:
            self._guarded(self.session._chunks, self.entry, times, datas)

    def end(self, end: End) -> None:
        if not self.lost:
            self._guarded(self.session._end, self.entry, end)

    def _guarded(self, call: Callable[..., None], *args: object) -> None:
        try:
            call(*args)
        except Exception as exc:  # noqa: BLE001
            self.lost = True
            self.session.entries.pop(self.entry.id, None)
            self.entry.problem = f"not watched live: {exc!r}"
            logger.warning("sse-inspect: stopped watching stream #%d live (its recording goes on, in %s): %r",
                           self.entry.id, self.entry.path, exc)  # fmt: skip
