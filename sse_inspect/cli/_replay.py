"""`sse-inspect replay` (in the terminal, as the user saw it) and `sse-inspect serve` (over HTTP)."""

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

from .._analysis import Analysis, analyze
from .._capture import Chunk, End
from .._events import Event
from .._loading import load_capture
from .._parser import EventStreamParser
from .._rechunk import RechunkSpec
from ..dialects import get_dialect
from . import _render
from ._params import capture_argument, captures_argument, dialect_option, input_errors, rechunk_option

__all__ = ["replay", "serve"]

REFRESH_S = 0.05
"""How often the live view redraws at most: rebuilding the answer costs time on long streams."""

speed_option = click.option("--speed", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
                            help="1 = original timing, 10 = ten times faster, 0.5 = half speed.")  # fmt: skip
instant_option = click.option("--instant", is_flag=True, help="No waiting: as fast as possible.")


class Pace:
    """The replay's clock: recorded time `t` comes at `t / speed` seconds after the start (None: at once)."""

    def __init__(self, speed: float | None) -> None:
        self.speed = speed
        self.start = time.monotonic()

    def wait(self, t: float | None, most: float | None = None) -> None:
        """Sleep until recorded time `t` (at most `most` seconds of it)."""
        if not self.speed or t is None:
            return
        delay = self.start + t / self.speed - time.monotonic()
        if most is not None:
            delay = min(delay, most)
        if delay > 0:
            time.sleep(delay)

    def now(self, t: float) -> float:
        """The recorded time the replay is at (`t` when it does not wait)."""
        return (time.monotonic() - self.start) * self.speed if self.speed else t

    def timed(self, chunks: tuple[Chunk, ...]) -> Iterator[tuple[float, Chunk]]:
        """Yield (t, chunk) at each chunk's time."""
        for chunk in chunks:
            t = chunk.t or 0.0
            self.wait(t)
            yield t, chunk


def timed(chunks: tuple[Chunk, ...], speed: float | None) -> Iterator[tuple[float, Chunk]]:
    """Yield (t, chunk) at each chunk's time divided by `speed` (None: at once)."""
    return Pace(speed).timed(chunks)


def ending(end: End | None) -> str | None:
    """How a recording that did not end cleanly ended, for the replay's last line; None for `complete`."""
    if end is not None and end.kind == "complete":
        return None
    if end is None:
        return "the recording stops here: it was cut off (no end line), so how the stream ended is unknown"
    at = f" at {end.t:.3f} s" if end.t is not None else ""
    why = f" ({end.error})" if end.error else ""
    if end.kind == "server-disconnected":
        return f"the stream was cut{at}: the server, or a hop on the way, closed the connection before its end{why}"
    if end.kind == "client-disconnected":
        return f"the client left{at}, before the stream ended{why}"
    return f"the stream failed{at}{why}"


@click.command()
@capture_argument
@speed_option
@instant_option
@rechunk_option
@dialect_option
@click.option("--raw", is_flag=True, help="Show the raw bytes as they arrive, escapes visible.")
@click.option("--events", "show_events", is_flag=True, help="Show each event as it completes.")
@input_errors
def replay(capture: str, speed: float, instant: bool, rechunk: RechunkSpec | None, dialect: str | None, raw: bool,
           show_events: bool) -> None:  # fmt: skip
    """Play a stream back in the terminal as its user saw it: the answer growing, with a status line.

    When stdout is not a terminal, plain text is written as it arrives (no control codes).
    A stream that did not end cleanly plays to the moment it ended (the silence before a cut
    included), then a line on stderr says how it ended. replay plays, `check` judges: it exits 0
    however the recording ended.
    """
    analysis = analyze(load_capture(capture), rechunk=rechunk, dialect=dialect)
    pace = Pace(None if instant or not analysis.capture.timed else speed)
    console = _render.console()
    if raw or show_events:
        _replay_lines(analysis, pace, console, raw=raw)
    elif console.is_terminal:
        _replay_live(analysis, pace, console)
    else:
        _replay_plain(analysis, pace)
    note = ending(analysis.capture.end)
    if note is not None:
        _render.console(stderr=True).print(_render.safe(note, newlines=False, style="bold red"))


def _end_t(analysis: Analysis) -> float | None:
    end = analysis.capture.end
    return end.t if end is not None else None


def _replay_lines(analysis: Analysis, pace: Pace, console: Console, *, raw: bool) -> None:
    parser = EventStreamParser()
    for t, chunk in pace.timed(analysis.chunks):
        if raw:
            line = Text(f"{t:9.3f} s  {len(chunk.data):6d} B  ", style="dim")
            line.append_text(_render.safe(chunk.data.decode("utf-8", "replace"), newlines=False))
            console.print(line, soft_wrap=True)
            continue
        for item in parser.feed(chunk.data, t):
            if isinstance(item, Event):
                line = Text(f"{t:9.3f} s  #{item.index:<4} ", style="dim")
                line.append(f"{item.type} ", style="cyan")
                line.append_text(_render.safe(item.data, newlines=False))
                console.print(line, soft_wrap=True)
    pace.wait(_end_t(analysis))


