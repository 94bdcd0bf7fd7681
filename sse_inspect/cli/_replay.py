"""`sse-inspect replay` (in the terminal, as the user saw it) and `sse-inspect serve` (over HTTP): views
of the core's `Playback` steps, kept to time by its `Pacing` rule (the sleeping is done here)."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import sys
import time
from collections.abc import Iterator

import click
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from .._analysis import analyze
from .._events import Event
from .._format import visible
from .._loading import load_capture
from .._outcome import Audience, Outcome, State, say
from .._playback import Pacing, Playback, PlaybackStep
from .._rechunk import RechunkSpec
from ..server import Limits, ReplayServer
from . import _render
from .._fault_plan import ReplayPlan
from .._faults import Fault, FaultSet
from ._params import capture_argument, captures_argument, dialect_option, fault_option, input_errors, rechunk_option

__all__ = ["replay", "serve"]

REFRESH_S = 0.05
"""How often the live view redraws at most: building the answer to draw costs time on long streams."""

speed_option = click.option("--speed", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
                            help="1 = original timing, 10 = ten times faster, 0.5 = half speed.")  # fmt: skip
instant_option = click.option("--instant", is_flag=True, help="No waiting: as fast as possible.")


class Pace:
    """The replay's clock: the core's `Pacing` (recorded time `t` at `t / speed` s after the start;
    None: at once) kept by sleeping."""

    def __init__(self, speed: float | None) -> None:
        self.pacing = Pacing(speed)
        self.start = time.monotonic()

    @property
    def speed(self) -> float | None:
        return self.pacing.speed

    def wait(self, t: float | None, most: float | None = None) -> None:
        """Sleep until recorded time `t` (at most `most` seconds of it)."""
        delay = self.pacing.delay(t, time.monotonic() - self.start)
        if most is not None:
            delay = min(delay, most)
        if delay > 0:
            time.sleep(delay)

    def now(self, t: float) -> float:
        """The recorded time the replay is at (`t` when it does not wait)."""
        return self.pacing.position(time.monotonic() - self.start, t)

    def steps(self, playback: Playback) -> Iterator[PlaybackStep]:
        """Each step at its time: the last one (the end) when the stream ended, the silence before a cut included."""
        for step in playback:
            self.wait(step.t)
            yield step


def ending(outcome: Outcome, status: int | None = None) -> str | None:
    """How a stream that did not end as it should ended, for the replay's last line: the connection's end,
    an error status, an in-band error or no end marker; None when it ended cleanly."""
    cause = outcome.end_cause
    if cause is not None:
        return say(cause, Audience.REPLAY, outcome.end)
    if not outcome.http_ok:
        return f"the server answered {status} instead of the stream" if status else "the server answered an error status"
    if outcome.state is State.ERRORED:
        return "the stream ended with the provider's in-band error"
    if outcome.state is State.NO_END_MARKER:
        return "the stream ended cleanly without its end marker: a client cannot tell it from a whole answer"
    return None


@click.command()
@capture_argument
@speed_option
@instant_option
@rechunk_option
@fault_option
@dialect_option
@click.option("--raw", is_flag=True, help="Show the raw bytes as they arrive, escapes visible.")
@click.option("--events", "show_events", is_flag=True, help="Show each event as it completes.")
@input_errors
def replay(capture: str, speed: float, instant: bool, rechunk: RechunkSpec | None, faults: tuple[Fault, ...],
           dialect: str | None, raw: bool, show_events: bool) -> None:  # fmt: skip
    """Play a stream back in the terminal as its user saw it: the answer growing, with a status line.

    When stdout is not a terminal, plain text is written as it arrives (no control codes: those
    in the answer are written as escapes; `text` writes the answer exactly).
    A stream that did not end cleanly plays to the moment it ended (the silence before a cut
    included), then a line on stderr says how it ended. --fault plays it as a client would meet
    it under that fault (the same specs as `serve`; docs/faults.md). replay plays, `check` judges: it exits 0
    however the recording ended.
    """
    loaded = load_capture(capture)
    if faults:  # the stream as a client meets it under the faults (re-cut first, as `serve` does)
        fault_set = FaultSet.parse(faults)
        loaded = ReplayPlan(loaded, rechunk=rechunk, faults=fault_set, dialect=dialect).as_recorded()
        rechunk = None
        _render.console(stderr=True).print(_render.safe(f"with faults: {fault_set}", newlines=False), style="dim")
    playback = Playback(loaded, rechunk=rechunk, dialect=dialect)
    console = _render.console()
    live = not (raw or show_events) and console.is_terminal
    # the live view's status line counts the events out of all of them: a parse-only pass counts them
    total = analyze(loaded, rechunk=rechunk, keep=False, rebuild=False).timing.events if live else 0
    pace = Pace(None if instant or not loaded.timed else speed)
    if raw or show_events:
        last = _replay_lines(playback, pace, console, raw=raw)
    elif live:
        last = _replay_live(playback, total, pace, console)
    else:
        last = _replay_plain(playback, pace)
    assert last.outcome is not None  # the last step is the end
    note = ending(last.outcome, loaded.response.status if loaded.response else None)
    if note is not None:
        _render.console(stderr=True).print(_render.safe(note, newlines=False, style="bold red"))


def _replay_lines(playback: Playback, pace: Pace, console: Console, *, raw: bool) -> PlaybackStep:
    """Each chunk's bytes (`raw`) or each event, a line each as it arrives; the last step."""
    for step in pace.steps(playback):
        t = step.t or 0.0
        if raw:
            if step.chunk is not None:
                line = Text(f"{t:9.3f} s  {len(step.chunk.data):6d} B  ", style="dim")
                line.append_text(_render.safe(step.chunk.data.decode("utf-8", "backslashreplace"), newlines=False))
                console.print(line, soft_wrap=True)
            continue
        for item in step.items:
            if isinstance(item, Event):
                line = Text(f"{t:9.3f} s  #{item.index:<4} ", style="dim")
                line.append_text(_render.safe(f"{item.type} ", newlines=False, style="cyan"))
                line.append_text(_render.safe(item.data, newlines=False))
                console.print(line, soft_wrap=True)
    return step


