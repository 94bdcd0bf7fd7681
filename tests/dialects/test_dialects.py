"""Dialects: detection and rebuilding, against the recorded corpus and small hand-written streams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sse_inspect
import sse_inspect.dialects
from sse_inspect._errors import DialectError
from sse_inspect._events import Event
from sse_inspect._parser import EventStreamParser
from sse_inspect.dialects import DIALECTS, KEPT, Answer, EventFlags, detect_dialect, get_dialect
from tests.helpers import corpus_dialect

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
FORMATS = CORPUS.parent / "formats"
"""Fixtures built from the providers' documentation, for the dialects no real corpus exists for."""
MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))


def parse(body: bytes) -> list[Event]:
    parser = EventStreamParser()
    return [x for x in parser.feed(body, 0.0) + parser.close() if isinstance(x, Event)]


def stream(*items: str | tuple[str, str | dict[str, Any]]) -> list[Event]:
    """Events from data strings or (event type, data) pairs; dicts are dumped as JSON."""
    events = []
    for index, item in enumerate(items):
        kind, data = item if isinstance(item, tuple) else ("message", item)
        events.append(Event(index=index, type=kind, data=data if isinstance(data, str) else json.dumps(data)))
    return events


def named(*payloads: dict[str, Any]) -> list[Event]:
    """Events named after their JSON `type`, as Anthropic, Responses and Cohere send them."""
    return stream(*((payload["type"], payload) for payload in payloads))


def chunk(*choices: dict[str, Any], **fields: Any) -> str:
    return json.dumps({"object": "chat.completion.chunk", "choices": list(choices), **fields})


def rebuild(name: str, events: list[Event]) -> Answer:
    return get_dialect(name).rebuild(iter(events))


# --- the corpus ---------------------------------------------------------------------------


def one_pass(events: list[Event]) -> Iterator[Event]:
    yield from events


@pytest.mark.parametrize("entry", MANIFEST, ids=[entry["file"] for entry in MANIFEST])
def test_corpus(entry: dict[str, Any]) -> None:
    events = parse((CORPUS / entry["file"]).read_bytes())
    dialect = detect_dialect(events[:50], None)
    assert dialect.name == corpus_dialect(entry)

    answer = dialect.rebuild(one_pass(events))
    assert answer.text == entry["text"]
    assert answer.reasoning == entry["reasoning"]
    assert [(call.name, call.arguments) for call in answer.tool_calls] == [
        (call["name"], call["arguments"]) for call in entry["tool_calls"]
    ]
    finish = entry.get("finish_reason", entry.get("stop_reason", entry.get("final_status")))
    if isinstance(finish, list):
        assert [choice.finish_reason for choice in answer.choices] == finish
    else:
        assert answer.finish_reason == finish
    if "choices" in entry:
        got = [(c.index, c.text, c.refusal) for c in answer.choices]
        assert got == [(c["index"], c["text"], c["refusal"] or "") for c in entry["choices"]]
    if "tool_plan" in entry:
        assert answer.choices[0].plan == entry["tool_plan"]
    if entry.get("errors"):
        assert {(e["message"], str(e["code"])) for e in entry["errors"]} <= {(e.message, e.code) for e in answer.errors}
    else:
        assert answer.errors == ()
    assert answer.complete == (entry["complete"] and (entry["end_marker_in_file"] or entry["provider"] == "gemini"))
    assert answer.invalid_json == ()
    assert answer.text_events == tuple(sorted(set(answer.text_events)))
    if entry.get("usage_seen"):
        assert answer.usage


def test_corpus_covers_every_dialect_but_the_apps_own() -> None:
    """The corpus is of providers' streams; text (an app's own stream) is tested on the seed's shapes
    in test_text.py, generic on hand-written streams below, and the dialects no real corpus exists for on
    the fixtures built from their providers' documentation (tests/data/formats, each with its own tests)."""
    formats = {json.loads(p.read_text(encoding="utf-8"))["dialect"] for p in FORMATS.glob("*.expect.json")}
    assert {corpus_dialect(entry) for entry in MANIFEST} | formats == set(DIALECTS) - {"generic", "text"}


