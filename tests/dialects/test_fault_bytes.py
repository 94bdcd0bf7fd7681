"""The faults a replay adds, in each provider's own shape: `Dialect.fault_error` and `Dialect.error_body`.

Each dialect's in-band error is appended after the first N events of a real capture of that dialect
and read back as a client reads it: the parser finds whole events in the stream's own line ends, the
answer before the error is unchanged, the reader records the error and `check` reports `error-event`.
Then the real SDKs (openai, anthropic) meet the in-band errors and the error responses through
`CaptureTransport`, and must raise.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sse_inspect import (
    DIALECTS,
    Capture,
    End,
    Event,
    EventStreamParser,
    Notice,
    Response,
    analyze,
    capture_from_body,
    check_capture,
    get_dialect,
    load_capture,
)

from tests.helpers import CORPUS, ROOT

FORMATS = ROOT / "tests" / "data" / "formats"
CAPTURES = {
    "openai-chat": ROOT / "captures" / "openai-chat-text.jsonl",
    "openai-responses": ROOT / "captures" / "openai-responses-functioncall.jsonl",
    "anthropic": ROOT / "captures" / "anthropic-text-then-tooluse.jsonl",
    "gemini": ROOT / "captures" / "gemini-split-tokens.jsonl",
    "cohere": CORPUS / "cohere-chat-v2-text.sse",
    "ollama": ROOT / "tests" / "data" / "formats" / "ollama-chat-tools.jsonl",
    "tgi": ROOT / "tests" / "data" / "formats" / "tgi-details.jsonl",
    "text": ROOT / "captures" / "lab-flask-good-gunicorn.jsonl",
    "generic": ROOT / "captures" / "lab-flask-good-gunicorn.jsonl",  # no stream is generic's own: it reads any
    "bedrock-converse": FORMATS / "bedrock-converse-text.jsonl",  # built from the docs: no real capture
    "bedrock-invoke": FORMATS / "bedrock-invoke-text.jsonl",
    "vercel-ui": FORMATS / "vercel-ui-tools.jsonl",
    "mcp": FORMATS / "mcp-tools-call-progress.jsonl",  # the TypeScript SDK's LF (the Python SDK's is CRLF)
    "a2a": FORMATS / "a2a-stream-artifacts.jsonl",  # a2a-sdk's CRLF
}
"""A real capture of each dialect, to put the error into."""
STREAM = (("Content-Type", "text/event-stream"),)


def parse(body: bytes) -> tuple[list[Event], list[Notice]]:
    parser = EventStreamParser()
    items = parser.feed(body, 0.0) + parser.close()
    return [x for x in items if isinstance(x, Event)], [x for x in items if isinstance(x, Notice)]


def first_events(name: str, n: int) -> bytes:
    """The capture's body up to the blank line that ends its `n`th event (CRLF kept whole)."""
    body = load_capture(CAPTURES[name]).body
    if n == 0:
        return b""
    end = parse(body)[0][n - 1].end
    return body[: end + 1] if body[end - 1 : end + 1] == b"\r\n" else body[:end]


def line_end(name: str) -> bytes:
    """The line end of the capture's events: CRLF for Gemini's and A2A's, LF for the others'."""
    return b"\r\n" if b"\r\n\r\n" in load_capture(CAPTURES[name]).body else b"\n"


