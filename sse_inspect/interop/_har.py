"""HAR 1.2 (Chrome and Firefox DevTools, mitmproxy's `hardump`, Charles): read and write.

A HAR keeps a response's body whole and decoded (`content.text`, base64 when binary), so an
imported entry is untimed (its body cut in chunks of about 1 MiB, as a raw body is read), and its
Content-Encoding header is left out (named in the capture's `decoded` key) since the stored body
is no longer encoded; `content.size` tells a UTF-8 text from mitmproxy's latin-1 one (its guess
for a text/* body without a charset). `startedDateTime`, `time` and `timings` go to the capture's
`har` key. An entry saved without its body (no `content.text`, though
`content.size` says it had bytes or it is an event stream) is marked `BODY_MISSING`, and reading it
as a stream is an error naming the entry (`require_body`), never a complete, empty stream.

`write_har` adds two fields that HAR allows for extensions (a leading underscore) and other tools
ignore: `_sseChunks`, the body as it crossed the wire, one `[t, base64]` pair per chunk (`t` in
seconds since the request was sent, or null), and `_sseCapture`, the rest of the capture (format,
recorded_at, recorder, timed, response_t, end, extra). An entry that has them reads back exactly.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .._capture import END_KINDS, FORMAT, Capture, Chunk, End, Request, Response
from .._decoding import body_chunks
from .._errors import CaptureError
from .._format import json_visible
from .._limits import PIECE
from .._version import __version__
from ._common import Found, capture_meta, end_from_error

__all__ = ["BODY_MISSING", "looks_like_har", "read_har", "require_body", "write_har"]


BODY_MISSING = "har_body_missing"
"""The `extra` key of an entry whose response body the HAR does not hold (no `content.text`): it
is read as an empty body, but `require_body` refuses to take it as a stream."""


def looks_like_har(data: bytes) -> dict[str, Any] | None:
    """The HAR document in `data`, or None when it is not one."""
    if data.lstrip()[:1] != b"{":
        return None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than any HAR is
        return None
    if isinstance(doc, dict) and isinstance(doc.get("log"), dict) and "entries" in doc["log"]:
        return doc
    return None


def read_har(doc: dict[str, Any], path: str | None) -> list[Found]:
    """Every entry of a HAR document, as a capture. Each body's text is taken out of `doc` as it is read."""
    log = doc["log"]
    entries = log["entries"]
    if not isinstance(entries, list):
        raise CaptureError("HAR log.entries is not a list", path=path)
    creator = log.get("creator") if isinstance(log.get("creator"), dict) else {}
    source = " ".join(str(creator[k]) for k in ("name", "version") if creator.get(k)) or "unknown tool"
    return [Found(i, _entry(entry, i, source, path)) for i, entry in enumerate(entries)]


def _entry(entry: Any, index: int, source: str, path: str | None) -> Capture:
    def fail(message: str) -> CaptureError:
        return CaptureError(f"HAR entry #{index}: {message}", path=path)

    if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
        raise fail("no request object")
    req, res = entry["request"], entry.get("response")
    if not isinstance(res, dict):
        raise fail("no response object")
    post = req.get("postData")
    request = Request(
        method=str(req.get("method", "GET")),
        url=str(req.get("url", "")),
        http_version=str(req.get("httpVersion", "HTTP/1.1")),
        headers=_headers(req.get("headers"), fail),
        body=post["text"] if isinstance(post, dict) and isinstance(post.get("text"), str) else None,
    )
    status = res.get("status", 0)
    if isinstance(status, bool) or not isinstance(status, int):
        raise fail(f"response.status is not an integer: {status!r}")
    headers = _headers(res.get("headers"), fail)
    own = entry.get("_sseCapture")
    if isinstance(own, dict) and own.get("format") == FORMAT:
        return _own(entry, own, request, Response(
            status=status, reason=str(res.get("statusText", "")), http_version=str(res.get("httpVersion", "")),
            headers=headers, t=own.get("response_t"),
        ), fail, path)  # fmt: skip
    timings: dict[str, Any] = entry["timings"] if isinstance(entry.get("timings"), dict) else {}
    extra: dict[str, Any] = {"har": {k: entry[k] for k in ("startedDateTime", "time", "timings") if k in entry}}
    encoding = next((v for k, v in headers if k.lower() == "content-encoding"), None)
    if encoding is not None:
        headers = tuple((k, v) for k, v in headers if k.lower() != "content-encoding")
        extra["decoded"] = encoding
    content = res.get("content")
    if _body_missing(content, headers):
        extra[BODY_MISSING] = True
    body = _content(content, fail)
    error = res.get("_error")
    waited = _ms(timings, "send", "wait")
    received = _ms(timings, "send", "wait", "receive")
    return Capture(
        chunks=tuple(Chunk(None, piece) for piece in body),
        request=request,
        response=Response(
            status=status,
            reason=str(res.get("statusText", "")),
            http_version=str(res.get("httpVersion", "")),
            headers=headers,
            t=waited,
        ),
        end=end_from_error(error, received) if isinstance(error, str) and error else End(kind="complete", t=received),
        recorded_at=entry.get("startedDateTime") if isinstance(entry.get("startedDateTime"), str) else None,
        recorder=f"HAR import ({source}); untimed: a HAR keeps the whole body, no per-chunk arrival times",
        timed=False,
        path=path,
        extra=extra,
    )


