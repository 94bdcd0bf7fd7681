"""Every finding code: a capture that triggers it (severity, evidence in the message) and a near miss that does not."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sse_inspect import Capture, Chunk, End, Request, parse_capture
from sse_inspect.checks import CODES, Finding, Severity, check_capture
from sse_inspect.checks.evidence import ErrorEvent

from . import timelines as T

I, W, E = Severity.INFO, Severity.WARNING, Severity.ERROR
OA = T.openai_events(20)  # 20 tokens + [DONE]: events #0-#20, 1890 bytes before [DONE]
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
RESPONSES_URL = "https://api.openai.com/v1/responses"
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
COHERE_URL = "https://api.cohere.com/v2/chat"


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    build: Callable[[], Capture]
    severity: Severity | None = None
    """Trigger: the severity of the code's first finding. Near miss: None."""
    evidence: tuple[str, ...] = ()
    """Substrings of the first finding's message."""


def with_headers(*extra: tuple[str, str], base: T.Headers = T.SSE_HEADERS) -> Callable[[], Capture]:
    return lambda: T.paced(OA, headers=base + extra)


def buffered_with_headers(*extra: tuple[str, str]) -> Callable[[], Capture]:
    """A stream held whole by a hop: only then is the advice about the hop worth giving."""

    def build() -> Capture:
        capture = T.close_delimited_through_nginx()
        assert capture.response is not None
        response = dataclasses.replace(capture.response, headers=capture.response.headers + extra)
        return dataclasses.replace(capture, response=response)

    return build


def gemini(events: list[bytes]) -> Capture:
    return T.paced(events, url=GEMINI_URL)


def equal_size_events(n: int = 12, size: int = 1200) -> list[bytes]:
    """Events of exactly `size` bytes: a server padding its chunks, each flushed on its own."""
    pad = size - len(T.sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": ""}}]}))
    return [
        T.sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "x" * pad}}]})
        for _ in range(n)
    ] + [T.sse("[DONE]")]


def equal_size_stream() -> Capture:
    """Equal events, one chunk each, on the event boundaries: no buffer cut them."""
    events = equal_size_events()
    return T.capture(T.at([0.4 + 0.05 * i for i in range(len(events))], events))


# fmt: off
ANTHROPIC_ERROR = T.sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
OPENAI_ERROR = T.sse({"error": {"message": "The server had an error while processing your request.",
                                "type": "server_error", "code": "server_error"}})
TRUNCATED = b'data: {"object":"chat.comp'
HTML_PAGE = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>bad gateway</body></html>\n"
JSON_ERROR = b'{"error": {"message": "Rate limit reached", "type": "requests"}}'
STRIPPED = [(0.3 + 0.03 * i, f"data: {tok}\n".encode()) for i, tok in enumerate(T.tokens(20))]
"""A text stream whose blank lines a hop stripped: one data line a token, nothing ever dispatches."""

NDJSON = (("Content-Type", "application/x-ndjson"),)
EVENTSTREAM = (("Content-Type", "application/vnd.amazon.eventstream"),)
GEMINI_JSON = (("Content-Type", "application/json; charset=UTF-8"),)
OLLAMA_URL = "http://localhost:11434/api/generate"


def ollama_lines(*pieces: bytes) -> Capture:
    """An Ollama generate stream of these raw lines, 50 ms apart."""
    return T.capture([(0.3 + 0.05 * i, piece) for i, piece in enumerate(pieces)], headers=NDJSON, url=OLLAMA_URL)


def bedrock_messages(corrupt: bool) -> Capture:
    """Two Bedrock Converse messages; the second's last byte (its message CRC) altered when `corrupt`."""
    from sse_inspect._eventstream import encode_message

    def message(kind: str, payload: bytes) -> bytes:
        return encode_message({":event-type": kind, ":content-type": "application/json", ":message-type": "event"}, payload)

    second = message("contentBlockDelta", b'{"delta":{"text":"Hi"},"contentBlockIndex":0}')
    if corrupt:
        second = second[:-1] + bytes([second[-1] ^ 1])
    return T.capture([(0.3, message("messageStart", b'{"role":"assistant"}')), (0.35, second)], headers=EVENTSTREAM,
                     url="https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream")


def gemini_array(*pieces: bytes) -> Capture:
    return T.capture([(0.3 + 0.05 * i, piece) for i, piece in enumerate(pieces)], headers=GEMINI_JSON,
                     url="https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent")


