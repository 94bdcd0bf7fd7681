"""Amazon Bedrock: `bedrock-converse` (ConverseStream) and `bedrock-invoke` (InvokeModelWithResponseStream,
Anthropic models), read from AWS event stream bodies.

The fixtures (tests/data/formats/bedrock-*.jsonl, built by build_bedrock.py from the published shapes)
rebuild as their sidecars say at every cut; detection claims them and nothing else; the grammar's details
(parallel calls, exceptions, the end and what follows it, bad chunks) on hand-made messages; the faults a
replay adds parse back, in the event stream framing, to the in-band error the readers record.
tests/test_bedrock_client.py has botocore itself read our replays.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import Chunk, EventStreamParser, load_capture, parse_rechunk_spec, rechunk
from sse_inspect._eventstream import EventStreamFrameParser, encode_message
from sse_inspect._events import Event, Notice
from sse_inspect._ndjson import JSONArrayParser, NDJSONParser
from sse_inspect._rechunk import RECHUNK_MATRIX
from sse_inspect.dialects import DIALECTS, Answer, EventFlags, detect_dialect, get_dialect

from tests.helpers import CORPUS, ROOT

FORMATS = ROOT / "tests" / "data" / "formats"
BEDROCK = sorted(FORMATS.glob("bedrock-*.jsonl"))
FIXTURES = sorted(FORMATS.glob("*.jsonl"))
CUTS = (*RECHUNK_MATRIX, "item")


def expect_of(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


def items(chunks: Iterable[Chunk], framing: str = "eventstream") -> list[Event | Notice]:
    """What the framer makes of the chunks (each with its arrival time), then of the end."""
    parser = {"eventstream": EventStreamFrameParser, "sse": EventStreamParser, "ndjson": NDJSONParser,
              "json-array": JSONArrayParser}[framing]()  # fmt: skip
    out = [x for c in chunks for x in parser.feed(c.data, c.t)] + parser.close()
    return [x for x in out if isinstance(x, Event | Notice)]


def events_of(chunks: Iterable[Chunk], framing: str = "eventstream") -> list[Event]:
    return [x for x in items(chunks, framing) if isinstance(x, Event)]


def message(name: str, payload: dict[str, Any] | str, *, kind: str = "event") -> bytes:
    """One event stream message as Bedrock writes it (`kind` "exception": `:exception-type` names it)."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    headers = {f":{kind}-type": name, ":content-type": "application/json", ":message-type": kind}
    return encode_message(headers, body.encode())


def read(name: str, *messages: bytes) -> tuple[list[EventFlags], Answer]:
    """The flags of each event and the answer, `messages` framed as one body."""
    dialect = get_dialect(name)
    reader = dialect.reader()
    events = events_of([Chunk(0.0, b"".join(messages))])
    assert len(events) == len(messages)
    flags = [reader.feed(event) for event in events]
    return flags, reader.answer(dialect, tuple(e.index for e, f in zip(events, flags) if f & EventFlags.TEXT))


def seen(answer: Answer) -> dict[str, Any]:
    """What a sidecar says of an answer."""
    return {
        "text": answer.text,
        "reasoning": answer.reasoning,
        "tool_calls": [{"name": call.name, "arguments": call.arguments} for call in answer.tool_calls],
        "finish_reason": answer.finish_reason,
        "complete": answer.complete,
        "errors": [error.message for error in answer.errors],
    }


# --- the fixtures -------------------------------------------------------------------------------------------


def test_there_are_fixtures_of_each_case() -> None:
    names = {path.name.removesuffix(".jsonl") for path in BEDROCK}
    for dialect in ("bedrock-converse", "bedrock-invoke"):
        assert {f"{dialect}-text", f"{dialect}-error", f"{dialect}-tool-use"} <= names
    assert "bedrock-converse-reasoning" in names




@pytest.mark.parametrize("path", BEDROCK, ids=lambda p: p.name)
def test_a_fixture_is_what_its_sidecar_says(path: Path) -> None:
    capture, expect = load_capture(path), expect_of(path)
    assert expect["framing"] == "eventstream"
    assert capture.response is not None
    assert capture.response.header("content-type") == "application/vnd.amazon.eventstream"
    assert capture.recorder == f"built from {expect['source']} by tests/data/formats/build_bedrock.py"
    assert all(c.t is not None for c in capture.chunks) and len(capture.chunks) > 3
    gaps = [b.t - a.t for a, b in zip(capture.chunks, capture.chunks[1:])]  # type: ignore[operator]
    assert all(0.019 < gap < 0.061 for gap in gaps)
    found = items(capture.chunks)
    assert [x for x in found if isinstance(x, Notice)] == []  # whole messages, every CRC right
    events = [x for x in found if isinstance(x, Event)]
    assert len(events) == len(capture.chunks)  # one message a chunk

    url = capture.request.url if capture.request else None
    dialect = detect_dialect(events[:50], url)
    assert dialect.name == expect["dialect"]
    assert detect_dialect(events[:50], None).name == expect["dialect"]  # the content alone says it
    answer = dialect.rebuild(events)
    assert seen(answer) == {key: expect[key] for key in seen(answer)}
    assert answer.invalid_payloads == 0
    assert answer.usage or not expect["complete"]  # Converse sends its usage last, in `metadata`


