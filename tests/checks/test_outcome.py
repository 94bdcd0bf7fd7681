"""How a stream ended is decided once, by the analysis (`Analysis.outcome`), and every reader agrees:
the lifecycle findings, the HTML report's end mark and the terminal's outcome line."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable

import pytest
from rich.console import Console

from sse_inspect import Capture, End, Outcome, analyze, check_capture, get_dialect
from sse_inspect._capture import END_KINDS
from sse_inspect._outcome import WORDS, Audience, Cause, State, abrupt_end, end_cause, say
from sse_inspect._playback import Playback
from sse_inspect.cli._render import outcome as outcome_line
from sse_inspect.cli._replay import ending
from sse_inspect.dialects import DIALECTS, Dialect
from sse_inspect.report import html_report

from . import timelines as T
from .test_codes import ANTHROPIC_ERROR, ANTHROPIC_URL, COHERE_URL, GEMINI_URL, OA, RESPONSES_URL, TRUNCATED

GENERIC_URL = "http://localhost:8000/stream"
PLAIN = [b"data: hello\n\n", b"data: world\n\n"]

# (name, capture, state, cause, the terminal's mark and words, the HTML report's end class)
CASES = [
    ("openai-done", lambda: T.paced(OA), "complete", "end-marker", "✔ COMPLETE", "complete"),
    ("openai-clean-close", lambda: T.paced(OA[:-1]), "no-end-marker", "closed-cleanly", "✘ NO END MARKER", "cut"),
    ("openai-inside-event", lambda: T.paced(OA[:-1] + [TRUNCATED]), "no-end-marker", "closed-inside-event",
     "✘ NO END MARKER", "cut"),
    ("openai-reset", lambda: T.paced(OA[:-1], end="server-disconnected", end_error="reset"), "no-end-marker",
     "server-disconnected", "✘ NO END MARKER", "cut"),
    ("openai-client-left", lambda: T.paced(OA[:-1], end="client-disconnected"), "no-end-marker",
     "client-disconnected", "✘ NO END MARKER", "cut"),
    ("openai-failed", lambda: T.paced(OA[:-1], end="error", end_error="boom"), "no-end-marker", "error",
     "✘ NO END MARKER", "cut"),
    ("openai-no-end-line", lambda: T.paced(OA[:-1], end=None), "no-end-marker", "recording-stopped",
     "✘ NO END MARKER", "cut"),
    ("anthropic-error", lambda: T.paced(T.anthropic_start() + T.anthropic_deltas(3) + [ANTHROPIC_ERROR],
                                        url=ANTHROPIC_URL), "errored", "in-band-error", "✘ ERRORED", "errored"),
    ("anthropic-stop", lambda: T.paced(T.anthropic_events(5), url=ANTHROPIC_URL), "complete", "end-marker",
     "✔ COMPLETE", "complete"),
    ("responses-none", lambda: T.paced(T.responses_events(5, terminal=None), url=RESPONSES_URL), "no-end-marker",
     "closed-cleanly", "✘ NO END MARKER", "cut"),
    ("gemini-finish", lambda: T.paced(T.gemini_events(5), url=GEMINI_URL), "complete", "end-marker", "✔ COMPLETE",
     "complete"),
    ("cohere-cut", lambda: T.paced(T.cohere_events(5, end=False), url=COHERE_URL, end="server-disconnected"),
     "no-end-marker", "server-disconnected", "✘ NO END MARKER", "cut"),
    ("generic-ended", lambda: T.paced(PLAIN, url=GENERIC_URL), "ended", "closed-cleanly", "", "complete"),
    ("generic-cut", lambda: T.paced(PLAIN, url=GENERIC_URL, end="server-disconnected"), "cut", "server-disconnected",
     "", "cut"),
    ("generic-no-end-line", lambda: T.paced(PLAIN, url=GENERIC_URL, end=None), "cut", "recording-stopped", "", "cut"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "build", "state", "cause", "line", "css"), CASES, ids=[c[0] for c in CASES])
def test_one_outcome_read_alike_everywhere(
    name: str, build: Callable[[], Capture], state: str, cause: str, line: str, css: str
) -> None:
    capture = build()
    report = check_capture(capture)
    o = report.analysis.outcome
    assert isinstance(o, Outcome) and (o.state, o.cause) == (state, cause)
    assert o.ok == (state in ("complete", "ended")) and o.http_ok
    assert o.end == capture.end and o.connection_cut == (capture.end is not None and capture.end.kind != "complete")
    # the checks: a missing marker is reported exactly when the outcome says it is missing
    missing = [f for f in report.findings if f.code == "missing-end-marker"]
    assert bool(missing) == o.end_marker_missing == (state == "no-end-marker" or name == "anthropic-error")
    # a cut connection is reported on its own where no marker could tell it (not for a missing recording's end)
    cut = [f for f in report.findings if f.code == "connection-cut"]
    assert bool(cut) == (state == "cut" and o.connection_cut)
    # the terminal view's outcome line opens with the outcome's words (none for a dialect without a marker)
    out = io.StringIO()
    Console(file=out, width=200).print(outcome_line(report.analysis))
    first = out.getvalue().split(report.analysis.dialect)[0].strip()
    assert first == line
    # the HTML report's end mark and its words
    page = html_report([report])
    assert f'<g class="end {css}"' in page and f"{o.words} at " in page
    if state == "cut":
        assert o.words == f"CUT (recording {capture.end.kind if capture.end else 'incomplete'})"
    # the state and the cause are enums equal to their strings, and JSON writes them as those strings
    assert type(o.state) is State and type(o.cause) is Cause
    assert json.dumps([o.state, o.cause]) == json.dumps([state, cause])
    # the answer's own `complete` is the same decision seen from the answer alone
    answer = report.analysis.answer
    assert (answer.complete is True) == (o.state is State.COMPLETE)
    assert (answer.complete is None) == (answer.end_marker is None)
    # a replay decides it the same way, from the same pipeline
    *_, last = Playback(capture)
    assert last.outcome == o
    # the analysis carries the dialect it read with
    assert isinstance(report.analysis.grammar, Dialect) and report.analysis.grammar.name == report.analysis.dialect


ENDS = [None] + [End(kind=k, t=t, error=e) for k in END_KINDS for t in (None, 1.25) for e in (None, "reset")]


@pytest.mark.parametrize("end", ENDS, ids=repr)
def test_every_end_line_has_words_for_every_reader(end: End | None) -> None:
    """Each way a recording can end gives one cause, and each reader that meets it has words for it."""
    cause = end_cause(end)
    assert (cause is None) == (end is not None and end.kind == "complete")
    if cause is None:
        assert abrupt_end(end) is None
        return
    assert cause == (end.kind if end is not None else "recording-stopped")
    for audience in (Audience.REPLAY, Audience.TRANSPORT, Audience.VIEW, Audience.FINDING):
        words = say(cause, audience, end)
        assert words and "{" not in words
        if end is not None and end.error and audience is not Audience.VIEW:  # the view styles the error apart
            assert end.error in words
    assert abrupt_end(end) == say(cause, Audience.TRANSPORT, end)


def test_the_missing_marker_finding_has_words_for_every_cause_but_the_marker() -> None:
    assert {c for c, a in WORDS if a is Audience.FINDING} == set(Cause) - {Cause.END_MARKER}


def test_every_reader_takes_its_words_from_the_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change a cause's words in `WORDS` and the replay line, the finding, the transport's reason and the
    terminal's outcome line all change with it: none keeps a wording of its own."""
    capture = T.paced(OA[:-1], end="server-disconnected", end_error="reset")
    for audience in Audience:
        monkeypatch.setitem(WORDS, (Cause.SERVER_DISCONNECTED, audience), f"<{audience.value}{{paren}}>")
    analysis = analyze(capture)
    assert ending(analysis.outcome) == "<replay (reset)>"
    assert abrupt_end(capture.end) == "<transport (reset)>"
    finding = next(f for f in check_capture(capture).findings if f.code == "missing-end-marker")
    assert finding.message.endswith(": <finding (reset)>")
    out = io.StringIO()
    Console(file=out, width=200).print(outcome_line(analysis))
    assert "recording <view (reset)>: reset" in out.getvalue()