def positions(name: str) -> list[int]:
    """Where to put the error: before any event, after the first, midway, and before the last."""
    count = len(parse(load_capture(CAPTURES[name]).body)[0])
    return sorted({0, 1, count // 2, count - 1})


def stream(body: bytes) -> Capture:
    return capture_from_body(body, response=Response(status=200, headers=STREAM), end=End(kind="complete"))


def visible(name: str, body: bytes) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """What the answer shows of each choice: text, reasoning and tool calls (a finish reason may come
    with the error: Cohere's `message-end` carries ERROR)."""
    answer = analyze(stream(body), dialect=name).answer
    return [(c.text, c.reasoning, [(t.name, t.arguments) for t in c.tool_calls]) for c in answer.choices]


def test_every_dialect_has_a_capture() -> None:
    assert set(CAPTURES) == set(DIALECTS)


NOT_AN_EVENT = {"gemini", "ollama", "bedrock-converse", "bedrock-invoke"}
"""The dialects whose provider writes its in-band error as something other than SSE events (Ollama's is an
NDJSON line, read back by its own framer in test_ollama.py; Bedrock's an event stream message, read back
in test_bedrock.py)."""
CASES = [(name, n) for name in DIALECTS if name not in NOT_AN_EVENT for n in positions(name)]


@pytest.mark.parametrize(("name", "n"), CASES)
def test_the_in_band_error_is_read_as_one(name: str, n: int) -> None:
    dialect = get_dialect(name)
    before = first_events(name, n)
    fault = dialect.fault_error(n)
    added, notices = parse(fault)
    assert added and {x.kind for x in notices} <= {"line-ending"}  # whole events: nothing else to forgive
    newline = line_end(name)  # the stream's own (CRLF noticed as such): no mixed line ends
    assert fault.endswith(newline * 2) and not set(fault.replace(newline, b"")) & set(b"\r\n")

    body = before + fault
    events, _ = parse(body)
    assert [(e.index, e.type, e.data) for e in events[n:]] == [(n + i, e.type, e.data) for i, e in enumerate(added)]

    answer = analyze(stream(body), dialect=name).answer
    assert answer.errors and answer.errors[0].event_index == n
    shown = visible(name, before)
    if name == "generic":  # generic shows every event's data, the error's too, one per line
        text, reasoning, calls = shown[0]
        shown = [(text + ("\n" if n else "") + added[0].data, reasoning, calls)]
    assert visible(name, body) == shown

    found = [f for f in check_capture(stream(body), dialect=name).findings if f.code == "error-event"]
    assert [f.event_index for f in found] == [e.event_index for e in answer.errors]
    assert answer.errors[0].message in found[0].message


def test_the_responses_error_numbers_its_events_on() -> None:
    """The error and `response.failed` take the next sequence numbers: no gap for a client to report."""
    name, n = "openai-responses", 5
    body = first_events(name, n) + get_dialect(name).fault_error(n)
    numbers = [json.loads(e.data)["sequence_number"] for e in parse(body)[0]]
    assert numbers == list(range(n + 2))
    answer = analyze(stream(body), dialect=name).answer
    assert "sequence_gap" not in answer.extra
    assert answer.finish_reason == answer.extra["status"] == "failed"


@pytest.mark.parametrize("n", positions("gemini"))
def test_gemini_writes_its_error_body_into_the_stream(n: int) -> None:
    """No event: the JSON error body, over several lines. google-genai joins the lines until the braces
    balance and raises on the object; an SSE parser ignores every line of it, so sse-inspect (as any
    SSE client) sees the stream end inside an event, before its finishReason, with an `"error"` field."""
    gemini = get_dialect("gemini")
    before = first_events("gemini", n)
    fault = gemini.fault_error(n)
    assert json.loads(fault) == json.loads(gemini.error_body(503)[1])
    assert json.loads(fault)["error"]["status"] == "UNAVAILABLE"

    body = before + fault
    events, notices = parse(body)
    assert len(events) == n and any(x.kind == "unterminated-event" for x in notices)
    ignored = [x.message for x in notices if x.kind == "ignored-field"]
    assert len(ignored) == fault.count(b"\n") and any('"error"' in message for message in ignored)

    assert visible("gemini", body) == visible("gemini", before)
    codes = {f.code for f in check_capture(stream(body), dialect="gemini").findings}
    assert {"missing-end-marker", "ignored-fields"} <= codes
    assert "error-event" not in codes


STATUSES = (400, 401, 404, 429, 500, 503, 529)


@pytest.mark.parametrize("name", list(DIALECTS))
@pytest.mark.parametrize("status", STATUSES)
def test_each_error_body_is_json_with_a_message(name: str, status: int) -> None:
    content_type, body = get_dialect(name).error_body(status)
    assert content_type == "application/json"
    payload = json.loads(body)
    assert isinstance(payload, dict) and _message(name, payload)


def test_the_providers_name_their_errors() -> None:
    """The codes clients branch on (and retry on) are the providers' own."""
    openai_429 = json.loads(get_dialect("openai-chat").error_body(429)[1])["error"]
    assert openai_429["code"] == "rate_limit_exceeded"
    assert json.loads(get_dialect("openai-responses").error_body(429)[1]) == {"error": openai_429}
    claude = {status: json.loads(get_dialect("anthropic").error_body(status)[1]) for status in (429, 500, 529)}
    assert {s: (p["type"], p["error"]["type"]) for s, p in claude.items()} == {
        429: ("error", "rate_limit_error"),
        500: ("error", "api_error"),
        529: ("error", "overloaded_error"),
    }
    gemini = {status: json.loads(get_dialect("gemini").error_body(status)[1])["error"] for status in (429, 503)}
    assert {s: (e["code"], e["status"]) for s, e in gemini.items()} == {
        429: (429, "RESOURCE_EXHAUSTED"), 503: (503, "UNAVAILABLE")}  # fmt: skip


def _message(name: str, payload: dict[str, Any]) -> str:
    """The human message of a provider's error body."""
    error = payload.get("error")
    if isinstance(error, str):  # Ollama's and TGI's: the message itself
        return error
    return str(error["message"] if isinstance(error, dict) else payload["message"])


# -- the real SDKs -------------------------------------------------------------------------

transport_module = pytest.importorskip("sse_inspect.httpx_transport", exc_type=ImportError)
CaptureTransport = transport_module.CaptureTransport


def error_response(name: str, status: int) -> Capture:
    content_type, body = get_dialect(name).error_body(status)
    response = Response(status=status, headers=(("Content-Type", content_type),))
    return capture_from_body(body, response=response, end=End(kind="complete"))


def in_band(name: str, n: int) -> Capture:
    """The capture's first `n` events, then its provider's in-band error."""
    return stream(first_events(name, n) + get_dialect(name).fault_error(n))


def fault_message(name: str) -> str:
    (event, *_) = parse(get_dialect(name).fault_error(3))[0]
    return str(json.loads(event.data)["error"]["message"])


# openai ---------------------------------------------------------------------------------------

openai = pytest.importorskip("openai")


def openai_client(capture: Capture) -> Any:
    http = openai.DefaultHttpxClient(transport=CaptureTransport(capture))
    return openai.OpenAI(api_key="sk-test", base_url="http://api.test/v1", http_client=http, max_retries=0)


def openai_chat(capture: Capture) -> str:
    chunks = openai_client(capture).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


@pytest.mark.parametrize("n", [0, 4])
def test_openai_raises_on_the_chat_error(n: int) -> None:
    with pytest.raises(openai.APIError) as info:
        openai_chat(in_band("openai-chat", n))
    assert type(info.value) is openai.APIError  # no status error: the response was a 200
    assert info.value.message == fault_message("openai-chat")


def test_openai_raises_on_the_responses_error() -> None:
    """The recorded shape (an `error` object in the `error` event) is one openai-python raises on."""
    client = openai_client(in_band("openai-responses", 3))
    with pytest.raises(openai.APIError) as info:
        for _ in client.responses.create(model="gpt-4.1", input="weather?", stream=True):
            pass
    assert type(info.value) is openai.APIError
    assert info.value.message == fault_message("openai-responses")


OPENAI_ERRORS = {400: "BadRequestError", 429: "RateLimitError", 500: "InternalServerError",
                 503: "InternalServerError", 529: "InternalServerError"}  # fmt: skip


@pytest.mark.parametrize("status", sorted(OPENAI_ERRORS))
def test_openai_raises_on_the_error_response(status: int) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        openai_chat(error_response("openai-chat", status))
    assert type(info.value) is getattr(openai, OPENAI_ERRORS[status])
    assert info.value.status_code == status
    assert _message("openai-chat", json.loads(get_dialect("openai-chat").error_body(status)[1])) in str(info.value)


# anthropic ------------------------------------------------------------------------------------

anthropic = pytest.importorskip("anthropic")
ASK: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 256,
                       "messages": [{"role": "user", "content": "Paris?"}]}  # fmt: skip


def anthropic_text(capture: Capture) -> str:
    http = anthropic.DefaultHttpxClient(transport=CaptureTransport(capture))
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url="http://api.test", http_client=http, max_retries=0)
    with client.messages.stream(**ASK) as stream:
        return "".join(stream.text_stream)


