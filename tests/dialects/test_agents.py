"""The agent and UI protocols: `vercel-ui` (the AI SDK's UI message stream), `mcp` (Streamable HTTP), `a2a`.

The fixtures (tests/data/formats/{vercel-ui,mcp,a2a}-*.jsonl, built by build_agents.py from the specifications
and the SDKs' source) rebuild as their sidecars say; detection picks each dialect for its own fixtures and for
no other stream of the repository; the grammars' details (parts by id, tool calls, finish reasons, artifacts
appended and replaced, terminal states, content blocks, notifications, priming events, errors, events after
the end); each in-band error `fault_error` writes parses back to an error the reader records, and a replay's
JSON-RPC error answers the recorded request's id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import (
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
from sse_inspect._fault_plan import ReplayPlan
from sse_inspect._faults import FaultSet
from sse_inspect.dialects import DIALECTS, Answer, EventFlags, detect_dialect, get_dialect

from tests.helpers import CORPUS, ROOT, parse_all

FORMATS = ROOT / "tests" / "data" / "formats"
NAMES = ("vercel-ui", "mcp", "a2a")
FIXTURES = sorted(p for p in FORMATS.glob("*.jsonl") if p.name.startswith(tuple(f"{n}-" for n in NAMES)))
STREAM = (("Content-Type", "text/event-stream"),)


def expect(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


def sse(*payloads: dict[str, Any] | str, name: str | None = None, ids: bool = False) -> bytes:
    """Events as the SDKs write them: an optional `event:` name and `id:`, `data:` compact JSON, a blank line."""
    out = []
    for n, p in enumerate(payloads):
        head = (f"event: {name}\n" if name else "") + (f"id: e{n}\n" if ids else "")
        data = p if isinstance(p, str) else json.dumps(p, separators=(",", ":"))
        out.append(f"{head}data: {data}\n\n".encode())
    return b"".join(out)


def rebuild(dialect: str, body: bytes) -> Answer:
    return get_dialect(dialect).rebuild(parse_events(body))


def capture(body: bytes, url: str = "http://localhost/", request_body: str | None = None) -> Any:
    return capture_from_body(body, request=Request(method="POST", url=url, body=request_body),
                             response=Response(headers=STREAM), end=End(kind="complete"))  # fmt: skip


# --- the fixtures ---------------------------------------------------------------------------------


def test_there_are_fixtures_of_each_dialect_with_an_error() -> None:
    """At least two per dialect, one with an error; each citing its sources."""
    by_dialect: dict[str, list[dict[str, Any]]] = {}
    for path in FIXTURES:
        want = expect(path)
        by_dialect.setdefault(want["dialect"], []).append(want)
        assert load_capture(path).recorder.startswith(f"built from {want['source']}")
        assert "https://" in want["source"]
    assert sorted(by_dialect) == sorted(NAMES)
    for name, wants in by_dialect.items():
        assert len(wants) >= 2 and any(w["errors"] for w in wants), name
    assert any(w["tool_calls"] for w in by_dialect["vercel-ui"])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_fixture_rebuilds_as_its_sidecar_says(path: Path) -> None:
    want = expect(path)
    analysis = analyze(load_capture(path))
    assert analysis.dialect == want["dialect"] and analysis.framing == want["framing"] == "sse"
    answer = analysis.answer
    assert answer.text == want["text"] and answer.reasoning == want["reasoning"]
    assert [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls] == want["tool_calls"]
    assert answer.finish_reason == want["finish_reason"]
    assert answer.complete is want["complete"]
    assert [e.message for e in answer.errors] == want["errors"]
    assert answer.invalid_payloads == 0 and answer.end_markers == 1




@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_check_judges_the_fixtures(path: Path) -> None:
    """A stream with an error has it reported; every stream has its end marker, and nothing comes after it. The UI
    stream's `[DONE]` is its own (an info, as OpenAI's: the SDK's reader skips it), never a gateway's."""
    findings = check_capture(load_capture(path)).findings
    codes = {f.code for f in findings}
    assert ("error-event" in codes) == bool(expect(path)["errors"])
    assert not codes & {"missing-end-marker", "invalid-json", "data-after-end"}
    assert all(f.severity == Severity.INFO for f in findings if f.code == "done-not-json")
    assert ("done-not-json" in codes) == (expect(path)["dialect"] == "vercel-ui")


# --- detection ------------------------------------------------------------------------------------


def first_events(path: Path) -> list[Event]:
    return [x for x in parse_all([load_capture(path).body]) if isinstance(x, Event)][:50]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_detection_picks_the_dialect_from_the_content(path: Path) -> None:
    first = first_events(path)
    want = expect(path)["dialect"]
    assert detect_dialect(first, None).name == want
    assert DIALECTS[want].detect(first, None) == (30 if path.stem == "mcp-jsonrpc-error" else 80)  # an error: a hint
    request = load_capture(path).request
    assert request is not None and detect_dialect(first, request.url).name == want


def test_no_other_stream_is_taken() -> None:
    streams: list[tuple[str, list[Any]]] = [(p.name, parse_all([p.read_bytes()])) for p in sorted(CORPUS.glob("*.sse"))]
    paths = sorted((ROOT / "captures").glob("*.jsonl")) + sorted(p for p in FORMATS.glob("*.jsonl") if p not in FIXTURES)
    streams += [(p.name, parse_all([load_capture(p).body])) for p in paths]
    assert len(streams) > 40
    for name, items in streams:
        first = [x for x in items if isinstance(x, Event)][:50]
        assert detect_dialect(first, None).name not in NAMES, name
        assert all(DIALECTS[n].detect(first, None) == 0 for n in NAMES), name


def test_an_apps_delta_objects_stay_text() -> None:
    """`{"delta": ...}` of an app's own (no part `id`) is text; the UI stream's `text-delta` has its part's id."""
    app = sse({"type": "text-delta", "delta": "Hel"}, {"type": "text-delta", "delta": "lo"}, "[DONE]")
    assert detect_dialect(parse_events(app), None).name == "text"
    ui = sse({"type": "text-delta", "id": "0", "delta": "Hel"}, {"type": "text-delta", "id": "0", "delta": "lo"}, "[DONE]")
    assert detect_dialect(parse_events(ui), None).name == "vercel-ui"
    assert DIALECTS["vercel-ui"].detect(parse_events(sse({"type": "start"}, {"type": "finish"})), None) == 30


