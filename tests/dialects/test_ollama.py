"""The `ollama` dialect: Ollama's native NDJSON streams (`/api/chat`, `/api/generate`).

The fixtures (tests/data/formats/ollama-*.jsonl, built by build_ollama.py from Ollama's docs) rebuild
as their sidecars say; detection picks `ollama` for them and for no other stream of the repository;
the grammar's details (tool calls whole, the `done` line, errors, lines after the end); the in-band
error `fault_error` writes parses back, as NDJSON, to an error the reader records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import Capture, End, Event, EventStreamParser, Notice, analyze, capture_from_body, load_capture
from sse_inspect.checks import check_capture
from sse_inspect._ndjson import NDJSONParser, sniff_framing
from sse_inspect.dialects import DIALECTS, Answer, EventFlags, detect_dialect, get_dialect

from tests.helpers import CORPUS, ROOT, parse_all

FORMATS = ROOT / "tests" / "data" / "formats"
FIXTURES = sorted(FORMATS.glob("ollama-*.jsonl"))
CHAT_URL = "http://localhost:11434/api/chat"


def expect(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


def framing(capture: Capture) -> str:
    content_type = capture.response.header("Content-Type") if capture.response else None
    return sniff_framing(content_type, capture.body[:64])


def items(capture: Capture) -> list[Event | Notice]:
    """What the capture's own framer makes of its chunks, as they arrived."""
    parser = NDJSONParser() if framing(capture) == "ndjson" else EventStreamParser()
    found: list[Any] = []
    for chunk in capture.chunks:
        found += parser.feed(chunk.data, chunk.t)
    return [x for x in found + parser.close() if isinstance(x, Event | Notice)]


def events(capture: Capture) -> list[Event]:
    return [x for x in items(capture) if isinstance(x, Event)]


def lines(*payloads: dict[str, Any] | str) -> list[Event]:
    """Events as the NDJSON framer makes them, one per payload (a dict is written as JSON)."""
    body = "".join((p if isinstance(p, str) else json.dumps(p)) + "\n" for p in payloads).encode()
    return [x for x in NDJSONParser().feed(body, 0.0) if isinstance(x, Event)]


def rebuild(*payloads: dict[str, Any] | str) -> Answer:
    return get_dialect("ollama").rebuild(lines(*payloads))


def chat(content: str = "", **fields: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, **fields.pop("message", {})}
    return {"model": "qwen3", "created_at": "2025-10-26T17:15:24.1Z", "message": message, "done": False, **fields}


def generate(response: str = "", **fields: Any) -> dict[str, Any]:
    return {"model": "gemma4", "created_at": "2025-10-26T17:15:24.1Z", "response": response, "done": False, **fields}


def call(name: str, arguments: dict[str, Any], index: int = 0, id: str | None = None) -> dict[str, Any]:
    return {**({"id": id} if id else {}), "function": {"index": index, "name": name, "arguments": arguments}}


# --- the fixtures ---------------------------------------------------------------------------------


def test_there_are_fixtures_of_each_kind() -> None:
    """Text from both endpoints, reasoning, tool calls and an in-band error, each citing its source."""
    assert {p.name for p in FIXTURES} >= {"ollama-generate-text.jsonl", "ollama-chat-text.jsonl",
                                          "ollama-chat-thinking.jsonl", "ollama-chat-tools.jsonl",
                                          "ollama-generate-error.jsonl"}  # fmt: skip
    for path in FIXTURES:
        capture = load_capture(path)
        assert capture.recorder.startswith("built from https://github.com/ollama/")
        assert expect(path)["source"] in capture.recorder
        assert capture.response is not None and capture.response.header("Content-Type") == "application/x-ndjson"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_fixture_rebuilds_as_its_sidecar_says(path: Path) -> None:
    capture, want = load_capture(path), expect(path)
    assert framing(capture) == want["framing"] == "ndjson"
    found = items(capture)
    assert [x for x in found if isinstance(x, Notice)] == []  # every line whole JSON, LF-terminated
    answer = get_dialect(want["dialect"]).rebuild(events(capture))
    assert answer.text == want["text"]
    assert answer.reasoning == want["reasoning"]
    assert [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls] == want["tool_calls"]
    assert answer.finish_reason == want["finish_reason"]
    assert answer.complete is want["complete"]
    assert [e.message for e in answer.errors] == want["errors"]
    assert answer.invalid_payloads == 0 and answer.model




