"""What a check reports (`Finding`), the catalogue of codes, and the thresholds that tune them."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import IntEnum

from .._errors import CheckSpecError
from .evidence import Evidence

__all__ = ["ALIASES", "CODES", "Code", "Finding", "Severity", "Skipped", "Thresholds", "parse_threshold"]


class Severity(IntEnum):
    """How bad a finding is; the order is what `--fail-on` compares."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Code:
    """A finding code: its name never changes once released. `CODES` lists them all, in one table
    (the order `--select` lists them in); a check reports the codes of its family."""

    name: str
    severity: Severity
    family: str
    """framing, lifecycle, headers, timing or hygiene."""
    fix: str
    """Why it matters and how to fix it, in a sentence or two."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing a check found, with its evidence."""

    code: str
    severity: Severity
    message: str
    """One line with the evidence: times, counts, sizes, event index, byte offset."""
    t: float | None = None
    event_index: int | None = None
    offset: int | None = None
    evidence: Evidence | None = None
    """The numbers behind the message, typed by the kind of finding (`evidence.py`)."""
    advice: str | None = None
    """A fix for this case when the code's own would mislead (a stream the client left is no hop's doing)."""

    @property
    def fix(self) -> str:
        return self.advice or CODES[self.code].fix

    def __repr__(self) -> str:
        return f"<Finding {self.severity} {self.code}: {self.message}>"


@dataclass(frozen=True, slots=True)
class Skipped:
    """Checks that could not run on this capture, and why (never a silent pass)."""

    codes: tuple[str, ...]
    reason: str


def _codes(*codes: Code) -> dict[str, Code]:
    return {c.name: c for c in codes}


_W, _E, _I = Severity.WARNING, Severity.ERROR, Severity.INFO
_BUFFER_FIX = (  # one fix for the three buffering findings, neutral of any hop: the culprit's (checks/hops.py)
    # replaces it on each finding with the fix for the hop that most likely held the stream
    "something between the model and the client held the events: the app must yield and flush each event "
    "inside its loop, and every hop must pass them on as they come (see `culprit`, docs/signatures.md)"
)

