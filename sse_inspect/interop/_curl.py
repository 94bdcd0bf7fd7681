"""curl's `--trace FILE` and `--trace-ascii FILE` output, with `--trace-time` timestamps: read and write.

What curl 7.88 writes (`tool_cb_dbg.c`), one block per callback:

    04:16:13.918992 => Send header, 186 bytes (0xba)
    0000: 50 4f 53 54 20 2f 73 3f 6b 65 79 3d 7a 7a 20 48 POST /s?key=zz H      (--trace: 16 bytes a line)
    0000: POST /s?key=zz HTTP/1.1                                              (--trace-ascii: up to 64)
    04:16:13.924369 <= Recv data, 18 bytes (0x12)
    04:16:14.076561 == Info: Connection #0 to host 127.0.0.1 left intact

curl 8 writes the same blocks, and ends a body with an empty one, `<= Recv data, 0 bytes (0x0)`
with no dump lines: no chunk.

- The timestamp (`HH:MM:SS.uuuuuu`, local time, no date) is there only with `--trace-time`; a
  chunk's `t` is its "Recv data" time minus the first "Send header" time of its request.
- "Recv data" holds the bytes as read from the socket: an HTTP/1.1 chunked body still has its
  chunk framing (`d\\r\\ndata: hello\\n\\n\\r\\n`), which is removed here, each byte staying in the
  block it arrived in. "Recv header" is one header line per block.
- `--trace` gives exact bytes (the hex columns). `--trace-ascii` prints bytes 0x20-0x7e as they
  are, a CR LF pair as the end of the dump line, and every other byte as `.`: an LF, a lone CR,
  a tab and each byte of a non-ASCII character all look like a real `.`. Such a body is rebuilt
  with a guess (below), marked in the capture's `lossy` key and its recorder.
- How the transfer ended is told by Info lines: "left intact" (complete), "Closing connection"
  (a close-delimited body's end; curl 8.10+ says "shutting down connection #0"), "Recv failure:
  ...", "transfer closed with outstanding read data remaining" (the server cut it), "Operation
  timed out ..." (an error). A trace that just stops (curl killed) has no end line.

`write_curl_trace` writes the `--trace` form, plus one `== Info: [sse-inspect] {...}` line with
what curl's trace has no place for (URL scheme, recorded_at, recorder, the end line, unknown keys),
so that export and import round-trip exactly.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from .._capture import END_KINDS, Capture, Chunk, End, Request, Response
from .._errors import CaptureError
from .._format import json_visible, visible
from ._common import Found, capture_meta, end_from_error, is_chunked

__all__ = ["looks_like_curl_trace", "read_curl_trace", "write_curl_trace"]

_STAMP = r"(?:(\d\d):(\d\d):(\d\d)\.(\d{6}) )?"
_KINDS = r"(=> Send header|=> Send data|<= Recv header|<= Recv data|=> Send SSL data|<= Recv SSL data)"
_BLOCK = re.compile(_STAMP + _KINDS + r", (\d+) bytes \(0x[0-9a-f]+\)$")
_INFO = re.compile(_STAMP + r"== Info: (.*)$")
_DUMP = re.compile(r"([0-9a-f]{4,}): (.*)$")
_FIRST = re.compile(rb"(?:\d\d:\d\d:\d\d\.\d{6} )?(?:== Info: |=> Send |<= Recv )")
LOSSY = (
    "curl --trace-ascii prints every byte outside 0x20-0x7e as '.': line ends were guessed "
    "(a '.' run before an SSE field or at the end: its last one or two), other bytes stay '.'"
)
"""The capture's `lossy` key for an import from --trace-ascii."""
META = "[sse-inspect] "
"""The Info line that carries what a curl trace cannot hold."""
_DAY_US = 86_400_000_000

_SERVER_CUT = ("recv failure", "transfer closed with", "connection died", "end of response with", "closed abruptly",
               "was not closed cleanly", "connection reset", "unexpected eof", "stream error")  # fmt: skip