@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_the_analysis_reads_them_as_ndjson_and_check_judges_them(path: Path) -> None:
    """Through the whole analysis (the framer the Content-Type picks): the same answer as the reader's; a
    whole stream has its end marker, the error stream's error is reported and its `done` line missing."""
    capture, want = load_capture(path), expect(path)
    analysis = analyze(capture)
    assert (analysis.framing, analysis.dialect) == ("ndjson", "ollama")
    assert analysis.answer.text == want["text"] and analysis.answer.complete is want["complete"]
    codes = {f.code for f in check_capture(capture).findings}
    if want["errors"]:
        assert {"error-event", "missing-end-marker"} <= codes
    else:
        assert not codes & {"error-event", "missing-end-marker", "invalid-json", "data-after-end"}


def test_a_line_after_the_done_line_is_a_fault() -> None:
    """The reader reads it (as the library does), and `check` says the server sent it after the end."""
    capture = load_capture(FORMATS / "ollama-generate-text.jsonl")
    late = json.dumps(generate(" Really.")).encode() + b"\n"
    extra = capture_from_body(capture.body + late, request=capture.request, response=capture.response,
                              end=End(kind="complete"))  # fmt: skip
    assert analyze(extra).answer.text == expect(FORMATS / "ollama-generate-text.jsonl")["text"] + " Really."
    assert "data-after-end" in {f.code for f in check_capture(extra).findings}


# --- detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_detection_picks_ollama_for_its_fixtures(path: Path) -> None:
    capture = load_capture(path)
    first = events(capture)[:50]
    assert detect_dialect(first, capture.request.url if capture.request else None).name == "ollama"
    assert detect_dialect(first, None).name == "ollama"  # the content alone, over `text`'s `response` lines


def test_the_url_alone_says_a_little() -> None:
    assert detect_dialect([], CHAT_URL).name == "ollama"
    assert detect_dialect([], "http://gpu-box:11434/api/generate").name == "ollama"
    assert DIALECTS["ollama"].detect([], CHAT_URL) < DIALECTS["text"].detect(lines({"response": "hi"}), None)


def _other_streams() -> list[tuple[str, list[Event]]]:
    """Every other stream of the repository: the corpus, the recorded captures, the other format fixtures."""
    found: list[tuple[str, list[Any]]] = [(p.name, parse_all([p.read_bytes()])) for p in sorted(CORPUS.glob("*.sse"))]
    paths = sorted((ROOT / "captures").glob("*.jsonl")) + sorted(
        p for p in FORMATS.glob("*.jsonl") if not p.name.startswith("ollama-")
    )
    found += [(p.name, events(load_capture(p))) for p in paths]
    return [(name, [x for x in stream if isinstance(x, Event)][:50]) for name, stream in found]


def test_no_other_stream_is_taken() -> None:
    others = _other_streams()
    assert len(others) > 30
    for name, stream in others:
        assert detect_dialect(stream, None).name != "ollama", name
        assert DIALECTS["ollama"].detect(stream, None) == 0, name


def test_an_apps_own_json_stays_text() -> None:
    """A `response` member alone is any app's: Ollama's lines also carry `created_at` and `done`."""
    assert detect_dialect(lines({"response": "Hel"}, {"response": "lo"}), None).name == "text"
    assert detect_dialect(lines({"response": "Hel", "done": False}), None).name == "text"
    assert detect_dialect(lines(generate("Hel")), None).name == "ollama"