@pytest.mark.parametrize("spec", CUTS)
@pytest.mark.parametrize("path", BEDROCK, ids=lambda p: p.name)
def test_every_cut_gives_the_same_answer(path: Path, spec: str) -> None:
    capture, expect = load_capture(path), expect_of(path)
    whole = events_of(capture.chunks)
    cut = events_of(rechunk(capture.chunks, parse_rechunk_spec(spec)))
    def where(events: list[Event]) -> list[tuple[int, str, str, int, int]]:
        return [(e.index, e.type, e.data, e.start, e.end) for e in events]

    assert where(cut) == where(whole)
    answer = get_dialect(expect["dialect"]).rebuild(cut)
    assert seen(answer) == {key: expect[key] for key in seen(answer)}


def framed(path: Path) -> list[Event]:
    """The events of any fixture of tests/data/formats, read by the framer its sidecar names."""
    return events_of(load_capture(path).chunks, expect_of(path)["framing"])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_detection_claims_no_other_fixture(path: Path) -> None:
    """The fixtures of the other dialects (when there are any) stay theirs, by content and by URL."""
    capture, expect = load_capture(path), expect_of(path)
    events = framed(path)[:50]
    url = capture.request.url if capture.request else None
    if expect["dialect"].startswith("bedrock-"):
        assert detect_dialect(events, url).name == expect["dialect"]
    else:
        assert not detect_dialect(events, url).name.startswith("bedrock-")


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.sse")) + sorted((ROOT / "captures").glob("*.jsonl")),
                         ids=lambda p: p.name)  # fmt: skip
def test_detection_claims_no_sse_stream(path: Path) -> None:
    body = path.read_bytes() if path.suffix == ".sse" else load_capture(path).body
    events = events_of([Chunk(0.0, body)], "sse")[:50]
    for name in ("bedrock-converse", "bedrock-invoke"):
        assert DIALECTS[name].detect(events, None) == 0


def test_the_url_says_a_little() -> None:
    base = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0"
    assert detect_dialect([], base + "/converse-stream").name == "bedrock-converse"
    assert detect_dialect([], base + "/invoke-with-response-stream").name == "bedrock-invoke"
    assert detect_dialect([], base + "/converse").name == "generic"  # not a stream


# --- ConverseStream's grammar -------------------------------------------------------------------------------


def delta(index: int, **piece: Any) -> bytes:
    return message("contentBlockDelta", {"contentBlockIndex": index, "delta": piece, "p": "abcdef"})


def tool_start(index: int, tool_id: str, name: str) -> bytes:
    start = {"toolUse": {"toolUseId": tool_id, "name": name}}
    return message("contentBlockStart", {"contentBlockIndex": index, "start": start})


STOP = message("messageStop", {"stopReason": "end_turn", "p": "abc"})
USAGE = {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}
METADATA = message("metadata", {"usage": USAGE, "metrics": {"latencyMs": 90}})


def test_converse_parallel_tool_calls_interleaved_by_block() -> None:
    """Each call is found by its block's index, whatever comes between its pieces."""
    flags, answer = read(
        "bedrock-converse",
        message("messageStart", {"role": "assistant"}),
        tool_start(1, "tooluse_a", "get_weather"),
        tool_start(2, "tooluse_b", "get_time"),
        delta(1, toolUse={"input": '{"city": '}),
        delta(2, toolUse={"input": '{"tz": "UTC"}'}),
        delta(1, toolUse={"input": '"Paris"}'}),
        message("contentBlockStop", {"contentBlockIndex": 1}),
        message("messageStop", {"stopReason": "tool_use"}),
        METADATA,
    )
    got = [(call.id, call.name, call.arguments, call.arguments_valid_json) for call in answer.tool_calls]
    assert got == [
        ("tooluse_a", "get_weather", '{"city": "Paris"}', True),
        ("tooluse_b", "get_time", '{"tz": "UTC"}', True),
    ]
    assert answer.finish_reason == "tool_use" and answer.complete is True
    assert flags[1] == flags[3] == EventFlags.TEXT and flags[6] == EventFlags(0)


