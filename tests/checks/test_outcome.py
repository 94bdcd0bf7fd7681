"""How a stream ended is decided once, by the analysis (`Analysis.outcome`), and every reader agrees:
the lifecycle findings, the HTML report's end mark and the terminal's outcome line."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from rich.console import Console

from sse_inspect import Capture, Outcome, analyze, check_capture, get_dialect
from sse_inspect.cli._render import outcome as outcome_line
from sse_inspect.dialects import DIALECTS
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
        "gemini": (False, False), "cohere": (False, True), "generic": (True, False),
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