# --- the grammar ----------------------------------------------------------------------------------


def test_tool_calls_arrive_whole_and_in_parallel() -> None:
    """Each item of `tool_calls` is a call of its own, in order, across lines; arguments as compact JSON."""
    answer = rebuild(
        chat(message={"tool_calls": [call("get_temperature", {"city": "New York"}, 0, "call_a"),
                                     call("get_conditions", {"city": "New York", "units": ["c", "f"]}, 1, "call_b")]}),
        chat(message={"tool_calls": [call("get_temperature", {"city": "London"}, 2, "call_c")]}),
        chat(done=True, done_reason="stop"),
    )  # fmt: skip
    assert [(c.id, c.index, c.name, c.arguments) for c in answer.tool_calls] == [
        ("call_a", 0, "get_temperature", '{"city":"New York"}'),
        ("call_b", 1, "get_conditions", '{"city":"New York","units":["c","f"]}'),
        ("call_c", 2, "get_temperature", '{"city":"London"}'),
    ]
    assert answer.text == "" and answer.complete is True


def test_a_call_without_arguments_or_id() -> None:
    """Older servers sent no `id`; an absent or non-object `arguments` is an empty object."""
    calls = [{"function": {"name": "now"}}, {"function": {"name": "x", "arguments": 3}}]
    answer = rebuild(chat(message={"tool_calls": calls}))
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [(None, "now", "{}"), (None, "x", "{}")]


def test_generate_carries_thinking_and_tool_calls_at_the_top() -> None:
    answer = rebuild(
        generate(thinking="Let me think."),
        generate(tool_calls=[call("lookup", {"q": "sky"})]),
        generate("Blue", done=True, done_reason="stop", eval_count=3),
    )
    assert (answer.reasoning, answer.text) == ("Let me think.", "Blue")
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("lookup", '{"q":"sky"}')]


def test_the_done_line_ends_it_with_its_reason_and_counts() -> None:
    counts = {"total_duration": 10706818083, "load_duration": 6338219291, "prompt_eval_count": 26,
              "prompt_eval_duration": 130079000, "eval_count": 259, "eval_duration": 4232710000}  # fmt: skip
    reader = get_dialect("ollama").reader()
    flags = [reader.feed(e) for e in lines(generate("The"), generate("", done=True, done_reason="length",
                                                                       context=[1, 2, 3], **counts))]  # fmt: skip
    assert flags == [EventFlags.TEXT, EventFlags.END]
    answer = reader.answer(get_dialect("ollama"))
    assert answer.finish_reason == "length" and answer.usage == counts and answer.model == "gemma4"
    assert answer.end_marker == '"done": true' and answer.end_marker_events == (1,) and answer.complete is True


def test_the_done_line_may_carry_the_last_piece() -> None:
    """docs/api/streaming.mdx: `"response":"!","done":true`."""
    reader = get_dialect("ollama").reader()
    assert reader.feed(lines(generate("!", done=True, done_reason="stop"))[0]) == EventFlags.TEXT | EventFlags.END


def test_a_model_load_is_a_stream_of_one_done_line() -> None:
    """An empty prompt loads the model: one line, `done_reason` "load", no text (docs/api.md)."""
    answer = rebuild(generate("", done=True, done_reason="load"))
    assert (answer.text, answer.finish_reason, answer.complete) == ("", "load", True)


def test_a_cut_stream_is_incomplete() -> None:
    answer = rebuild(chat("The"), chat(" sky"))
    assert answer.text == "The sky" and answer.complete is False and not answer.end_marker_seen