# --- OpenAI chat and compatible servers -----------------------------------------------------


def test_multi_choice_interleaved() -> None:
    events = stream(
        chunk({"index": 1, "delta": {"role": "assistant", "content": ""}}),
        chunk({"index": 0, "delta": {"content": "Hel"}}),
        chunk({"index": 1, "delta": {"content": "Bon"}}),
        chunk({"index": 2, "delta": {"refusal": "No"}}),
        chunk({"index": 0, "delta": {"content": "lo"}}),
        chunk({"index": 1, "delta": {"content": "jour"}}),
        chunk({"index": 1, "delta": {}, "finish_reason": "length"}),
        chunk({"index": 0, "delta": {}, "finish_reason": "stop"}),
        chunk({"index": 2, "delta": {}, "finish_reason": "stop"}),
        chunk(usage={"total_tokens": 9}),
        "[DONE]",
    )
    answer = rebuild("openai-chat", events)
    assert [(c.index, c.text, c.refusal, c.finish_reason) for c in answer.choices] == [
        (0, "Hello", "", "stop"),
        (1, "Bonjour", "", "length"),
        (2, "", "No", "stop"),
    ]
    assert answer.usage == {"total_tokens": 9}
    assert answer.text_events == (1, 2, 3, 4, 5)
    assert answer.end_marker_events == (10,)
    assert answer.complete is True


def test_tool_calls_keyed_by_id_without_index() -> None:
    """Mistral sends whole calls with an id and no index; a later fragment with a known id continues its call."""
    call_a = {"id": "a", "function": {"name": "weather", "arguments": '{"city": '}}
    call_b = {"id": "b", "function": {"name": "time", "arguments": "{}"}}
    events = stream(
        chunk({"index": 0, "delta": {"content": None, "tool_calls": [call_a, call_b]}}),
        chunk({"index": 0, "delta": {"tool_calls": [{"id": "a", "function": {"arguments": '"Oslo"}'}}]}}),
        chunk({"index": 0, "delta": {}, "finish_reason": "tool_calls"}),
    )
    calls = rebuild("openai-chat", events).tool_calls
    assert [(c.index, c.id, c.name, c.arguments) for c in calls] == [
        (0, "a", "weather", '{"city": "Oslo"}'),
        (1, "b", "time", "{}"),
    ]
    assert all(c.arguments_valid_json for c in calls)


def test_tool_calls_keyed_by_index_and_unkeyed_continuation() -> None:
    events = stream(
        chunk({"delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "f", "arguments": ""}}]}}),
        chunk({"delta": {"tool_calls": [{"index": 1, "id": "y", "function": {"name": "g", "arguments": "{"}}]}}),
        chunk({"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}),
        chunk({"delta": {"tool_calls": [{"function": {"arguments": "}"}}]}}),  # no key: the last call
        chunk({"delta": {"tool_calls": [{"index": 0, "id": "z", "function": {"name": "h", "arguments": "[]"}}]}}),
    )
    calls = rebuild("openai-chat", events).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("x", "f", "{}"), ("y", "g", "{}"), ("z", "h", "[]")]


def test_reasoning_details_not_double_counted() -> None:
    detail = {"type": "reasoning.text", "text": "think ", "index": 0}
    encrypted = {"type": "reasoning.encrypted", "data": "opaque"}
    events = stream(
        chunk({"delta": {"reasoning": "think ", "reasoning_details": [detail]}}),
        chunk({"delta": {"reasoning": None, "reasoning_details": [{**detail, "text": "more "}]}}),
        chunk({"delta": {"reasoning_details": [encrypted]}}),
        chunk({"delta": {"reasoning_content": "vllm ", "reasoning": "vllm "}}),
        chunk({"delta": {"reasoning_content": "deep"}}),
        chunk({"delta": {"content": "answer"}}),
    )
    answer = rebuild("openai-chat", events)
    assert answer.reasoning == "think more vllm deep"
    assert answer.text == "answer"
    assert answer.text_events == (0, 1, 3, 4, 5)


def test_mistral_typed_content_parts() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "2+2"}]}
    events = stream(
        chunk({"delta": {"content": [thinking]}}),
        chunk({"delta": {"content": [{"type": "text", "text": "4"}]}}),
    )
    answer = rebuild("openai-chat", events)
    assert (answer.reasoning, answer.text) == ("2+2", "4")