def test_json_rpc_alone_is_a_hint_and_the_url_decides() -> None:
    error = parse_events(sse({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}))
    assert DIALECTS["mcp"].detect(error, None) == 30 and DIALECTS["a2a"].detect(error, None) == 0
    assert detect_dialect(error, None).name == "mcp"
    assert detect_dialect([], "http://127.0.0.1:3000/mcp").name == "mcp"
    assert detect_dialect([], "https://agent.example/a2a").name == "a2a"
    task = parse_events(sse({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t", "status": {}}}))
    assert detect_dialect(task, "http://127.0.0.1:3000/mcp").name == "a2a"  # content beats the URL
    text_result = parse_events(sse({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x"}]}}))
    assert detect_dialect(text_result, None).name == "mcp"


# --- vercel-ui ------------------------------------------------------------------------------------


def test_ui_parts_read_by_id_in_the_order_they_began() -> None:
    """The client keeps each part by its id, in the order of their `*-start`: interleaved deltas do not mix."""
    reader = get_dialect("vercel-ui").reader()
    body = sse({"type": "text-start", "id": "a"}, {"type": "text-start", "id": "b"},
               {"type": "text-delta", "id": "b", "delta": "B1"}, {"type": "text-delta", "id": "a", "delta": "A1"},
               {"type": "reasoning-start", "id": "r"}, {"type": "reasoning-delta", "id": "r", "delta": "hmm"},
               {"type": "text-end", "id": "a"}, {"type": "text-delta", "id": "b", "delta": "B2"},
               {"type": "text-end", "id": "b"}, "[DONE]")  # fmt: skip
    flags = [reader.feed(e) for e in parse_events(body)]
    t, none = EventFlags.TEXT, EventFlags(0)
    assert flags == [none, none, t, t, none, t, none, t, none, EventFlags.END]
    answer = reader.answer(get_dialect("vercel-ui"))
    assert (answer.text, answer.reasoning, answer.complete) == ("A1B1B2", "hmm", True)


def test_ui_a_part_left_open_is_shown_at_the_end() -> None:
    body = sse({"type": "text-start", "id": "a"}, {"type": "text-start", "id": "b"},
               {"type": "text-delta", "id": "b", "delta": "B"}, {"type": "text-delta", "id": "a", "delta": "A"})
    assert rebuild("vercel-ui", body).text == "AB"


def test_ui_tool_calls() -> None:
    """Streamed input text wins; a call with none gets its `input` as compact JSON; a tool's failure is no stream error."""
    body = sse({"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"},
               {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"q": '},
               {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '"sse"}'},
               {"type": "tool-input-available", "toolCallId": "c1", "toolName": "search", "input": {"q": "sse"}},
               {"type": "tool-input-available", "toolCallId": "c2", "toolName": "clock", "input": {"tz": "UTC"}},
               {"type": "tool-output-error", "toolCallId": "c2", "errorText": "clock is broken"},
               {"type": "finish", "finishReason": "tool-calls"}, "[DONE]")  # fmt: skip
    answer = rebuild("vercel-ui", body)
    assert [(c.name, c.arguments, c.id) for c in answer.tool_calls] == [
        ("search", '{"q": "sse"}', "c1"), ("clock", '{"tz":"UTC"}', "c2")]  # fmt: skip
    assert answer.finish_reason == "tool-calls" and not answer.errors and answer.extra["tool_errors"] == 1


def test_ui_finish_without_a_reason_and_abort() -> None:
    """AI SDK 5.0's `finish` carries no reason: none is made up; an `abort` is the finish reason "abort"."""
    assert rebuild("vercel-ui", sse({"type": "finish"}, "[DONE]")).finish_reason is None
    aborted = rebuild("vercel-ui", sse({"type": "start", "messageId": "m1"}, {"type": "abort", "reason": "user"}, "[DONE]"))
    assert aborted.finish_reason == "abort" and aborted.extra["abort"] == "user" and aborted.response_id == "m1"
    assert not aborted.errors and aborted.complete is True


def test_ui_error_chunk_is_an_error_with_its_text() -> None:
    reader = get_dialect("vercel-ui").reader()
    body = sse({"type": "text-start", "id": "0"}, {"type": "text-delta", "id": "0", "delta": "Hi"},
               {"type": "error", "errorText": "Rate limit reached"}, "[DONE]")  # fmt: skip
    flags = [reader.feed(e) for e in parse_events(body)]
    assert flags[2] == EventFlags.ERROR and flags[3] == EventFlags.END
    answer = reader.answer(get_dialect("vercel-ui"))
    assert [(e.message, e.event_index) for e in answer.errors] == [("Rate limit reached", 2)]
    assert answer.text == "Hi" and answer.complete is False


def test_ui_events_after_done_are_read_and_reported() -> None:
    """The SDK's reader skips `[DONE]` and reads on; the server writes nothing after it: `data-after-end`."""
    body = sse({"type": "text-start", "id": "0"}, {"type": "text-delta", "id": "0", "delta": "Hi"}, "[DONE]",
               {"type": "text-delta", "id": "0", "delta": " more"})  # fmt: skip
    assert rebuild("vercel-ui", body).text == "Hi more"
    findings = {f.code: f for f in check_capture(capture(body)).findings}
    assert "data-after-end" in findings and findings["done-not-json"].severity == Severity.INFO


def test_ui_fault_is_an_error_chunk_then_done() -> None:
    fault = get_dialect("vercel-ui").fault_error(3)
    events = parse_events(fault)
    assert [e.data for e in events][1] == "[DONE]"
    assert json.loads(events[0].data) == {"type": "error", "errorText": "An error occurred."}
    answer = rebuild("vercel-ui", fault)
    assert [e.message for e in answer.errors] == ["An error occurred."] and answer.end_markers == 1


# --- mcp ------------------------------------------------------------------------------------------


def response(result: dict[str, Any] | None = None, *, error: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    payload: dict[str, Any] = {"jsonrpc": "2.0", "id": id}
    payload.update({"error": error} if error is not None else {"result": result})
    return payload


def test_mcp_reads_text_blocks_and_counts_the_rest() -> None:
    reader = get_dialect("mcp").reader()
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 2,
                                                                                 "total": 4}}  # fmt: skip
    ask = {"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"message": "Which city?"}}
    result = response({"content": [{"type": "text", "text": "one"}, {"type": "image", "data": "AAAA",
                       "mimeType": "image/png"}, {"type": "text", "text": "two"}]})  # fmt: skip
    events = parse_events(sse(progress, progress, ask, result, name="message", ids=True))
    assert [reader.feed(e) for e in events] == [EventFlags(0)] * 3 + [EventFlags.TEXT | EventFlags.END]
    answer = reader.answer(get_dialect("mcp"))
    assert answer.text == "one\ntwo" and answer.complete is True and answer.finish_reason is None
    assert answer.extra["notifications"] == {"notifications/progress": 2}
    assert answer.extra["progress"] == {"progress": 2, "total": 4}
    assert answer.extra["server_requests"] == 1 and answer.extra["server_request_methods"] == ["elicitation/create"]
    assert answer.extra["content_types"] == ["text", "image", "text"] and answer.extra["last_event_id"] == "e3"
    assert answer.response_id == "1"


def test_mcp_structured_content_alone_is_the_text() -> None:
    answer = rebuild("mcp", sse(response({"content": [], "structuredContent": {"t": 18}})))
    assert answer.text == '{"t":18}' and answer.extra["structured_content"] is True


def test_mcp_resource_contents_are_text() -> None:
    answer = rebuild("mcp", sse(response({"contents": [{"uri": "file:///a.txt", "text": "alpha"}]})))
    assert answer.text == "alpha"


def test_mcp_errors() -> None:
    """A JSON-RPC error ends the stream with its code; a tool's `isError` result is an error with its text."""
    failed = rebuild("mcp", sse(response(error={"code": -32602, "message": "Unknown tool: x"})))
    assert [(e.message, e.code) for e in failed.errors] == [("Unknown tool: x", "-32602")]
    assert failed.end_markers == 1 and failed.complete is False
    tool = rebuild("mcp", sse(response({"content": [{"type": "text", "text": "boom"}], "isError": True})))
    assert [(e.message, e.type) for e in tool.errors] == [("boom", "isError")] and tool.text == "boom"
    assert rebuild("mcp", sse(response({"content": [], "isError": False}))).errors == ()


def test_mcp_priming_event_is_no_invalid_json() -> None:
    """2025-11-25: an id and empty data first, so that a client can resume before the first message."""
    body = b"id: p0\ndata: \n\n" + sse(response({"content": [{"type": "text", "text": "ok"}]}), name="message")
    answer = rebuild("mcp", body)
    assert answer.invalid_payloads == 0 and answer.text == "ok" and answer.complete is True
    assert rebuild("mcp", b"data: {oops\n\n").invalid_payloads == 1  # other data must still be JSON


def test_mcp_a_message_after_the_response_is_reported() -> None:
    late = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "late"}}
    body = sse(response({"content": []}), late, name="message")
    answer = rebuild("mcp", body)
    assert answer.extra["notifications"] == {"notifications/message": 1}  # read on, as the TypeScript client does
    assert "data-after-end" in {f.code for f in check_capture(capture(body, "http://h/mcp")).findings}


# --- a2a ------------------------------------------------------------------------------------------


def a2a(result: dict[str, Any]) -> dict[str, Any]:
    return {"id": "r1", "jsonrpc": "2.0", "result": result}


def artifact(artifact_id: str, *texts: str, append: bool = False, last: bool = False) -> dict[str, Any]:
    return a2a({"append": append, "artifact": {"artifactId": artifact_id, "parts": [{"kind": "text", "text": t}
               for t in texts]}, "contextId": "c", "kind": "artifact-update", "lastChunk": last, "taskId": "t"})  # fmt: skip


def status(state: str, text: str | None = None, *, final: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"state": state}
    if text:
        body["message"] = {"kind": "message", "messageId": "m", "parts": [{"kind": "text", "text": text}], "role": "agent"}
    return a2a({"contextId": "c", "final": final, "kind": "status-update", "status": body, "taskId": "t"})


def test_a2a_artifacts_appended_and_replaced() -> None:
    """`append` adds to the artifact of that id; an update without it replaces the artifact; artifacts show in
    the order they began, whatever the order of their chunks."""
    body = sse(artifact("a", "draft"), artifact("a", "Hello"), artifact("b", "Second."),
               artifact("a", ", world. ", append=True, last=True), status("completed", final=True))  # fmt: skip
    reader = get_dialect("a2a").reader()
    flags = [reader.feed(e) for e in parse_events(body)]
    assert flags == [EventFlags.TEXT] * 4 + [EventFlags.END]
    answer = reader.answer(get_dialect("a2a"))
    assert answer.text == "Hello, world. Second." and answer.finish_reason == "completed" and answer.complete
    assert "artifacts_replaced" not in answer.extra and answer.response_id == "t"


def test_a2a_status_messages() -> None:
    """A working status's message is the agent on its progress (the plan); the final one is the answer's."""
    body = sse(status("working", "Looking..."), status("input-required", "Which date?", final=True))
    answer = rebuild("a2a", body)
    assert answer.choices[0].plan == "Looking..." and answer.text == "Which date?"
    assert answer.finish_reason == "input-required" and answer.extra["state"] == "input-required"


def test_a2a_final_false_does_not_end_it() -> None:
    answer = rebuild("a2a", sse(status("completed", final=False), status("completed", final=True)))
    assert answer.end_markers == 1 and answer.end_marker_events == (1,)


def test_a2a_message_result_ends_it() -> None:
    message = a2a({"kind": "message", "messageId": "m9", "parts": [{"kind": "text", "text": "Hi there"},
                   {"kind": "data", "data": {"x": 1}}], "role": "agent"})  # fmt: skip
    answer = rebuild("a2a", sse(message))
    assert answer.text == "Hi there" and answer.complete is True and answer.response_id == "m9"


def test_a2a_failed_and_json_rpc_errors() -> None:
    failed = rebuild("a2a", sse(status("working"), status("failed", "quota exceeded", final=True)))
    assert [(e.message, e.type) for e in failed.errors] == [("quota exceeded", "failed")]
    assert failed.finish_reason == "failed" and failed.complete is False and failed.text == ""
    error = rebuild("a2a", sse({"id": "r1", "jsonrpc": "2.0", "error": {"code": -32001, "message": "Task not found"}}))
    assert [(e.message, e.code) for e in error.errors] == [("Task not found", "-32001")] and error.end_markers == 1


def test_a2a_one_point_o_wrapped_results() -> None:
    """A2A 1.0 wraps the objects (`artifactUpdate`, `statusUpdate`), spells states `TASK_STATE_*`, has no `final`."""
    update = {"jsonrpc": "2.0", "id": 1, "result": {"artifactUpdate": {"taskId": "t", "contextId": "c",
              "artifact": {"artifactId": "a", "parts": [{"text": "Bonjour"}]}, "lastChunk": True}}}  # fmt: skip
    done = {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}}  # fmt: skip
    events = parse_events(sse(update, done))
    assert detect_dialect(events, None).name == "a2a"
    answer = rebuild("a2a", sse(update, done))
    assert answer.text == "Bonjour" and answer.finish_reason == "completed" and answer.complete is True


# --- the faults a replay adds ---------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fixture", "request_id"), [("mcp", "mcp-tools-call-progress", 7),
                         ("a2a", "a2a-stream-artifacts", "3e8f1b2c-4d5a-4b6c-9d7e-8f9a0b1c2d3e")])  # fmt: skip
def test_a_replays_json_rpc_error_answers_the_recorded_request(name: str, fixture: str, request_id: object) -> None:
    recorded = load_capture(FORMATS / f"{fixture}.jsonl")
    played = ReplayPlan(recorded, faults=FaultSet.parse(["error:after-event=2"])).as_recorded()
    events = [x for x in parse_all([played.body]) if isinstance(x, Event)]
    error = json.loads(events[-1].data)
    assert error == {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "Internal error"}}
    answer = analyze(played).answer
    assert answer.dialect == name and answer.errors[0].code == "-32603" and answer.end_markers == 1
    assert get_dialect(name).fault_error(0).count(b'"id":null') == 1  # no request known: null, as JSON-RPC says


def test_the_a2a_fault_has_sse_starlettes_line_ends() -> None:
    fault = get_dialect("a2a").fault_error(1)
    assert fault.endswith(b"\r\n\r\n") and b"\n" not in fault.replace(b"\r\n", b"")
    parser = EventStreamParser()
    found = parser.feed(fault, 0.0) + parser.close()
    assert not [x for x in found if isinstance(x, Notice) and x.kind != "line-ending"]


@pytest.mark.parametrize("name", ["mcp", "a2a"])
def test_the_error_body_is_a_json_rpc_error(name: str) -> None:
    content_type, body = get_dialect(name).error_body(503)
    assert content_type == "application/json"
    assert json.loads(body) == {"jsonrpc": "2.0", "error": {"code": -32603, "message": "Service Unavailable"}, "id": None}
