"""`record`'s live views in the terminal: the table of streams in flight, plain lines, JSON lines.

Each is a `live.LiveView` the session tells on the proxy's event loop; each draws what the session's
`_live.LiveStream`s hold, and a finished stream's line carries the verdict of its file's check (the
one `show` prints). Captured text goes through `_render.safe`: a hostile stream cannot drive the terminal.

    TableView   a terminal: a table of the streams, the one in focus with its answer growing and its
                arrival strip; ↑/↓ (or j/k, Tab) move the focus, f follows the newest again
    LinesView   not a terminal (a log, a pipe): one line per start, stall, burst and finished stream
    JsonView    --json: one JSON object per line per event, stall, burst, start and finished stream
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .._format import seconds
from .._format import size as _size
from .._live import Burst, LiveStep, LiveStream, Stall
from ..dialects import EventFlags
from ..live import BaseView, Entry
from . import _render
from ._check import report_json
from ._json import dumps, event_json

__all__ = ["JsonView", "LinesView", "TableView", "end_line", "state_words"]

def _elapsed(entry: Entry) -> float:
    stream = entry.stream
    if stream.ended is not None and stream.ended.t is not None:
        return stream.ended.t
    return entry.now() if stream.ended is None else stream.last_t


def _rate(stream: LiveStream) -> str:
    rate = stream.tokens_per_s
    return "-" if rate is None else f"{rate:.0f}/s" if rate >= 10 else f"{rate:.1f}/s"


def state_words(entry: Entry) -> tuple[str, str]:
    """What a stream is doing, in a word or two, and its style: open, stalled, a burst, or its verdict."""
    stream = entry.stream
    if stream.ended is None:
        if stream.stalled is not None:
            return ("waiting" if stream.stalled.first_byte else "stalled"), "bold red"  # (the silent column says how long)
        if stream.bursts and entry.now() - stream.bursts[-1].t < 2.0:
            return f"burst ×{stream.bursts[-1].events}", "bold yellow"
        return ("streaming" if stream.ttfb is not None else "waiting"), "cyan"
    if entry.report is not None:
        word = entry.report.verdict.split(":", 1)[0]
        return word, "green" if word == "OK" else "bold red" if word in ("CUT", "ERRORED", "HTTP ERROR", "BROKEN") else "yellow"
    if entry.problem is not None:
        return "unchecked", "red"
    assert stream.outcome is not None
    return "checking", "dim"


def end_line(entry: Entry) -> Text:
    """A finished stream's one line: how the recording ended, its size and time, the verdict, the file."""
    stream = entry.stream
    end = stream.ended
    how = end.kind if end is not None else "?"
    if end is not None and end.kind == "error" and end.error == "proxy shut down while the stream was open":
        how = "recording stopped mid-stream (end: error)"
    verdict = entry.report.verdict if entry.report is not None else f"not checked: {entry.problem}"
    chunks = f"{stream.chunks} chunk{'' if stream.chunks == 1 else 's'}"
    line = (f"  #{entry.id} {how}: {chunks}, {stream.bytes} bytes in {_elapsed(entry):.2f} s · "
            f"{verdict} · {entry.path}")  # fmt: skip
    word, _ = state_words(entry)
    return _render.safe(line, newlines=False, style="green" if word == "OK" else "red" if word != "checking" else "")


def start_line(entry: Entry) -> Text:
    return _render.safe(f"● #{entry.id} {entry.stream.method} {entry.url} → {entry.path}", newlines=False, style="cyan")


def stall_line(entry: Entry, stall: Stall) -> Text:
    what = "no byte of the body yet" if stall.first_byte else f"silent since {seconds(stall.since)}"
    return _render.safe(f"  #{entry.id} stalled: {what} ({stall.silence_s:.1f} s so far)", newlines=False, style="red")


def burst_line(entry: Entry, burst: Burst) -> Text:
    return _render.safe(f"  #{entry.id} burst: {burst.events} text events at once at {seconds(burst.t)}, after "
                        f"{seconds(burst.silence_s)} of silence", newlines=False, style="yellow")  # fmt: skip