def test_openai_inband_error_and_invalid_json() -> None:
    events = stream(
        chunk({"delta": {"content": "Hi"}}, model="m", id="c1", provider="P"),
        "{not json",
        json.dumps({"error": {"code": 502, "message": "upstream died"}}),
        json.dumps({"error": "plain string"}),
        json.dumps({"object": "error", "message": "vllm style", "type": "BadRequestError", "code": 400}),
        "[DONE]",
    )
    answer = rebuild("openai-chat", events)
    assert [(e.message, e.code, e.event_index) for e in answer.errors] == [
        ("upstream died", "502", 2),
        ("plain string", None, 3),
        ("vllm style", "400", 4),
    ]
    assert answer.invalid_json == (1,)
    assert answer.end_marker_seen and answer.complete is False
    assert (answer.model, answer.response_id, answer.extra) == ("m", "c1", {"provider": "P"})


def test_duplicate_end_markers_recorded() -> None:
    answer = rebuild("openai-chat", stream(chunk({"delta": {"content": "x"}}), "[DONE]", "[DONE]"))
    assert answer.end_marker_events == (1, 2)
    assert "ignored_after_end" not in answer.extra
    answer = rebuild("anthropic", named({"type": "message_stop"}, {"type": "message_stop"}))
    assert answer.end_marker_events == (0, 1)


def test_data_after_end_is_not_read() -> None:
    events = stream(
        chunk({"delta": {"content": "seen"}}),
        "[DONE]",
        chunk({"delta": {"content": " unseen"}}),
        json.dumps({"error": {"message": "late"}}),
    )
    answer = rebuild("openai-chat", events)
    assert answer.text == "seen"
    assert answer.errors == ()
    assert answer.extra["ignored_after_end"] == 2
    assert answer.complete is True


def test_missing_end_marker() -> None:
    answer = rebuild("openai-chat", stream(chunk({"delta": {"content": "cut"}})))
    assert (answer.end_marker_events, answer.end_marker_seen, answer.complete) == ((), False, False)


# --- Anthropic ----------------------------------------------------------------------------


def anthropic_text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
    ]


def test_done_in_anthropic_stream_is_not_an_end_marker() -> None:
    events = stream(*((p["type"], p) for p in anthropic_text("Hi")), ("message_stop", {"type": "message_stop"}))
    events.append(Event(index=len(events), data="[DONE]"))
    answer = rebuild("anthropic", events)
    assert answer.end_marker_events == (5,)
    assert answer.invalid_json == ()
    assert answer.complete is True
    assert answer.extra == {"ignored_after_end": 1}
    assert answer.usage == {"input_tokens": 5, "output_tokens": 3}
    assert (answer.model, answer.response_id, answer.finish_reason) == ("claude", "msg_1", "end_turn")


def test_anthropic_error_event_and_tool_use_without_deltas() -> None:
    tool = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    events = named(
        *anthropic_text("Hi")[:4],
        {"type": "content_block_start", "index": 1, "content_block": tool},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_stop", "index": 1},
        {"type": "error", "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"}},
    )
    events.append(Event(index=len(events), type="error", data="not json"))
    answer = rebuild("anthropic", events)
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("toolu_1", "now", "{}")]
    assert [(e.message, e.type, e.event_index) for e in answer.errors] == [
        ("Overloaded", "overloaded_error", 7),
        ("not json", None, 8),
    ]
    assert answer.invalid_json == (8,)
    assert answer.complete is False


def test_anthropic_without_event_names() -> None:
    """Proxies that drop `event:` lines: the JSON `type` still names the event."""
    events = stream(*(json.dumps(p) for p in anthropic_text("Hi")), json.dumps({"type": "message_stop"}))
    assert detect_dialect(events, None).name == "anthropic"
    assert rebuild("anthropic", events).complete is True