@pytest.mark.parametrize("n", [0, 5])
def test_anthropic_raises_on_the_overloaded_event(n: int) -> None:
    """The SDK raises on the event's name: a status error although the status was 200 (the class it
    picks by that status), its body the event's payload."""
    with pytest.raises(anthropic.APIStatusError) as info:
        anthropic_text(in_band("anthropic", n))
    assert info.value.status_code == 200
    assert type(info.value) is anthropic.APIStatusError
    assert info.value.body == json.loads(parse(get_dialect("anthropic").fault_error(n))[0][0].data)
    assert fault_message("anthropic") in str(info.value)


ANTHROPIC_ERRORS = {400: "BadRequestError", 429: "RateLimitError", 500: "InternalServerError",
                    503: "InternalServerError", 529: "OverloadedError"}  # fmt: skip
"""The class the SDK raises for each status (for a 503, from anthropic 2.x on, its subclass ServiceUnavailableError)."""


@pytest.mark.parametrize("status", sorted(ANTHROPIC_ERRORS))
def test_anthropic_raises_on_the_error_response(status: int) -> None:
    with pytest.raises(anthropic.APIStatusError) as info:
        anthropic_text(error_response("anthropic", status))
    expected = getattr(anthropic, ANTHROPIC_ERRORS[status])
    assert isinstance(info.value, expected) if status == 503 else type(info.value) is expected
    assert info.value.status_code == status
    assert _message("anthropic", json.loads(get_dialect("anthropic").error_body(status)[1])) in str(info.value)
