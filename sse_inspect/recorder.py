"""Writing a capture while its stream flows: header first, one line per chunk, an end line.

`CaptureWriter` writes one capture file; `StreamRecorder` records one stream passing through an
event loop (the mitmproxy addon is a thin layer over it), its batching and durability policy
included. Every write goes straight to the operating system (`os.write`, no buffer in between),
so a crash of the process loses nothing that was written: `sse-inspect fetch` writes each chunk
as it comes, a `StreamRecorder` those of one iteration of the event loop together. Secrets are
redacted before anything is written: in the header (headers, URL, request body) and in the body,
chunk by chunk (`_secrets.StreamRedactor`: a chunk that may end inside a key waits for the next);
the file name comes from the redacted URL. The lines themselves are made by `_capture`.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from ._capture import Capture, End, Request, Response, chunk_lines, end_line, header_line, rfc3339
from ._redact import Redactor
from ._secrets import StreamRedactor, redact_headers, redact_request
from ._version import __version__

__all__ = [
    "FLUSH_CHUNKS",
    "STREAM_TYPES",
    "CaptureWriter",
    "OnCapture",
    "Stage",
    "StreamRecorder",
    "Tap",
    "capture_dir_problem",
    "capture_dir_warning",
    "make_private_dir",
    "capture_filename",
    "new_capture_file",
    "is_stream",
    "rfc3339",
]

logger = logging.getLogger(__name__)

STREAM_TYPES = (
    "text/event-stream",  # SSE: OpenAI, Anthropic, Gemini with alt=sse, Mistral, vLLM, OpenRouter, ...
    "application/x-ndjson",  # NDJSON: Ollama's native /api/chat and /api/generate
    "application/ndjson",
    "application/jsonl",  # JSON Lines under its other names
    "application/json-lines",
    "application/jsonlines",
    "application/x-jsonlines",
    "application/vnd.amazon.eventstream",  # AWS event stream: Bedrock's ConverseStream, InvokeModelWithResponseStream
)
"""The content types of LLM token streams: what a recorder records by default."""


def is_stream(content_type: str | None, url: str, types: Iterable[str] = STREAM_TYPES) -> bool:
    """Whether a response of `content_type` to `url` is a stream to record: its type is one of `types`
    (media type only, any case), or it answers Gemini's `:streamGenerateContent`, whose stream without
    `alt=sse` is one JSON array written piece by piece as `application/json`, while recording SSE."""
    media = (content_type or "").split(";")[0].strip().lower()
    wanted = {t.strip().lower() for t in types}
    if media in wanted:
        return True
    return media == "application/json" and "text/event-stream" in wanted and _streams_json(url)


def _streams_json(url: str) -> bool:
    try:
        return urlsplit(url).path.endswith(":streamGenerateContent")
    except ValueError:
        return False

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME_PART = 60


def capture_filename(url: str, when: datetime) -> str:
    """A file name from the time, host and path: only [A-Za-z0-9._-], so no URL can escape the folder."""
    parts = urlsplit(url)
    host = _UNSAFE.sub("_", parts.hostname or "unknown-host").strip("._-")[:_MAX_NAME_PART] or "host"
    path = _UNSAFE.sub("_", parts.path).strip("._-")[:_MAX_NAME_PART] or "root"
    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{stamp}-{host}-{path}.jsonl"


def make_private_dir(folder: Path) -> None:
    """Make `folder` and its missing parents mode 0700: capture file names carry URL paths, and
    captures requests, so other local users must not list them. An existing folder is left as it is
    (`capture_dir_warning` says when others can read it)."""
    for missing in reversed([folder, *folder.parents]):
        if not missing.exists():
            try:
                missing.mkdir(mode=0o700)
            except FileExistsError:  # made meanwhile by another recorder
                pass


def new_capture_file(folder: Path, name: str) -> tuple[Path, int]:
    """Create `name` in `folder` (made mode 0700 if missing), mode 0600, never over another file:
    `name-2.jsonl`, `name-3.jsonl`... when it is taken. Its path and its open file descriptor."""
    make_private_dir(folder)
    for n in range(1, 1000):
        path = folder / (name if n == 1 else name.replace(".jsonl", f"-{n}.jsonl"))
        try:
            return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free capture file name like {name} in {folder}")


def capture_dir_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why captures cannot be written into `directory`, in a few words, or None when they can
    (a folder that does not exist yet is made with the first capture, if its parent lets it)."""
    path = Path(directory)
    if not str(directory).strip():
        return "is empty: a folder is needed"
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a folder"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path}: cannot write there (permission denied)"
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        return f"{path} cannot be made: {parent} is a file, not a folder"
    return None if os.access(parent, os.W_OK | os.X_OK) else f"{path} cannot be made in {parent} (permission denied)"


def capture_dir_warning(directory: str | os.PathLike[str]) -> str | None:
    """A warning when `directory` exists and other users may list or read it, else None."""
    try:
        mode = Path(directory).stat().st_mode
    except OSError:
        return None
    if mode & 0o077:
        return (
            f"{directory} is readable by other users (mode {mode & 0o777:o}): capture file names carry URL "
            f"paths; chmod 700 it to keep them private"
        )
    return None


