"""Writing a capture while its stream flows: header first, one line per chunk, an end line.

Used by the mitmproxy addon and by `sse-inspect fetch`. Every write goes straight to the
operating system (`os.write`, no buffer in between), so a crash of the process loses
nothing that was written: `fetch` writes each chunk as it comes, the addon those of one
iteration of the proxy's event loop together (see `mitm_addon`). Secrets are redacted
before the header is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from . import __version__
from ._capture import Request, Response, chunk_line, end_line, header_line
from ._redact import Redactor

__all__ = ["CaptureWriter", "capture_filename", "rfc3339"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME_PART = 60


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def capture_filename(url: str, when: datetime) -> str:
    """A file name from the time, host and path: only [A-Za-z0-9._-], so no URL can escape the folder."""
    parts = urlsplit(url)
    host = _UNSAFE.sub("_", parts.hostname or "unknown-host").strip("._-")[:_MAX_NAME_PART] or "host"
    path = _UNSAFE.sub("_", parts.path).strip("._-")[:_MAX_NAME_PART] or "root"
    stamp = when.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{stamp}-{host}-{path}.jsonl"


def _new_file(folder: Path, name: str) -> tuple[Path, int]:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = folder / (name if n == 1 else name.replace(".jsonl", f"-{n}.jsonl"))
        try:
            return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free capture file name like {name} in {folder}")


_ODD = bytes(c for c in range(32) if c not in b"\t\n\r")
"""The control characters JSON writes as \\b, \\f or \\u00XX; NUL, one of them, separates the chunks."""
_ESCAPES = ((b"\\", b"\\\\"), (b'"', b'\\"'), (b"\n", b"\\n"), (b"\r", b"\\r"), (b"\t", b"\\t"), (b"%", b"%%"))
"""JSON's escapes of the other characters, backslash first; `%` doubled for the `%` format."""
_LINE = b'{"t": %.6f, "text": "'


def chunk_lines(times: Sequence[float], datas: Sequence[bytes]) -> bytes:
    """The lines of many chunks, in UTF-8, as `chunk_line` writes them, at a half to two thirds of its cost.

    When each chunk is UTF-8 on its own and holds no control character but tab, LF and CR (an
    event stream, nearly always), all of them are escaped at once, as bytes: joined with NUL, one
    `bytes.replace` per character to escape, NUL replaced by the end of a line and the start of
    the next, and one `%` for the times. Nothing is done chunk by chunk but formatting its time,
    `%.6f` (the same number as `chunk_line`'s `round(t, 6)`, with trailing zeros). Otherwise
    `chunk_line` writes them all.
    """
    joined = b"\x00".join(datas)
    if len(joined.translate(None, _ODD)) != len(joined) - len(datas) + 1 or not _is_utf8(joined):
        return "".join(map(chunk_line, times, datas)).encode()
    for char, escaped in _ESCAPES:
        joined = joined.replace(char, escaped)
    return b"".join((_LINE, joined.replace(b"\x00", b'"}\n' + _LINE), b'"}\n')) % tuple(times)


def _is_utf8(data: bytes) -> bool:
    """Whether `data` is UTF-8. With NUL between chunks: whether each of them is, on its own."""
    if data.isascii():
        return True
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


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
            path, fd = _new_file(Path(directory), capture_filename(request.url, when))
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
