"""The `tgi` dialect: text-generation-inference's native `/generate_stream` (SSE).

The fixtures (tests/data/formats/tgi-*.jsonl, built by build_tgi.py from TGI's docs and router) rebuild
as their sidecars say, through the whole analysis (SSE is read as it always was); detection picks `tgi`
for them and for no other stream of the repository; the grammar's details (special tokens, the last
event, errors and their `error_type`, events after the end, a `[DONE]` added on the way); the in-band
error `fault_error` writes parses back to an error the reader records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import (
    Capture,
    End,
    Event,
    EventStreamParser,
    Notice,
    Request,
    Response,
    Severity,
    analyze,
    capture_from_body,
    check_capture,
    load_capture,
    parse_events,
)
from sse_inspect._ndjson import NDJSONParser, sniff_framing
from sse_inspect.dialects import DIALECTS, Answer, EventFlags, detect_dialect, get_dialect

from tests.helpers import CORPUS, ROOT, parse_all

FORMATS = ROOT / "tests" / "data" / "formats"
FIXTURES = sorted(FORMATS.glob("tgi-*.jsonl"))
URL = "http://127.0.0.1:8080/generate_stream"
STREAM = (("Content-Type", "text/event-stream"),)


def expect(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


def events_of(capture: Capture) -> list[Event]:
    """The capture's events through the framer its Content-Type and bytes call for."""
    content_type = capture.response.header("Content-Type") if capture.response else None
    ndjson = sniff_framing(content_type, capture.body[:64]) == "ndjson"
    parser = NDJSONParser() if ndjson else EventStreamParser()
    found: list[Any] = []
    for chunk in capture.chunks:
        found += parser.feed(chunk.data, chunk.t)
    return [x for x in found + parser.close() if isinstance(x, Event)]


def body(*payloads: dict[str, Any] | str) -> bytes:
    """Events as TGI writes them: `data:` with no space, compact JSON, a blank line."""
    return b"".join(
        b"data:" + (p if isinstance(p, str) else json.dumps(p, separators=(",", ":"))).encode() + b"\n\n"
        for p in payloads
    )


