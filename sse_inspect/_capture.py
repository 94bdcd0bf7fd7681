"""The capture model and the `sse-capture/1` file format (JSON Lines).

    {"format": "sse-capture/1", "recorded_at": ..., "recorder": ..., "request": {...}, "response": {...}}
    {"t": 0.412803, "text": "data: {...}\\n\\n"}        one line per received chunk, in order
    {"t": 0.415112, "b64": "ZGF0YTog..."}              (b64 when the chunk is not UTF-8 on its own)
    {"end": "complete", "t": 2.018311}                 how the stream ended

A file cut off while recording (no end line) loads with every chunk that was written; a
half-written last line is dropped with a warning. Unknown keys are kept in `extra`.
A HAR, curl trace or mitmproxy flow file is imported (`interop`); any other file is read as a
raw response body: one chunk, no headers, no timing.
`load_capture` is the one function here that touches the file system.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Self

from ._errors import CaptureError
from ._fastjson import encode_string, loads, scan

__all__ = [
    "END_KINDS",
    "FORMAT",
    "Capture",
    "CaptureStream",
    "Chunk",
    "End",
    "Request",
    "Response",
    "capture_from_body",
    "chunk_line",
    "dump_capture",
    "end_line",
    "header_line",
    "load_capture",
    "open_capture",
    "parse_capture",
]

FORMAT = "sse-capture/1"
END_KINDS = ("complete", "client-disconnected", "server-disconnected", "error")
Headers = tuple[tuple[str, str], ...]


def _header(headers: Headers, name: str) -> str | None:
    name = name.lower()
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes that arrived together, and when (seconds since the request was sent; None: untimed)."""

    t: float | None
    data: bytes

    def __repr__(self) -> str:
        data = self.data if len(self.data) <= 32 else self.data[:29] + b"..."
        return f"Chunk(t={self.t}, {len(self.data)} bytes: {data!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class End:
    """How the recording of the stream ended: one of `END_KINDS`."""

    kind: str
    t: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    method: str = "GET"
    url: str = ""
    http_version: str = "HTTP/1.1"
    headers: Headers = ()
    """Names keep their case and order."""
    body: str | None = None

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        return _header(self.headers, name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    status: int = 200
    reason: str = ""
    http_version: str = "HTTP/1.1"
    headers: Headers = ()
    t: float | None = None
    """When the response headers arrived."""

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        return _header(self.headers, name)


@dataclass(frozen=True, kw_only=True)
class Capture:
    """One recorded streamed HTTP exchange."""

    chunks: tuple[Chunk, ...] = ()
    request: Request | None = None
    response: Response | None = None
    end: End | None = None
    """None: the recording was cut off (no end line)."""
    recorded_at: str | None = None
    recorder: str | None = None
    timed: bool = True
    """False when the source had no per-chunk timing (raw bodies, imports)."""
    raw: bool = False
    """True when the file was a bare response body, not a capture."""
    path: str | None = None
    warnings: tuple[str, ...] = ()
    """What loading had to forgive (a half-written last line, lines after the end)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Header keys this version does not know, kept for forward compatibility."""

    def __repr__(self) -> str:
        where = self.path or (self.request.url if self.request else "?")
        end = self.end.kind if self.end else "no end line"
        return f"<Capture {where}: {len(self.chunks)} chunks, {sum(len(c.data) for c in self.chunks)} bytes, {end}>"

    @property
    def body(self) -> bytes:
        """The response body as it came over the wire (still content-encoded, if it was)."""
        return b"".join(c.data for c in self.chunks)

    @property
    def text(self) -> str:
        """The reconstructed answer text (first choice), in the detected dialect."""
        from ._analysis import analyze  # the analysis builds on this module

        return analyze(self).answer.text

    @property
    def content_encoding(self) -> str | None:
        return self.response.header("content-encoding") if self.response else None

    @property
    def duration(self) -> float | None:
        """Seconds from the request to the end (or to the last chunk when there is no end line)."""
        if not self.timed:
            return None
        if self.end is not None and self.end.t is not None:
            return self.end.t
        return self.chunks[-1].t if self.chunks else None


# -- writing ---------------------------------------------------------------------------


def _t(t: float | None) -> float | None:
    return None if t is None else round(t, 6)


def header_line(
    *,
    request: Request | None,
    response: Response | None,
    recorded_at: str | None,
    recorder: str,
    extra: dict[str, Any] | None = None,
) -> str:
    """The first line of a capture file."""
    head: dict[str, Any] = {"format": FORMAT, "recorded_at": recorded_at, "recorder": recorder}
    if request is not None:
        head["request"] = {
            "method": request.method,
            "url": request.url,
            "http_version": request.http_version,
            "headers": [list(h) for h in request.headers],
            "body": request.body,
        }
    if response is not None:
        head["response"] = {
            "status": response.status,
            "reason": response.reason,
            "http_version": response.http_version,
            "headers": [list(h) for h in response.headers],
            "t": _t(response.t),
        }
    head.update(extra or {})
    return json.dumps(head, ensure_ascii=False) + "\n"


def chunk_line(t: float | None, data: bytes) -> str:
    """One chunk line: `text` when the bytes are UTF-8 on their own, else `b64`.

    Written by hand rather than with json.dumps of a dict: the recorder calls this on the
    proxy's event loop for every chunk, and the string encoder alone is several times faster.
    """
    when = "null" if t is None else repr(round(t, 6))
    try:
        return f'{{"t": {when}, "text": {encode_string(data.decode("utf-8"))}}}\n'
    except UnicodeDecodeError:
        return f'{{"t": {when}, "b64": "{base64.b64encode(data).decode("ascii")}"}}\n'


def end_line(kind: str, t: float | None, error: str | None = None) -> str:
    """The last line of a capture file."""
    if kind not in END_KINDS:
        raise ValueError(f"end kind must be one of {', '.join(END_KINDS)}, not {kind!r}")
    end: dict[str, Any] = {"end": kind, "t": _t(t)}
    if error:
        end["error"] = error
    return json.dumps(end, ensure_ascii=False) + "\n"


def dump_capture(capture: Capture, *, recorded_at: str | None = None) -> str:
    """A whole capture as `sse-capture/1` text."""
    extra = dict(capture.extra)
    if not capture.timed:
        extra["timed"] = False
    lines = [
        header_line(
            request=capture.request,
            response=capture.response,
            recorded_at=recorded_at or capture.recorded_at,
            recorder=capture.recorder or "sse-inspect",
            extra=extra,
        )
    ]
    lines += [chunk_line(c.t, c.data) for c in capture.chunks]
    if capture.end is not None:
        lines.append(end_line(capture.end.kind, capture.end.t, capture.end.error))
    return "".join(lines)


# -- reading ---------------------------------------------------------------------------

RAW_PIECE = 1 << 20
"""A raw body is read (and parsed) in pieces of this many bytes."""
_SSE_STARTS = (b"data", b"event", b"id", b"retry", b":", b"\xef\xbb\xbf")


def load_capture(path: str | os.PathLike[str]) -> Capture:
    """Read a capture file, or a raw event-stream body; "-" reads standard input."""
    with open_capture(path) as stream:
        return stream.load()


def open_capture(path: str | os.PathLike[str]) -> CaptureStream:
    """Open a capture to read its chunks one at a time, in memory that does not grow with the file.

    sse-capture/1 files and raw event-stream bodies (in 1 MiB pieces) are streamed; HAR, curl
    trace and mitmproxy flow files are read whole. "-" reads standard input (a FIFO works too).
    """
    name = os.fspath(path)
    if name == "-":
        return CaptureStream(sys.stdin.buffer, "<stdin>", None, owned=False)
    if os.path.isdir(name):
        raise CaptureError("is a directory, not a capture file", path=name)
    try:
        f = open(name, "rb")  # noqa: SIM115  # closed by the stream
        size = os.fstat(f.fileno()).st_size if os.path.isfile(name) else None
    except FileNotFoundError:
        raise CaptureError("no such file", path=name) from None
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", path=name) from None
    return CaptureStream(f, name, size)


class CaptureStream:
    """A capture read while it is iterated: chunks are yielded, never kept.

        with open_capture("big.jsonl") as stream:
            stream.capture            # the header (request, response, ...) with no chunks
            for chunk in stream: ...  # once
            stream.capture            # now with its end and warnings as well

    `bytes_read` and `size` (both None for a pipe) say how far the reading got, for progress bars.
    """

    def __init__(self, f: BinaryIO, path: str, size: int | None, *, owned: bool = True) -> None:
        self._f = f
        self._owned = owned
        self.path = path
        self.size = size
        self._iterated = False
        try:
            first = f.readline()
            self._pieces: Iterable[Chunk]
            if _is_capture_header(first):
                lines = _JsonLines(first, path)
                self.capture = lines.head
                self._pieces = self._jsonl(lines)
            elif _is_sse(first):
                self.capture = Capture(timed=False, raw=True, path=path, recorder="raw body", end=End(kind="complete"))
                self._pieces = self._raw(first)
            else:  # a HAR, a curl trace, a flow file, or not a capture at all: read whole
                whole = parse_capture(first + f.read(), path=path)
                self.capture = dataclasses.replace(whole, chunks=())
                self._pieces = whole.chunks
        except OSError as exc:
            self.close()
            raise CaptureError(f"cannot read: {exc.strerror or exc}", path=path) from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._f.close()

    def __iter__(self) -> Iterator[Chunk]:
        if self._iterated:
            raise RuntimeError("a CaptureStream is read once; open the capture again")
        self._iterated = True
        try:
            yield from self._pieces
        except OSError as exc:
            raise CaptureError(f"cannot read: {exc.strerror or exc}", path=self.path) from None

    @property
    def bytes_read(self) -> int | None:
        """Bytes of the file read so far (None when that cannot be told, as for a pipe)."""
        if self.size is None:
            return None
        try:
            return self._f.tell()
        except OSError:
            return None

    def load(self) -> Capture:
        """The whole capture in memory."""
        chunks = tuple(self)
        return dataclasses.replace(self.capture, chunks=chunks)

    def _jsonl(self, lines: _JsonLines) -> Iterator[Chunk]:
        yield from lines.chunks(self._f)
        self.capture = dataclasses.replace(self.capture, end=lines.end, warnings=tuple(lines.warnings))

    def _raw(self, first: bytes) -> Iterator[Chunk]:
        more = self._f.read(RAW_PIECE)
        piece = first + more
        _check_raw(piece, self.path)
        while piece:
            yield Chunk(None, piece)
            if len(more) < RAW_PIECE:  # a short read was the end: a terminal's Ctrl-D comes once, not twice
                return
            piece = more = self._f.read(RAW_PIECE)


def _is_capture_header(first: bytes) -> bool:
    return first.lstrip().startswith(b"{") and b'"format"' in first


def _is_sse(first: bytes) -> bool:
    """Whether a first line opens an event stream (rather than another tool's file, or no text at all)."""
    line = first.lstrip(b"\r\n")
    return line.startswith(_SSE_STARTS) and b"\0" not in line[:8192]


def parse_capture(data: bytes, *, path: str | None = None) -> Capture:
    """A capture from the bytes of a capture file, of a file `interop` imports, or of a raw body."""
    newline = data.find(b"\n")
    first = data if newline < 0 else data[: newline + 1]
    if _is_capture_header(first):
        lines = _JsonLines(first, path)
        rest = io.BytesIO(data)  # shares the bytes, no copy
        rest.seek(len(first))
        chunks = tuple(lines.chunks(rest))
        return dataclasses.replace(lines.head, chunks=chunks, end=lines.end, warnings=tuple(lines.warnings))
    from .interop import sniff  # HAR, curl trace, mitmproxy flows: they build on this module

    return sniff(data, path) or _parse_raw(data, path)


def _parse_raw(data: bytes, path: str | None) -> Capture:
    _check_raw(data, path)
    if data.lstrip()[:1] in (b"[", b"{") and _is_json(data):
        raise CaptureError(
            "a JSON document: neither an sse-capture/1 file (JSON Lines) nor a text/event-stream body",
            path=path,
        )
    return Capture(
        chunks=(Chunk(None, data),),
        end=End(kind="complete"),
        timed=False,
        raw=True,
        path=path,
        recorder="raw body",
    )


def _check_raw(data: bytes, path: str | None) -> None:
    if not data:
        raise CaptureError("empty file: neither a capture nor an event stream", path=path)
    head = data[:8192]
    if b"\0" in head or _mostly_not_utf8(head):
        raise CaptureError(
            "binary data: neither an sse-capture/1 file nor a text/event-stream body",
            path=path,
            hint="a gzip-compressed body must be recorded as a capture, whose headers say how it is encoded",
        )


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _mostly_not_utf8(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # a character cut at the end of the sample is fine
    return False


class _JsonLines:
    """The sse-capture/1 grammar, read line by line: `head` from the first line, then `chunks(rest)`."""

    def __init__(self, first: bytes, path: str | None) -> None:
        self.path = path
        self.warnings: list[str] = []
        self.end: End | None = None
        header = _load_line(first, 1, path, last=not first.endswith(b"\n"), warnings=self.warnings)
        if header is None:
            raise CaptureError("the header line is cut off", path=path, line=1)
        fmt = header.get("format")
        if not isinstance(fmt, str) or not fmt.startswith("sse-capture/"):
            raise CaptureError(f"unknown format {fmt!r}; expected {FORMAT!r}", path=path, line=1)
        if fmt != FORMAT:
            raise CaptureError(
                f"{fmt!r} is a newer capture format than this sse-inspect reads ({FORMAT!r})",
                path=path,
                line=1,
                hint="upgrade sse-inspect",
            )
        known = {"format", "recorded_at", "recorder", "request", "response", "timed"}
        self.head = Capture(
            request=_request(header.get("request"), path),
            response=_response(header.get("response"), path),
            recorded_at=_opt_str(header.get("recorded_at")),
            recorder=_opt_str(header.get("recorder")),
            timed=header.get("timed", True) is not False,
            path=path,
            extra={k: v for k, v in header.items() if k not in known},
        )

    def chunks(self, rest: Iterable[bytes]) -> Iterator[Chunk]:
        """The chunk lines of `rest` (the lines after the header, each with its newline)."""
        path, warnings, isfinite = self.path, self.warnings, math.isfinite
        for number, raw in enumerate(rest, start=2):
            try:  # the common line, {"t": float, "text": str} and its newline, checked as `_chunk` would
                line = raw.decode("utf-8")
                obj, stop = scan(line, 0)
                t, text = obj["t"], obj["text"]
                if (line[stop:] == "\n" and type(text) is str and type(t) is float and len(obj) == 2
                        and isfinite(t) and self.end is None):  # fmt: skip
                    yield Chunk(t, text.encode("utf-8", "surrogatepass"))
                    continue
            except (ValueError, StopIteration, LookupError, TypeError, RecursionError):
                pass  # anything else: read it the long way, which says what is wrong
            if not raw.strip():
                continue
            obj = _load_line(raw, number, path, last=not raw.endswith(b"\n"), warnings=warnings)
            if obj is None:
                continue
            if self.end is not None:
                warnings.append(f"line {number}: ignored, it follows the end line")
            elif "end" in obj:
                self.end = _end(obj, number, path)
            else:
                yield _chunk(obj, number, path)


def _load_line(raw: bytes, number: int, path: str | None, *, last: bool, warnings: list[str]) -> dict[str, Any] | None:
    try:
        obj = loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        if last:  # cut by the end of the recording (perhaps inside a character)
            warnings.append(f"line {number}: half-written last line ignored (the recording was cut off)")
            return None
        if isinstance(exc, UnicodeDecodeError):
            raise CaptureError(f"not UTF-8 text (byte {exc.start} of the line): capture files are UTF-8 JSON Lines",
                               path=path, line=number) from None  # fmt: skip
        raise CaptureError("not a JSON line", path=path, line=number) from None
    if not isinstance(obj, dict):
        raise CaptureError(f"expected a JSON object, found {type(obj).__name__}", path=path, line=number)
    return obj


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _headers(value: Any, where: str, path: str | None) -> Headers:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(h, list | tuple) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in value
    ):
        raise CaptureError(f"{where}.headers must be a list of [name, value] string pairs", path=path, line=1)
    return tuple((name, val) for name, val in value)


def _time(value: Any, what: str, path: str | None, line: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CaptureError(f"{what} must be a number of seconds, not {value!r}", path=path, line=line)
    return float(value)


def _request(value: Any, path: str | None) -> Request | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CaptureError("request must be an object", path=path, line=1)
    body = value.get("body")
    return Request(
        method=str(value.get("method", "GET")),
        url=str(value.get("url", "")),
        http_version=str(value.get("http_version", "HTTP/1.1")),
        headers=_headers(value.get("headers"), "request", path),
        body=body if isinstance(body, str) else None,
    )


def _response(value: Any, path: str | None) -> Response | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CaptureError("response must be an object", path=path, line=1)
    status = value.get("status", 200)
    if isinstance(status, bool) or not isinstance(status, int):
        raise CaptureError(f"response.status must be an integer, not {status!r}", path=path, line=1)
    return Response(
        status=status,
        reason=str(value.get("reason", "")),
        http_version=str(value.get("http_version", "HTTP/1.1")),
        headers=_headers(value.get("headers"), "response", path),
        t=_time(value.get("t"), "response.t", path, 1),
    )


def _chunk(obj: dict[str, Any], line: int, path: str | None) -> Chunk:
    t = _time(obj.get("t"), "t", path, line)
    if "text" in obj:
        text = obj["text"]
        if not isinstance(text, str):
            raise CaptureError("chunk text must be a string", path=path, line=line)
        return Chunk(t, text.encode("utf-8", "surrogatepass"))
    if "b64" in obj:
        try:
            return Chunk(t, base64.b64decode(obj["b64"], validate=True))
        except (binascii.Error, TypeError, ValueError):
            raise CaptureError("chunk b64 is not valid base64", path=path, line=line) from None
    raise CaptureError('a chunk line needs "text" or "b64"; an end line needs "end"', path=path, line=line)


def _end(obj: dict[str, Any], line: int, path: str | None) -> End:
    kind = obj["end"]
    if kind not in END_KINDS:
        raise CaptureError(f"end must be one of {', '.join(END_KINDS)}, not {kind!r}", path=path, line=line)
    error = obj.get("error")
    return End(kind=kind, t=_time(obj.get("t"), "t", path, line), error=error if isinstance(error, str) else None)


def capture_from_body(
    body: bytes | Iterable[tuple[float | None, bytes]],
    *,
    request: Request | None = None,
    response: Response | None = None,
    end: End | None = None,
    recorder: str = "sse-inspect",
) -> Capture:
    """Build a capture in memory from a whole body or from (t, bytes) chunks."""
    if isinstance(body, bytes):
        chunks: Sequence[Chunk] = (Chunk(None, body),)
        timed = False
    else:
        chunks = tuple(Chunk(t, data) for t, data in body)
        timed = all(c.t is not None for c in chunks)
    return Capture(
        chunks=tuple(chunks),
        request=request,
        response=response,
        end=end or End(kind="complete", t=chunks[-1].t if chunks else None),
        timed=timed,
        recorder=recorder,
    )