def _replay_plain(playback: Playback, pace: Pace) -> PlaybackStep:
    """The answer's text as it grows; the last step."""
    for step in pace.steps(playback):
        text = visible(step.text)
        sys.stdout.write("\n" + text if step.restarted else text)
        sys.stdout.flush()
    sys.stdout.write("\n")
    sys.stdout.flush()
    return step


def _replay_live(playback: Playback, total: int, pace: Pace, console: Console) -> PlaybackStep:
    """The answer so far in a panel over a status line, redrawn as it grows; the last step."""
    def view(t: float, step: PlaybackStep, gap: float, end: str = "") -> Group:
        answer = playback.answer()
        body = answer.text or answer.reasoning or "\n".join(f"{c.name}({c.arguments})" for c in answer.tool_calls)
        tail = "\n".join(body.splitlines()[-(max(console.height - 6, 3)) :])
        status = (f"t={t:.3f} s · {step.events}/{total} events · {step.bytes} B · gap {gap * 1000:.0f} ms · "
                  f"{playback.dialect.name}{end}")  # fmt: skip
        return Group(Panel(_render.safe(tail), title="answer", title_align="left"), Text(status, style="dim"))

    with Live(console=console, auto_refresh=False, transient=False) as live:
        t = last_t = last_draw = 0.0
        for step in playback:
            if step.chunk is None:  # the end: its silence is drawn below
                break
            pace.wait(step.t)
            t = step.t or 0.0
            now = time.monotonic()
            if now - last_draw >= REFRESH_S:
                live.update(view(t, step, t - last_t), refresh=True)
                last_draw = now
            last_t = t
        assert step.outcome is not None  # the last step says how the stream ended
        end = step.outcome.end
        end_t = end.t if end is not None else None
        if pace.speed and end_t is not None:  # the silence up to the end: the gap grows as it did
            while (at := pace.now(end_t)) < end_t:
                live.update(view(at, step, at - last_t), refresh=True)
                pace.wait(end_t, most=REFRESH_S)
        final = end_t if end_t is not None and pace.speed else t
        live.update(view(final, step, final - last_t if end_t is not None else 0.0,
                         f" · {end.kind}" if end is not None else " · no end line"), refresh=True)  # fmt: skip
    return step