class LinesView(BaseView):
    """Off a terminal: a line as each stream starts, stalls, resumes, bursts and ends (with its verdict)."""

    def __init__(self, say: Callable[[Text], object]) -> None:
        self.say = say
        """Prints a line: a console's `print`, or a log's (the mitmproxy addon's `sse_live`)."""
        self._bursts: dict[int, float] = {}  # the burst each stream was last said to have, by its start

    def started(self, entry: Entry) -> None:
        self.say(start_line(entry))

    def stepped(self, entry: Entry, step: LiveStep) -> None:
        if step.resumed is not None:
            self.say(_render.safe(f"  #{entry.id} resumed after {step.resumed.silence_s:.1f} s",
                                            newlines=False, style="yellow"))  # fmt: skip
        if step.burst is not None and self._bursts.get(entry.id) != step.burst.t:
            self._bursts[entry.id] = step.burst.t
            self.say(burst_line(entry, step.burst))

    def stalled(self, entry: Entry, stall: Stall) -> None:
        self.say(stall_line(entry, stall))

    def judged(self, entry: Entry) -> None:
        self._bursts.pop(entry.id, None)
        self.say(end_line(entry))


class JsonView(BaseView):
    """--json: one object a line, `kind` one of start, event, stall, resume, burst, end (docs in the README)."""

    def __init__(self, out: TextIO, on_closed: Callable[[], object] | None = None) -> None:
        self.out: TextIO | None = out
        self.on_closed = on_closed
        """Called once when the reader of `out` has gone (`record --json | head`): `record` stops then."""
        self._bursts: dict[int, float] = {}

    def _write(self, *records: dict[str, Any]) -> None:
        """The records, a line each, in one write and one flush (a read of many events is one of each)."""
        if self.out is None or not records:
            return
        try:
            self.out.write("".join(dumps(record) + "\n" for record in records))
            self.out.flush()
        except BrokenPipeError:
            self.out = None
            if self.on_closed is not None:
                self.on_closed()

    def started(self, entry: Entry) -> None:
        stream = entry.stream
        self._write({"kind": "start", "stream": entry.id, "method": stream.method, "url": stream.url,
                     "status": stream.status, "path": str(entry.path)})  # fmt: skip

    def stepped(self, entry: Entry, step: LiveStep) -> None:
        records: list[dict[str, Any]] = []
        if step.resumed is not None:
            records.append({"kind": "resume", "stream": entry.id, "t": step.t, "silence_s": step.resumed.silence_s})
        dialect = entry.stream.dialect.name
        for event, flags in step.events:
            records.append({"kind": "event", "stream": entry.id, "dialect": dialect,
                            "flags": [f.name.lower() for f in EventFlags if flags & f and f.name],
                            "event": event_json(event)})  # fmt: skip
        if step.burst is not None and self._bursts.get(entry.id) != step.burst.t:
            self._bursts[entry.id] = step.burst.t
            b = step.burst
            records.append({"kind": "burst", "stream": entry.id, "t": b.t, "events": b.events, "silence_s": b.silence_s})
        self._write(*records)

    def stalled(self, entry: Entry, stall: Stall) -> None:
        self._write({"kind": "stall", "stream": entry.id, "since": stall.since, "silence_s": stall.silence_s,
                     "first_byte": stall.first_byte})  # fmt: skip

    def judged(self, entry: Entry) -> None:
        self._bursts.pop(entry.id, None)
        stream = entry.stream
        end = stream.ended
        self._write({
            "kind": "end", "stream": entry.id, "path": str(entry.path),
            "end": {"kind": end.kind, "t": end.t, "error": end.error} if end is not None else None,
            "outcome": stream.outcome.words if stream.outcome is not None else None,
            "live": {"dialect": stream.dialect.name, "chunks": stream.chunks, "bytes": stream.bytes,
                     "events": stream.events, "text_events": stream.text_events, "ttfb": stream.ttfb,
                     "first_token": stream.first_token, "text_chars": stream.text_chars, "stalls": stream.stalls,
                     "bursts": [{"t": b.t, "events": b.events, "silence_s": b.silence_s} for b in stream.bursts]},
            "check": report_json(entry.report, str(entry.path)) if entry.report is not None else None,
            "problem": entry.problem,
        })  # fmt: skip


