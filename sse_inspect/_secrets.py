"""Secrets in captures: find them (the `secret-in-capture` check) and take them out (`sse-inspect redact`).

Credentials are found by name (headers, query parameters, JSON fields of the request body: the
lists of `_redact`) and by pattern, anywhere: OpenAI `sk-...`, Anthropic `sk-ant-...`, Google
`AIza...` keys and JWTs (`eyJ...`.`eyJ...`.`...`, bearer tokens). Both become `[REDACTED]`. The
recorder redacts with the same functions as it writes (`redact_request`, `redact_headers`,
`StreamRedactor`), and the `secret-in-capture` check looks for the same set, so what one misses
the other misses too, and a test of one is a test of both.

The body is redacted as one string, so a token split across chunks is found; the chunks are then cut
again at the same places, a cut inside a token landing at the same distance into `[REDACTED]` (or at
its end). Bytes outside the tokens, the number of chunks and their times never change (a compressed
body with a token in it is the exception: see `redact_capture`).
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from urllib.parse import parse_qsl, urlsplit

from ._capture import Capture, Chunk, Request
from ._decoding import body_chunks
from ._events import Notice
from ._redact import REDACTED, Redactor

__all__ = [
    "BodyScanner",
    "Leak",
    "Redactions",
    "StreamRedactor",
    "find_secrets",
    "header_secrets",
    "redact_capture",
    "redact_headers",
    "redact_request",
    "redact_text",
]

_TOKEN = (
    r"(?:(?<![A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"|(?<![A-Za-z0-9_+/-])AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"
)
"""A key or token standing on its own: not the middle of a longer word, nor (AIza) of a base64 blob."""
TOKEN = re.compile(_TOKEN)
TOKEN_BYTES = re.compile(_TOKEN.encode())
_REDACTED_BYTES = REDACTED.encode()
_TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
_LONGEST = 1 << 12
"""The longest token a body scanner holds back for (a longer one is found cut)."""
_STARTS = (b"sk-", b"eyJ", b"AIza")
"""How every token begins."""
_LOOK_FOR = ((b"sk-", None), (b"eyJ", 2), (b"AIza", 2))
"""The starts, each with where it has a byte seldom seen in LLM text and its JSON (J, z), if it has one."""


def _kind(token: str | bytes) -> str:
    head = token[:7] if isinstance(token, str) else token[:7].decode("ascii")
    if head.startswith("sk-ant-"):
        return "Anthropic key (sk-ant-...)"
    if head.startswith("sk-"):
        return "OpenAI-style key (sk-...)"
    if head.startswith("AIza"):
        return "Google API key (AIza...)"
    return "JWT (eyJ...)"


@dataclass(frozen=True, slots=True)
class Leak:
    """One secret found in a capture; never the secret itself."""

    where: str
    """e.g. "request header Authorization", "response body"."""
    kind: str
    offset: int | None = None
    """Byte offset in the (content-decoded) response body, or character offset in the request body."""

    def __str__(self) -> str:
        at = (
            f" at {'character' if self.where == 'request body' else 'byte'} {self.offset}"
            if self.offset is not None
            else ""
        )
        return f"{self.kind} in the {self.where}{at}"


@dataclass(frozen=True, slots=True)
class Redactions:
    """What `redact_capture` replaced."""

    headers: int = 0
    url_parts: int = 0
    tokens: int = 0

    @property
    def total(self) -> int:
        return self.headers + self.url_parts + self.tokens

    def __add__(self, other: Redactions) -> Redactions:
        return Redactions(self.headers + other.headers, self.url_parts + other.url_parts, self.tokens + other.tokens)

    def __str__(self) -> str:
        if not self.total:
            return "nothing to redact"
        parts = [(self.headers, "header value(s)"), (self.url_parts, "URL part(s)"), (self.tokens, "token(s)")]
        return ", ".join(f"{n} {what}" for n, what in parts if n) + " redacted"


def redact_text(text: str) -> tuple[str, int]:
    """`text` with every key or token replaced, and how many."""
    return TOKEN.subn(REDACTED, text)


def find_secrets(capture: Capture, body: bytes | None = None) -> list[Leak]:
    """Every secret left in `capture`: unredacted credential headers, query parameters and URL passwords,
    and tokens in the URL, any header, the request body or `body` (default: the capture's body)."""
    scanner = BodyScanner()
    for piece in [body] if body is not None else (c.data for c in capture.chunks):
        scanner.feed(piece)
    return header_secrets(capture) + scanner.close()


def header_secrets(capture: Capture) -> list[Leak]:
    """The secrets of `find_secrets` outside the response body."""
    leaks: list[Leak] = []
    names = Redactor().headers
    for side, message in (("request", capture.request), ("response", capture.response)):
        if message is None:
            continue
        for name, value in message.headers:
            if name.lower() in names and value.strip() and value != REDACTED:
                leaks.append(Leak(f"{side} header {name}", "unredacted credential"))
            elif match := TOKEN.search(value):
                leaks.append(Leak(f"{side} header {name}", _kind(match.group())))
    if capture.request is not None:
        leaks += _url_leaks(capture.request.url)
        body = capture.request.body or ""
        leaks += [Leak("request body", _kind(m.group()), m.start()) for m in TOKEN.finditer(body)]
        leaks += [Leak("request body", f"unredacted credential field {name}") for name in Redactor().field_leaks(body)]
    return leaks


class BodyScanner:
    """Finds the tokens of a response body fed piece by piece, holding only the bytes a token
    cut by a piece's end may continue from: a token split across pieces is found once."""

    def __init__(self) -> None:
        self._held = b""
        self._held_at = 0  # body offset of _held[0]
        self._from = 0  # where in _held the next search starts (before it: look-behind context)
        self._leaks: list[Leak] = []

    def feed(self, data: bytes) -> None:
        buf = self._held + data if self._held else data
        end = len(buf)
        resume = end
        done = start = self._from
        # every token starts with one of these: searching for them first skips the pattern on most pieces (eyJ
        # and AIza by a byte seldom in LLM text, J and z, found by memchr: see `_contains`)
        maybe = any(_contains(buf, needle, start, rare) for needle, rare in _LOOK_FOR)
        for m in TOKEN_BYTES.finditer(buf, start) if maybe else ():
            if m.end() == end:  # it may go on in the next piece
                resume = m.start()
                break
            self._leaks.append(Leak("response body", _kind(m.group()), self._held_at + m.start()))
            done = m.end()
        if resume == end:  # a token may be starting at the end: hold its characters
            tail = buf[max(done, end - _LONGEST) :]
            resume = end - (len(tail) - len(tail.rstrip(_TOKEN_CHARS)))
        keep = max(resume - 1, 0)  # one byte more, for the look-behind
        self._held = buf[keep:]
        self._held_at += keep
        self._from = resume - keep

    def close(self) -> list[Leak]:
        """The tokens found, once the body is over."""
        self._leaks += [
            Leak("response body", _kind(m.group()), self._held_at + m.start())
            for m in TOKEN_BYTES.finditer(self._held, self._from)
        ]
        self._held = b""
        return self._leaks


def _url_leaks(url: str) -> list[Leak]:
    return _credential_url_leaks(url, Redactor()) + [Leak("request URL", _kind(m.group())) for m in TOKEN.finditer(url)]


def _credential_url_leaks(url: str, redactor: Redactor) -> list[Leak]:
    """Unredacted query parameters and password: what `Redactor.redact_url` replaces."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL urllib can split: only its tokens are looked for
        return []
    leaks = [Leak("request URL", "unredacted password")] if password not in (None, "", REDACTED) else []
    leaks += [
        Leak(f"request URL parameter {name}", "unredacted credential")
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name.lower() in redactor.params and value and value != REDACTED
    ]
    return leaks


def redact_capture(capture: Capture, redactor: Redactor | None = None) -> tuple[Capture, Redactions]:
    """`capture` with its secrets replaced by `[REDACTED]`, and what was replaced.

    A content-encoded body is searched decoded; when it holds a token it is stored decoded (its
    chunks as they decoded, same times), without its Content-Encoding header, and the capture's
    `decoded` extra key names the encoding it had on the wire.
    """
    redactor = redactor or Redactor()
    counts = Redactions()
    request, response = capture.request, capture.response
    if request is not None:
        request, counts = redact_request(request, redactor)
    extra = capture.extra
    chunks = capture.chunks
    encoding = (capture.content_encoding or "identity").strip().lower()
    if encoding != "identity" and response is not None:
        notices: list[Notice] = []
        decoded = tuple(body_chunks(capture, notices))
        if not notices and TOKEN_BYTES.search(b"".join(c.data for c in decoded)):
            chunks = decoded
            headers = tuple((k, v) for k, v in response.headers if k.lower() != "content-encoding")
            response = dataclasses.replace(response, headers=headers)
            extra = {**extra, "decoded": capture.content_encoding}
    if response is not None:
        headers, n, m = redact_headers(response.headers, redactor)
        response = dataclasses.replace(response, headers=headers)
        counts += Redactions(headers=n, tokens=m)
    chunks, n = _redact_chunks(chunks)
    counts += Redactions(tokens=n)
    if not counts.total:
        return capture, counts
    return dataclasses.replace(capture, request=request, response=response, chunks=chunks, extra=extra), counts


def redact_headers(
    headers: Iterable[tuple[str, str]], redactor: Redactor
) -> tuple[tuple[tuple[str, str], ...], int, int]:
    """`headers` with credential headers' values and every token replaced; how many of each."""
    headers = tuple(headers)
    if not redactor.enabled:
        return headers, 0, 0
    named = redactor.redact_headers(headers)
    changed = sum(a != b for a, b in zip(headers, named, strict=True))
    out, tokens = [], 0
    for name, value in named:
        value, n = redact_text(value)
        out.append((name, value))
        tokens += n
    return tuple(out), changed, tokens


def redact_request(request: Request, redactor: Redactor) -> tuple[Request, Redactions]:
    """`request` with its secrets replaced (headers, URL, body), and what was replaced."""
    if not redactor.enabled:
        return request, Redactions()
    headers, n_headers, n_tokens = redact_headers(request.headers, redactor)
    url_parts = len(_credential_url_leaks(request.url, redactor))
    url = redactor.redact_url(request.url) if url_parts else request.url
    url, n = redact_text(url)
    n_tokens += n
    body = request.body
    if body is not None:
        body, n = redact_text(body)
        body, fields = redactor.redact_fields(body)
        n_tokens += n + fields
    return dataclasses.replace(request, headers=headers, url=url, body=body), Redactions(n_headers, url_parts, n_tokens)


def _redact_chunks(chunks: tuple[Chunk, ...]) -> tuple[tuple[Chunk, ...], int]:
    body = b"".join(c.data for c in chunks)
    spans = _token_spans(body)
    if not spans:
        return chunks, 0
    datas = _cut_redacted(body, spans, accumulate(len(c.data) for c in chunks))
    return tuple(Chunk(c.t, d) for c, d in zip(chunks, datas, strict=True)), len(spans)


def _token_spans(body: bytes, start: int = 0) -> list[tuple[int, int]]:
    """Where the tokens of `body` are, from `start` (the bytes before it: look-behind context)."""
    # every token starts with one of these: searching for them first skips the pattern on most bodies
    if len(body) - start < _SHORT:
        if all(body.find(s, start) < 0 for s in _STARTS):
            return []
    elif not any(_contains(body, needle, start, rare) for needle, rare in _LOOK_FOR):
        return []
    return [m.span() for m in TOKEN_BYTES.finditer(body, start)]


_SHORT = 2048
"""Bytes below which the substring searches alone are as fast as looking for a rare byte first."""


def _contains(body: bytes, needle: bytes, start: int, rare: int | None, tries: int = 64) -> bool:
    """Whether `needle` is in `body[start:]`, as `body.find(needle, start) >= 0` says.

    With `rare`, the index of a byte of `needle` seldom seen in the body, that byte is looked for
    first (`memchr`: tens of times faster than the substring search, which steps a few bytes at a
    time) and `needle` checked where it is; after `tries` of them the substring search does the rest.
    """
    if rare is None:
        return body.find(needle, start) >= 0
    byte = needle[rare : rare + 1]
    at = body.find(byte, start + rare)
    for _ in range(tries):
        if at < 0:
            return False
        if body.startswith(needle, at - rare):
            return True
        at = body.find(byte, at + 1)
    return at >= 0 and body.find(needle, at - rare) >= 0


def _cut_redacted(body: bytes, spans: Sequence[tuple[int, int]], ends: Iterable[int]) -> list[bytes]:
    """`body` with each of `spans` replaced by `[REDACTED]`, cut again at `ends` (ascending offsets
    into `body`, the last its length): a cut inside a token lands at the same distance into
    `[REDACTED]` (or at its end)."""
    parts, at = [], 0
    for start, end in spans:
        parts += [body[at:start], _REDACTED_BYTES]
        at = end
    new_body = b"".join([*parts, body[at:]])
    out, start, shift = [], 0, 0
    pending = iter(spans)
    span = next(pending, None)
    for end in ends:
        # advance over the tokens wholly before this cut, adding up how much each shortened the body
        while span is not None and span[1] <= end:
            shift += len(_REDACTED_BYTES) - (span[1] - span[0])
            span = next(pending, None)
        if span is not None and span[0] < end:  # the cut falls inside a token
            cut = span[0] + shift + min(end - span[0], len(_REDACTED_BYTES))
        else:
            cut = end + shift
        out.append(new_body[start:cut])
        start = cut
    return out


def _open_token(buf: bytes) -> int:
    """Where a token that the next bytes may still continue could begin at the end of `buf`
    (`len(buf)`: none can). A token begins after a byte that is not part of one (or after a dot),
    with `sk-`, `eyJ` or `AIza`; only the last _LONGEST bytes are looked at."""
    tail = buf[-_LONGEST:]
    run = len(tail) - len(tail.rstrip(_TOKEN_CHARS))
    first = len(buf) - run
    for at in [first] + [first + k + 1 for k, byte in enumerate(buf[first:]) if byte == ord(".")]:
        head = buf[at : at + 4]
        if head and any(head.startswith(s) or s.startswith(head) for s in _STARTS):
            return at
    return len(buf)


class StreamRedactor:
    """Redacts the tokens of a body written chunk by chunk, as the recorder writes a stream: every
    chunk keeps its time and its place, and its bytes outside tokens.

    `feed` takes the chunks that came and returns those that can be written now, redacted. A chunk
    whose end may be the start of a token still arriving (it ends with `sk-...`, `eyJ...`, `AIz`...)
    is held until the chunk that ends it comes (or `close`), then both are redacted together and cut
    again where they were, as `redact` does: a key split across two chunks is still found. An event
    stream's chunks end with a line end, so almost no chunk waits. Only the copy on disk waits: the
    proxy has already passed the chunk on. What is held is bounded by _LONGEST bytes of the token
    plus the chunks they came in; a token longer than that is redacted up to where it was cut.
    """

    def __init__(self) -> None:
        self.tokens = 0
        """Tokens replaced so far."""
        self._times: list[float] = []
        self._datas: list[bytes] = []
        """The chunks held back."""
        self._before = b""
        """The last byte let through: the look-behind context of the next search."""

    def feed(self, times: Sequence[float], datas: Sequence[bytes]) -> tuple[list[float], list[bytes]]:
        """The chunks (and their times) that can be written now: held ones first, redacted."""
        return self._release(self._times + list(times), self._datas + list(datas), final=False)

    def close(self) -> tuple[list[float], list[bytes]]:
        """The chunks still held, redacted: the body is over."""
        return self._release(self._times, self._datas, final=True)

    def _release(self, times: list[float], datas: list[bytes], *, final: bool) -> tuple[list[float], list[bytes]]:
        skip = len(self._before)
        buf = b"".join([self._before, *datas])
        spans = _token_spans(buf, skip)
        hold_from = len(buf) if final else _open_token(buf)
        if not spans and hold_from == len(buf):  # no token, none that may go on (nearly always): all go as they are
            self._times, self._datas, self._before = [], [], buf[-1:]
            return times, datas
        ends = list(accumulate(map(len, datas), initial=skip))[1:]
        # the last chunk end before hold_from that cuts no finished token (a token running past
        # hold_from is longer than _LONGEST: it is redacted up to the cut)
        finished = [span for span in spans if span[1] <= hold_from]
        starts = [start for start, _ in finished]
        k = len(datas)
        while k:
            end = ends[k - 1]
            inside = bisect_left(starts, end) - 1
            if end <= hold_from and (inside < 0 or finished[inside][1] <= end):
                break
            k -= 1
        self._times, self._datas = times[k:], datas[k:]
        if not k:
            return [], []
        cut = ends[k - 1]
        self._before = buf[cut - 1 : cut]
        spans = [(start - skip, min(end, cut) - skip) for start, end in spans if start < cut]
        self.tokens += len(spans)
        if not spans:
            return times[:k], datas[:k]
        return times[:k], _cut_redacted(buf[skip:cut], spans, (end - skip for end in ends[:k]))