TRIGGERS = [
    Case("bad-message-crc", "frame-error", lambda: bedrock_messages(corrupt=True), E, ("failed their checks", "byte")),
    Case("keepalive-blank-lines", "ndjson-blank-line",
         lambda: ollama_lines(b'{"response":"a"}\n', b"\n", b'{"response":"b"}\n'), W, ("blank lines", "byte 17")),
    Case("raw-line-separator", "ndjson-line-break",
         lambda: ollama_lines('{"response":"a\u2028b"}\n'.encode(), b'{"done":true}\n'), W, ()),
    Case("missing-comma", "array-syntax", lambda: gemini_array(b'[{"candidates":[]}', b'{"candidates":[]}', b"]"), E,
         ("byte",)),
    Case("burst", "buffering-burst", T.burst_after_silence, W, ("40 text events held 2.000 s", "in 3 ms", "t=")),
    Case("single-flush", "single-flush", T.close_delimited_through_nginx, W,
         ("119 of 119 text events", "at t=3.000 s", "after 3.000 s of silence")),
    Case("nginx-4k", "fixed-size-flush", T.nginx_4k_buffer, W, ("exactly 4096 bytes", "cut inside an event")),
    Case("45s-gap", "long-silence", T.silent_gap, W, ("no byte for 45.0 s", "longer than 30 s")),
    Case("keep-alive", "heartbeats", lambda: T.silent_gap(keepalive_every=10.0), I,
         ("4 comment line(s)", "'keep-alive'", "about every 10.0 s")),
    Case("openai-cut", "missing-end-marker",
         lambda: T.paced(OA[:-1], end="server-disconnected", end_error="connection reset by peer"), E,
         ("no data: [DONE] after 20 events", "cut mid-stream (connection reset by peer)")),
    Case("openai-clean-close", "missing-end-marker", lambda: T.paced(OA[:-1]), E,
         ("no data: [DONE] after 20 events", "closed the stream cleanly")),
    Case("openai-recording-stopped", "missing-end-marker", lambda: T.paced(OA[:-1], end=None), E,
         ("after 20 events", "the recording stopped first")),
    Case("openai-client-left", "missing-end-marker", lambda: T.paced(OA[:-1], end="client-disconnected"), E,
         ("the client went away",)),
    Case("text-cut", "connection-cut",
         lambda: T.paced([b"data: Hello\n\n", b"data:  world\n\n"], end="server-disconnected",
                         end_error="incomplete chunked read", url="http://localhost:8000/chat"), E,
         ("the stream ended after 2 events without data: [DONE] (a text stream may omit it)",
          "cut mid-stream (incomplete chunked read)")),
    Case("generic-cut", "connection-cut",
         lambda: T.paced([b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n'], end="server-disconnected",
                         end_error="connection reset by peer", url="http://localhost:8000/stream"), E,
         ("ended after 2 events with no end marker to check", "cut mid-stream (connection reset by peer)")),
    Case("openai-closed-inside-event", "missing-end-marker", lambda: T.paced(OA[:-1] + [TRUNCATED]), E,
         ("closed inside an event",)),
    Case("anthropic", "missing-end-marker", lambda: T.paced(T.anthropic_events(5, stop=False), url=ANTHROPIC_URL),
         E, ("no event: message_stop after 10 events",)),
    Case("responses", "missing-end-marker",
         lambda: T.paced(T.responses_events(5, terminal=None), url=RESPONSES_URL), E,
         ("no event: response.completed", "after 11 events")),
    Case("gemini", "missing-end-marker", lambda: gemini(T.gemini_events(5, finish=False)), E,
         ("no finishReason after 5 events",)),
    Case("cohere", "missing-end-marker", lambda: T.paced(T.cohere_events(5, end=False), url=COHERE_URL), E,
         ("no event: message-end after 8 events",)),
    Case("openai", "data-after-end", lambda: T.paced(OA + [OA[0]]), W,
         ("1 event(s) after the end marker (event #20)", "the first #21")),
    Case("anthropic-ping-after-stop", "data-after-end",
         lambda: T.paced(T.anthropic_events(5) + [T.sse({"type": "ping"}, "ping")], url=ANTHROPIC_URL), W,
         ("(event #10)", "#11 of type 'ping'")),
    Case("done-twice", "duplicate-end-marker", lambda: T.paced(OA + [T.sse("[DONE]")]), W,
         ("2 times, at events #20, #21",)),
    Case("proper-done", "done-not-json", lambda: T.paced(OA), I, ("event #20 is the [DONE] sentinel",)),
    Case("done-space", "done-not-json", lambda: T.paced(OA[:-1] + [b"data: [DONE] \n\n"]), W,
         ("event #20 has data '[DONE] '", "malformed sentinel")),
    Case("done-lower", "done-not-json", lambda: T.paced(OA[:-1] + [b"data: [done]\n\n"]), W, ("'[done]'",)),
    Case("done-lone-cr", "done-not-json", lambda: T.paced([e.replace(b"\n", b"\r") for e in OA]), W,
         ("event #20", "lone CR")),
    Case("done-on-anthropic", "done-not-json",
         lambda: T.paced(T.anthropic_events(5) + [T.sse("[DONE]")], url=ANTHROPIC_URL), W,
         ("event #11", "anthropic never sends")),
    Case("truncated-json", "invalid-json", lambda: T.paced(OA[:5] + [TRUNCATED + b"\n\n"] + OA[5:]), E,
         ("1 event(s) whose data is not JSON, the first #5", "chat.comp")),
    Case("anthropic-error", "error-event",
         lambda: T.paced(T.anthropic_start() + T.anthropic_deltas(3) + [ANTHROPIC_ERROR], url=ANTHROPIC_URL), E,
         ("in-band error at event #6", "Overloaded")),
    Case("openai-error-chunk", "error-event", lambda: T.paced(OA[:5] + [OPENAI_ERROR] + OA[-1:]), E,
         ("in-band error at event #5 (server_error)", "while processing your request")),
    Case("responses-failed", "error-event",
         lambda: T.paced(T.responses_events(5, terminal="response.failed",
                                            error={"code": "server_error", "message": "Something went wrong"}),
                         url=RESPONSES_URL), E,
         ("in-band error at event #11 (server_error)", "Something went wrong")),
    Case("429", "http-error",
         lambda: T.capture([(0.3, b'{"error":{"message":"Rate limit reached"}}')], status=429,
                           reason="Too Many Requests", headers=(("Content-Type", "application/json"),)), E,
         ("HTTP 429 Too Many Requests", "Rate limit reached")),
    Case("json-type", "wrong-content-type", with_headers(base=(("Content-Type", "application/json"),)), W,
         ("Content-Type is 'application/json'",)),
    Case("gzip", "compressed-stream", T.gzipped, W, ("Content-Encoding: gzip", "bytes on the wire for 3709 decoded")),
    Case("corrupt-gzip", "decode-error", lambda: T.gzipped(corrupt_at=5), E, ("gzip body stops decoding at wire byte",)),
    Case("gzip-bomb", "decode-bomb", T.gzip_bomb, E, ("the gzip body expands", "decoding stopped")),
    Case("17-MiB-line", "line-too-long", lambda: T.long_line(17 << 20), E,
         ("a line of 17825792 bytes (over the line limit of 16777216) was dropped",)),
    Case("17-lines-of-1-MiB", "event-too-long", lambda: T.long_line(17 << 20, lines=17), E,
         ("an event whose data came to 17825706 characters (over the limit of 16777216) was dropped",)),
    Case("content-length", "content-length-on-stream", with_headers(("Content-Length", "1904")), W,
         ("Content-Length: 1904", "arrived spread over", "the header is wrong for a stream")),
    Case("no-cache-control", "no-cache-header", with_headers(base=T.SSE_HEADERS[:1]), I, ("no Cache-Control",)),
    Case("cacheable", "no-cache-header", with_headers(("Cache-Control", "max-age=60"), base=T.SSE_HEADERS[:1]), I,
         ("(Cache-Control: max-age=60)",)),
    Case("nginx", "x-accel-buffering", buffered_with_headers(("Server", "nginx/1.24.0")), I, ("Server: nginx/1.24.0",)),
    Case("openresty", "x-accel-buffering", buffered_with_headers(("Server", "openresty/1.21.4.1")), I,
         ("Server: openresty/1.21.4.1 shows nginx",)),
    Case("cut-inside-event", "incomplete-event",
         lambda: T.paced(OA[:-1] + [TRUNCATED], end="server-disconnected"), W,
         ("26 bytes after the last blank line (from byte 1890)",)),
    Case("latin1-bytes", "invalid-utf8", lambda: T.paced(OA[:3] + [OA[3].replace(b"tok3", b"tok\xff\xfe")] + OA[4:]),
         W, ("1 line(s)", "the first at byte 368")),
    Case("lone-cr", "cr-line-endings", lambda: T.paced([e.replace(b"\n", b"\r") for e in OA]), W,
         ("42 lone CR", "(lone CR)")),
    Case("lf-and-crlf", "cr-line-endings", lambda: T.paced(OA[:10] + [e.replace(b"\n", b"\r\n") for e in OA[10:]]),
         W, ("20 LF, 22 CRLF", "(mixed)")),
    Case("bom", "bom", lambda: T.paced([b"\xef\xbb\xbf" + OA[0], *OA[1:]]), W, ("opens with a UTF-8 BOM",)),
    Case("utf-16-bom", "utf-16", lambda: T.paced([b"".join(OA).decode().encode("utf-16")]), E,
         ("UTF-16LE", "byte order mark")),
    Case("utf-16be-no-bom", "utf-16", lambda: T.paced([b"".join(OA).decode().encode("utf-16-be")]), E,
         ("UTF-16BE", "NUL before every character")),
    Case("unknown-field", "ignored-fields", lambda: T.paced(OA[:3] + [b"foo: bar\nretry: soon\n" + OA[3]] + OA[4:]),
         I, ("2 field line(s) ignored", "unknown field 'foo'", "'soon'")),
    Case("no-end-line", "recording-incomplete", lambda: T.paced(OA, end=None), W, ("stopped after 21 chunks",)),
    Case("openai-key-in-answer", "secret-in-capture",
         lambda: T.paced([b'data: {"choices":[{"index":0,"delta":{"content":"sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"}}]}\n\n']
                         + OA[-1:]),
         E, ("OpenAI-style key (sk-...) in the response body at byte 49",)),
    # the timing signatures of issue 18
    Case("whole-answer-in-one-event", "single-flush", T.collected_answer, W,
         ("the whole answer (400 characters) came in one text event at t=1.600 s, after 1.600 s of silence",)),
    Case("a-few-big-events", "single-flush", lambda: T.collected_answer(400, events=3), W,
         ("the whole answer (400 characters) came in 3 text events at once", "133 characters an event")),
    Case("plain-text-in-one-event", "single-flush", lambda: T.collected_answer(300, plain=True), W,
         ("(300 characters) came in one text event",)),
    *(Case(f"slices-of-{size}", "fixed-size-flush", lambda size=size: T.slices(size), W,
           (f"chunks are exactly {size} bytes, each a flush of its own",))
      for size in (0x800, 3000)),  # more sizes: test_timing.test_fixed_size_slices_of_any_size
    Case("wsgi-holds-headers", "headers-held", lambda: T.collected_answer(headers_at=1.6), W,
         ("the response headers came only with the first body bytes, 1.600 s after the request",)),
    Case("nginx-60s", "idle-timeout-cut", lambda: T.cut_after_silence(60.02), E,
         ("after 60.02 s without a byte", "nginx (`proxy_read_timeout`, 60 s), aws-alb (idle timeout, 60 s)")),
    Case("cloudflare-100s", "idle-timeout-cut", lambda: T.cut_after_silence(100.3), E,
         ("cloudflare (proxy read timeout, then a 524, 100 s)",)),
    Case("gunicorn-30s", "total-timeout-cut", lambda: T.cut_while_flowing(30.0), E,
         ("cut before its end 30.00 s after the request, 0.10 s after its last byte", "gunicorn (sync worker")),
    Case("cloud-run-302s", "total-timeout-cut", lambda: T.cut_while_flowing(302.0, every=2.0), E,
         ("cloud-run (request timeout",)),
    Case("gunicorn-held-whole", "content-length-on-stream",
         lambda: T.capture([(1.6, b"".join(OA))], headers_at=1.6,
                           headers=T.SSE_HEADERS + (("Server", "gunicorn"), ("Content-Length", "1904"))), W,
         ("Content-Length: 1904 on an event stream",)),
    Case("html-error-page", "not-an-event-stream", lambda: T.capture([(0.3, HTML_PAGE)]), E,
         ("an HTML page served as text/event-stream", "'<!DOCTYPE html>\\n<html>")),
    Case("json-error-document", "not-an-event-stream", lambda: T.capture([(0.3, JSON_ERROR)]), E,
         ("a JSON document served as text/event-stream", """'{"error": {"message": "Rate limit""")),
    Case("blank-lines-stripped", "not-an-event-stream", lambda: T.capture(STRIPPED), E,
         ("20 data lines and no blank line between them", "'data:  tok0\\ndata:  tok1")),
    Case("length-not-a-number-held", "content-length-on-stream",
         lambda: T.capture([(1.6, b"".join(OA))], headers=T.SSE_HEADERS + (("Content-Length", "abc"),)), W,
         ("Content-Length: 'abc' (not a number)", "held the whole body")),
    Case("blank-lines-stripped-but-the-last", "not-an-event-stream",
         lambda: T.capture([*((round(0.1 + 0.06 * i, 6), f"data: w{i}\n".encode()) for i in range(30)),
                            (2.0, b"data: [DONE]\n\n")]), E,
         ("event #0's 31 data lines came over 1.900 s with no blank line between them",)),
    Case("html-after-a-comment", "not-an-event-stream", lambda: T.capture([(0.3, b"<!-- error --><html>502</html>")]),
         E, ("an HTML page",)),
    Case("plain-text-error", "not-an-event-stream", lambda: T.capture([(0.3, b"Internal Server Error")]), E,
         ("plain text with no field line", "'Internal Server Error'")),
]

NEAR_MISSES = [
    Case("crcs-right", "frame-error", lambda: bedrock_messages(corrupt=False)),
    Case("lines-back-to-back", "ndjson-blank-line", lambda: ollama_lines(b'{"response":"a"}\n', b'{"response":"b"}\n')),
    Case("escaped-line-separator", "ndjson-line-break",
         lambda: ollama_lines(b'{"response":"a\\u2028b"}\n', b'{"done":true}\n')),
    Case("gemini-array", "array-syntax", lambda: gemini_array(b'[{"candidates":[]}', b',\r\n{"candidates":[]}', b"]")),
    Case("ndjson-served-as-ndjson", "wrong-content-type", lambda: ollama_lines(b'{"response":"a"}\n')),
    Case("gemini-array-as-json", "wrong-content-type", lambda: gemini_array(b'[{"candidates":[]}]')),
    Case("4-held-events", "buffering-burst", lambda: T.burst_after_silence(held=4)),
    Case("model-pause", "buffering-burst", T.thinking_pause),
    Case("one-burst-of-many", "single-flush", T.burst_after_silence),
    Case("equal-events-on-boundaries", "fixed-size-flush", equal_size_stream),
    Case("25s-gap", "long-silence", lambda: T.silent_gap(gap=25.0)),
    Case("45s-gap-with-keepalives", "long-silence", lambda: T.silent_gap(keepalive_every=10.0)),
    Case("no-comments", "heartbeats", T.steady),
    Case("openai", "missing-end-marker", lambda: T.paced(OA)),
    Case("anthropic", "missing-end-marker", lambda: T.paced(T.anthropic_events(5), url=ANTHROPIC_URL)),
    Case("responses", "missing-end-marker", lambda: T.paced(T.responses_events(5), url=RESPONSES_URL)),
    Case("gemini", "missing-end-marker", lambda: gemini(T.gemini_events(5))),
    Case("cohere", "missing-end-marker", lambda: T.paced(T.cohere_events(5), url=COHERE_URL)),
    Case("text-closed-cleanly-without-done", "connection-cut",
         lambda: T.paced([b"data: Hello\n\n", b"data:  world\n\n"], url="http://localhost:8000/chat")),
    Case("generic-recording-stopped", "connection-cut",
         lambda: T.paced([b'data: {"n": 1}\n\n'], end=None, url="http://localhost:8000/stream")),
    Case("openai-no-marker-is-the-other-code", "connection-cut",
         lambda: T.paced(OA[:-1], end="server-disconnected", end_error="connection reset by peer")),
    Case("generic-has-no-marker", "missing-end-marker",
         lambda: T.paced([b"data: hello\n\n", b"data: world\n\n"], url="http://localhost:8000/stream")),
    Case("http-500", "missing-end-marker",
         lambda: T.capture([(0.3, b"Internal Server Error")], status=500, headers=(("Content-Type", "text/plain"),))),
    Case("gemini-usage-after-finish", "data-after-end",
         lambda: gemini(T.gemini_events(5) + [T.sse({"usageMetadata": {"totalTokenCount": 9}}, eol="\r\n")])),
    Case("done-twice-is-no-data", "data-after-end", lambda: T.paced(OA + [T.sse("[DONE]")])),
    Case("done-once", "duplicate-end-marker", lambda: T.paced(OA)),
    Case("anthropic-without-done", "done-not-json", lambda: T.paced(T.anthropic_events(5), url=ANTHROPIC_URL)),
    Case("done-as-a-token", "done-not-json", lambda: T.paced(T.openai_events(3, done=False)
         + [T.sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "[DONE]"}}]})])),
    Case("done-sentinel-is-not-json-error", "invalid-json", lambda: T.paced(OA)),
    Case("generic-plain-text", "invalid-json",
         lambda: T.paced([b"data: hello\n\n", b"data: world\n\n"], url="http://localhost:8000/stream")),
    Case("error-as-a-word", "error-event", lambda: T.paced(T.openai_events(3, done=False)
         + [T.sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "error"}}]})]
         + OA[-1:])),
    Case("200", "http-error", lambda: T.paced(OA)),
    Case("charset", "wrong-content-type", with_headers(base=(("Content-Type", "Text/Event-Stream; charset=utf-8"),))),
    Case("identity", "compressed-stream", with_headers(("Content-Encoding", "identity"))),
    Case("good-gzip", "decode-error", T.gzipped),
    Case("good-gzip", "decode-bomb", T.gzipped),
    Case("1-MiB-line", "line-too-long", lambda: T.long_line(1 << 20)),
    Case("16-lines-of-1-MiB", "event-too-long", lambda: T.long_line(16 << 20, lines=16)),
    Case("chunked", "content-length-on-stream", with_headers(("Transfer-Encoding", "chunked"))),
    Case("no-store", "no-cache-header", with_headers(base=(("Content-Type", "text/event-stream"),
                                                           ("Cache-Control", "no-store")))),
    Case("nginx-told", "x-accel-buffering", buffered_with_headers(("Server", "nginx"), ("X-Accel-Buffering", "no"))),
    Case("nginx-streaming-fine", "x-accel-buffering", with_headers(("Server", "nginx"))),
    Case("via-told", "x-accel-buffering", with_headers(("Via", "1.1 varnish"), ("X-Accel-Buffering", "no"))),
    Case("via-google", "x-accel-buffering", with_headers(("Via", "1.1 google"))),
    Case("uvicorn", "x-accel-buffering", with_headers(("Server", "uvicorn"))),
    Case("ends-on-blank-line", "incomplete-event", lambda: T.paced(OA)),
    Case("euro-split-across-chunks", "invalid-utf8",
         lambda: T.capture([(0.3, b'data: {"choices":[{"index":0,"delta":{"content":"\xe2\x82'),
                            (0.33, b'\xac"}}]}\n\n'), (0.36, b"data: [DONE]\n\n")])),
    Case("pure-crlf-gemini", "cr-line-endings", lambda: gemini(T.gemini_events(5))),
    Case("pure-lf", "cr-line-endings", lambda: T.paced(OA)),
    Case("nul-in-data", "utf-16", lambda: T.paced([b'data: {"a": "x\x00y\x00z\x00w\x00"}\n\n', *OA[1:]])),
    Case("utf-8-bom", "utf-16", lambda: T.paced([b"\xef\xbb\xbf" + OA[0], *OA[1:]])),
    Case("feff-inside-data", "bom",
         lambda: T.paced(['data: {"choices":[{"index":0,"delta":{"content":"\ufeffhi"}}]}\n\n'.encode()] + OA[-1:])),
    Case("valid-id-and-retry", "ignored-fields", lambda: T.paced([b"id: 1\nretry: 3000\n" + OA[0]] + OA[1:])),
    Case("raw-body", "recording-incomplete", lambda: parse_capture(b"".join(OA))),
    Case("task-id-not-a-key", "secret-in-capture",
         lambda: T.paced([b'data: {"id":"task-0123456789abcdefghijkl"}\n\n'] + OA[-1:])),
    # the timing signatures of issue 18
    Case("yes-after-a-think", "single-flush", T.thought_then_answered),
    Case("short-answer-in-one-event", "single-flush", lambda: T.collected_answer(60)),
    Case("long-answer-streamed-slowly", "single-flush", T.slow_model),
    Case("one-event-at-once", "single-flush", lambda: T.collected_answer(400, silence=0.3)),
    Case("headers-then-a-late-first-event", "headers-held", lambda: T.paced(OA, ttft=3.0)),
    Case("fast-headers-with-the-first-event", "headers-held", lambda: T.paced(OA, ttft=0.05, headers_at=0.05)),
    Case("60s-silence-then-the-end", "idle-timeout-cut", lambda: T.cut_after_silence(60.0, marker=True)),
    Case("cut-after-57s", "idle-timeout-cut", lambda: T.cut_after_silence(57.0)),
    Case("cut-after-45s", "idle-timeout-cut", lambda: T.cut_after_silence(45.0)),
    Case("client-left-after-60s", "idle-timeout-cut", lambda: T.cut_after_silence(60.0, kind="client-disconnected")),
    Case("cut-at-47s", "total-timeout-cut", lambda: T.cut_while_flowing(47.0)),
    Case("clean-end-at-30s", "total-timeout-cut", lambda: T.cut_while_flowing(30.0, kind="complete")),
    Case("error-page-with-length", "content-length-on-stream",
         lambda: T.capture([(0.3, b"<html>Bad Gateway</html>")], status=502, reason="Bad Gateway",
                           headers=T.SSE_HEADERS + (("Content-Length", "24"),))),
    Case("varnish-reads-no-x-accel", "x-accel-buffering", buffered_with_headers(("Via", "1.1 varnish"))),
    Case("one-big-event", "not-an-event-stream", lambda: T.capture([(0.3, T.sse(" ".join(T.tokens(2000))))])),
    Case("only-the-last-event-lacks-its-blank-line", "not-an-event-stream",
         lambda: T.capture(STRIPPED[:1] + [(0.4, b"\n")] + STRIPPED[1:3])),
    Case("comments-only", "not-an-event-stream", lambda: T.capture([(0.3, b": ping\n\n"), (15.3, b": ping\n\n")])),
    Case("empty-body", "not-an-event-stream", lambda: T.capture([])),
    Case("json-served-as-json", "not-an-event-stream",
         lambda: T.capture([(0.3, JSON_ERROR)], headers=(("Content-Type", "application/json"),))),
    Case("text-cut-explained-by-an-idle-timeout", "connection-cut",
         lambda: dataclasses.replace(T.paced([b"data: w\n\n"] * 5, url="http://localhost:8000/chat"),
                                     end=End(kind="server-disconnected", t=61.0, error="peer closed"))),
    Case("markdown-block-written-at-once", "not-an-event-stream",
         lambda: T.capture([(0.3, b"".join(f"data: line {i}\n".encode() for i in range(20)) + b"\n"),
                            (0.4, b"data: [DONE]\n\n")])),
    Case("a-field-line-then-nothing", "not-an-event-stream", lambda: T.capture([(0.3, b"event: ping\n")])),
]
# fmt: on