def test_converse_reasoning_signature_and_redacted_content_are_no_text() -> None:
    flags, answer = read(
        "bedrock-converse",
        delta(0, reasoningContent={"text": "Let me think."}),
        delta(0, reasoningContent={"signature": "EqoBCkgIARAB"}),
        delta(1, reasoningContent={"redactedContent": base64.b64encode(b"opaque").decode()}),
        delta(2, text="Yes."),
        STOP,
        METADATA,
    )
    assert (answer.reasoning, answer.text) == ("Let me think.", "Yes.")
    assert flags[:4] == [EventFlags.TEXT, EventFlags(0), EventFlags(0), EventFlags.TEXT]


def test_converse_ends_at_message_stop_and_reads_metadata_after_it() -> None:
    flags, answer = read("bedrock-converse", delta(0, text="Hi"), STOP, METADATA)
    assert flags == [EventFlags.TEXT, EventFlags.END, EventFlags(0)]
    assert answer.complete is True and answer.end_marker == "messageStop" and answer.end_marker_events == (1,)
    assert answer.usage == USAGE
    assert answer.extra == {"latency_ms": 90}
    assert get_dialect("bedrock-converse").end_closes_stream is False  # metadata follows by design


def test_converse_without_metadata_says_so() -> None:
    _, answer = read("bedrock-converse", delta(0, text="Hi"), STOP)
    assert answer.complete is True and answer.usage is None
    assert answer.extra == {"metadata": "none after messageStop (no usage or metrics)"}


def test_converse_without_message_stop_is_incomplete() -> None:
    _, answer = read("bedrock-converse", message("messageStart", {"role": "assistant"}), delta(0, text="Hi"))
    assert answer.complete is False and answer.end_marker == "messageStop" and answer.text == "Hi"


def test_converse_events_after_metadata_are_counted_and_a_second_stop_recorded() -> None:
    flags, answer = read("bedrock-converse", delta(0, text="Hi"), STOP, METADATA, delta(0, text=" again"), STOP)
    assert answer.end_markers == 2 and answer.end_marker_events == (1, 4)
    assert answer.extra["after_metadata"] == 2
    assert answer.text == "Hi again"  # botocore reads the body to its end: so does the reader
    assert flags[3] == EventFlags.TEXT and flags[4] == EventFlags.END


EXCEPTIONS = ["internalServerException", "modelStreamErrorException", "validationException", "throttlingException",
              "serviceUnavailableException", "modelTimeoutException"]  # fmt: skip
"""Every exception of ConverseStreamOutput and ResponseStream (modelTimeoutException: the latter's only)."""


@pytest.mark.parametrize("dialect", ["bedrock-converse", "bedrock-invoke"])
@pytest.mark.parametrize("kind", EXCEPTIONS)
def test_every_modelled_exception_is_an_in_band_error(dialect: str, kind: str) -> None:
    first = delta(0, text="Hi") if dialect == "bedrock-converse" else chunk(TEXT_DELTA)
    flags, answer = read(dialect, first, message(kind, {"message": f"{kind} said so"}, kind="exception"))
    assert flags == [EventFlags.TEXT, EventFlags.ERROR]
    [error] = answer.errors
    assert (error.message, error.type, error.event_index) == (f"{kind} said so", kind, 1)
    assert answer.complete is False and answer.text == "Hi"


def test_the_model_stream_error_keeps_the_models_status() -> None:
    payload = {"message": "m", "originalStatusCode": 529, "originalMessage": "Overloaded"}
    _, answer = read("bedrock-converse", message("modelStreamErrorException", payload, kind="exception"))
    assert (answer.errors[0].code, answer.errors[0].type) == ("529", "modelStreamErrorException")


@pytest.mark.parametrize("dialect", ["bedrock-converse", "bedrock-invoke"])
def test_an_event_stream_error_message_is_an_in_band_error(dialect: str) -> None:
    """`:message-type` error (`:error-code`, `:error-message` headers): the framer names it `error`."""
    error = encode_message({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"})
    _, answer = read(dialect, error)
    assert [(e.message, e.code) for e in answer.errors] == [("boom", "InternalFailure")]


# --- InvokeModelWithResponseStream's wrapping -----------------------------------------------------------------


TEXT_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
METRICS = {"inputTokenCount": 3, "outputTokenCount": 1}
MESSAGE_STOP = {"type": "message_stop", "amazon-bedrock-invocationMetrics": METRICS}


def chunk(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return message("chunk", {"bytes": base64.b64encode(data.encode()).decode(), "p": "abcdefgh"})


def test_invoke_reads_anthropic_events_and_bedrocks_metrics() -> None:
    head = {"id": "msg_bdrk_1", "model": "claude-x", "usage": {"input_tokens": 3}}
    start = {"type": "message_start", "message": head}
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    tool = {"type": "content_block_start", "index": 1, "content_block": block}
    args = {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}}
    end = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}
    flags, answer = read("bedrock-invoke", chunk(start), chunk(TEXT_DELTA), chunk(tool), chunk(args), chunk(end),
                         chunk(MESSAGE_STOP))  # fmt: skip
    assert flags == [EventFlags(0), EventFlags.TEXT, EventFlags.TEXT, EventFlags.TEXT, EventFlags(0), EventFlags.END]
    assert (answer.model, answer.response_id) == ("claude-x", "msg_bdrk_1")
    assert (answer.text, answer.finish_reason) == ("Hi", "tool_use")
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("toolu_1", "f", "{}")]
    assert answer.usage == {"input_tokens": 3, "output_tokens": 1}
    assert answer.extra == {"invocation_metrics": METRICS}
    assert answer.complete is True and answer.end_marker == "message_stop"