_CLIENT_LEFT = ("failed writing body", "callback aborted", "aborted by callback")
_FAILED = ("operation timed out", "chunked-encoding", "chunk hex-length", "error")

_SSE_LINE_END = re.compile(rb"\.+(?=(?:data|event|id|retry)?:|\Z)")
"""A run of `.` in a --trace-ascii body right before an SSE line (or at the body's end)."""


def looks_like_curl_trace(data: bytes) -> bool:
    """Whether `data` starts like curl's --trace / --trace-ascii output."""
    return _FIRST.match(data) is not None


@dataclass
class _Block:
    kind: str
    time: int | None
    """Microseconds since midnight, days carried over."""
    line: int
    data: bytes = b""
    exact: bool = True
    text: str = ""
    """An Info line's message."""


@dataclass
class _Exchange:
    sent: int | None
    head: bytes
    meta: dict[str, Any] | None
    tls: bool
    exact: bool
    """No block of the request was a --trace-ascii dump (the response body is judged on its own)."""
    body: bytes | None = None
    lines: list[bytes] = field(default_factory=list)
    """The response head so far, one header line per entry."""
    head_time: int | None = None
    done: bool = False
    """The final response head (not a 1xx) is complete."""
    data: list[_Block] = field(default_factory=list)
    infos: list[_Block] = field(default_factory=list)


def read_curl_trace(data: bytes, path: str | None) -> list[Found]:
    """Every request in the trace that got a response head, as a capture."""
    text = data.decode("utf-8", "surrogateescape")
    blocks = _blocks(text.split("\n"), path)
    exchanges: list[_Exchange] = []
    meta: dict[str, Any] | None = None
    tls = False
    for block in blocks:
        ex = exchanges[-1] if exchanges else None
        if block.kind == "== Info":
            if block.text.startswith(META):
                meta = _meta(block, path)
            elif ex is not None and ex.done:
                ex.infos.append(block)
            tls = tls or "SSL connection using" in block.text or "ALPN" in block.text
        elif block.kind == "=> Send header":
            exchanges.append(_Exchange(block.time, block.data, meta, tls, exact=block.exact))
            meta = None
        elif "SSL" in block.kind:
            tls = True
        elif ex is None:
            raise CaptureError(f"a curl trace whose {block.kind} comes before any request", path=path, line=block.line)
        elif block.kind == "=> Send data":
            ex.body = (ex.body or b"") + block.data
            ex.exact = ex.exact and block.exact
        elif block.kind == "<= Recv header":
            _head_line(ex, block)
        elif ex.done:
            ex.data.append(block)
    found = [
        Found(i, _capture(ex, path))
        for i, ex in enumerate(exchanges)
        if ex.done and not ex.head.startswith(b"CONNECT ")
    ]
    if not found:
        raise CaptureError("a curl trace without any response", path=path)
    return found


def _blocks(lines: list[str], path: str | None) -> list[_Block]:
    blocks: list[_Block] = []
    day, last = 0, -1
    i = 0

    def clock(m: re.Match[str]) -> int | None:
        nonlocal day, last
        if m.group(1) is None:
            return None
        us = ((int(m.group(1)) * 60 + int(m.group(2))) * 60 + int(m.group(3))) * 1_000_000 + int(m.group(4)) + day
        if us < last - _DAY_US // 2:  # the clock passed midnight
            day += _DAY_US
            us += _DAY_US
        last = us
        return us

    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if m := _INFO.match(line):
            blocks.append(_Block("== Info", clock(m), i, text=m.group(5)))
            continue
        m = _BLOCK.match(line)
        if m is None:
            raise CaptureError("not a curl --trace line", path=path, line=i)
        size, start = int(m.group(6)), i
        dump = []
        while i < len(lines) and (d := _DUMP.match(lines[i])):
            dump.append((int(d.group(1), 16), d.group(2)))
            i += 1
        block = _Block(m.group(5), clock(m), start)
        try:
            block.data = _hex(dump, size)
        except ValueError:
            try:
                block.data, block.exact = _ascii(dump, size), False
            except ValueError:
                raise CaptureError(f"the dump of this {block.kind} block does not add up to {size} bytes",
                                   path=path, line=start) from None  # fmt: skip
        blocks.append(block)
    return blocks