def findings(capture: Capture) -> tuple[Finding, ...]:
    return check_capture(capture).findings


def test_codes_are_the_documented_ones() -> None:
    # fmt: off
    assert list(CODES) == [
        "buffering-burst", "single-flush", "fixed-size-flush", "long-silence", "headers-held", "idle-timeout-cut",
        "total-timeout-cut", "heartbeats", "missing-end-marker",
        "connection-cut", "data-after-end", "duplicate-end-marker", "done-not-json", "invalid-json", "error-event", "http-error",
        "wrong-content-type", "compressed-stream", "decode-error", "decode-bomb", "line-too-long", "event-too-long",
        "content-length-on-stream", "no-cache-header", "x-accel-buffering", "incomplete-event", "invalid-utf8", "cr-line-endings",
        "bom", "utf-16", "ignored-fields", "recording-incomplete", "secret-in-capture", "not-an-event-stream",
        "frame-error", "ndjson-blank-line", "ndjson-line-break", "array-syntax",
    ]
    # fmt: on


def test_the_readme_documents_every_code_with_its_severity() -> None:
    """The README's table of codes (Diagnosis) has a row for each code, with its registered severity: a new
    code cannot land undocumented. (Rows may name two codes, `a` / `b`, or list several.)"""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    documented: dict[str, str] = {}
    for line in readme.splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) == 3 and cells[1] in {"info", "warning", "error", "info / warning"}:
            for code in re.findall(r"`([a-z0-9-]+)`", cells[0]):
                documented[code] = cells[1]
    for code, spec in CODES.items():
        assert code in documented, f"README.md: no row for {code}"
        assert spec.severity.name.lower() in documented[code], (code, documented[code])