def token(n: int, text: str, *, special: bool = False, generated_text: str | None = None,
          details: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    return {"index": n, "token": {"id": n, "text": text, "logprob": -0.1, "special": special},
            "generated_text": generated_text, "details": details}  # fmt: skip


def rebuild(*payloads: dict[str, Any] | str) -> Answer:
    return get_dialect("tgi").rebuild(parse_events(body(*payloads)))


DETAILS = {"finish_reason": "length", "generated_tokens": 2, "seed": 42, "input_length": 5}


# --- the fixtures ---------------------------------------------------------------------------------


def test_there_are_fixtures_of_each_kind() -> None:
    """Text without details, text with details and an eos token, an in-band error; each citing its source."""
    assert [p.name for p in FIXTURES] == ["tgi-details.jsonl", "tgi-error.jsonl", "tgi-text.jsonl"]
    for path in FIXTURES:
        capture = load_capture(path)
        assert capture.recorder.startswith("built from https://github.com/huggingface/text-generation-inference")
        assert expect(path)["source"] in capture.recorder


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_fixture_rebuilds_as_its_sidecar_says(path: Path) -> None:
    """Through the whole analysis: detection from the content and the URL, the SSE parser, the reader."""
    capture, want = load_capture(path), expect(path)
    analysis = analyze(capture)
    assert analysis.dialect == want["dialect"] == "tgi" and want["framing"] == "sse"
    answer = analysis.answer
    assert answer.text == want["text"] and answer.reasoning == want["reasoning"]
    assert [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls] == want["tool_calls"]
    assert answer.finish_reason == want["finish_reason"]
    assert answer.complete is want["complete"]
    assert [e.message for e in answer.errors] == want["errors"]
    assert answer.invalid_payloads == 0




@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_check_judges_the_fixtures(path: Path) -> None:
    """A whole stream has its end marker; the error stream's error is reported, with no end marker."""
    codes = {f.code for f in check_capture(load_capture(path)).findings}
    if expect(path)["errors"]:
        assert {"error-event", "missing-end-marker"} <= codes
    else:
        assert not codes & {"error-event", "missing-end-marker", "invalid-json", "data-after-end"}


# --- detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_detection_picks_tgi_for_its_fixtures(path: Path) -> None:
    first = events_of(load_capture(path))[:50]
    assert detect_dialect(first, URL).name == "tgi"
    assert detect_dialect(first, None).name == "tgi"  # the content alone


def test_the_url_alone_says_a_little() -> None:
    assert detect_dialect([], URL).name == "tgi"
    assert detect_dialect([], "https://x.endpoints.huggingface.cloud/generate_stream/").name == "tgi"
    assert detect_dialect([], "http://tgi:8080/v1/chat/completions").name == "openai-chat"  # TGI's OpenAI API


def test_an_error_before_any_token_is_a_hint() -> None:
    """`{"error", "error_type"}` alone is TGI's shape, not only its: a hint, decided by the URL."""
    events = parse_events(body({"error": "Model is overloaded", "error_type": "overloaded"}))
    assert DIALECTS["tgi"].detect(events, None) == 30
    assert detect_dialect(events, URL).name == "tgi"


def test_no_other_stream_is_taken() -> None:
    streams: list[tuple[str, list[Any]]] = [(p.name, parse_all([p.read_bytes()])) for p in sorted(CORPUS.glob("*.sse"))]
    paths = sorted((ROOT / "captures").glob("*.jsonl")) + sorted(
        p for p in FORMATS.glob("*.jsonl") if not p.name.startswith("tgi-")
    )
    streams += [(p.name, events_of(load_capture(p))) for p in paths]
    assert len(streams) > 30
    for name, items in streams:
        first = [x for x in items if isinstance(x, Event)][:50]
        assert detect_dialect(first, None).name != "tgi", name
        assert DIALECTS["tgi"].detect(first, None) == 0, name


def test_an_apps_token_stream_stays_text() -> None:
    """`{"token": "..."}` (a string) is an app's own; TGI's `token` is an object with `special`."""
    assert detect_dialect(parse_events(body({"token": "Hel"}, {"token": "lo"})), None).name == "text"
    assert detect_dialect(parse_events(body({"token": {"text": "x"}})), None).name != "tgi"


# --- the grammar ----------------------------------------------------------------------------------


def test_special_tokens_are_not_text() -> None:
    eos = {**DETAILS, "finish_reason": "eos_token"}
    last = token(3, "</s>", special=True, generated_text="Hi", details=eos)
    answer = rebuild(token(1, "<s>", special=True), token(2, "Hi"), last)
    assert answer.text == "Hi" and answer.text_events == (1,)
    assert answer.finish_reason == "eos_token" and answer.complete is True


def test_the_last_event_ends_it_with_its_details() -> None:
    reader = get_dialect("tgi").reader()
    last = token(2, " learning", generated_text="Deep learning", details=DETAILS)
    events = parse_events(body(token(1, "Deep"), last))
    assert [reader.feed(e) for e in events] == [EventFlags.TEXT, EventFlags.TEXT | EventFlags.END]
    answer = reader.answer(get_dialect("tgi"))
    assert answer.finish_reason == "length" and answer.usage == {"generated_tokens": 2, "input_length": 5}
    assert answer.end_marker == "generated_text" and answer.end_marker_events == (1,)


def test_without_details_there_is_no_finish_reason() -> None:
    """`details` is null unless the request asked for it: the stream is whole, its reason unknown."""
    answer = rebuild(token(1, "Hi"), token(2, "!", generated_text="Hi!"))
    assert answer.text == "Hi!" and answer.finish_reason is None and answer.usage is None and answer.complete is True


def test_an_error_event_with_its_type() -> None:
    reader = get_dialect("tgi").reader()
    events = parse_events(body(token(1, "Hi"), {"error": "Request failed during generation: boom",
                                                "error_type": "generation"}))  # fmt: skip
    assert [reader.feed(e) for e in events] == [EventFlags.TEXT, EventFlags.ERROR]
    answer = reader.answer(get_dialect("tgi"))
    assert [(e.message, e.type, e.event_index) for e in answer.errors] == [
        ("Request failed during generation: boom", "generation", 1)]  # fmt: skip
    assert answer.text == "Hi" and answer.complete is False


def test_events_after_the_end_are_read_and_reported() -> None:
    """TGI's clients read the body to its end, so the reader does; the router sends nothing after the last
    event, so one after it is `data-after-end`, and a `[DONE]` was added on the way (`done-not-json`)."""
    extra = body(token(1, "Hi", generated_text="Hi"), token(2, " more"), "[DONE]")
    answer = get_dialect("tgi").rebuild(parse_events(extra))
    assert answer.text == "Hi more" and answer.end_markers == 1 and "ignored_after_end" not in answer.extra
    capture = capture_from_body(extra, request=Request(method="POST", url=URL), response=Response(headers=STREAM),
                                end=End(kind="complete"))  # fmt: skip
    findings = {f.code: f for f in check_capture(capture).findings}
    assert "data-after-end" in findings
    assert findings["done-not-json"].severity == Severity.WARNING


def test_junk_never_counts_as_text() -> None:
    answer = rebuild({"token": "x"}, {"token": {"text": 5}}, {"token": {"text": "ok", "special": "no"}},
                     {"details": {"generated_tokens": "many"}}, {"generated_text": 3})  # fmt: skip
    assert answer.text == "ok" and answer.end_markers == 0 and answer.usage is None


# --- the faults a replay adds ---------------------------------------------------------------------


def test_the_in_band_error_is_tgis_own_event() -> None:
    fault = get_dialect("tgi").fault_error(3)
    assert fault.startswith(b"data:{") and fault.endswith(b"}\n\n") and fault.count(b"\n") == 2
    parser = EventStreamParser()
    found = parser.feed(fault, 0.0) + parser.close()
    assert not [x for x in found if isinstance(x, Notice)]
    [event] = [x for x in found if isinstance(x, Event)]
    assert set(json.loads(event.data)) == {"error", "error_type"}
    answer = get_dialect("tgi").rebuild([event])
    assert answer.errors[0].type == "generation" and answer.errors[0].message.startswith("Request failed")


@pytest.mark.parametrize("status", [400, 404, 422, 424, 429, 500, 503])
def test_the_error_body_is_tgis(status: int) -> None:
    content_type, error = get_dialect("tgi").error_body(status)
    payload = json.loads(error)
    assert content_type == "application/json" and set(payload) == {"error", "error_type"}
    assert payload["error"] and payload["error_type"] and b", " not in error
    if status == 429:
        assert payload == {"error": "Model is overloaded", "error_type": "overloaded"}
