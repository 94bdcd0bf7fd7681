"""The capture values and the `sse-capture/1` file format (JSON Lines): written and read here.

    {"format": "sse-capture/1", "recorded_at": ..., "recorder": ..., "request": {...}, "response": {...}}
    {"t": 0.412803, "text": "data: {...}\\n\\n"}        one line per received chunk, in order
    {"t": 0.415112, "b64": "ZGF0YTog..."}              (b64 when the chunk is not UTF-8 on its own)
    {"end": "complete", "t": 2.018311}                 how the stream ended

Values: `Capture` (one recorded exchange) holds a `Request`, a `Response`, its `Chunk`s and its
`End`. Writing: `header_line`, `chunk_line` (`chunk_lines` for many at once), `end_line`,
`dump_capture`; the recorder and every export write through them. Reading: `CaptureLines` reads
the lines back: a file cut off while recording (no end line) reads with every chunk that was
written; a half-written last line is dropped with a warning; unknown header keys are kept in
`extra`. A capture is untrusted input, so what one line can cost is bounded (`_limits`): no line is
read past `CAPTURE_LINE_LIMIT` nor parsed with more than `MAX_VALUES` values (a chunk line is then
skipped with a warning, a header line is an error), and at most `MAX_HEADERS` headers a side are kept.
Finding, opening, sniffing and decompressing files is `_loading`'s job, above this one.

Two paths are written for speed, each saying so: `chunk_line`/`chunk_lines` (the recorder calls
them on the proxy's event loop for every chunk: `benchmarks/recorder_latency.py`) and the common
chunk line in `CaptureLines.chunks` (`benchmarks/end_to_end.py`). The rest is plain Python.
"""

from __future__ import annotations

import binascii
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

from ._errors import CaptureError
from . import _fastjson
from ._fastjson import ACCELERATE_AFTER, common_line, common_lines, encode_string, loads, scan
from ._limits import CAPTURE_LINE_LIMIT, MAX_HEADERS, MAX_VALUES, PIECE, VALUES_COUNTED_FROM

__all__ = [
    "END_KINDS",
    "FORMAT",
    "Capture",
    "CaptureLines",
    "Chunk",
    "End",
    "Request",
    "Response",
    "capture_from_body",
    "capture_lines",
    "chunk_line",
    "chunk_lines",
    "dump_capture",
    "end_line",
    "header_line",
    "is_capture_header",
    "provide_answer_text",
    "read_header_line",
    "rfc3339",
]

FORMAT = "sse-capture/1"
END_KINDS = ("complete", "client-disconnected", "server-disconnected", "error")
Headers = tuple[tuple[str, str], ...]
BLOCK = 1 << 16
"""How much of a capture file `CaptureLines.chunks` reads at a time (then on to the end of a line)."""
_STRING_OR_SEPARATOR = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|([,:])')


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


_new = object.__new__
_set_t: Callable[[Chunk, float | None], None] = vars(Chunk)["t"].__set__  # the slots' descriptors
_set_data: Callable[[Chunk, bytes], None] = vars(Chunk)["data"].__set__


