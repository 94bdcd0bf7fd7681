"""Timing findings on realistic timed streams: buffered ones are caught, healthy pacing never is."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import pytest

from sse_inspect import Capture, Chunk, SSEInspectError, analyze, parse_capture
from sse_inspect.checks import CODES, Finding, Report, Severity, Thresholds, parse_threshold, run_checks

from ..helpers import CORPUS
from . import timelines as T

TIMING = {name for name, code in CODES.items() if code.family == "timing"}
HEADERS = {name for name, code in CODES.items() if code.family == "headers"}


def check(capture: Capture, thresholds: Thresholds | None = None) -> Report:
    return run_checks(analyze(capture), thresholds=thresholds)


def only(report: Report, code: str) -> Finding:
    [finding] = [f for f in report.findings if f.code == code]
    return finding


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"BUG: {reason}")


def corpus_in_one_write(name: str, tail: bytes = b"") -> Callable[[], Capture]:
    return lambda: T.one_write((CORPUS / name).read_bytes() + tail)


HEALTHY: list[tuple[str, Callable[[], Capture]]] = [
    *((f"steady-seed{seed}", functools.partial(T.steady, seed)) for seed in (1, 2, 3)),
    ("slow-model", T.slow_model),
    ("thinking-pause", T.thinking_pause),
    ("anthropic-batched-start-and-end", T.anthropic_paced),
    ("45s-gap-with-keepalives", functools.partial(T.silent_gap, keepalive_every=10.0)),
]
# fmt: off
FALSE_POSITIVES = [
    pytest.param(T.groq_fast, id="groq-2ms"),  # 2 ms apart: chains into one long release, no flush
    pytest.param(T.responses_paced, id="responses-start"),  # Responses' bookkeeping events written together
    pytest.param(T.h2_image_frames, id="h2-16k-frames"),  # big events split into back-to-back HTTP/2 frames
    pytest.param(corpus_in_one_write("openai-chat-finish-length-maxtokens1.sse"), id="one-token-answer"),
    pytest.param(corpus_in_one_write("groq-chat-toolcall-noargs.sse", b"data: [DONE]\n\n"), id="unstreamed-tool-call"),
    pytest.param(T.retransmit_stall, id="tcp-retransmit"),  # one 280 ms TCP retransmission stall
]
# fmt: on


@pytest.mark.parametrize(("name", "build"), HEALTHY, ids=[n for n, _ in HEALTHY])
def test_healthy_pacing_is_clean(name: str, build: Callable[[], Capture]) -> None:
    report = check(build())
    assert [f for f in report.findings if f.severity > Severity.INFO] == []
    assert report.verdict.startswith("OK: ")


@pytest.mark.parametrize("build", FALSE_POSITIVES)
def test_real_world_pacing_is_not_buffering(build: Callable[[], Capture]) -> None:
    assert [f.code for f in check(build()).findings if f.code in TIMING] == []


def test_gzip_flushed_per_event_keeps_its_timing() -> None:
    """Decoded chunk by chunk, a compressed stream keeps its arrival times: flagged as compressed, not as buffered."""
    report = check(T.gzipped())
    assert [(f.code, f.severity) for f in report.findings if f.severity > Severity.INFO] == [
        ("compressed-stream", Severity.WARNING)
    ]
    assert report.analysis.timing.first_event == T.TTFT


def test_one_burst_after_a_silence() -> None:
    capture = T.burst_after_silence(held=40, hold=2.0)
    release = capture.chunks[50].t
    report = check(capture)
    burst = only(report, "buffering-burst")
    assert burst.severity == Severity.WARNING
    assert burst.t == release
    assert f"40 text events held 2.000 s and released in 3 ms at t={release:.3f} s" in burst.message
    assert burst.evidence["events_held"] == 40
    assert [b["events"] for b in burst.evidence["bursts"]] == [40]
    assert {f.code for f in report.findings} & TIMING == {"buffering-burst"}
    assert report.verdict == f"BUFFERED: {burst.message}"


def test_nginx_fixed_size_buffer() -> None:
    capture = T.nginx_4k_buffer()
    report = check(capture)
    flush = only(report, "fixed-size-flush")
    assert flush.evidence["size"] == 4096
    assert flush.evidence["chunks"] == len(capture.chunks) - 1 == flush.evidence["cut_inside_event"]
    burst = only(report, "buffering-burst")
    assert len(burst.evidence["bursts"]) >= 3
    assert f"{len(burst.evidence['bursts'])} bursts released" in burst.message
    assert report.verdict.startswith("BUFFERED: ")


def test_everything_in_one_flush() -> None:
    report = check(T.close_delimited_through_nginx(n=120, hold=3.0))
    single = only(report, "single-flush")
    assert "119 of 119 text events" in single.message and "after 3.000 s of silence" in single.message
    assert single.evidence["held_s"] == pytest.approx(3.0)
    assert "119 text events held 3.000 s" in only(report, "buffering-burst").message
    assert report.verdict == f"BUFFERED: {single.message}"


def test_a_long_gap_without_bytes() -> None:
    report = check(T.silent_gap(gap=45.0))
    silence = only(report, "long-silence")
    assert silence.evidence["gap_s"] == pytest.approx(45.0)
    assert silence.t == pytest.approx(0.4 + 19 * 0.03 + 45.0)
    assert report.verdict.startswith("AT RISK: no byte for 45.0 s")


def test_keepalives_bridge_the_gap() -> None:
    report = check(T.silent_gap(gap=45.0, keepalive_every=10.0))
    assert "long-silence" not in {f.code for f in report.findings}
    beats = only(report, "heartbeats")
    assert (beats.severity, beats.evidence["comments"]) == (Severity.INFO, 4)


def test_a_higher_burst_threshold_drops_the_burst() -> None:
    capture = T.burst_after_silence(held=40)
    report = check(capture, Thresholds(burst_min_events=50))
    assert not {f.code for f in report.findings} & TIMING
    assert report.verdict.startswith("OK: ")
    assert report.thresholds.burst_min_events == 50


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("burst_min_events=50", "burst_min_events", 50),
        ("burst-window-ms=2.5", "burst_window_ms", 2.5),
        ("long_silence_s=60", "long_silence_s", 60.0),
    ],
)
def test_parse_threshold(text: str, field: str, value: float) -> None:
    parsed = parse_threshold(Thresholds(), text)
    assert getattr(parsed, field) == value and type(getattr(parsed, field)) is type(value)
    assert Thresholds() == dataclasses.replace(parsed, **{field: getattr(Thresholds(), field)})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("burst_events=5", "unknown threshold"),
        ("burst_min_events", "unknown threshold"),
        ("burst_min_events=many", "takes a number"),
        ("burst_min_events=2.5", "takes a number"),
        ("long_silence_s=-1", "cannot be negative"),
    ],
)
def test_parse_threshold_rejects(text: str, says: str) -> None:
    with pytest.raises(SSEInspectError, match=says):
        parse_threshold(Thresholds(), text)


def test_untimed_capture_skips_timing() -> None:
    untimed = dataclasses.replace(T.close_delimited_through_nginx(), timed=False)
    report = check(untimed)
    [skip] = [s for s in report.skipped if set(s.codes) == TIMING]
    assert "untimed" in skip.reason
    assert not {f.code for f in report.findings} & TIMING


def test_chunks_without_times_skip_timing() -> None:
    capture = T.burst_after_silence()
    untimed = dataclasses.replace(capture, chunks=tuple(Chunk(None, c.data) for c in capture.chunks))
    report = check(untimed)
    assert any(set(s.codes) == TIMING for s in report.skipped)
    assert not {f.code for f in report.findings} & TIMING


def test_raw_body_skips_headers() -> None:
    report = check(parse_capture(b"".join(T.openai_events(5))))
    [skip] = [s for s in report.skipped if set(s.codes) == HEADERS]
    assert skip.reason.startswith("a raw body")
    assert not {f.code for f in report.findings} & (HEADERS | TIMING)


def test_error_response_skips_timing() -> None:
    capture = T.capture(
        [(3.0, b"upstream timed out")], status=504, reason="Gateway Timeout", headers=(("Content-Type", "text/plain"),)
    )
    report = check(capture)
    assert any(set(s.codes) == TIMING and "error response" in s.reason for s in report.skipped)
    assert report.verdict.startswith("HTTP ERROR: HTTP 504 Gateway Timeout")


def test_select_and_ignore() -> None:
    analysis = analyze(T.nginx_4k_buffer())
    assert {f.code for f in run_checks(analysis, select={"fixed-size-flush"}).findings} == {"fixed-size-flush"}
    ignored = run_checks(analysis, ignore={"buffering-burst", "fixed-size-flush"})
    assert not {f.code for f in ignored.findings} & {"buffering-burst", "fixed-size-flush"}
    assert not ignored.verdict.startswith("BUFFERED")


@pytest.mark.parametrize("pause", [0.0, 25.0])
def test_periodic_flushes_are_found_after_a_thinking_pause(pause: float) -> None:
    """A hop flushing every 0.6 s, behind a model that thinks 25 s first: the pause must not hide the
    flushes. (The flush right after the pause is silent for 25 s: from the client's side no tool can
    tell the model's thinking from a hop's hold, so only the others are bound to 0.6 s.)"""
    burst = only(check(T.flush_timer(period=0.6, pause=pause)), "buffering-burst")
    assert len(burst.evidence["bursts"]) >= 10
    assert sum(b["silence_s"] < 1.0 for b in burst.evidence["bursts"]) >= len(burst.evidence["bursts"]) - 1
    assert "held 0.6" in burst.message, "the message describes a typical hold, not the pause"