# --- OpenAI Responses ---------------------------------------------------------------------


def responses(*payloads: dict[str, Any]) -> list[Event]:
    return named(*({**payload, "sequence_number": n} for n, payload in enumerate(payloads)))


def test_responses_sequence_gap() -> None:
    events = responses(
        {"type": "response.created", "response": {"id": "r", "model": "m", "status": "in_progress"}},
        {"type": "response.output_text.delta", "delta": "a"},
        {"type": "response.output_text.delta", "delta": "b"},
        {"type": "response.completed", "response": {"status": "completed", "usage": {"total_tokens": 2}}},
    )
    del events[2]
    answer = rebuild("openai-responses", events)
    assert answer.extra == {"status": "completed", "sequence_gap": 2}
    assert (answer.text, answer.finish_reason, answer.usage) == ("a", "completed", {"total_tokens": 2})
    assert rebuild("openai-responses", responses({"type": "response.output_text.delta", "delta": "a"})).extra == {}


def test_responses_arguments_only_in_done_and_reasoning() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    events = responses(
        {"type": "response.reasoning_summary_text.delta", "delta": "plan", "summary_index": 0},
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": '{"a":1}'},
        {"type": "response.output_item.done", "output_index": 1, "item": {**item, "arguments": '{"a":1}'}},
        {"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "x"}}},
    )
    answer = rebuild("openai-responses", events)
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("call_1", "f", '{"a":1}')]
    assert answer.reasoning == "plan"
    assert answer.text_events == (0, 1, 2)
    assert (answer.finish_reason, answer.extra["incomplete_reason"], answer.complete) == ("incomplete", "x", True)


def test_responses_error_event_then_failed() -> None:
    events = responses(
        {"type": "error", "code": "server_is_overloaded", "message": "busy", "param": None},
        {"type": "response.failed", "response": {"status": "failed", "error": {"code": "x", "message": "again"}}},
    )
    answer = rebuild("openai-responses", events)
    assert [(e.message, e.code) for e in answer.errors] == [("busy", "server_is_overloaded")]
    assert answer.end_marker_events == (1,)
    assert (answer.finish_reason, answer.complete) == ("failed", False)


# --- Gemini and Cohere --------------------------------------------------------------------


def test_gemini_thoughts_candidates_and_late_usage() -> None:
    parts = [{"text": "hmm", "thought": True}, {"text": "A"}, {"functionCall": {"name": "f", "args": {"x": [1, 2]}}}]
    second = {"content": {"parts": [{"text": "B"}]}, "index": 1}
    events = stream(
        {"candidates": [{"content": {"parts": parts}, "index": 0}, second]},
        {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]},
        {"usageMetadata": {"totalTokenCount": 7}, "modelVersion": "g", "responseId": "r"},
    )
    answer = rebuild("gemini", events)
    assert [(c.text, c.reasoning) for c in answer.choices] == [("A", "hmm"), ("B", "")]
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("f", '{"x":[1,2]}')]
    assert (answer.finish_reason, answer.end_marker_events, answer.complete) == ("STOP", (1,), True)
    assert (answer.usage, answer.model, answer.response_id) == ({"totalTokenCount": 7}, "g", "r")


def test_gemini_blocked_prompt_and_error() -> None:
    answer = rebuild("gemini", stream({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}))
    assert (answer.extra, answer.end_marker_events) == ({"prompt_block_reason": "PROHIBITED_CONTENT"}, (0,))
    answer = rebuild("gemini", stream({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}))
    assert [(e.message, e.code, e.type) for e in answer.errors] == [("overloaded", "503", "UNAVAILABLE")]
    assert answer.complete is False


def test_cohere_thinking_and_error_finish() -> None:
    events = named(
        {"type": "message-start", "id": "c1"},
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "hmm"}}}},
        {"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": "ok"}}}},
        {"type": "message-end", "delta": {"finish_reason": "ERROR"}},
    )
    answer = rebuild("cohere", events)
    assert (answer.reasoning, answer.text, answer.response_id, answer.finish_reason) == ("hmm", "ok", "c1", "ERROR")
    assert [(e.code, e.event_index) for e in answer.errors] == [("ERROR", 4)]
    assert answer.complete is False


