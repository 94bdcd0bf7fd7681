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
from ._fastjson import encode_string
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


def chunk_lines(times: Sequence[float], datas: Sequence[bytes]) -> str:
    """The lines of many chunks, as `chunk_line` writes them, in about half its time per chunk.

    The work per chunk is done by C code (`map`, the JSON string encoder, one `%` format for
    all of them). The time is formatted `%.6f`: the same number as `chunk_line`'s `round(t, 6)`,
    with trailing zeros. When a chunk is not UTF-8 on its own, `chunk_line` writes them all.
    """
    try:
        texts = list(map(encode_string, map(bytes.decode, datas)))
    except UnicodeDecodeError:
        return "".join(map(chunk_line, times, datas))
    fields: list[object] = [None] * (2 * len(texts))
    fields[::2], fields[1::2] = times, texts
    return ('{"t": %.6f, "text": %s}\n' * len(texts)) % tuple(fields)


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
            )
        )
        return writer

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def chunk(self, t: float, data: bytes) -> None:
        """Append one chunk, flushed at once."""
        self._write(chunk_line(t, data))

    def chunks(self, times: Sequence[float], datas: Sequence[bytes]) -> None:
        """Append chunks (`datas[k]` arrived at `times[k]`) with one system call."""
        self._write(chunk_lines(times, datas))

    def end(self, kind: str, t: float | None, error: str | None = None) -> None:
        """Write the end line and close the file."""
        try:
            self._write(end_line(kind, t, error))
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

    def _write(self, line: str) -> None:
        data = line.encode("utf-8")
        while data:
            data = data[os.write(self._fd, data) :]