def _own(entry: dict[str, Any], own: dict[str, Any], request: Request, response: Response, fail: Any,
         path: str | None) -> Capture:  # fmt: skip
    """An entry written by `write_har`: its chunks and capture fields, exactly."""
    chunks = []
    for pair in entry.get("_sseChunks") or []:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
            raise fail("_sseChunks holds something other than [t, base64] pairs")
        try:
            chunks.append(Chunk(pair[0], base64.b64decode(pair[1], validate=True)))
        except (binascii.Error, ValueError):
            raise fail("_sseChunks holds invalid base64") from None
    end = own.get("end")
    if end is not None and (not isinstance(end, dict) or end.get("kind") not in END_KINDS):
        raise fail(f"_sseCapture.end is not a valid end: {end!r}")
    return Capture(
        chunks=tuple(chunks),
        request=request,
        response=response,
        end=None if end is None else End(kind=end["kind"], t=end.get("t"), error=end.get("error")),
        recorded_at=own.get("recorded_at"),
        recorder=own.get("recorder"),
        timed=own.get("timed", True) is not False,
        path=path,
        extra=dict(own.get("extra") or {}),
    )


def _headers(value: Any, fail: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(h, dict) and isinstance(h.get("name"), str) and isinstance(h.get("value"), str) for h in value
    ):
        raise fail("headers must be a list of {name, value} string objects")
    return tuple((h["name"], h["value"]) for h in value)