# --- generic ------------------------------------------------------------------------------


def test_generic_joins_data_with_lf() -> None:
    answer = rebuild("generic", stream("a", "", "b\nc", "[DONE]", "d"))
    assert answer.text == "a\n\nb\nc\nd"
    assert (answer.end_marker_events, answer.complete, answer.invalid_json) == ((3,), None, ())
    assert answer.text_events == (0, 2, 4)


# --- robustness ---------------------------------------------------------------------------

JUNK = [
    "",
    "[DONE] ",
    "[1, 2]",
    "3",
    "null",
    '"text"',
    "[" * 100_000 + "]" * 100_000,
    '{"choices": {"index": 0}}',
    '{"choices": [1, null, {"delta": null}, {"index": "a", "delta": {"content": null, "refusal": 5}}]}',
    (
        '{"choices": [{"index": true, "delta": {"content": [1, {"type": "thinking", "thinking": 3}], '
        '"tool_calls": [null, 5, {"index": [0], "id": {}, "function": "x"}], "function_call": [], '
        '"reasoning_details": [1, {"type": "reasoning.text", "text": 5}, {"type": []}]}, "finish_reason": 7}]}'
    ),
    '{"usage": [], "x_groq": 3, "provider": 9, "model": {}, "id": []}',
    (
        '{"candidates": [null, {"index": "1", "content": {"parts": [null, {"text": 5, "thought": "yes"}, '
        '{"functionCall": {"name": 3, "args": [1]}}, {"functionCall": 1}]}, "finishReason": 1}], '
        '"promptFeedback": [], "usageMetadata": 1}'
    ),
    '{"type": "content_block_delta", "index": [1], "delta": {"type": "input_json_delta", "partial_json": {"a": 1}}}',
    '{"type": "content_block_start", "index": {}, "content_block": {"type": "tool_use", "input": [], "name": []}}',
    '{"type": "message_start", "message": []}',
    '{"type": "message_delta", "delta": null, "usage": 1}',
    '{"type": "response.output_item.added", "item": {"type": "function_call", "id": ["x"]}, "output_index": "0"}',
    '{"type": "response.function_call_arguments.delta", "item_id": 5, "delta": null, "sequence_number": -1}',
    '{"type": "response.completed", "response": null, "sequence_number": 1e400}',
    '{"type": "response.failed", "response": {"error": [], "usage": 2, "incomplete_details": 1}}',
    '{"type": "tool-call-start", "index": null, "delta": {"message": {"tool_calls": [1]}}}',
    '{"type": "tool-call-delta", "delta": {"message": null}}',
    '{"type": "message-end", "delta": {"finish_reason": 7, "usage": [], "error": {}}}',
    '{"error": 5}',
    '{"error": {}}',
    '{"error": ["x"]}',
    '{"type": "error", "message": ["x"], "code": true}',
]
KINDS = ["message", "error", "content_block_start", "response.completed", "message-end", "tool-call-delta"]


@pytest.mark.parametrize("name", list(DIALECTS))
def test_junk_never_raises(name: str) -> None:
    events = [Event(index=n, type=kind, data=data) for n, (kind, data) in enumerate(
        (kind, data) for kind in KINDS for data in JUNK
    )]
    assert isinstance(rebuild(name, events), Answer)
    for start in range(0, len(events), 7):
        assert 0 <= DIALECTS[name].detect(events[start : start + 7], "http://[::1") <= 100
    assert detect_dialect(events, "::::") is not None


# --- detection and the registry -----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai-chat"),
        ("https://openrouter.ai/api/v1/chat/completions/", "openai-chat"),
        ("https://api.openai.com/v1/responses", "openai-responses"),
        ("https://api.anthropic.com/v1/messages?beta=true", "anthropic"),
        ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5:streamGenerateContent?alt=sse", "gemini"),
        ("https://api.cohere.com/v2/chat", "cohere"),
        ("https://example.com/stream", "generic"),
        (None, "generic"),
    ],
)
def test_detect_by_url_without_events(url: str | None, name: str) -> None:
    assert detect_dialect([], url).name == name


