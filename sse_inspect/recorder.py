"""Writing a capture while its stream flows: header first, one line per chunk, an end line.

`CaptureWriter` writes one capture file; `StreamRecorder` records one stream passing through an
event loop (the mitmproxy addon is a thin layer over it), its batching and durability policy
included. Every write goes straight to the operating system (`os.write`, no buffer in between),
so a crash of the process loses nothing that was written: `sse-inspect fetch` writes each chunk
as it comes, a `StreamRecorder` those of one iteration of the event loop together. Secrets are
redacted before the header is written. The lines themselves are made by `_capture`.
"""

from __future__ import annotations

import io
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from ._capture import Request, Response, chunk_line, chunk_lines, end_line, header_line, rfc3339
from ._redact import Redactor
from ._version import __version__

__all__ = [
    "FLUSH_CHUNKS",
    "CaptureWriter",
    "OnCapture",
    "Stage",
    "StreamRecorder",
    "capture_dir_problem",
    "capture_filename",
    "new_capture_file",
    "rfc3339",
]

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME_PART = 60


def capture_filename(url: str, when: datetime) -> str:
    """A file name from the time, host and path: only [A-Za-z0-9._-], so no URL can escape the folder."""
    parts = urlsplit(url)
    host = _UNSAFE.sub("_", parts.hostname or "unknown-host").strip("._-")[:_MAX_NAME_PART] or "host"
    path = _UNSAFE.sub("_", parts.path).strip("._-")[:_MAX_NAME_PART] or "root"
    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{stamp}-{host}-{path}.jsonl"


def new_capture_file(folder: Path, name: str) -> tuple[Path, int]:
    """Create `name` in `folder` (made if missing), mode 0600, never over another file: `name-2.jsonl`,
    `name-3.jsonl`... when it is taken. Its path and its open file descriptor (for writing)."""
    folder.mkdir(parents=True, exist_ok=True)
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


class CaptureWriter:
    """One capture file being written. Raises OSError when the disk fails; the caller decides."""

    def __init__(self, fd: int, path: Path, url: str = "") -> None:
        self._fd = fd  # written with os.write: one system call a line, no buffer in between
        self.path = path
        self.url = url
        """The request URL as written (redacted)."""

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

        In `directory` the name comes from time, host and path and never overwrites a file;
        an explicit `path` is created or truncated.
        """
        when = when or datetime.now(UTC)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        else:
            path, fd = new_capture_file(Path(directory), capture_filename(request.url, when))
        request = Request(
            method=request.method,
            url=redactor.redact_url(request.url),
            http_version=request.http_version,
            headers=redactor.redact_headers(request.headers),
            body=request.body,
        )
        response = Response(
            status=response.status,
            reason=response.reason,
            http_version=response.http_version,
            headers=redactor.redact_headers(response.headers),
            t=response.t,
        )
        writer = cls(fd, path, request.url)
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
        """Append one chunk, flushed at once."""
        self._write(chunk_line(t, data).encode())

    def chunks(self, times: Sequence[float], datas: Sequence[bytes]) -> None:
        """Append chunks (`datas[k]` arrived at `times[k]`) with one system call."""
        self._write(chunk_lines(times, datas))

    def end(self, kind: str, t: float | None, error: str | None = None) -> None:
        """Write the end line and close the file."""
        try:
            self._write(end_line(kind, t, error).encode())
        finally:
            self.close()

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


class StreamRecorder:
    """Records one stream passing through an event loop: `take` each chunk, `finish` at the end.

    Taking a chunk costs a clock reading and two list appends; the chunks are written together
    at the end of the event-loop iteration that took them (`schedule`, e.g. `loop.call_soon`,
    runs `flush` then). A proxy hands on every chunk of a socket read before it returns to the
    loop, so a burst costs one line encoding pass and one `os.write` per read instead of per
    chunk, and a slow stream still has each chunk on disk microseconds after it was passed on. A
    crash, even SIGKILL, can lose only the chunks of the iteration it interrupts (FLUSH_CHUNKS at
    most); `finish` writes them first. A write that fails (disk full, folder gone) stops the
    recording with one warning and nothing raised: the stream must flow on regardless.
    """

    def __init__(
        self,
        writer: CaptureWriter,
        sent_at: float,
        *,
        attach: bool,
        schedule: Callable[[Callable[[], None]], object],
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
        self.body = io.BytesIO() if attach else None
        """The body so far, to attach (`getvalue` hands its buffer over, no copy of a long body)."""
        self.schedule = schedule
        self.times: list[float] = []
        self.datas: list[bytes] = []
        """The chunks taken since the last flush, and when."""

    def now(self) -> float:
        """Seconds since the request was sent."""
        return time.monotonic() - self.sent_at

    def take(self, data: bytes) -> Iterable[bytes] | bytes:
        """Note a chunk and its arrival time, and hand it back to be passed on: a proxy's stream callable.

        It runs on the event loop for every chunk, so it does only that. An empty chunk is no
        chunk and is handed back as nothing: mid-stream, b"" would end a chunked body (HTTP/1.1)
        or send an empty DATA frame (HTTP/2).
        """
        if not data:
            return []
        datas = self.datas
        if not datas:
            self.schedule(self.flush)
        self.times.append(time.monotonic() - self.sent_at)
        datas.append(data)
        if len(datas) >= FLUSH_CHUNKS:
            self.flush()
        return data

    def flush(self) -> None:
        """Count, attach and write the chunks taken since the last flush (none: nothing to do)."""
        times, datas = self.times, self.datas
        if not datas:
            return
        self.times, self.datas = [], []
        self.chunks += len(datas)
        self.bytes += sum(map(len, datas))
        if self.body is not None:
            self.body.writelines(datas)
        if self.writer is not None:
            try:
                self.writer.chunks(times, datas)
            except Exception as exc:  # noqa: BLE001 - a recorder must never raise into the proxy
                self.fail(exc)

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
        if self.writer is not None:
            try:
                self.writer.end(kind, self.now(), error)
            except Exception as exc:  # noqa: BLE001
                self.fail(exc)
            self.writer = None


OnCapture = Callable[[Stage, StreamRecorder], None]
"""Told of each recording as it starts and as it ends (`sse-inspect record` prints them)."""
