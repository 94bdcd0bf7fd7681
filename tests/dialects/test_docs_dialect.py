"""The worked example of docs/dialects.md: the dialect written there, run as written, does what the page says."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import (
    DIALECTS,
    Dialect,
    EventFlags,
    Reader,
    Request,
    Severity,
    analyze,
    capture_from_body,
    check_capture,
    detect_dialect,
    parse_events,
)

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = (ROOT / "docs" / "dialects.md").read_text(encoding="utf-8")
CORPUS = ROOT / "tests" / "data" / "corpus"


def _example() -> tuple[str, types.ModuleType]:
    """The page's first Python block, and the module it makes."""
    code = re.search(r"```python\n(.*?)```", PAGE, re.DOTALL)
    assert code is not None
    module = types.ModuleType("tgi_example")
    # the page's own code, from this repository, run as a reader would run it: that is the test
    exec(compile(code.group(1), "docs/dialects.md", "exec"), module.__dict__)  # noqa: S102
    return code.group(1), module


SOURCE, EXAMPLE = _example()
TGI: type[Dialect] = EXAMPLE.TGI


def body(*payloads: dict[str, Any] | str) -> bytes:
    """A TGI body, written as TGI writes it (`data:` with no space)."""
    return b"".join(b"data:" + (p if isinstance(p, str) else json.dumps(p)).encode() + b"\n\n" for p in payloads)


def token(n: int, text: str, *, special: bool = False, **last: Any) -> dict[str, Any]:
    return {
        "index": n,
        "token": {"id": n, "text": text, "logprob": -0.1, "special": special},
        "generated_text": last.get("generated_text"),
        "details": last.get("details"),
    }


DONE = {
    "generated_text": " Deep learning",
    "details": {"finish_reason": "eos_token", "generated_tokens": 3, "seed": None},
}
STREAM = body(token(1, " Deep"), token(2, " learning"), token(3, "</s>", special=True, **DONE))


def test_the_example_is_about_fifty_lines_and_subclasses_the_public_bases() -> None:
    assert 35 <= len(SOURCE.splitlines()) <= 60
    assert issubclass(EXAMPLE.TGIReader, Reader) and TGI.reader is EXAMPLE.TGIReader
    assert "sse_inspect._" not in SOURCE  # the public front door is enough


def test_a_whole_stream() -> None:
    events = parse_events(STREAM)
    reader = TGI().reader()
    assert [reader.feed(event) for event in events] == [EventFlags.TEXT, EventFlags.TEXT, EventFlags.END]
    answer = TGI().rebuild(events)
    assert answer.dialect == "tgi" and answer.text == " Deep learning"  # the special token left out
    assert answer.finish_reason == "eos_token" and answer.usage == {"generated_tokens": 3}
    assert answer.end_marker_events == (2,) and answer.complete is True and answer.text_events == (0, 1)


def test_what_the_base_does_for_it() -> None:
    error = {"error": "Input validation error: `inputs` must have less than 1024 tokens", "error_type": "validation"}
    answer = TGI().rebuild(parse_events(body(token(1, "Hi"), "not json", error)))
    assert answer.text == "Hi" and answer.invalid_json == (1,) and answer.complete is False
    assert [(e.message, e.event_index) for e in answer.errors] == [(error["error"], 2)]
    late = TGI().rebuild(parse_events(STREAM + body(token(4, " more", **DONE), token(5, " late"))))
    assert late.text == " Deep learning" and late.end_markers == 2 and late.extra == {"ignored_after_end": 1}
    cut = TGI().rebuild(parse_events(body(token(1, " Deep"))))
    assert cut.text == " Deep" and cut.complete is False and not cut.end_marker_seen


def test_registered_it_is_detected_and_analysed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(DIALECTS, "tgi")  # the package's own (sse_inspect/dialects/tgi.py): the page adds one anew
    capture = capture_from_body(STREAM, request=Request(method="POST", url="http://tgi:8080/generate_stream"))
    assert analyze(capture).dialect == "generic"
    monkeypatch.setitem(DIALECTS, TGI.name, TGI)
    analysis = analyze(capture)
    assert analysis.dialect == "tgi" and analysis.answer.text == " Deep learning" and analysis.timing.text_events == 2
    assert analyze(capture, dialect="tgi").answer == analysis.answer
    assert detect_dialect([], "http://tgi:8080/generate_stream").name == "tgi"
    for path in CORPUS.glob("*.sse"):  # and it takes no other grammar's streams
        assert detect_dialect(parse_events(path.read_bytes())[:50], None).name != "tgi", path.name


def test_its_facts_and_what_a_dialect_that_states_none_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example states what the page's table lists; a dialect that states nothing gets the defaults,
    which treat a `[DONE]` as the usual sentinel (as every dialect not known to send none was treated)."""
    assert (TGI.sends_done, TGI.end_closes_stream, TGI.reader.stops_at_end, TGI.reader.expects_json) == (
        False, True, True, True)  # fmt: skip
    for attribute in ("sends_done", "end_closes_stream", "stops_at_end", "expects_json"):
        assert f"| `{attribute}` |" in PAGE
    monkeypatch.setitem(DIALECTS, TGI.name, TGI)
    request = Request(method="POST", url="http://tgi:8080/generate_stream")
    appended = capture_from_body(STREAM + body("[DONE]"), request=request)
    [done] = [f for f in check_capture(appended).findings if f.code == "done-not-json"]
    assert done.severity == Severity.WARNING and "tgi never sends" in done.message
    monkeypatch.delattr(TGI, "sends_done")
    assert TGI.sends_done is Dialect.sends_done is True
    [done] = [f for f in check_capture(appended).findings if f.code == "done-not-json"]
    assert done.severity == Severity.INFO and "never sends" not in done.message
    late = capture_from_body(STREAM + body(token(4, " late")), request=request)
    assert "data-after-end" in {f.code for f in check_capture(late).findings}
    monkeypatch.setattr(TGI, "end_closes_stream", False)
    assert "data-after-end" not in {f.code for f in check_capture(late).findings}