class TableView(BaseView):
    """On a terminal: the streams in a table redrawn four times a second, the focus below it; a
    finished stream's line is printed above the table, where it stays."""

    ROWS = 8
    """Rows of the table: the open streams first, then the newest finished."""
    ANSWER_LINES = 6

    def __init__(self, console: Console, session: Any) -> None:
        self.console = console
        self.session = session
        self.focus: int | None = None
        """The stream in focus; None: the newest open one (follow)."""
        self.strips: dict[int, _render.Arrivals] = {}
        self.live = Live(console=console, auto_refresh=False, transient=True, redirect_stdout=False,
                         redirect_stderr=False)  # fmt: skip
        self._keys: _Keys | None = None

    # -- the session's calls

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.live.start()
        self._keys = _Keys.open(loop, self.key)

    def close(self) -> None:
        if self._keys is not None:
            self._keys.close()
            self._keys = None
        self.live.update(Text(""), refresh=True)
        self.live.stop()

    def started(self, entry: Entry) -> None:
        self.strips[entry.id] = _render.Arrivals()

    def stepped(self, entry: Entry, step: LiveStep) -> None:
        strip = self.strips.get(entry.id)
        if strip is not None and step.size:
            strip.add(step.t, step.size)

    def judged(self, entry: Entry) -> None:
        self.live.console.print(end_line(entry))
        self.redraw()

    def redraw(self) -> None:
        rows = self.rows()
        shown = {e.id for e in rows}
        for gone in [k for k in self.strips if k not in shown]:
            del self.strips[gone]
        self.live.update(self.render(rows), refresh=True)

    # -- the keys

    def key(self, key: str) -> None:
        rows = [e.id for e in self.rows()]
        if not rows:
            return
        current = self._focused(self.rows())
        at = rows.index(current.id) if current is not None and current.id in rows else 0
        if key in ("up", "k", "shift-tab"):
            self.focus = rows[max(0, at - 1)]
        elif key in ("down", "j", "tab"):
            self.focus = rows[min(len(rows) - 1, at + 1)]
        elif key == "f":
            self.focus = None
        self.redraw()

    # -- drawing

    def rows(self) -> list[Entry]:
        open_ = sorted(self.session.entries.values(), key=lambda e: e.id)[-self.ROWS :]
        room = self.ROWS - len(open_)
        done = list(self.session.finished)[-room:] if room > 0 else []
        return sorted([*open_, *done], key=lambda e: e.id)

    def _focused(self, rows: list[Entry]) -> Entry | None:
        if self.focus is not None:
            for e in rows:
                if e.id == self.focus:
                    return e
            self.focus = None
        open_ = [e for e in rows if e.open]
        return open_[-1] if open_ else (rows[-1] if rows else None)

    def render(self, rows: list[Entry]) -> RenderableType:
        width = self.console.width
        wide = width >= 100
        hosts = width >= 140  # (else the request's path alone: the focus names the host)
        if not rows:
            return Text("waiting for a stream… (Ctrl-C to stop)", style="dim")
        focus = self._focused(rows)
        table = Table(box=None, expand=True, pad_edge=False, header_style="bold", padding=(0, 1))
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("request", ratio=1, no_wrap=True, overflow="ellipsis")
        if wide:
            table.add_column("status", justify="right", no_wrap=True)
        table.add_column("time", justify="right", no_wrap=True)
        if wide:
            table.add_column("ttfb", justify="right", no_wrap=True)
            table.add_column("1st tok", justify="right", no_wrap=True)
        table.add_column("events", justify="right", no_wrap=True)
        table.add_column("bytes", justify="right", no_wrap=True)
        table.add_column("silent", justify="right", no_wrap=True)
        if wide:
            table.add_column("tok/s", justify="right", no_wrap=True)
        table.add_column("state", no_wrap=True, overflow="ellipsis", max_width=max(8, width // 4))
        for e in rows:
            s = e.stream
            state, style = state_words(e)
            silence = s.silence(e.now())
            cells: list[RenderableType] = [
                str(e.id), _render.safe(f"{s.method} {_short(s.url, host=hosts)}", newlines=False),
            ]
            if wide:
                cells.append(str(s.status) if s.status is not None else "-")
            cells.append(f"{_elapsed(e):.1f}s")
            if wide:
                cells += [seconds(s.ttfb), seconds(s.first_token)]
            cells += [str(s.events), _size(s.bytes),
                      Text(f"{silence:.1f}s" if e.open else "-", style="red" if s.stalled else "")]  # fmt: skip
            if wide:
                cells.append(_rate(s))
            cells.append(Text(state, style=style))
            table.add_row(*cells, style="reverse" if focus is not None and e.id == focus.id else "")
        parts: list[RenderableType] = [table]
        hidden = len(self.session.entries) - sum(e.open for e in rows)
        if hidden > 0:
            parts.append(Text(f"… and {hidden} more stream{'s' if hidden > 1 else ''} in flight (the oldest)", style="dim"))
        if focus is not None:
            parts += list(self._focus_view(focus, width))
        keys = "↑/↓ focus · f follow the newest · Ctrl-C stop" if self._keys is not None else "Ctrl-C stop"
        parts.append(Text(keys, style="dim"))
        return Group(*parts)

    def _focus_view(self, entry: Entry, width: int) -> Iterator[RenderableType]:
        s = entry.stream
        sure = "" if s.sure or s.ended else "?"
        head = _render.safe(f"── #{entry.id} {s.dialect.name}{sure} · {s.method} {s.url} ", newlines=False, style="bold")
        head.truncate(width, overflow="ellipsis")
        head.append("─" * max(0, width - head.cell_len), style="dim")
        yield head
        lines = _last_lines(s.tail, width, self.ANSWER_LINES)
        if not lines:
            yield Text("(no answer text yet)", style="dim")
        for line in lines:
            yield _render.safe(line, newlines=False)
        yield self._strip(entry, width)

    def _strip(self, entry: Entry, width: int) -> Text:
        """The arrival strip: bytes per column from the request to now (or the end), stalls and bursts marked."""
        s = entry.stream
        total = max(_elapsed(entry), 1e-3)
        n = max(10, width - 12)
        strip = self.strips.get(entry.id)
        columns = strip.columns(n, total) if strip is not None else [0] * n
        line = _render.spark_bars(columns, {min(n - 1, int(b.t / total * n)) for b in s.bursts})
        if s.stalled is not None:
            line.append(f" ⏸ {s.silence(entry.now()):.1f}s", style="bold red")
        elif s.ended is not None:
            ok = s.outcome is not None and s.outcome.ok
            line.append(" ✔" if ok else " ✘", style="bold green" if ok else "bold red")
        else:
            line.append(f" {seconds(total)}", style="dim")
        return line


def _short(url: str, *, host: bool) -> str:
    """A URL without its scheme (the table has no room for it), and without its host when narrow (the path
    tells the calls apart: /v1/chat/completions, /v1/messages)."""
    rest = url.partition("://")[2] or url
    if host:
        return rest
    path = rest[rest.find("/") :] if "/" in rest else rest
    return path or rest


def _last_lines(text: str, width: int, count: int) -> list[str]:
    """The last `count` lines `text` makes when wrapped at `width` columns (a character a column: enough for a glance)."""
    out: list[str] = []
    for line in reversed(text.split("\n")):
        pieces = [line[i : i + width] for i in range(0, len(line), width)] or [""]
        out[:0] = pieces
        if len(out) >= count:
            break
    while out and not out[-1].strip():
        out.pop()
    return out[-count:]


class _Keys:
    """The terminal's keys, read on the event loop while the table is up (cbreak mode, restored at close)."""

    NAMES = {"\x1b[A": "up", "\x1b[B": "down", "\x1bOA": "up", "\x1bOB": "down", "\t": "tab", "\x1b[Z": "shift-tab"}

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, saved: Any, on_key: Any) -> None:
        self.loop, self.fd, self.saved, self.on_key = loop, fd, saved, on_key

    @classmethod
    def open(cls, loop: asyncio.AbstractEventLoop, on_key: Any) -> _Keys | None:
        """Read keys from stdin when it is a terminal (else None)."""
        if not sys.stdin.isatty():
            return None
        try:
            import termios
            import tty

            fd = sys.stdin.fileno()
            saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (ImportError, OSError, ValueError):
            return None
        keys = cls(loop, fd, saved, on_key)
        loop.add_reader(fd, keys._read)
        return keys

    def _read(self) -> None:
        try:
            data = os.read(self.fd, 64).decode("utf-8", "replace")
        except OSError:
            return
        while data:
            for seq, name in self.NAMES.items():
                if data.startswith(seq):
                    self.on_key(name)
                    data = data[len(seq) :]
                    break
            else:
                self.on_key(data[0])
                data = data[1:]

    def close(self) -> None:
        import termios

        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.fd)
        with contextlib.suppress(Exception):
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
