"""The text dialect on the seed's app (a Flask proxy that yields `data: <delta>` and forwards
`data: [DONE]`), in its good version and its two classic buggy ones, and on the JSON shapes apps
wrap their pieces in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, Chunk, End, analyze, dump_capture, load_capture, parse_events, parse_rechunk_spec
from sse_inspect.checks import check_capture
from sse_inspect.cli import cli
from sse_inspect.dialects import DIALECTS, EventFlags, detect_dialect, get_dialect

from tests.checks import timelines as T

APP_URL = "http://127.0.0.1:5000/chat/stream"
DELTAS = ["Streaming", " makes", " a", " chat", " reply", " appear", " word", " by", " word", "."]
ANSWER = "".join(DELTAS)


def event(data: str) -> bytes:
    """What the seed app yields for one delta: `f"data: {delta}\\n\\n"`."""
    return f"data: {data}\n\n".encode()


def good_app(deltas: list[str] = DELTAS, *, done: bool = True) -> Capture:
    """Yield inside the loop: each delta leaves as the model makes it."""
    return T.paced([event(d) for d in deltas] + ([event("[DONE]")] if done else []), url=APP_URL)


def single_yield_bug() -> Capture:
    """Collect the answer into one string, yield it once at the end: one event after the whole silence."""
    return T.capture([(1.633, event(ANSWER)), (1.634, event("[DONE]"))], url=APP_URL)


def list_bug() -> Capture:
    """Collect the events in a list, yield them after the loop: every event in one write at the end."""
    return T.capture([(1.633, b"".join(event(d) for d in DELTAS) + event("[DONE]"))], url=APP_URL)


SEED_SHAPES = {"good": good_app, "single-yield": single_yield_bug, "list": list_bug}


@pytest.mark.parametrize("shape", SEED_SHAPES)
def test_the_seed_app_reads_as_text_with_its_end_marker(shape: str) -> None:
    analysis = analyze(SEED_SHAPES[shape]())
    answer = analysis.answer
    assert analysis.dialect == "text"
    assert answer.text == ANSWER
    assert answer.complete is True and answer.end_marker == "data: [DONE]"
    assert answer.invalid_json == () and answer.invalid_payloads == 0
    assert answer.extra == {"payloads": "plain text"}
    events = 1 if shape == "single-yield" else len(DELTAS)
    assert analysis.timing.text_events == events  # what the timing checks judge
    assert len(answer.text_events) == events and analysis.outcome.state.name == "COMPLETE"


@pytest.mark.parametrize("shape", SEED_SHAPES)
def test_the_seed_app_gets_no_json_or_marker_error(shape: str) -> None:
    """Its events are text: no invalid-json, and no done-not-json (its client never json.loads)."""
    codes = {f.code for f in check_capture(SEED_SHAPES[shape]()).findings}
    assert not codes & {"invalid-json", "done-not-json", "missing-end-marker", "data-after-end"}


def test_the_answer_is_the_deltas_joined_as_a_client_shows_them() -> None:
    """A delta's leading space survives (the parser drops one space after the colon, the app wrote
    one before the delta); a data field of several lines is one piece, its lines joined by LF."""
    answer = analyze(T.paced([b"data: Hello\n\n", b"data:  world\n\n", b"data: a\ndata: b\n\n"])).answer
    assert (answer.dialect, answer.text) == ("text", "Hello worlda\nb")


def test_a_text_stream_without_done_promised_none() -> None:
    capture = good_app(done=False)
    analysis = analyze(capture)
    assert (analysis.dialect, analysis.answer.text, analysis.answer.complete) == ("text", ANSWER, None)
    assert analysis.answer.end_marker is None and analysis.outcome.state.name == "ENDED"
    assert "missing-end-marker" not in {f.code for f in check_capture(capture).findings}


def test_a_cut_text_stream_says_cut_not_complete() -> None:
    analysis = analyze(T.paced([event(d) for d in DELTAS[:4]], url=APP_URL, end="server-disconnected"))
    assert analysis.answer.complete is None and analysis.outcome.state.name == "CUT"


def test_events_after_done_are_left_out_and_reported() -> None:
    capture = T.paced([event(d) for d in DELTAS[:3]] + [event("[DONE]"), event(" late")], url=APP_URL)
    analysis = analyze(capture)
    assert analysis.answer.text == "".join(DELTAS[:3]) and analysis.answer.extra["ignored_after_end"] == 1
    assert "data-after-end" in {f.code for f in check_capture(capture).findings}


@pytest.mark.parametrize(
    ("payloads", "text"),
    [
        ([{"content": "Hel"}, {"content": "lo"}], "Hello"),
        ([{"token": "Hel"}, {"token": "lo"}], "Hello"),
        ([{"model": "llama3", "response": "Hel", "done": False}, {"model": "llama3", "response": "lo", "done": True}],
         "Hello"),
        ([{"type": "start"}, {"delta": "Hel"}, {"type": "delta", "delta": "lo"}, {"type": "finish"}], "Hello"),
        (["Hel\n", "lo"], "Hel\nlo"),  # JSON strings: an app that encodes each piece to keep its newlines
        ([{"text": "Hel", "content": None}, {"content": 5, "text": "lo"}], "Hello"),
    ],
    ids=["content", "token", "ollama-generate", "delta", "json-strings", "first-string-field"],
)
def test_json_pieces_read_as_text(payloads: list[object], text: str) -> None:
    """JSON of an app's own shape: the first field that holds a string carries the piece; a client
    of it parses each payload, so here [DONE] is the sentinel that crashes a naive one (info)."""
    capture = T.paced([T.sse(json.dumps(p)) for p in payloads] + [T.sse("[DONE]")], url=APP_URL)
    analysis = analyze(capture)
    assert (analysis.dialect, analysis.answer.text, analysis.answer.complete) == ("text", text, True)
    assert analysis.answer.extra == {"payloads": "JSON"}
    assert analysis.timing.text_events == 2  # the two payloads holding a piece, in each case
    findings = {f.code: f for f in check_capture(capture).findings}
    assert "done-not-json" in findings and "invalid-json" not in findings


def test_the_held_json_variant_is_judged_by_timing() -> None:
    """The issue's `{"content": ...}` app that held its events to the end: its events are text events
    now, so the timing checks judge them rather than pass it as `OK: 18 events`."""
    events = [T.sse({"content": d}) for d in DELTAS] + [T.sse("[DONE]")]
    analysis = analyze(T.capture([(1.633, b"".join(events))], url=APP_URL))
    assert analysis.dialect == "text" and analysis.timing.text_events == len(DELTAS)


def test_json_without_a_text_field_stays_generic() -> None:
    capture = T.paced([T.sse({"n": i, "pad": "x"}) for i in range(5)] + [T.sse("[DONE]")], url=APP_URL)
    analysis = analyze(capture)
    assert analysis.dialect == "generic" and analysis.answer.text.count("\n") == 4


def test_chat_chunks_forwarded_as_they_are_stay_openai_chat() -> None:
    """An app that forwards the upstream's chunks unchanged speaks OpenAI Chat, on any path."""
    analysis = analyze(T.paced(T.openai_events(5), url=APP_URL))
    assert analysis.dialect == "openai-chat" and analysis.answer.text == "".join(T.tokens(5))


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (["Hello", "[DONE]"], "text"),
        (["[DONE]"], "text"),
        ([json.dumps({"choices": [{"index": 0, "delta": {"content": "x"}}]}), "[DONE]"], "openai-chat"),
        ([json.dumps({"type": "status"})] * 3 + [json.dumps({"content": "x"})], "generic"),
        ([json.dumps({"type": "status"}), json.dumps({"content": "x"})], "text"),
    ],
)
def test_detection_by_shape(data: list[str], name: str) -> None:
    """Text is claimed when at least a third of the events carry a piece; [DONE] alone says text (it
    ends text streams as often as chat ones), never OpenAI Chat."""
    body = b"".join(event(d) for d in data)
    assert detect_dialect(parse_events(body), None).name == name