def test_a_cut_after_the_end_marker_keeps_both_facts() -> None:
    """[DONE] came, then the connection was cut: the cause is the marker, the end line's cause is the cut."""
    o = analyze(T.paced(OA, end="server-disconnected")).outcome
    assert (o.state, o.cause, o.end_cause) == (State.COMPLETE, Cause.END_MARKER, Cause.SERVER_DISCONNECTED)
    assert ending(o) is not None and ending(o).startswith("the stream was cut")  # type: ignore[union-attr]
    clean = analyze(T.paced(OA)).outcome
    assert clean.end_cause is None and ending(clean) is None
    assert ending(dataclasses.replace(clean, end=None)) == (
        "the recording stops here: it was cut off (no end line), so how the stream ended is unknown"
    )


def test_an_error_response_is_no_success() -> None:
    capture = T.capture([(0.3, b'{"error":{"message":"Rate limit reached"}}')], status=429, reason="Too Many Requests",
                        headers=(("Content-Type", "application/json"),))  # fmt: skip
    assert not analyze(capture).outcome.http_ok
    assert analyze(Capture(chunks=capture.chunks)).outcome.http_ok  # a raw body: no status to say otherwise


def test_outcome_is_the_same_kept_or_streamed() -> None:
    capture = T.paced(OA[:-1] + [TRUNCATED], end="server-disconnected")
    assert analyze(capture).outcome == analyze(capture, keep=False).outcome