@pytest.mark.parametrize("table", [TRIGGERS, NEAR_MISSES], ids=["triggers", "near-misses"])
def test_every_code_has_cases(table: list[Case]) -> None:
    assert sorted({c.code for c in table}) == sorted(CODES)


@pytest.mark.parametrize("case", TRIGGERS, ids=[f"{c.code}:{c.id}" for c in TRIGGERS])
def test_trigger(case: Case) -> None:
    found = [f for f in findings(case.build()) if f.code == case.code]
    assert found, f"{case.code} not reported"
    first = found[0]
    assert first.severity == case.severity
    for piece in case.evidence:
        assert piece in first.message
    if first.severity > Severity.INFO:
        assert first.fix == (first.advice or CODES[case.code].fix) and first.fix


@pytest.mark.parametrize("case", NEAR_MISSES, ids=[f"{c.code}:{c.id}" for c in NEAR_MISSES])
def test_near_miss(case: Case) -> None:
    assert case.code not in {f.code for f in findings(case.build())}


def test_severities_are_the_registered_ones() -> None:
    """A finding has its code's severity, with two documented exceptions: done-not-json is raised to a
    warning for a sentinel clients miss, and missing-end-marker lowered to one when an in-band error
    (an error itself) explains it."""
    exceptions = {("done-not-json", W), ("missing-end-marker", W)}
    for case in TRIGGERS:
        for f in findings(case.build()):
            assert f.severity == CODES[f.code].severity or (f.code, f.severity) in exceptions, f