def test_text_flags_on_every_kind_of_event() -> None:
    reader = get_dialect("text").reader()
    flags = [reader.feed(e) for e in parse_events(b"data: a\n\ndata: {\"type\": \"x\"}\n\ndata:\n\ndata: [DONE]\n\n")]
    assert flags == [EventFlags.TEXT, EventFlags(0), EventFlags(0), EventFlags.END]


@pytest.mark.parametrize("spec", ["bytes:1", "bytes:7", "line", "random:3"])
@pytest.mark.parametrize("shape", SEED_SHAPES)
def test_every_cut_rebuilds_the_same_text(shape: str, spec: str) -> None:
    capture = SEED_SHAPES[shape]()
    whole = analyze(capture)
    assert analyze(capture, rechunk=parse_rechunk_spec(spec)).answer == whole.answer


def test_generic_still_reads_a_text_stream_when_asked() -> None:
    analysis = analyze(good_app(DELTAS[:3]), dialect="generic")
    assert analysis.answer.text == "\n".join(DELTAS[:3]) and analysis.answer.complete is None
    assert set(DIALECTS) >= {"generic", "text"}


@pytest.mark.parametrize("shape", ["single-yield", "list"])
def test_show_and_text_print_the_rebuilt_answer(shape: str, tmp_path: Path) -> None:
    path = tmp_path / f"{shape}.jsonl"
    path.write_text(dump_capture(SEED_SHAPES[shape]()))
    shown = CliRunner().invoke(cli, ["show", str(path)])
    assert shown.exit_code == 0 and ANSWER in shown.output and "(no answer text)" not in shown.output
    text = CliRunner().invoke(cli, ["text", "--json", str(path)])
    doc = json.loads(text.output)
    assert (doc["dialect"], doc["text"], doc["complete"], doc["end_marker_seen"]) == ("text", ANSWER, True, True)