def test_invoke_stops_at_message_stop() -> None:
    text, stop = chunk(TEXT_DELTA), chunk(MESSAGE_STOP)
    flags, answer = read("bedrock-invoke", text, stop, text, stop)
    assert flags == [EventFlags.TEXT, EventFlags.END, EventFlags(0), EventFlags.END]
    assert answer.text == "Hi" and answer.end_markers == 2 and answer.extra["ignored_after_end"] == 1
    assert get_dialect("bedrock-invoke").end_closes_stream is True


def test_invoke_records_an_exception_even_after_message_stop() -> None:
    """The Anthropic grammar stops at `message_stop`; an exception is the event stream's, and botocore
    raises on it wherever it comes."""
    late = message("internalServerException", {"message": "late"}, kind="exception")
    flags, answer = read("bedrock-invoke", chunk(TEXT_DELTA), chunk(MESSAGE_STOP), late)
    assert flags == [EventFlags.TEXT, EventFlags.END, EventFlags.ERROR]
    assert [(e.message, e.event_index) for e in answer.errors] == [("late", 2)] and answer.complete is False
    reader = get_dialect("bedrock-invoke").reader()  # the same read in blocks, as the analysis reads
    events = events_of([Chunk(0.0, chunk(TEXT_DELTA) + chunk(MESSAGE_STOP) + late)])
    assert reader.feed_many(events[:2]) + reader.feed_many(events[2:]) == flags
    reader = get_dialect("bedrock-invoke").reader()
    assert reader.feed_many(events) == flags


@pytest.mark.parametrize(
    "bad",
    [
        message("chunk", {"bytes": "not base64!", "p": "ab"}),
        message("chunk", {"bytes": base64.b64encode(b"\xff\xfe").decode()}),  # not UTF-8
        chunk("{not json"),
        message("chunk", "not json either"),
    ],
)
def test_a_chunk_that_wraps_no_json_is_an_invalid_payload(bad: bytes) -> None:
    flags, answer = read("bedrock-invoke", chunk(TEXT_DELTA), bad, chunk(MESSAGE_STOP))
    assert flags == [EventFlags.TEXT, EventFlags.INVALID_JSON, EventFlags.END]
    assert answer.invalid_json == (1,) and answer.text == "Hi" and answer.complete is True


def test_a_chunk_of_another_model_family_rebuilds_nothing() -> None:
    """Titan's shape (not read: left out), and valid: no invalid payload, no text."""
    flags, answer = read("bedrock-invoke", chunk({"outputText": "Hi", "index": 0, "completionReason": "FINISH"}))
    assert flags == [EventFlags(0)] and answer.text == "" and answer.invalid_payloads == 0 and answer.complete is False


# --- the faults a replay adds --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bedrock-converse", "bedrock-invoke"])
def test_the_fault_is_an_exception_message_the_reader_records(name: str) -> None:
    capture = load_capture(FORMATS / f"{name}-text.jsonl")
    dialect = get_dialect(name)
    whole = events_of(capture.chunks)
    for n in sorted({0, 1, len(whole) // 2, len(whole) - 1}):
        fault = dialect.fault_error(n)
        [added] = items([Chunk(0.0, fault)])  # one whole message, nothing to forgive
        assert isinstance(added, Event) and added.type == "modelStreamErrorException"
        assert json.loads(added.data)["message"]

        before = b"".join(c.data for c in capture.chunks[:n])
        events = events_of([Chunk(0.0, before + fault)])
        assert len(events) == n + 1
        answer = dialect.rebuild(events)
        assert [(e.event_index, e.type) for e in answer.errors] == [(n, "modelStreamErrorException")]
        assert answer.text == dialect.rebuild(events[:n]).text and answer.complete is False


@pytest.mark.parametrize("name", ["bedrock-converse", "bedrock-invoke"])
@pytest.mark.parametrize("status", [400, 403, 408, 429, 500, 503, 418])
def test_the_error_body_is_bedrocks_json(name: str, status: int) -> None:
    content_type, body = get_dialect(name).error_body(status)
    assert content_type == "application/json"
    assert list(json.loads(body)) == ["message"] and json.loads(body)["message"]
    if status == 429:
        assert json.loads(body)["message"] == "Too many requests, please wait before trying again."