def _body_missing(content: Any, headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether the HAR left the response body out: no `content.text`, though the body was not empty
    (`content.size` above 0) or is an event stream (DevTools often keep no body for a stream)."""
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return False
    size = content.get("size") if isinstance(content, dict) else None
    ctype = next((v for k, v in headers if k.lower() == "content-type"), "")
    return (isinstance(size, int) and size > 0) or ctype.split(";")[0].strip().lower() == "text/event-stream"


def require_body(found: Found, path: str | None) -> None:
    """Raise a CaptureError when `found` is a HAR entry whose body the HAR does not hold: reading it
    as a stream would show a complete, empty one."""
    if not found.capture.extra.get(BODY_MISSING):
        return
    raise CaptureError(
        f"HAR entry {found.label()} has no body: the HAR holds no response.content.text for it; save the HAR "
        "again with bodies (Chrome: Network panel, right-click, \"Save all as HAR with content\"; Firefox: "
        "\"Save All As HAR\"), or record the stream with `sse-inspect fetch` or `sse-inspect record`",
        path=path,
    )


def _content(content: Any, fail: Any) -> list[bytes]:
    """The body in pieces of `PIECE` bytes or so (none when empty). The text is taken out of
    `content` and let go once cut, so a big body is held as text and as bytes only while it is cut."""
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return []
    text: str = content.pop("text")
    if content.get("encoding") == "base64":
        return _base64_pieces(text, fail)
    body = _pieces(text, "utf-8")
    # content.size is the body's length in bytes (mitmproxy writes the wire length there and the
    # difference in `compression`). A text that is not that long in UTF-8 was decoded otherwise:
    # mitmproxy takes a text/* body without a charset as latin-1.
    sizes = {
        n for n in (content.get("size"), _sum(content.get("size"), content.get("compression"))) if isinstance(n, int)
    }
    if sizes and sum(map(len, body)) not in sizes and len(text) in sizes:  # a latin-1 body is as long as its text
        try:
            return _pieces(text, "latin-1")
        except UnicodeEncodeError:
            pass
    return body


def _pieces(text: str, encoding: str) -> list[bytes]:
    return [text[i : i + PIECE].encode(encoding, "surrogatepass") for i in range(0, len(text), PIECE)]


def _base64_pieces(text: str, fail: Any) -> list[bytes]:
    """Base64 decoded a piece at a time (4 characters make 3 bytes): as strict as decoding it whole,
    padding only at the very end."""
    step = PIECE // 3 * 4
    pieces = []
    for i in range(0, len(text), step):
        part = text[i : i + step]
        try:
            if "=" in part and i + step < len(text):
                raise ValueError("padding before the end")
            pieces.append(base64.b64decode(part, validate=True))
        except (binascii.Error, ValueError):
            raise fail("response.content.text is not valid base64") from None
    return [piece for piece in pieces if piece]


def _sum(a: Any, b: Any) -> int | None:
    return a + b if isinstance(a, int) and isinstance(b, int) else None


def _ms(timings: dict[str, Any], *names: str) -> float | None:
    values = [timings.get(n) for n in names]
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0]
    return round(sum(numbers) / 1000, 6) if len(numbers) == len(values) else None


# -- writing ---------------------------------------------------------------------------


def write_har(capture: Capture) -> str:
    """`capture` as a HAR 1.2 document of one entry, with `_sseChunks` and `_sseCapture`."""
    request, response = capture.request, capture.response
    if request is None or response is None:
        raise CaptureError("a raw body has no request or response to write as a HAR entry", path=capture.path)
    decoded = b"".join(c.data for c in body_chunks(capture))
    content: dict[str, Any] = {"size": len(decoded), "mimeType": response.header("content-type") or ""}
    try:
        content["text"] = decoded.decode("utf-8")
    except UnicodeDecodeError:
        content.update(text=base64.b64encode(decoded).decode("ascii"), encoding="base64")
    end = capture.end
    last = end.t if end is not None and end.t is not None else capture.duration
    wait = response.t or 0.0
    entry: dict[str, Any] = {
        "startedDateTime": capture.recorded_at or "1970-01-01T00:00:00.000Z",
        "time": round((last or wait) * 1000, 3),
        "request": {
            "method": request.method,
            "url": request.url,
            "httpVersion": request.http_version,
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in request.headers],
            "queryString": [
                {"name": k, "value": v} for k, v in parse_qsl(_query(request.url), keep_blank_values=True)
            ],
            "headersSize": -1,
            "bodySize": len(request.body.encode("utf-8", "surrogatepass")) if request.body is not None else 0,
        },
        "response": {
            "status": response.status,
            "statusText": response.reason,
            "httpVersion": response.http_version,
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in response.headers],
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(capture.body),
        },
        "cache": {},
        "timings": {
            "send": 0,
            "wait": round(wait * 1000, 3),
            "receive": round(max((last or wait) - wait, 0) * 1000, 3),
        },
        "_sseChunks": [[c.t, base64.b64encode(c.data).decode("ascii")] for c in capture.chunks],
        "_sseCapture": {"format": FORMAT, **capture_meta(capture)},
    }
    if request.body is not None:
        entry["request"]["postData"] = {"mimeType": request.header("content-type") or "", "text": request.body}
    doc = {"log": {"version": "1.2", "creator": {"name": "sse-inspect", "version": __version__}, "entries": [entry]}}
    return json_visible(json.dumps(doc, ensure_ascii=False, indent=2)) + "\n"  # nothing a terminal acts on


def _query(url: str) -> str:
    """The query of `url`; none when it does not parse (a hostile `http://[::1/v1`)."""
    try:
        return urlsplit(url).query
    except ValueError:
        return ""