def test_a_raw_body_of_text_reads_the_same() -> None:
    body = b"".join(event(d) for d in DELTAS) + event("[DONE]")
    analysis = analyze(Capture(chunks=(Chunk(None, body),), timed=False, end=End(kind="complete")))
    assert (analysis.dialect, analysis.answer.text, analysis.answer.complete) == ("text", ANSWER, True)


LAB = Path(__file__).parent / "data"
"""Recordings of the seed's app by the hop lab (tests/lab_apps, /work/lab/out/INDEX.md): Flask under
gunicorn or the Werkzeug dev server, reading an OpenAI upstream that sends "w0 " ... "w29 "."""
LAB_TEXT = "".join(f"w{i} " for i in range(30))


@pytest.mark.parametrize(
    ("name", "text_events", "payloads"),
    [
        ("flask-good-werkzeug", 30, "plain text"),
        ("flask-bug-string-gunicorn", 1, "plain text"),
        ("flask-bug-list-gunicorn", 30, "plain text"),
        ("flask-json-bug-list-gunicorn", 30, "JSON"),
    ],
)
def test_real_recordings_of_the_seed_app(name: str, text_events: int, payloads: str) -> None:
    """Read from real servers, the good app and both bugs: text, the upstream's answer, complete,
    its text events for the timing checks to judge, and no payload or marker error."""
    report = check_capture(load_capture(LAB / f"{name}.jsonl"))
    analysis = report.analysis
    assert (analysis.dialect, analysis.answer.text, analysis.answer.complete) == ("text", LAB_TEXT, True)
    assert analysis.timing.text_events == text_events and analysis.answer.extra["payloads"] == payloads
    codes = {f.code for f in report.findings}
    assert not codes & {"invalid-json", "missing-end-marker", "data-after-end"}
    assert ("done-not-json" in codes) == (payloads == "JSON")


def test_a_done_glued_to_the_answer_by_stripped_blank_lines_is_not_answer_text() -> None:
    """A hop stripped the blank lines but the last: the whole answer and its `[DONE]` are one event's data
    lines. The answer is the words; a `[DONE]` inside a line of text (near miss) stays text."""
    body = [(round(0.1 + 0.06 * i, 6), f"data: w{i}\n".encode()) for i in range(5)] + [(2.0, b"data: [DONE]\n\n")]
    a = analyze(T.capture(body, url=APP_URL))
    assert a.answer.dialect == "text" and a.answer.text == "w0\nw1\nw2\nw3\nw4"
    a = analyze(T.capture([(0.3, b"data: say [DONE] when done\n\n")], url=APP_URL), dialect="text")
    assert a.answer.text == "say [DONE] when done"