@click.command()
@captures_argument
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port to listen on (0: any free port).")
@speed_option
@instant_option
@rechunk_option
@fault_option
@dialect_option
@click.option("--cors/--no-cors", default=True, show_default=True,
              help="Let browser pages on any origin read the replays (answer CORS preflights, send "
                   "Access-Control-Allow-Origin: *); --no-cors sends the recorded headers only.")  # fmt: skip
@click.option("--request-timeout", type=click.FloatRange(min=0, min_open=True), default=Limits.request_timeout,
              show_default=True, metavar="S", help="Seconds a client has to send a whole request, head and body.")  # fmt: skip
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=Limits.idle_timeout,
              show_default=True, metavar="S",
              help="Seconds a client may read nothing of its answer before it is dropped.")  # fmt: skip
@click.option("--max-connections", type=click.IntRange(min=1), default=Limits.max_connections, show_default=True,
              metavar="N", help="Connections served at once; more are answered 503 and closed.")  # fmt: skip
@input_errors
def serve(captures: tuple[str, ...], host: str, port: int, speed: float, instant: bool,
          rechunk: RechunkSpec | None, faults: tuple[Fault, ...], dialect: str | None, cors: bool,
          request_timeout: float, idle_timeout: float, max_connections: int) -> None:  # fmt: skip
    """Serve captures over HTTP/1.1: any request, any method, gets the recorded stream.

    A request goes to the capture whose URL path equals its path; any other path gets the
    captures in turn. Each replay keeps the recorded status, headers and timing (or --speed,
    --instant, --rechunk), and ends as the recording ended: cut streams end with a reset.
    --fault adds what real networks and providers do (repeat it; they compose with --rechunk):
    cut:event=50%, stall:after-event=3,for=30s, no-end-marker, error:after-event=4,
    keepalive:every=15s, slow:bytes-per-s=200, status:429,retry-after=2 (docs/faults.md);
    --dialect says whose end marker and in-band error (default: detected).
    A malformed request gets a 400, a client that reads nothing is dropped, and each problem is
    one line on stderr.
    """
    from ..proxy import check_listen_address

    fault_set = FaultSet.parse(faults)
    loaded = [load_capture(c) for c in captures]
    check_listen_address(host, port)
    err = _render.console(stderr=True)
    if not _loopback(host):
        err.print(f"[bold yellow]warning:[/] listening on {host}, reachable from other machines: captures may hold "
                  "prompts and answers")  # fmt: skip
    limits = Limits(request_timeout=request_timeout, idle_timeout=idle_timeout, max_connections=max_connections)

    def log(line: str) -> None:  # a line may quote a request or a capture: printed as text, escaped
        err.print(_render.safe(line, newlines=False))

    server = ReplayServer(loaded, host=host, port=port, speed=None if instant else speed, rechunk_spec=rechunk,
                          faults=fault_set, dialect=dialect, cors=cors, limits=limits, log=log)  # fmt: skip

    async def run() -> None:
        await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        err.print(f"serving {len(loaded)} capture(s) at [bold]{server.url}[/] · Ctrl-C to stop")
        if fault_set:
            err.print(_render.safe(f"  with faults: {fault_set}", newlines=False))
        for route in server.routes:
            err.print(_render.safe(f"  {server.url}{route.path}  ←  {route.capture.path}", newlines=False))
        await stop.wait()
        await server.stop()
        err.print(f"stopped after {server.served} replay(s)")

    asyncio.run(run())


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
