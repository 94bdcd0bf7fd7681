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
from .._capture import Chunk, load_capture
from .._events import Event
from .._parser import EventStreamParser
from .._rechunk import RechunkSpec
from ..dialects import get_dialect
from . import _render
from ._params import dialect_option, input_errors, rechunk_option

__all__ = ["replay", "serve"]

REFRESH_S = 0.05
"""How often the live view redraws at most: rebuilding the answer costs time on long streams."""

speed_option = click.option("--speed", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
                            help="1 = original timing, 10 = ten times faster, 0.5 = half speed.")  # fmt: skip
instant_option = click.option("--instant", is_flag=True, help="No waiting: as fast as possible.")


def timed(chunks: tuple[Chunk, ...], speed: float | None) -> Iterator[tuple[float, Chunk]]:
    """Yield (t, chunk) at each chunk's time divided by `speed` (None: at once)."""
    start = time.monotonic()
    for chunk in chunks:
        t = chunk.t or 0.0
        if speed:
            delay = start + t / speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        yield t, chunk


@click.command()
@click.argument("capture", metavar="CAPTURE")
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
    """
    analysis = analyze(load_capture(capture), rechunk=rechunk, dialect=dialect)
    pace = None if instant or not analysis.capture.timed else speed
    console = _render.console()
    if raw or show_events:
        _replay_lines(analysis, pace, console, raw=raw)
    elif console.is_terminal:
        _replay_live(analysis, pace, console)
    else:
        _replay_plain(analysis, pace)


def _replay_lines(analysis: Analysis, pace: float | None, console: Console, *, raw: bool) -> None:
    parser = EventStreamParser()
    for t, chunk in timed(analysis.chunks, pace):
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


def _progress(analysis: Analysis, pace: float | None) -> Iterator[tuple[float, list[Event], int]]:
    """(t, events so far, bytes so far) after each chunk."""
    parser = EventStreamParser()
    events: list[Event] = []
    size = 0
    for t, chunk in timed(analysis.chunks, pace):
        size += len(chunk.data)
        events += [x for x in parser.feed(chunk.data, t) if isinstance(x, Event)]
        yield t, events, size


def _replay_plain(analysis: Analysis, pace: float | None) -> None:
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
    sys.stdout.write("\n")


def _replay_live(analysis: Analysis, pace: float | None, console: Console) -> None:
    rebuild = get_dialect(analysis.dialect).rebuild
    last_t = last_draw = 0.0
    total = len(analysis.events)

    def view(t: float, events: list[Event], size: int, gap: float) -> Group:
        answer = rebuild(events)
        body = answer.text or answer.reasoning or "\n".join(f"{c.name}({c.arguments})" for c in answer.tool_calls)
        tail = "\n".join(body.splitlines()[-(max(console.height - 6, 3)) :])
        status = (f"t={t:.3f} s · {len(events)}/{total} events · {size} B · gap {gap * 1000:.0f} ms · "
                  f"{analysis.dialect}")  # fmt: skip
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
        live.update(view(state[0], state[1], state[2], 0.0), refresh=True)


@click.command()
@click.argument("captures", nargs=-1, required=True, metavar="CAPTURE...")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port to listen on (0: any free port).")
@speed_option
@instant_option
@rechunk_option
@input_errors
def serve(captures: tuple[str, ...], host: str, port: int, speed: float, instant: bool,
          rechunk: RechunkSpec | None) -> None:  # fmt: skip
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
    server = ReplayServer(loaded, host=host, port=port, speed=None if instant else speed, rechunk_spec=rechunk)

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