CODES: dict[str, Code] = _codes(
    Code("buffering-burst", _W, "timing", _BUFFER_FIX),
    Code("single-flush", _W, "timing", _BUFFER_FIX),
    Code("fixed-size-flush", _W, "timing", _BUFFER_FIX),
    Code("long-silence", _W, "timing",
         "idle timeouts of proxies and load balancers (often 60 s, Cloudflare 100 s) cut silent connections: "
         "send a comment line (`: keep-alive`) every 15-30 s"),
    Code("headers-held", _W, "timing",
         "the response headers waited for the first event: gateways with a first-byte timeout (Heroku: 30 s) "
         "cut a slow model's stream before it starts; send the headers at once (or a comment line such as "
         "`: ok`), before the model answers"),
    Code("idle-timeout-cut", _E, "timing",
         "a hop's idle timeout closed the silent connection: send a comment line (`: keep-alive`) or an event "
         "every 15 s from the request on, before the first token and through long tool calls (some hops drop "
         "comments: then send real events), or raise that hop's idle limit"),
    Code("total-timeout-cut", _E, "timing",
         "a hop's limit on a request's whole duration ended the stream while it was still flowing: keep-alives "
         "do not help; raise that limit (gunicorn `--timeout`, or an async worker class) or split the work"),
    Code("heartbeats", _I, "framing", "comment lines keep idle connections alive; clients ignore them"),
    Code("missing-end-marker", _E, "lifecycle",
         "a client cannot tell a finished answer from a cut one: find the hop that closed the connection "
         "(timeouts, a crashed worker) or the recorder or gateway that dropped the marker"),
    Code("connection-cut", _E, "lifecycle",
         "the connection ended otherwise than cleanly: find the hop that closed it (a timeout, a crashed worker); "
         "if the app sends no end marker, one (`data: [DONE]`) lets its clients tell a cut from an answer"),
    Code("data-after-end", _W, "lifecycle", "clients stop reading at the end marker and never see these events"),
    Code("duplicate-end-marker", _W, "lifecycle", "a gateway or proxy added a second end marker; clients stop at the first"),
    Code("done-not-json", _I, "lifecycle",
         "compare `data` with the sentinel before `json.loads` (the OpenAI SDKs stop at `data == \"[DONE]\"`)"),
    Code("invalid-json", _E, "lifecycle", "clients that `json.loads` every data payload crash on this event"),
    Code("error-event", _E, "lifecycle",
         "the HTTP status said success, so only clients that check each event see this error"),
    Code("http-error", _E, "headers", "the server refused the request; the body says why"),
    Code("wrong-content-type", _W, "headers",
         "EventSource and many clients require `Content-Type: text/event-stream`; some proxies buffer other types"),
    Code("compressed-stream", _W, "headers",
         "compression buffers to fill its blocks: exclude text/event-stream from the compression of the hop or "
         "middleware that applies it, or send `Cache-Control: no-transform`"),
    Code("decode-error", _E, "framing", "the body does not decode as its Content-Encoding says: a hop corrupted or cut it"),
    Code("decode-bomb", _E, "framing",
         "the body decodes to far more than any event stream: a decompression bomb; nothing past the cut was read"),
    Code("line-too-long", _E, "framing",
         "a line longer than the line limit was dropped (no real stream sends one): clients that hold a line whole "
         "may run out of memory on it"),
    Code("event-too-long", _E, "framing",
         "an event whose data came to more than the line limit was dropped (no real stream sends one): clients "
         "that hold an event's data whole may run out of memory on it"),
    Code("content-length-on-stream", _W, "headers",
         "an event stream has no length: a Content-Length means something held the whole body before sending "
         "it (or the server never streamed); stream the body and let no hop read it whole"),
    Code("no-cache-header", _I, "headers", "caches and CDNs may store or hold the stream: send `Cache-Control: no-cache`"),
    Code("x-accel-buffering", _I, "headers",
         "nginx is in the path and buffers unless told not to: send `X-Accel-Buffering: no` from the upstream"),
    Code("incomplete-event", _W, "framing",
         "bytes after the last blank line form no event: clients drop them; end every event with a blank line"),
    Code("invalid-utf8", _W, "framing", "event streams are UTF-8: clients show U+FFFD in place of these bytes"),
    Code("cr-line-endings", _W, "framing",
         "lone CR or mixed line ends are legal, but clients that split on LF merge or mangle events"),
    Code("bom", _W, "framing", "a leading BOM is dropped by spec parsers, but naive ones see a field named '\\ufeffdata'"),
    Code("utf-16", _E, "framing",
         "text/event-stream is always UTF-8: encode the stream as UTF-8 (no client reads events from UTF-16 or UTF-32)"),
    Code("ignored-fields", _I, "framing", "clients ignore fields other than data, event, id and retry"),
    Code("recording-incomplete", _W, "lifecycle",
         "the capture has no end line: the recorder stopped (crash, kill) before the stream ended"),
    Code("secret-in-capture", _E, "hygiene",
         "a credential or API key is written in the capture: run `sse-inspect redact --in-place` on it and "
         "rotate the key if the file was shared or committed"),
    Code("not-an-event-stream", _E, "framing",
         "clients dispatch no event from this body: find the handler or hop that served an error page or a JSON "
         "document as text/event-stream (send the real status and type), or the one that strips the blank line "
         "ending each event (`data: ...\\n\\n`)"),
    Code("frame-error", _E, "framing",
         "an AWS event stream message failed its checks (a CRC, a length, a header): botocore and the other SDKs "
         "stop the stream there (ChecksumMismatch, ...); find the hop that altered or re-framed the bytes"),
    Code("ndjson-blank-line", _W, "framing",
         "blank lines between NDJSON items: the ndjson-spec lets a parser skip them, but clients that `json.loads` "
         "every line (the ollama library) crash on the first; send keep-alives as whole JSON objects, or none"),
    Code("ndjson-line-break", _W, "framing",
         "a character Python's `str.splitlines()` ends a line at (a lone CR, U+2028, U+2029, NEL, ...) inside an "
         "NDJSON line: httpx's `iter_lines` (the ollama library's) cuts the line there and neither piece is JSON; "
         "escape it in the JSON text (`\\u2028`)"),
    Code("array-syntax", _E, "framing",
         "the streamed JSON array is not well formed (a missing or doubled comma, data after the `]`, no `[`): "
         "clients that parse the array as it streams fail or lose elements there"),
)  # fmt: skip