def test_content_beats_url() -> None:
    openai_events = stream(chunk({"delta": {"content": "x"}}), "[DONE]")
    assert detect_dialect(openai_events, "https://gateway.example/v1/messages").name == "openai-chat"
    gemini_events = stream({"candidates": []})
    assert detect_dialect(gemini_events, "https://gateway.example/v1/chat/completions").name == "gemini"
    done_only = stream("[DONE]")
    assert detect_dialect(done_only, None).name == "text"  # [DONE] alone says nothing of chat chunks
    assert detect_dialect(stream("hello", "world"), None).name == "text"
    assert detect_dialect(stream("hello", "[DONE]"), "https://app.example/v1/chat/completions").name == "text"
    assert detect_dialect(stream({"n": 1}, "[DONE]"), None).name == "generic"  # no text field: shown as it is
    assert detect_dialect(stream({"n": 1}, "[DONE]"), OPENAI_URL).name == "openai-chat"


def test_registry() -> None:
    assert list(DIALECTS) == [
        "openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "tgi", "bedrock-converse",
        "bedrock-invoke", "vercel-ui", "mcp", "a2a", "text", "generic"]  # fmt: skip
    for name, cls in DIALECTS.items():
        dialect = get_dialect(name)
        assert isinstance(dialect, cls) and dialect.name == name and dialect.title
        assert (dialect.end_marker is None) == (name == "generic")
    with pytest.raises(DialectError) as raised:
        get_dialect("nope")
    assert "nope" in str(raised.value)
    assert raised.value.hint is not None and "openai-chat" in raised.value.hint


def test_feed_says_what_each_event_was_as_event_flags() -> None:
    expected = [("TEXT", 1), ("END", 2), ("INVALID_JSON", 4), ("ERROR", 8)]
    assert [(flag.name, int(flag)) for flag in EventFlags] == expected
    both = EventFlags.TEXT | EventFlags.END
    assert isinstance(both, EventFlags) and repr(both) == "<EventFlags.TEXT|END: 3>"
    assert type(both & EventFlags.TEXT) is int and both & EventFlags.TEXT == 1 and not both & EventFlags.ERROR
    late = chunk({"delta": {"content": "late"}})
    events = stream(chunk({"delta": {"content": "x"}}), "nope", '{"error": {"message": "m"}}', "[DONE]", late)
    reader = get_dialect("openai-chat").reader()
    flags = [reader.feed(event) for event in events]
    assert flags == [EventFlags.TEXT, EventFlags.INVALID_JSON, EventFlags.ERROR, EventFlags.END, EventFlags(0)]
    assert all(type(flag) is EventFlags for flag in flags)


def test_the_flags_have_one_public_name() -> None:
    assert sse_inspect.EventFlags is EventFlags and "EventFlags" in sse_inspect.__all__
    assert not hasattr(sse_inspect, "Step") and not hasattr(sse_inspect.dialects, "Step")


def test_the_sentinel_and_the_cap_are_public() -> None:
    assert sse_inspect.dialects.DONE == "[DONE]" and {"DONE", "KEPT"} <= set(sse_inspect.dialects.__all__)
    reader = get_dialect("openai-chat").reader()
    for event in stream(*["[DONE]"] * (KEPT + 5)):
        reader.feed(event)
    assert reader.end_markers == KEPT + 5 and len(reader.end_marker_events) == KEPT


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_a_reader_that_stops_at_the_end_marker_has_an_end_that_closes_the_stream(name: str) -> None:
    """Else the events it leaves out of the answer would be lost without a `data-after-end` finding."""
    dialect = get_dialect(name)
    assert dialect.end_closes_stream or not dialect.reader.stops_at_end


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_dialect_gives_event_flags_on_the_corpus(name: str) -> None:
    for path in sorted(CORPUS.glob("*.sse")):
        reader = get_dialect(name).reader()
        assert all(type(reader.feed(event)) is EventFlags for event in parse(path.read_bytes()))