def test_an_error_line_mid_stream() -> None:
    """docs/api/errors.mdx: `{"error": "..."}` after some lines; no `done` line follows."""
    reader = get_dialect("ollama").reader()
    flags = [reader.feed(e) for e in lines(generate(" Yes"), {"error": "model runner has unexpectedly stopped"})]
    assert flags == [EventFlags.TEXT, EventFlags.ERROR]
    answer = reader.answer(get_dialect("ollama"))
    assert [(e.message, e.event_index) for e in answer.errors] == [("model runner has unexpectedly stopped", 1)]
    assert answer.text == " Yes" and answer.complete is False


def test_done_is_a_boolean() -> None:
    """`"done": "true"` or `1` is no end; a `done: false` line is none either."""
    answer = rebuild(generate("a", done="true"), generate("b", done=1), generate("c"))
    assert answer.text == "abc" and answer.end_markers == 0 and answer.complete is False


def test_lines_after_the_end_are_read_and_counted() -> None:
    """The ollama library reads every line to the end of the body, so the reader does too; the server sends
    nothing after `done`, so the dialect holds it to that (a line after it is a fault)."""
    answer = rebuild(chat("Hi", done=True, done_reason="stop"), chat(" again"), chat("", done=True, done_reason="stop"))
    assert answer.text == "Hi again" and answer.end_markers == 2 and "ignored_after_end" not in answer.extra
    dialect = get_dialect("ollama")
    assert dialect.end_closes_stream and not dialect.reader.stops_at_end and not dialect.sends_done
    assert dialect.framings == ("ndjson",)


def test_junk_lines() -> None:
    """Lines that are not Ollama's objects add nothing and never raise; a line that is not JSON counts."""
    answer = rebuild("not json", "[1, 2]", {"message": "x"}, {"message": {"content": 5, "tool_calls": {"a": 1}}},
                     {"message": {"tool_calls": [None, {"function": None}]}}, chat("ok"))  # fmt: skip
    assert answer.text == "ok" and answer.invalid_payloads == 1
    assert [c.name for c in answer.tool_calls] == ["", ""]  # calls with no name, kept as what came


# --- the faults a replay adds ---------------------------------------------------------------------


def _positions(capture: Capture) -> list[int]:
    count = len(events(capture))
    return sorted({0, 1, count // 2, count - 1})


CASES = [(p, n) for p in FIXTURES if not expect(p)["errors"] for n in _positions(load_capture(p))]


@pytest.mark.parametrize(("path", "n"), CASES, ids=lambda x: x.stem if isinstance(x, Path) else str(x))
def test_the_in_band_error_parses_back_as_ndjson(path: Path, n: int) -> None:
    """`fault_error` after the first `n` lines: one whole line of JSON, which the reader records as the
    error it is, with the answer before it unchanged."""
    dialect = get_dialect("ollama")
    body = load_capture(path).body
    before = body[: events(load_capture(path))[n - 1].end] if n else b""  # `end`: just past the LF
    fault = dialect.fault_error(n)
    assert fault.endswith(b"\n") and fault.count(b"\n") == 1
    assert json.loads(fault) == {"error": "an error was encountered while running the model"}
    parser = NDJSONParser()
    found = parser.feed(before + fault, 0.0) + parser.close()
    assert not [x for x in found if isinstance(x, Notice)]
    read = [x for x in found if isinstance(x, Event)]
    assert len(read) == n + 1
    answer, earlier = dialect.rebuild(read), dialect.rebuild(read[:n])
    assert [(e.message, e.event_index) for e in answer.errors] == [(json.loads(fault)["error"], n)]
    assert (answer.text, answer.reasoning, answer.tool_calls) == (earlier.text, earlier.reasoning, earlier.tool_calls)
    assert answer.complete is False


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503, 529])
def test_the_error_body_is_ollamas(status: int) -> None:
    content_type, body = get_dialect("ollama").error_body(status)
    payload = json.loads(body)
    assert content_type == "application/json" and list(payload) == ["error"] and isinstance(payload["error"], str)
    assert payload["error"] and b" " not in body.split(b'"error":')[0]  # compact, as gin writes it