ALIASES: dict[str, str] = {"content-length": "content-length-on-stream"}
"""Released codes renamed since, each with its new name: `--select` and `--ignore` still take them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """The numbers that decide the timing findings; each can be set with `--threshold NAME=VALUE`."""

    burst_min_events: int = 5
    """A release of fewer text events is never a burst, and an answer of fewer is never judged:
    a server may write a short answer in one go. Only events carrying output count."""
    burst_window_ms: float = 10.0
    """Chunks closer than this together form one release (a hop's flush split over several reads)."""
    burst_span_ms: float = 50.0
    """A release longer than this is a fast stream, not a flush (Groq streams 2 ms apart)."""
    burst_min_silence_ms: float = 500.0
    """The silence before a burst must be at least this long (above a TCP retransmission stall:
    Linux waits 200 ms at least, plus a round trip) ..."""
    burst_silence_factor: float = 4.0
    """... and this many times the stream's pace (mean interval between text events, its longest
    gap left out): a hop that holds N events is silent for about N intervals."""
    single_flush_share: float = 0.9
    """single-flush: the share of the body's bytes and events that arrived in one release."""
    fixed_flush_min_chunks: int = 3
    """fixed-size-flush: how many chunks of the same size (1 KiB or more) it takes."""
    long_silence_s: float = 30.0
    """long-silence: half of the common 60 s idle timeout (nginx proxy_read_timeout, AWS ALB)."""
    single_flush_min_chars: int = 80
    """single-flush of an answer of fewer text events than `burst_min_events`: the characters of output
    each of its events must hold on average. Token-by-token servers send a token (1-20 characters) an
    event, Gemini a few tokens (its corpus chunks hold 27-35); 80 is about 20 tokens of English, which
    no model streams in one event, while a short answer ("Yes.") after a think stays clean."""
    headers_held_s: float = 1.0
    """headers-held: how late (since the request) headers that came with the first body bytes must be.
    Servers send headers before the model's first token; a hop or framework that holds them until the
    body starts makes them as late as the first event, and a normal time to first token is under 1 s."""
    lump_min_silence_ms: float = 100.0
    """buffering-burst of lumps: the silence before a read of several text events (fewer than
    `burst_min_events`) must be at least this for the read to be a lump, a hop's periodic flush; at least
    `burst_min_events` lumps, holding most of the text events, make the finding. A model writes one event
    a write, and a fast one whose events share reads (Nagle, a busy client) has no silence this long
    between them; 100 ms is a flush timer's period or a delayed ACK (40-200 ms), a tenth of a second that
    a reader sees as a stutter."""
    timeout_tolerance_s: float = 1.0
    """idle-timeout-cut, total-timeout-cut: how far from a known limit a cut may be (or 1% of the limit,
    if more). A hop's timer fires at or just after its limit, and the recorder sees the last byte and the
    close a path's latency after the hop: a 60.02 s silence matches 60 s, a 57 s one does not."""


def parse_threshold(thresholds: Thresholds, text: str) -> Thresholds:
    """`thresholds` with one `NAME=VALUE` applied; raises CheckSpecError naming the known names."""
    names = [f.name for f in dataclasses.fields(Thresholds)]
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in names:
        raise CheckSpecError(f"unknown threshold {text!r}; use NAME=VALUE with NAME one of: {', '.join(names)}")
    kind = type(getattr(thresholds, name))
    try:
        number = kind(value)
    except ValueError:
        raise CheckSpecError(f"threshold {name} takes a number, not {value!r}") from None
    if not math.isfinite(number):
        raise CheckSpecError(f"threshold {name} takes a finite number, not {value!r}")
    if number < 0:
        raise CheckSpecError(f"threshold {name} cannot be negative")
    return dataclasses.replace(thresholds, **{name: number})