def _render(data: bytes) -> str:
    """The text column of curl's dump: bytes 0x20-0x7e as they are, anything else as `.`."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in data)


def _hex(dump: list[tuple[int, str]], size: int) -> bytes:
    """The bytes of a --trace dump (16 a line: hex, then the text column); ValueError if it is not one."""
    out = bytearray()
    for offset, rest in dump:
        if offset != len(out):
            raise ValueError
        row = bytes(int(h, 16) for h in rest[:48].split())
        if (
            not 0 < len(row) <= 16
            or rest[:48] != "".join(f"{b:02x} " for b in row).ljust(48)
            or rest[48:] != _render(row)
        ):
            raise ValueError
        out += row
    if len(out) != size:
        raise ValueError
    return bytes(out)


def _ascii(dump: list[tuple[int, str]], size: int) -> bytes:
    """The bytes of a --trace-ascii dump, `.` standing for any unprintable byte; ValueError if it is not one.

    A line ends at 64 characters or at a CR LF, which is not printed: the next line's offset says which.
    """
    out = bytearray()
    for n, (offset, rest) in enumerate(dump):
        following = dump[n + 1][0] if n + 1 < len(dump) else size
        if offset != len(out) or len(rest) > 64 or following - offset - len(rest) not in (0, 2):
            raise ValueError
        out += rest.encode("latin-1", "replace")
        if following - offset - len(rest) == 2:
            out += b"\r\n"
    if len(out) != size:
        raise ValueError
    return bytes(out)


def _meta(block: _Block, path: str | None) -> dict[str, Any]:
    try:
        meta = json.loads(block.text[len(META) :])
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise CaptureError("the [sse-inspect] Info line does not hold a JSON object", path=path, line=block.line)
    return meta


def _head_line(ex: _Exchange, block: _Block) -> None:
    line = block.data.rstrip(b"\r\n")
    if ex.done:  # trailers after a chunked body
        return
    if line.startswith(b"HTTP/"):
        ex.lines = [line]
    elif line:
        ex.lines.append(line)
    elif ex.lines:
        status = ex.lines[0].split(b" ", 2)
        if not (len(status) > 1 and status[1].startswith(b"1")):  # a 1xx head: the real one follows
            ex.done, ex.head_time = True, block.time


def _capture(ex: _Exchange, path: str | None) -> Capture:
    meta = ex.meta or {}
    lines = ex.head.decode("utf-8", "replace").split("\r\n")
    method, target, version = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = tuple(_header(line) for line in lines[1:] if line)
    host = next((v for k, v in headers if k.lower() in ("host", ":authority")), "")
    url = target if "://" in target else f"{'https' if ex.tls else 'http'}://{host}{target}"
    status_line = ex.lines[0].decode("utf-8", "replace").split(" ", 2) + [""]
    response = Response(
        status=int(status_line[1]) if status_line[1].isdigit() else 0,
        reason=status_line[2].strip(),
        http_version=status_line[0],
        headers=tuple(_header(line.decode("utf-8", "replace")) for line in ex.lines[1:]),
        t=meta.get("response_t", _seconds(ex.head_time, ex.sent)),
    )
    times = [_seconds(b.time, ex.sent) for b in ex.data]
    pieces = [b.data for b in ex.data]
    warnings: list[str] = []
    if is_chunked(response):
        pieces, broken = dechunk(pieces)
        if broken is not None:
            warnings.append(f"the chunked framing breaks at byte {broken} of the received data: the rest is left out")
    body_exact = all(b.exact for b in ex.data)
    exact = ex.exact and body_exact
    extra: dict[str, Any] = dict(meta.get("extra") or {})
    if not body_exact:
        pieces = _restore_line_ends(pieces)
    if not exact:
        extra["lossy"] = LOSSY
    timed = ex.sent is not None and meta.get("timed", True) is not False
    # A block left empty by the framing is no chunk, nor is an empty "Recv data" block of curl's own
    # (curl 8 ends a body with one); an empty block of our export is a capture's empty chunk.
    own = ex.meta is not None
    return Capture(
        chunks=tuple(Chunk(t, p) for t, p, b in zip(times, pieces, ex.data, strict=True) if p or (own and not b.data)),
        request=Request(
            method=method,
            url=meta.get("url", url),
            http_version=version,
            headers=headers,
            body=None if ex.body is None else ex.body.decode("utf-8", "replace"),
        ),
        response=response,
        end=_end(ex, meta, path),
        recorded_at=meta.get("recorded_at"),
        recorder=meta["recorder"] if "recorder" in meta else _recorder(timed, exact),
        timed=timed,
        path=path,
        warnings=tuple(warnings),
        extra=extra,
    )


def _recorder(timed: bool, exact: bool) -> str:
    source = "curl --trace import" if exact else "curl --trace-ascii import (lossy: unprintable bytes shown as '.')"
    if timed:
        return f"{source}; chunk times from curl's --trace-time"
    return f"{source}; untimed: the trace has no --trace-time timestamps"


def _header(line: str) -> tuple[str, str]:
    name, _, value = line.partition(":")
    return name.strip(), value.strip()


def _seconds(us: int | None, sent: int | None) -> float | None:
    return None if us is None or sent is None else round((us - sent) / 1e6, 6)


def _end(ex: _Exchange, meta: dict[str, Any], path: str | None) -> End | None:
    if "end" in meta:
        end = meta["end"]
        if end is None:
            return None
        if not isinstance(end, dict) or end.get("kind") not in END_KINDS:
            raise CaptureError(f"the [sse-inspect] Info line has a bad end: {end!r}", path=path)
        return End(kind=end["kind"], t=end.get("t"), error=end.get("error"))
    for info in ex.infos:
        message = info.text.strip()
        lower = message.lower()
        t = _seconds(info.time, ex.sent)
        if any(p in lower for p in _SERVER_CUT):
            return End(kind="server-disconnected", t=t, error=message)
        if any(p in lower for p in _CLIENT_LEFT):
            return End(kind="client-disconnected", t=t, error=message)
        if any(p in lower for p in _FAILED):
            return end_from_error(message, t)
        if "left intact" in lower or lower.startswith(("closing connection", "shutting down connection")):
            return End(kind="complete", t=t)
    return None


def dechunk(blocks: list[bytes]) -> tuple[list[bytes], int | None]:
    """The payload of each block of a chunked body (framing removed, each byte in the block that
    brought it), and the offset where the framing broke, if it did."""
    raw = b"".join(blocks)
    segments: list[tuple[int, int]] = []
    pos, broken = 0, None
    while pos < len(raw):
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            break  # cut inside a size line
        try:
            size = int(raw[pos:eol].split(b";")[0], 16)
        except ValueError:
            broken = pos
            break
        if size == 0:
            break
        segments.append((eol + 2, min(eol + 2 + size, len(raw))))
        pos = eol + 2 + size + 2
    out, start = [], 0
    for block in blocks:
        end = start + len(block)
        out.append(b"".join(raw[max(s, start) : min(e, end)] for s, e in segments if s < end and e > start))
        start = end
    return out, broken


def _restore_line_ends(pieces: list[bytes]) -> list[bytes]:
    """Guess the LFs of a --trace-ascii event stream: in a run of `.` right before an SSE line
    (`data:`, `event:`, `id:`, `retry:`, `:`) or at the end, the last one is a line end, and the last
    two when the run is longer (an event's end). Lengths stay, so the cuts stay."""
    body = _SSE_LINE_END.sub(lambda m: m.group()[:-2] + b"\n\n" if len(m.group()) > 1 else b"\n", b"".join(pieces))
    out, start = [], 0
    for piece in pieces:
        out.append(body[start : start + len(piece)])
        start += len(piece)
    return out


# -- writing ---------------------------------------------------------------------------


def write_curl_trace(capture: Capture) -> str:
    """`capture` as curl's `--trace` output (with `--trace-time` when it is timed)."""
    request, response = capture.request, capture.response
    if request is None or response is None:
        raise CaptureError("a raw body has no request or response to write as a curl trace", path=capture.path)
    timed = capture.timed and all(c.t is not None for c in capture.chunks)
    base = _base(capture.recorded_at)
    out: list[str] = []

    def stamp(t: float | None) -> str:
        if not timed:
            return ""
        micros = (t or 0.0) * 1e6
        us = (base + (round(micros) if math.isfinite(micros) else 0)) % _DAY_US  # (a hostile t=1e308: midnight)
        return f"{us // 3_600_000_000:02d}:{us // 60_000_000 % 60:02d}:{us // 1_000_000 % 60:02d}.{us % 1_000_000:06d} "

    def block(kind: str, t: float | None, data: bytes) -> None:
        out.append(f"{stamp(t)}{kind}, {len(data)} bytes (0x{len(data):x})\n")
        for i in range(0, len(data), 16):
            row = data[i : i + 16]
            out.append(f"{i:04x}: {''.join(f'{b:02x} ' for b in row).ljust(48)}{_render(row)}\n")

    end = capture.end
    meta = {"url": request.url, **capture_meta(capture)}
    out.append(f"{stamp(0.0)}== Info: {META}{json_visible(json.dumps(meta, ensure_ascii=False))}\n")
    target = _target(request.url)
    head = [f"{request.method} {target} {request.http_version}", *(f"{k}: {v}" for k, v in request.headers), "", ""]
    block("=> Send header", 0.0, "\r\n".join(head).encode())
    if request.body is not None:
        block("=> Send data", 0.0, request.body.encode("utf-8", "surrogatepass"))
    for line in [
        f"{response.http_version} {response.status} {response.reason}",
        *(f"{k}: {v}" for k, v in response.headers),
        "",
    ]:
        block("<= Recv header", response.t, line.encode() + b"\r\n")
    chunked = is_chunked(response)
    for chunk in capture.chunks:
        framed = chunked and chunk.data  # an empty HTTP chunk would end the body
        block("<= Recv data", chunk.t, b"%x\r\n%s\r\n" % (len(chunk.data), chunk.data) if framed else chunk.data)
    last = end.t if end is not None else capture.chunks[-1].t if capture.chunks else response.t
    if end is not None and end.kind == "complete":
        if chunked:
            block("<= Recv data", last, b"0\r\n\r\n")
        try:
            host = visible(urlsplit(request.url).netloc.rpartition("@")[2])
        except ValueError:  # a hostile `http://[::1/v1`
            host = "?"
        out.append(f"{stamp(last)}== Info: Connection #0 to host {host} left intact\n")
    elif end is not None:
        said = visible((end.error or end.kind).replace("\n", "\\n"))  # one line, nothing a terminal acts on: the
        out.append(f"{stamp(last)}== Info: {said}\n{stamp(last)}== Info: Closing connection 0\n")  # meta has it exact
    return "".join(out)


def _base(recorded_at: str | None) -> int:
    """The time of day of `recorded_at` in microseconds (UTC), the clock of the trace; 0 if unknown."""
    try:
        when = datetime.fromisoformat(recorded_at or "")
    except ValueError:
        return 0
    return ((when.hour * 60 + when.minute) * 60 + when.second) * 1_000_000 + when.microsecond


def _target(url: str) -> str:
    """The request target of `url`: its path and query."""
    m = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*([^#]*)", url)
    target = m.group(1) if m else url
    return target if target.startswith("/") else "/" + target