def _is_file(f: BinaryIO) -> bool:
    """Whether `f` reads a regular file (not a pipe, a terminal or a socket)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor (in memory), or closed
        return False


def _chunk_of(t: float | None, data: bytes) -> Chunk:
    """`Chunk(t, data)` at half its cost, for the loop that reads a capture's lines: a frozen dataclass's
    `__init__` sets each field through `object.__setattr__`; this sets its slots directly."""
    chunk = _new(Chunk)
    _set_t(chunk, t)
    _set_data(chunk, data)
    return chunk


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
        """The reconstructed answer text (first choice), in the detected dialect.

        Rebuilding the answer is the analysis layer's job, above this module: it hands its function
        down with `provide_answer_text` when it is imported (importing `sse_inspect` imports it).
        """
        if _answer_text is None:
            raise RuntimeError("Capture.text needs the analysis layer: import sse_inspect (or sse_inspect._analysis)")
        return _answer_text(self)

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


_answer_text: Callable[[Capture], str] | None = None
"""What `Capture.text` calls: set by the analysis layer (`provide_answer_text`)."""


def provide_answer_text(function: Callable[[Capture], str]) -> None:
    """Make `Capture.text` call `function`: how the analysis layer, which builds on this module,
    gives the capture values their one derived property without this module importing it."""
    global _answer_text
    _answer_text = function


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
        import base64  # (here: binary chunks only; a command reading a text capture starts without it)

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
    return "".join(capture_lines(capture, recorded_at=recorded_at))


def capture_lines(capture: Capture, *, recorded_at: str | None = None) -> Iterator[str]:
    """The lines of `dump_capture(capture)`, one at a time: a big capture is written without its text held whole."""
    extra = dict(capture.extra)
    if not capture.timed:
        extra["timed"] = False
    yield header_line(
        request=capture.request,
        response=capture.response,
        recorded_at=recorded_at or capture.recorded_at,
        recorder=capture.recorder or "sse-inspect",
        extra=extra,
    )
    for c in capture.chunks:
        yield chunk_line(c.t, c.data)
    if capture.end is not None:
        yield end_line(capture.end.kind, capture.end.t, capture.end.error)


_ODD = bytes(c for c in range(32) if c not in b"\t\n\r")
"""The control characters JSON writes as \\b, \\f or \\u00XX; NUL, one of them, separates the chunks."""
_ESCAPES = ((b"\\", b"\\\\"), (b'"', b'\\"'), (b"\n", b"\\n"), (b"\r", b"\\r"), (b"\t", b"\\t"))
"""JSON's escapes of the other characters, backslash first."""
_LINE = b'{"t": %.6f, "text": "'


def chunk_lines(times: Sequence[float], datas: Sequence[bytes]) -> bytes:
    """The lines of many chunks, in UTF-8, as `chunk_line` writes them, at a third to two thirds of its cost.

    When each chunk is UTF-8 on its own and holds no control character but tab, LF and CR (an
    event stream, nearly always), all of them are escaped at once, as bytes: joined with NUL, one
    `bytes.replace` per character to escape, then NUL replaced by the end of a line and the start
    of the next. The time is `%.6f` (the same number as `chunk_line`'s `round(t, 6)`, with
    trailing zeros), formatted once when all the chunks have the same (the recorder gives the
    chunks of one event-loop iteration one time), else one `%` with all of them. Otherwise
    `chunk_line` writes them all.
    """
    joined = b"\x00".join(datas)
    if len(joined.translate(None, _ODD)) != len(joined) - len(datas) + 1 or not _is_utf8(joined):
        return "".join(map(chunk_line, times, datas)).encode()
    for char, escaped in _ESCAPES:
        joined = joined.replace(char, escaped)
    if times.count(times[0]) == len(times):
        line = _LINE % times[0]
        return b"".join((line, joined.replace(b"\x00", b'"}\n' + line), b'"}\n'))
    joined = joined.replace(b"%", b"%%")
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