class CaptureWriter:
    """One capture file being written. Raises OSError when the disk fails; the caller decides."""

    def __init__(
        self, fd: int, path: Path, url: str = "", redactor: StreamRedactor | None = None, *, head: Capture | None = None
    ) -> None:
        self._fd = fd  # written with os.write: one system call a line, no buffer in between
        self.path = path
        self.url = url
        """The request URL as written (redacted)."""
        self.head = head or Capture(request=Request(url=url))
        """The capture's header as written (redacted): its request and response, no chunks."""
        self.redactor = redactor
        """Takes the keys and tokens out of the body on its way to the disk (None: written as it came)."""

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        request: Request,
        response: Response,
        redactor: Redactor,
        recorder: str,
        when: datetime | None = None,
        path: Path | None = None,
    ) -> CaptureWriter:
        """Create a capture file (mode 0600) and write its header.

        In `directory` the name comes from time, host and path of the redacted URL and never
        overwrites a file; an explicit `path` is created or truncated.
        """
        when = when or datetime.now(UTC)
        request = redact_request(request, redactor)[0]
        response = dataclasses.replace(response, headers=redact_headers(response.headers, redactor)[0])
        if path is not None:
            make_private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        else:
            path, fd = new_capture_file(Path(directory), capture_filename(request.url, when))
        head = Capture(request=request, response=response, recorded_at=rfc3339(when), path=str(path))
        writer = cls(fd, path, request.url, StreamRedactor() if redactor.enabled else None, head=head)
        writer._write(
            header_line(
                request=request,
                response=response,
                recorded_at=rfc3339(when),
                recorder=f"sse-inspect {__version__} ({recorder})",
            ).encode()
        )
        return writer

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def chunk(self, t: float, data: bytes) -> None:
        """Append one chunk, flushed at once (unless it may end inside a key: see `StreamRedactor`)."""
        self.chunks([t], [data])

    def chunks(self, times: Sequence[float], datas: Sequence[bytes]) -> tuple[Sequence[float], Sequence[bytes]]:
        """Append chunks (`datas[k]` arrived at `times[k]`) with one system call; the chunks written
        (redacted, and without one held back because it may end inside a key)."""
        if self.redactor is not None:
            times, datas = self.redactor.feed(times, datas)
        if datas:
            self._write(chunk_lines(times, datas))
        return times, datas

    def end(self, kind: str, t: float | None, error: str | None = None) -> tuple[Sequence[float], Sequence[bytes]]:
        """Write the chunks still held, the end line, and close the file; the chunks it wrote first."""
        times: Sequence[float] = ()
        datas: Sequence[bytes] = ()
        try:
            if self.redactor is not None:
                times, datas = self.redactor.close()
                if datas:
                    self._write(chunk_lines(times, datas))
            self._write(end_line(kind, t, error).encode())
        finally:
            self.close()
        return times, datas

    def close(self) -> None:
        """Close without an end line: readers will say the recording was cut off."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.close(fd)
            except OSError:
                pass

    def _write(self, data: bytes) -> None:
        while data:
            data = data[os.write(self._fd, data) :]


FLUSH_CHUNKS = 512
"""Chunks taken in one event-loop iteration that are written at once, without waiting for its end."""


class Stage(StrEnum):
    """Where a recording is, as `on_capture` callbacks are told."""

    STARTED = "start"
    """Its capture file is open, its header written."""
    ENDED = "end"
    """Its end line is written (or writing failed) and the file closed; `ended` says how it ended."""


class Tap(Protocol):
    """What watches a recording (`StreamRecorder.tap`): the chunks as they are written to the file (redacted,
    at the times written), then its end. Called on the recorder's event loop: it must be quick, and what
    it raises is logged and stops the tap, never the recording."""

    def chunks(self, times: Sequence[float], datas: Sequence[bytes]) -> None: ...

    def end(self, end: End) -> None: ...


class StreamRecorder:
    """Records one stream passing through an event loop: `take` each chunk, `finish` at the end.

    Taking a chunk costs a list append; the chunks are written together at the end of the
    event-loop iteration that took them (`schedule`, e.g. `loop.call_soon`, runs `flush` then).
    A proxy hands on every chunk of a socket read before it returns to the loop, so a burst costs
    one line encoding pass and one `os.write` per read instead of per chunk, and a slow stream
    still has each chunk on disk microseconds after it was passed on. The chunks of one
    iteration share one time, when the first of them was taken: they came in the same read (or
    reads back to back of bytes already waiting), and what set their own times apart would be
    the proxy's work on the ones before, not their arrival. A
    crash, even SIGKILL, can lose only the chunks of the iteration it interrupts (FLUSH_CHUNKS at
    most, and a chunk held back because it may end inside a key); `finish` writes them first. A
    write that fails (disk full, folder gone) stops the recording with one warning and nothing
    raised: the stream must flow on regardless.

    With `attach` > 0 it also keeps the body's first `attach` bytes in memory, for the proxy to
    show (`body`); `attach_cut` says when the body was longer. Past that, memory stays flat however
    long the stream runs.
    """

    def __init__(
        self,
        writer: CaptureWriter,
        sent_at: float,
        *,
        attach: int,
        schedule: Callable[[Callable[[], None]], object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer: CaptureWriter | None = writer
        self.path = writer.path
        self.url = writer.url
        self.chunks = 0
        self.bytes = 0
        """Chunks and bytes taken, as of the last flush."""
        self.ended: str | None = None
        """The end kind once the stream is over."""
        self.sent_at = sent_at  # monotonic time the request was sent
        self.body = io.BytesIO() if attach > 0 else None
        """The body so far, up to `attach` bytes, to attach (`getvalue` hands its buffer over, no copy)."""
        self.attach_room = attach
        """How many more bytes `body` may keep."""
        self.attach_cut = False
        """Whether the body was longer than what `body` kept."""
        self.schedule = schedule
        self.clock = clock
        """The monotonic clock `sent_at` is on (a test's own)."""
        self.t = 0.0
        self.datas: list[bytes] = []
        """The chunks taken since the last flush, and when the first of them was (seconds since `sent_at`)."""
        self.tap: Tap | None = None
        """Told of what is written, as it is (a live view: `sse_inspect.live`); set it when the recording starts."""
        self.head = writer.head
        """The capture's header as written."""

    def now(self) -> float:
        """Seconds since the request was sent."""
        return self.clock() - self.sent_at

    def take(self, data: bytes) -> Iterable[bytes] | bytes:
        """Note a chunk (and the time, for the first of an iteration), and hand it back to be passed
        on: a proxy's stream callable.

        It runs on the event loop for every chunk, so it does only that. An empty chunk is no
        chunk and is handed back as nothing: mid-stream, b"" would end a chunked body (HTTP/1.1)
        or send an empty DATA frame (HTTP/2).
        """
        if not data:
            return []
        datas = self.datas
        if not datas:
            self.t = self.clock() - self.sent_at
            self.schedule(self.flush)
        datas.append(data)
        if len(datas) >= FLUSH_CHUNKS:
            self.flush()
        return data

    def flush(self) -> None:
        """Count, attach and write the chunks taken since the last flush (none: nothing to do)."""
        datas = self.datas
        if not datas:
            return
        self.datas = []
        size = sum(map(len, datas))
        self.chunks += len(datas)
        self.bytes += size
        if self.body is not None and not self.attach_cut:
            self._attach(datas, size)
        if self.writer is not None:
            try:
                written = self.writer.chunks([self.t] * len(datas), datas)
            except Exception as exc:  # noqa: BLE001 - a recorder must never raise into the proxy
                self.fail(exc)
            else:
                if self.tap is not None and written[1]:
                    self._tell(self.tap.chunks, _as_written(written[0]), written[1])

    def _tell(self, call: Callable[..., None], *args: object) -> None:
        """Call the tap; what it raises stops it (one warning), never the recording."""
        try:
            call(*args)
        except Exception as exc:  # noqa: BLE001
            logger.warning("sse-inspect: stopped watching %s live: %r", self.path, exc)
            self.tap = None

    def _attach(self, datas: list[bytes], size: int) -> None:
        assert self.body is not None
        if size <= self.attach_room:
            self.body.write(b"".join(datas))
            self.attach_room -= size
            return
        for data in datas:
            if len(data) > self.attach_room:
                self.body.write(data[: self.attach_room])
                self.attach_room = 0
                self.attach_cut = True
                return
            self.body.write(data)
            self.attach_room -= len(data)

    def fail(self, exc: BaseException) -> None:
        """Stop recording (the file keeps what was written: it reads as cut off), with one warning."""
        if self.writer is not None:
            logger.warning("sse-inspect: stopped recording %s: %s (traffic is unaffected)", self.writer.path, exc)
            self.writer.close()
            self.writer = None

    def finish(self, kind: str, error: str | None = None) -> None:
        """Write what is pending and the end line (`kind` one of END_KINDS), and close the file."""
        self.ended = kind
        self.flush()
        t = self.now()
        if self.writer is not None:
            try:
                written = self.writer.end(kind, t, error)
            except Exception as exc:  # noqa: BLE001
                self.fail(exc)
            else:
                if self.tap is not None and written[1]:
                    self._tell(self.tap.chunks, _as_written(written[0]), written[1])
            self.writer = None
        if self.tap is not None:
            self._tell(self.tap.end, End(kind=kind, t=_as_written([t])[0], error=error))


def _as_written(times: Sequence[float]) -> list[float]:
    """The times as a capture file holds them (to the microsecond): what a reader of the file gets."""
    first = times[0]
    if times.count(first) == len(times):  # (the chunks of one event-loop iteration share a time)
        return [round(first, 6)] * len(times)
    return [round(t, 6) for t in times]


OnCapture = Callable[[Stage, StreamRecorder], None]
"""Told of each recording as it starts and as it ends (`sse-inspect record` prints them)."""