def _progress(analysis: Analysis, pace: Pace) -> Iterator[tuple[float, list[Event], int]]:
    """(t, events so far, bytes so far) after each chunk."""
    parser = EventStreamParser()
    events: list[Event] = []
    size = 0
    for t, chunk in pace.timed(analysis.chunks):
        size += len(chunk.data)
        events += [x for x in parser.feed(chunk.data, t) if isinstance(x, Event)]
        yield t, events, size


def _replay_plain(analysis: Analysis, pace: Pace) -> None:
    rebuild = get_dialect(analysis.dialect).rebuild
    shown = ""
    for _, events, _ in _progress(analysis, pace):
        text = rebuild(events).text
        if text.startswith(shown):
            sys.stdout.write(text[len(shown) :])
        else:
            sys.stdout.write("\n" + text)
        sys.stdout.flush()
        shown = text
    pace.wait(_end_t(analysis))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _replay_live(analysis: Analysis, pace: Pace, console: Console) -> None:
    rebuild = get_dialect(analysis.dialect).rebuild
    last_t = last_draw = 0.0
    total = len(analysis.events)

    def view(t: float, events: list[Event], size: int, gap: float, end: str = "") -> Group:
        answer = rebuild(events)
        body = answer.text or answer.reasoning or "\n".join(f"{c.name}({c.arguments})" for c in answer.tool_calls)
        tail = "\n".join(body.splitlines()[-(max(console.height - 6, 3)) :])
        status = (f"t={t:.3f} s · {len(events)}/{total} events · {size} B · gap {gap * 1000:.0f} ms · "
                  f"{analysis.dialect}{end}")  # fmt: skip
        return Group(Panel(_render.safe(tail), title="answer", title_align="left"), Text(status, style="dim"))

    with Live(console=console, auto_refresh=False, transient=False) as live:
        state: tuple[float, list[Event], int] = (0.0, [], 0)
        for t, events, size in _progress(analysis, pace):
            state = (t, events, size)
            now = time.monotonic()
            if now - last_draw >= REFRESH_S:
                live.update(view(t, events, size, t - last_t), refresh=True)
                last_draw = now
            last_t = t
        end_t = _end_t(analysis)
        if pace.speed and end_t is not None:  # the silence up to the end: the gap grows as it did
            while (at := pace.now(end_t)) < end_t:
                live.update(view(at, state[1], state[2], at - last_t), refresh=True)
                pace.wait(end_t, most=REFRESH_S)
        end = analysis.capture.end
        final = end_t if end_t is not None and pace.speed else state[0]
        live.update(view(final, state[1], state[2], final - last_t if end_t is not None else 0.0,
                         f" · {end.kind}" if end is not None else " · no end line"), refresh=True)  # fmt: skip


@click.command()
@captures_argument
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port to listen on (0: any free port).")
@speed_option
@instant_option
@rechunk_option
@click.option("--cors/--no-cors", default=True, show_default=True,
              help="Let browser pages on any origin read the replays (answer CORS preflights, send "
                   "Access-Control-Allow-Origin: *); --no-cors sends the recorded headers only.")  # fmt: skip
@input_errors
def serve(captures: tuple[str, ...], host: str, port: int, speed: float, instant: bool,
          rechunk: RechunkSpec | None, cors: bool) -> None:  # fmt: skip
    """Serve captures over HTTP/1.1: any request, any method, gets the recorded stream.

    A request goes to the capture whose URL path equals its path; any other path gets the
    captures in turn. Each replay keeps the recorded status, headers and timing (or --speed,
    --instant, --rechunk), and ends as the recording ended: cut streams end with a reset.
    """
    from ..proxy import check_listen_address
    from ..server import ReplayServer

    loaded = [load_capture(c) for c in captures]
    check_listen_address(host, port)
    err = _render.console(stderr=True)
    if not _loopback(host):
        err.print(f"[bold yellow]warning:[/] listening on {host}, reachable from other machines: captures may hold "
                  "prompts and answers")  # fmt: skip
    server = ReplayServer(loaded, host=host, port=port, speed=None if instant else speed, rechunk_spec=rechunk,
                          cors=cors)  # fmt: skip

    async def run() -> None:
        await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        err.print(f"serving {len(loaded)} capture(s) at [bold]{server.url}[/] · Ctrl-C to stop")
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