def rfc3339(when: datetime) -> str:
    """A time as a capture's `recorded_at` writes it (UTC, microseconds)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- reading ---------------------------------------------------------------------------


def is_capture_header(first: bytes) -> bool:
    """Whether the first line of a file looks like an sse-capture/1 header (then `CaptureLines` reads it)."""
    return first.lstrip().startswith(b"{") and b'"format"' in first


class CaptureLines:
    """The sse-capture/1 grammar, read line by line: `head` from the first line, then `chunks(rest)`.

    `chunks` reads the common line, `{"t": float, "text": str}`, with the C JSON scanner and a few
    type checks (about twice as fast as the general path, which every other line takes and which
    says what is wrong with a bad one): loading a long capture is benchmarked
    (`benchmarks/end_to_end.py`).
    """

    def __init__(self, first: bytes, path: str | None) -> None:
        self.path = path
        self.warnings: list[str] = []
        self.end: End | None = None
        if _too_many_values(first):
            raise CaptureError(f"the header line holds more than {MAX_VALUES:,} JSON values: not a capture's header",
                               path=path, line=1)  # fmt: skip
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
            request=_request(header.get("request"), path, self.warnings),
            response=_response(header.get("response"), path, self.warnings),
            recorded_at=_opt_str(header.get("recorded_at")),
            recorder=_opt_str(header.get("recorder")),
            timed=header.get("timed", True) is not False,
            path=path,
            extra={k: v for k, v in header.items() if k not in known},
        )

    def chunks(self, f: BinaryIO) -> Iterator[Chunk]:
        """The chunk lines of `f` (read from just after the header line), none longer than CAPTURE_LINE_LIMIT."""
        for block in self.blocks(f):
            yield from block

    def blocks(self, f: BinaryIO) -> Iterator[list[Chunk]]:
        """`chunks`, a block's at a time (a list per block read, never empty): a long capture's per-chunk
        work then runs in loops over lists rather than through generator layers.

        `f` is read a block at a time (`BLOCK`, then on to the end of the line the block cut, up to the
        limit). When the compiled JSON reader is in use (`_fastjson`) and a block's lines are all common
        ones, `{"t": float, "text": str}`, they are read in one call (`_fastjson.common_lines`); any other block line by line (`_line`).
        """
        # A file is read BLOCK bytes at a time; a pipe (a live recording), what is there (`read1`): its lines are
        # not held back. (Not `read1` on a file: after the `readline` that ends a block's last line, it would
        # give only what the reader's buffer holds, a few KiB, and every block would be that small.)
        read = f.read if _is_file(f) else getattr(f, "read1", f.read)
        limit = CAPTURE_LINE_LIMIT
        size = min(BLOCK, limit)  # (a block holds no line over the limit)
        number = 2  # the number of the next line
        while block := read(size):
            cut = block.rfind(b"\n") + 1
            rest = b""
            if cut < len(block):  # the last line goes on past the block: read on to its end
                rest = block[cut:]
                block = block[:cut]
                rest += f.readline(limit - len(rest))
            out: list[Chunk] = []
            if block:
                lines = common_lines(block) if self.end is None else None
                if lines is not None:
                    out = [_chunk_of(line.t, line.text.encode("utf-8", "surrogatepass")) for line in lines]
                    number += len(lines)
                else:
                    if number > ACCELERATE_AFTER:  # a long capture: worth loading the compiled reader
                        _fastjson.accelerate()
                    try:
                        for raw in block.split(b"\n")[:-1]:
                            chunk = self._line(raw + b"\n", number, f)
                            number += 1
                            if chunk is not None:
                                out.append(chunk)
                    except CaptureError:  # a bad line: the chunks before it are read, as a line at a time would
                        if out:
                            yield out
                        raise
            if rest:
                try:
                    chunk = self._line(rest, number, f)
                except CaptureError:
                    if out:
                        yield out
                    raise
                number += 1
                if chunk is not None:
                    out.append(chunk)
            if out:
                yield out

    def _line(self, raw: bytes, number: int, f: BinaryIO) -> Chunk | None:
        """The chunk of line `number`, `raw` (its newline included, unless it is the last line or at the
        limit, when `f` holds the rest of it), or None when it holds none: a warning says why when that was
        not an end line or a blank one."""
        if len(raw) > VALUES_COUNTED_FROM and _too_many_values(raw):
            more = _skip_line(f) if len(raw) == CAPTURE_LINE_LIMIT and not raw.endswith(b"\n") else 0
            self.warnings.append(f"line {number}: a chunk line holding more than {MAX_VALUES:,} JSON values was "
                                 f"skipped ({len(raw) + more:,} bytes): a chunk line holds a few")  # fmt: skip
            return None
        if self.end is None and raw[-1:] == b"\n":  # the common line, read as `_chunk` would
            common = common_line(raw)  # the compiled reader's, when in use
            if common is not None:
                return Chunk(common[0], common[1].encode("utf-8", "surrogatepass"))
            try:  # the standard way, `{"t": float, "text": str}` and its newline
                line = raw.decode("utf-8")
                obj, stop = scan(line, 0)
                t, text = obj["t"], obj["text"]
                if line[stop:] == "\n" and type(text) is str and type(t) is float and len(obj) == 2 and math.isfinite(t):
                    return Chunk(t, text.encode("utf-8", "surrogatepass"))
            except (ValueError, StopIteration, LookupError, TypeError, RecursionError):
                pass  # anything else: read it the long way, which says what is wrong
        if len(raw) == CAPTURE_LINE_LIMIT and not raw.endswith(b"\n"):  # over the limit, or the last one at it
            more = _skip_line(f)
            if more:
                self.warnings.append(f"line {number}: a chunk line over {_mib(CAPTURE_LINE_LIMIT)} was skipped "
                                     f"({CAPTURE_LINE_LIMIT + more:,} bytes): capture lines are at most "
                                     f"{_mib(CAPTURE_LINE_LIMIT)}")  # fmt: skip
                return None
        if not raw.strip():
            return None
        obj = _load_line(raw, number, self.path, last=not raw.endswith(b"\n"), warnings=self.warnings)
        if obj is None:
            return None
        if self.end is not None:
            self.warnings.append(f"line {number}: ignored, it follows the end line")
        elif "end" in obj:
            self.end = _end(obj, number, self.path)
        else:
            return _chunk(obj, number, self.path)
        return None


def read_header_line(f: BinaryIO, first: bytes, path: str | None) -> bytes:
    """The rest of a header line that began with `first` (read without its newline), up to CAPTURE_LINE_LIMIT;
    a longer one is a CaptureError, read no further."""
    if first.endswith(b"\n") or len(first) > CAPTURE_LINE_LIMIT:
        rest = b""
    else:
        rest = f.readline(CAPTURE_LINE_LIMIT + 1 - len(first))
    if len(first) + len(rest) > CAPTURE_LINE_LIMIT:
        raise CaptureError(f"the header line is longer than {_mib(CAPTURE_LINE_LIMIT)}, the most a capture line may be",
                           path=path, line=1)  # fmt: skip
    return first + rest


def _too_many_values(raw: bytes) -> bool:
    """Whether a line holds more than MAX_VALUES JSON values: more commas and colons outside its strings.
    They are counted with strings and all first: a line with few is let through without looking at its
    strings (a prompt's text, a base64 image); else the strings are skipped, one match each, and the
    count stops once past the limit."""
    if len(raw) <= VALUES_COUNTED_FROM or raw.count(b",") + raw.count(b":") <= MAX_VALUES:
        return False
    separators = 0
    for match in _STRING_OR_SEPARATOR.finditer(raw):
        if match.lastindex:  # a comma or colon, not a string
            separators += 1
            if separators > MAX_VALUES:
                return True
    return False


def _skip_line(f: BinaryIO) -> int:
    """Read `f` on to the end of the current line, in pieces; the bytes read."""
    skipped = 0
    while piece := f.readline(PIECE):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def _mib(size: int) -> str:
    """64 MiB, or a size that is not whole MiB in bytes."""
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size:,} bytes"


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


def _headers(value: Any, where: str, path: str | None, warnings: list[str]) -> Headers:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(h, list | tuple) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in value
    ):
        raise CaptureError(f"{where}.headers must be a list of [name, value] string pairs", path=path, line=1)
    if len(value) > MAX_HEADERS:
        warnings.append(f"line 1: {where} has {len(value):,} headers; the first {MAX_HEADERS:,} are kept")
    return tuple((name, val) for name, val in value[:MAX_HEADERS])


def _time(value: Any, what: str, path: str | None, line: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CaptureError(f"{what} must be a number of seconds, not {value!r}", path=path, line=line)
    return float(value)


def _request(value: Any, path: str | None, warnings: list[str]) -> Request | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CaptureError("request must be an object", path=path, line=1)
    body = value.get("body")
    return Request(
        method=str(value.get("method", "GET")),
        url=str(value.get("url", "")),
        http_version=str(value.get("http_version", "HTTP/1.1")),
        headers=_headers(value.get("headers"), "request", path, warnings),
        body=body if isinstance(body, str) else None,
    )


def _response(value: Any, path: str | None, warnings: list[str]) -> Response | None:
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
        headers=_headers(value.get("headers"), "response", path, warnings),
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
        import base64  # (see chunk_line)

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
