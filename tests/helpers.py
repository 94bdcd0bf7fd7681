"""Shared test helpers: cutting bytes, parsing them, and a reference parser written from the spec."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sse_inspect import Comment, Event, EventStreamParser, Notice

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
ROOT = Path(__file__).parent.parent


def split_at(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`body` cut at the given offsets (out-of-range and repeated cuts give empty chunks, kept on purpose)."""
    points = sorted(min(max(c, 0), len(body)) for c in cuts)
    out, start = [], 0
    for p in points:
        out.append(body[start:p])
        start = p
    out.append(body[start:])
    return out


def holder(chunks: Sequence[bytes], offset: int) -> int:
    """Index of the chunk that holds byte `offset` (the last chunk for the stream's end, `offset` = its length)."""
    end = 0
    for i, chunk in enumerate(chunks):
        end += len(chunk)
        if offset < end:
            return i
    if offset == end and chunks:
        return len(chunks) - 1
    raise AssertionError(f"offset {offset} is past the stream's end ({end})")


def parse_all(chunks: Sequence[bytes]) -> list[Event | Comment | Notice]:
    """Everything the parser emits for `chunks`, fed one by one at times 0, 1, 2, ..."""
    parser = EventStreamParser()
    items: list[Event | Comment | Notice] = []
    for i, chunk in enumerate(chunks):
        items += parser.feed(chunk, float(i))
    return items + parser.close()


def untimed(items: Iterable[Event | Comment | Notice]) -> tuple[list[object], list[object]]:
    """The cut-independent part of parser output: times and chunk indices dropped.

    Events and comments keep their order; notices are sorted, because how they interleave
    with events depends on the cuts (a CR at a chunk's end is classified by the next chunk).
    """
    out: list[object] = []
    notices = []
    for x in items:
        if isinstance(x, Event):
            out.append(x._replace(t=None, t_first=None, chunk=0))
        elif isinstance(x, Comment):
            out.append(("comment", x.text, x.offset))
        else:
            notices.append((x.offset, x.kind, x.message))
    return out, sorted(notices)


_LINE = re.compile(r"\r\n|\r|\n")


def reference_events(body: bytes) -> list[tuple[str, str, str, int | None]]:
    """The WHATWG algorithm written as plainly as possible: (type, data, id, retry) per event.

    Decode the whole stream (UTF-8, replacement), drop one leading BOM, split lines,
    drop the unterminated last line, then apply the field rules.
    """
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _LINE.split(text)
    lines.pop()  # the text after the last line end is not a line (yet)
    events = []
    data, event_type, last_id, retry = "", "", "", None
    for line in lines:
        if line == "":
            if data == "":
                event_type = ""
                continue
            if data.endswith("\n"):
                data = data[:-1]
            events.append((event_type or "message", data, last_id, retry))
            data, event_type = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = line, ""
        if name == "event":
            event_type = value
        elif name == "data":
            data += value + "\n"
        elif name == "id":
            if "\0" not in value:
                last_id = value
        elif name == "retry":
            if value and all(c in "0123456789" for c in value):
                retry = int(value)
    return events


def simple(events: Iterable[Event | Comment | Notice]) -> list[tuple[str, str, str, int | None]]:
    return [(e.type, e.data, e.id, e.retry) for e in events if isinstance(e, Event)]


def free_port() -> int:
    """A loopback port nobody listens on right now (a small race remains until it is taken)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str, log: Callable[[], str],
                   timeout: float) -> None:  # fmt: skip
    """Wait until `process` accepts connections on `port`; raise with its log when it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with {process.returncode}:\n{log()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} not listening on {port} after {timeout} s:\n{log()}")


INTERRUPTED = (130, -signal.SIGINT)
"""How a CLI process stopped by Ctrl-C ends: exit 130, or killed by SIGINT, which a shell reports as
130 too. CPython takes the second way when the Ctrl-C lands during an import (seen under strace:
our `interrupted` line is written, then the interpreter resets SIGINT and sends it to itself), so a
busy machine, where imports are slow, sees both."""


def openai_chat_text(client: Any) -> tuple[str, str | None]:
    """Stream a chat completion with an openai SDK client (any version): the text and finish reason
    of choice 0 as the SDK rebuilt them."""
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}],
                                            stream=True)  # fmt: skip
    text, finish = "", None
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return text, finish


@contextmanager
def running(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A process for one test: killed (and reaped) on the way out if it still runs, whatever failed."""
    proc = subprocess.Popen(argv, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ctrl_c(proc: subprocess.Popen[bytes], timeout: float = 20) -> tuple[bytes, bytes]:
    """Interrupt `proc` as a terminal's Ctrl-C does (SIGINT) and wait for it: its stdout and stderr."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=timeout)
    return out or b"", err or b""


def corpus_dialect(entry: dict[str, Any]) -> str:
    """The dialect a corpus capture speaks, from its MANIFEST entry's provider and API."""
    if entry["api"] == "responses":
        return "openai-responses"
    return entry["provider"] if entry["provider"] in ("anthropic", "gemini", "cohere") else "openai-chat"