def test_findings_point_at_the_event() -> None:
    [err] = [f for f in findings(T.paced(OA[:5] + [OPENAI_ERROR] + OA[-1:])) if f.code == "error-event"]
    assert (err.event_index, err.offset, err.t) == (5, len(b"".join(OA[:5])), pytest.approx(T.TTFT + 5 * T.EVERY))
    assert err.evidence == ErrorEvent(code="server_error", type="server_error")


def test_findings_are_worst_first() -> None:
    capture = T.paced(OA[:5] + [OPENAI_ERROR] + OA[5:-1], headers=T.SSE_HEADERS[:1])
    severities = [f.severity for f in findings(capture)]
    assert severities == sorted(severities, reverse=True)
    assert {E, I} <= set(severities)


def test_an_http_error_is_not_checked_as_a_stream() -> None:
    """A 429's JSON body is no event stream: only http-error, no framing or lifecycle noise."""
    capture = T.capture(
        [(0.3, b'{"error":{"message":"Rate limit reached"}}')],
        status=429,
        reason="Too Many Requests",
        headers=(("Content-Type", "application/json"),),
    )
    assert [f.code for f in findings(capture)] == ["http-error"]


def test_an_error_event_explains_the_missing_marker() -> None:
    """Anthropic ends the stream right after `event: error` (no message_stop): the error is the diagnosis."""
    capture = T.paced(T.anthropic_start() + T.anthropic_deltas(3) + [ANTHROPIC_ERROR], url=ANTHROPIC_URL)
    bad = {f.code: f.message for f in findings(capture) if f.severity > Severity.INFO}
    assert "error-event" in bad
    assert "hop or recorder dropped it" not in bad.get("missing-end-marker", "")


# -- missing-end-marker's fix follows how the stream ended ---------------------------------------


@pytest.mark.parametrize(
    ("end", "says"),
    [
        (End(kind="client-disconnected", t=0.5, error="fetch's own --timeout 1 s"), "no hop cut this stream"),
        (None, "record it again"),
        (End(kind="server-disconnected", t=0.5, error="peer closed"), "find the hop that closed the connection"),
    ],
)
def test_missing_end_marker_advice_follows_the_end(end: End | None, says: str) -> None:
    """A stream the client (or fetch's own timeout, or Ctrl-C) left is no hop's doing: its fix must not
    send the user hunting for one; a server-side cut keeps the code's own fix."""
    events = [b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n']
    capture = Capture(chunks=(Chunk(0.1, events[0]),), end=end,
                      request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"))  # fmt: skip
    [finding] = [f for f in check_capture(capture).findings if f.code == "missing-end-marker"]
    assert says in finding.fix
    if end is not None and end.kind == "client-disconnected":
        assert "find the hop" not in finding.fix and end.error in finding.message