# -- dialect facts are attributes of the dialect, and the checks read them there ---------------------------


def test_every_dialect_states_its_facts() -> None:
    facts = {name: (d.sends_done, d.end_closes_stream) for name, d in DIALECTS.items()}
    assert facts == {
        "openai-chat": (True, True), "openai-responses": (False, True), "anthropic": (False, True),
        "gemini": (False, False), "cohere": (False, True), "ollama": (False, True), "tgi": (False, True),
        "bedrock-converse": (False, False), "bedrock-invoke": (False, True), "vercel-ui": (True, True),
        "mcp": (False, True), "a2a": (False, True), "text": (True, True),
        "generic": (True, False),
    }  # fmt: skip


def _codes(capture: Capture) -> dict[str, str]:
    return {f.code: f"{f.severity}: {f.message}" for f in check_capture(capture).findings}


def test_the_checks_read_the_dialects_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flip a dialect's fact and the finding follows: the checks hold no list of dialect names."""
    gemini = type(get_dialect("gemini"))
    usage_after_finish = T.paced(T.gemini_events(5) + [T.sse({"usageMetadata": {"totalTokenCount": 9}}, eol="\r\n")],
                                 url=GEMINI_URL)  # fmt: skip
    assert "data-after-end" not in _codes(usage_after_finish)
    monkeypatch.setattr(gemini, "end_closes_stream", True)
    assert "data-after-end" in _codes(usage_after_finish)

    anthropic = type(get_dialect("anthropic"))
    appended = T.paced(T.anthropic_events(5) + [T.sse("[DONE]")], url=ANTHROPIC_URL)
    assert (
        _codes(appended)["done-not-json"].startswith("warning: ")
        and "anthropic never sends" in _codes(appended)["done-not-json"]
    )
    monkeypatch.setattr(anthropic, "sends_done", True)
    assert _codes(appended)["done-not-json"].startswith("info: ")
