"""Timing findings on realistic timed streams: buffered ones are caught, healthy pacing never is."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sse_inspect import (
    Capture,
    Chunk,
    End,
    SSEInspectError,
    analyze,
    load_capture,
    parse_capture,
    parse_rechunk_spec,
)
from sse_inspect._diff import HeldRelease, diff_timing
from sse_inspect._release import Release
from sse_inspect.checks import CODES, Finding, Report, Severity, Thresholds, check_capture, parse_threshold
from sse_inspect.checks._check import Context
from sse_inspect.checks.evidence import Bursts
from sse_inspect.checks.timing import ChunkRelease, TimingCheck

from ..helpers import CORPUS
from . import timelines as T

TIMING = {name for name, code in CODES.items() if code.family == "timing"}
HEADERS = {name for name, code in CODES.items() if code.family == "headers"}


def check(capture: Capture, thresholds: Thresholds | None = None) -> Report:
    return check_capture(capture, thresholds=thresholds)


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
    assert burst.evidence.events_held == 40 and not burst.evidence.lumps
    assert [b.events for b in burst.evidence.bursts] == [40]
    assert {f.code for f in report.findings} & TIMING == {"buffering-burst"}
    assert report.verdict == f"BUFFERED: {burst.message}"


def test_nginx_fixed_size_buffer() -> None:
    capture = T.nginx_4k_buffer()
    report = check(capture)
    flush = only(report, "fixed-size-flush")
    assert flush.evidence.size == 4096
    assert flush.evidence.chunks == len(capture.chunks) - 1 == flush.evidence.cut_inside_event
    burst = only(report, "buffering-burst")
    assert len(burst.evidence.bursts) >= 3
    assert f"{len(burst.evidence.bursts)} bursts released" in burst.message
    assert report.verdict.startswith("BUFFERED: ")


def test_everything_in_one_flush() -> None:
    report = check(T.close_delimited_through_nginx(n=120, hold=3.0))
    single = only(report, "single-flush")
    assert "119 of 119 text events" in single.message and "after 3.000 s of silence" in single.message
    assert single.evidence.held_s == pytest.approx(3.0)
    assert "119 text events held 3.000 s" in only(report, "buffering-burst").message
    assert report.verdict == f"BUFFERED: {single.message}"


def test_a_long_gap_without_bytes() -> None:
    report = check(T.silent_gap(gap=45.0))
    silence = only(report, "long-silence")
    assert silence.evidence.gap_s == pytest.approx(45.0)
    assert silence.t == pytest.approx(0.4 + 19 * 0.03 + 45.0)
    assert report.verdict.startswith("AT RISK: no byte for 45.0 s")


def test_keepalives_bridge_the_gap() -> None:
    report = check(T.silent_gap(gap=45.0, keepalive_every=10.0))
    assert "long-silence" not in {f.code for f in report.findings}
    beats = only(report, "heartbeats")
    assert (beats.severity, beats.evidence.comments) == (Severity.INFO, 4)


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
        ("single-flush-min-chars=120", "single_flush_min_chars", 120),
        ("headers_held_s=2", "headers_held_s", 2.0),
        ("timeout_tolerance_s=0.5", "timeout_tolerance_s", 0.5),
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
    capture = T.nginx_4k_buffer()
    assert {f.code for f in check_capture(capture, select={"fixed-size-flush"}).findings} == {"fixed-size-flush"}
    ignored = check_capture(capture, ignore={"buffering-burst", "fixed-size-flush"})
    assert not {f.code for f in ignored.findings} & {"buffering-burst", "fixed-size-flush"}
    assert not ignored.verdict.startswith("BUFFERED")


@pytest.mark.parametrize("pause", [0.0, 25.0])
def test_periodic_flushes_are_found_after_a_thinking_pause(pause: float) -> None:
    """A hop flushing every 0.6 s, behind a model that thinks 25 s first: the pause must not hide the
    flushes. (The flush right after the pause is silent for 25 s: from the client's side no tool can
    tell the model's thinking from a hop's hold, so only the others are bound to 0.6 s.)"""
    burst = only(check(T.flush_timer(period=0.6, pause=pause)), "buffering-burst")
    assert len(burst.evidence.bursts) >= 10
    assert sum(b.silence_s < 1.0 for b in burst.evidence.bursts) >= len(burst.evidence.bursts) - 1
    assert "held 0.6" in burst.message, "the message describes a typical hold, not the pause"


# -- the silence before the end, and what the rule says when a stream has no pace ----------------------------


def stalled(stall: float, end: str, *, n: int = 10) -> Capture:
    """n tokens 30 ms apart, then `stall` s without a byte, then the recording's end line (`end`)."""
    capture = T.paced(T.openai_events(n, done=end == "complete"), ttft=0.3, every=0.03)
    last = capture.chunks[-1].t or 0.0
    return dataclasses.replace(capture, end=End(kind=end, t=last + stall, error="cut" if end != "complete" else None))


def test_the_silence_before_a_cut_is_the_longest() -> None:
    capture = stalled(45.0, "server-disconnected")  # a silence of no hop's known idle limit
    timing = analyze(capture).timing
    last = capture.chunks[-1].t or 0.0
    assert timing.max_gap == pytest.approx(45.0) and timing.max_gap_at == pytest.approx(last + 45.0)
    assert timing.max_gap_final and timing.end_silence == (last, pytest.approx(last + 45.0))
    silence = only(check(capture), "long-silence")  # the check counts the same silence
    assert silence.evidence.gap_s == pytest.approx(timing.max_gap) and silence.evidence.final is True
    assert "no byte for 45.0 s before the cut (" in silence.message
    cut = only(check(stalled(60.0, "server-disconnected")), "idle-timeout-cut")  # nginx's, the ALB's limit
    assert cut.evidence.seconds == pytest.approx(analyze(stalled(60.0, "server-disconnected")).timing.max_gap)


def test_a_silence_then_a_clean_end_is_to_the_end() -> None:
    timing = analyze(stalled(40.0, "complete")).timing
    assert timing.max_gap == pytest.approx(40.0) and timing.max_gap_final
    assert "before the end" in only(check(stalled(40.0, "complete")), "long-silence").message


def test_a_short_wait_for_the_end_is_not_the_longest_silence() -> None:
    capture = stalled(0.01, "server-disconnected")
    timing = analyze(capture).timing
    assert timing.max_gap == pytest.approx(0.3) and timing.max_gap_at == pytest.approx(0.3)  # the first token
    assert not timing.max_gap_final and timing.end_silence is not None
    gap = analyze(T.silent_gap(gap=45.0)).timing
    assert gap.max_gap == pytest.approx(45.0) and not gap.max_gap_final  # a silence mid-stream stays mid-stream
    assert only(check(T.silent_gap(gap=45.0)), "long-silence").evidence.final is False


def test_a_recording_without_an_end_time_has_no_final_silence() -> None:
    capture = dataclasses.replace(stalled(60.0, "server-disconnected"), end=None)
    timing = analyze(capture).timing
    assert (timing.end_silence, timing.max_gap_final) == (None, False) and timing.max_gap == pytest.approx(0.3)
    assert "long-silence" not in {f.code for f in check(capture).findings}


def test_a_stream_all_in_one_release_has_no_pace_and_says_so() -> None:
    burst = only(check(T.close_delimited_through_nginx(n=120, hold=3.0)), "buffering-burst")
    assert "every text event arrived in the one release, so the stream has no pace to compare with" in burst.message
    assert "(0.0 ms)" not in burst.message and "pace (" not in burst.message
    assert "rule: >= 5 text events within 50 ms after >= 500 ms of silence" in burst.message


def test_a_paced_stream_names_its_pace_in_the_rule() -> None:
    report = check(T.burst_after_silence())
    burst = only(report, "buffering-burst")
    pace = burst.evidence.pace_ms
    assert pace > 0 and f"4x the stream's pace (its usual gap between text events, {pace:.1f} ms)" in burst.message


def test_the_buffering_findings_share_one_fix() -> None:
    fixes = {CODES[code].fix for code in ("buffering-burst", "single-flush", "fixed-size-flush")}
    assert len(fixes) == 1 and "nginx" not in fixes.pop()  # neutral of any hop: each finding advises its culprit's


def test_a_re_cut_stands_for_the_wire_but_keeps_its_byte_count() -> None:
    """Under a re-cut the chunk count, the first byte and the silences are the re-cut chunks'; the bytes
    that crossed the wire (compressed here) stay what was recorded."""
    capture = T.gzipped(40)
    plain = analyze(capture)
    whole = analyze(capture, rechunk=parse_rechunk_spec("whole"))
    cut = analyze(capture, rechunk=parse_rechunk_spec("bytes:100"))
    last = capture.chunks[-1].t
    assert (plain.timing.chunks, whole.timing.chunks) == (40, 1)
    assert cut.timing.chunks == -(-plain.timing.decoded_bytes // 100)
    assert whole.timing.ttfb == last and whole.timing.max_gap == last
    assert plain.timing.bytes == whole.timing.bytes == cut.timing.bytes < plain.timing.decoded_bytes
    assert len(whole.capture.chunks) == 40  # the recording is what it was
    report = check_capture(capture, rechunk=parse_rechunk_spec("whole"))
    message = only(report, "compressed-stream").message
    assert f"({plain.timing.bytes} bytes on the wire for {plain.timing.decoded_bytes} decoded)" in message
    assert "single-flush" in {f.code for f in report.findings}  # the findings see the one chunk too
    assert "single-flush" not in {f.code for f in check(capture).findings}


def test_the_check_and_the_diff_find_the_same_release_where_a_hop_flushed() -> None:
    """One `Release`, extended by each side with what it counts: on one downstream recording, the
    timing check's release of the held events (among the chunks) is the timing diff's (among the
    held events): same start, same span, as many text events as held events."""
    from ..test_diff import held_downstream, stream, upstream

    times = upstream()
    downstream = stream(held_downstream(times))
    (held,) = diff_timing(analyze(stream(times)), analyze(downstream)).releases
    check = TimingCheck(Thresholds())
    analysis = analyze(downstream, observers=[check])
    list(check.findings(Context(analysis, Thresholds())))
    release = check.biggest
    assert isinstance(held, HeldRelease) and isinstance(release, ChunkRelease)
    assert (release.t, release.span) == (held.t, held.span) and held.t == 3.0
    assert release.text_events == release.chunks == len(held.events) == 31
    assert release.silence == pytest.approx(3.0 - 0.555) and held.first_hold == pytest.approx(3.0 - 0.605)
    assert {type(r).__mro__[1] for r in (held, release)} == {Release}


# -- issue 18: buffering judged in characters and time, the headers held, the cuts of hops' limits -------------------


def test_the_classic_bug_one_event_holding_the_whole_answer_is_a_single_flush() -> None:
    """The tutorial app that collects the answer and yields it once: one event, 400 characters, 1.6 s in."""
    report = check(T.collected_answer(400, silence=1.6))
    flush = only(report, "single-flush")
    assert (flush.evidence.text_events, flush.evidence.chars, flush.evidence.held_s) == (1, 400, 1.6)
    assert flush.evidence.silence == flush.evidence.held_s and flush.t == 1.6
    assert report.verdict == f"BUFFERED: {flush.message}"
    assert "buffering-burst" not in {f.code for f in report.findings}  # one event is no burst of events


@pytest.mark.parametrize("events", [2, 3, 4])
def test_a_few_big_events_at_once_are_a_single_flush(events: int) -> None:
    flush = only(check(T.collected_answer(400, events=events)), "single-flush")
    assert flush.evidence.text_events == events and flush.evidence.chars == 400


def test_the_size_rule_is_characters_an_event_at_its_threshold() -> None:
    """An answer of one event is flagged from `single_flush_min_chars` characters on, one of two events from
    twice that: the rule is the mean size of an event, not the answer's length."""
    th = Thresholds()
    limit = th.single_flush_min_chars
    assert "single-flush" in {f.code for f in check(T.collected_answer(limit)).findings}
    assert "single-flush" not in {f.code for f in check(T.collected_answer(limit - 1)).findings}
    assert "single-flush" not in {f.code for f in check(T.collected_answer(2 * limit - 2, events=2)).findings}
    assert "single-flush" in {f.code for f in check(T.collected_answer(2 * limit, events=2)).findings}


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(T.thought_then_answered, id="yes-after-a-3s-think"),
        pytest.param(lambda: T.collected_answer(60, silence=2.0), id="one-sentence-after-2s"),
        pytest.param(lambda: T.collected_answer(400, silence=0.3), id="no-silence-before-it"),
        pytest.param(T.slow_model, id="long-answer-streamed-slowly"),
        pytest.param(corpus_in_one_write("gemini-generatecontent-single-chunk-crlf.sse"), id="gemini-one-chunk-answer"),
        pytest.param(corpus_in_one_write("mistral-chat-toolcall-oneshot.sse", b"data: [DONE]\n\n"),
                     id="tool-call-in-one-event"),
    ],
)
def test_what_a_model_sends_in_one_event_is_not_a_single_flush(build: Callable[[], Capture]) -> None:
    report = check(build())
    assert not {f.code for f in report.findings} & TIMING
    assert report.verdict.startswith("OK: ") and "not judged" not in report.verdict


def test_a_few_events_apart_are_not_one_flush() -> None:
    """Three big events, each 0.5 s after the other (Gemini's pace of big chunks): no release holds them all."""
    events = T.openai_text_events([T.answer_text(150)] * 3)
    report = check(T.capture(T.at([1.0, 1.5, 2.0, 2.01], events)))
    assert not {f.code for f in report.findings} & TIMING


def test_a_stream_whose_events_carry_no_output_says_the_buffering_was_not_judged() -> None:
    """Responses bookkeeping and no delta: nothing carried output, so the buffering codes are skipped, and
    the OK verdict says so (never a silent pass); the codes judged on bytes and time are not."""
    capture = T.capture(T.at([1.0 + 0.02 * i for i in range(7)], T.responses_events(0)),
                        url="https://api.openai.com/v1/responses")  # fmt: skip
    report = check(capture)
    [skip] = [s for s in report.skipped if "buffering-burst" in s.codes]
    assert skip.codes == ("buffering-burst", "single-flush")
    assert skip.reason == ("none of the 7 events carried output that the openai-responses dialect reads, so no answer "
                           "can be timed")  # fmt: skip
    assert report.verdict.endswith(f"; buffering-burst, single-flush not judged: {skip.reason}")
    assert report.verdict.startswith("OK: 7 events")


def test_a_short_healthy_stream_is_judged_in_silence() -> None:
    """Two tokens, paced: judged (nothing to say), so the verdict carries no "not judged"."""
    report = check(T.paced(T.openai_events(2), ttft=0.4))
    assert report.skipped == () and report.verdict == "OK: 3 events over 0.461 s, first token at 0.400 s"


@pytest.mark.parametrize("size", [0x800, 3000, 4096, 8192, 16 << 10, 32 << 10])
def test_fixed_size_slices_of_any_size(size: int) -> None:
    capture = T.slices(size)
    flush = only(check(capture), "fixed-size-flush")
    assert flush.evidence.size == size
    assert flush.evidence.chunks == len(capture.chunks) - 1 == flush.evidence.cut_inside_event >= 5


def test_equal_events_and_http2_frames_are_not_slices() -> None:
    from .test_codes import equal_size_stream

    for capture in (equal_size_stream(), T.h2_image_frames(frame=16 << 10), T.h2_image_frames(frame=32 << 10)):
        assert "fixed-size-flush" not in {f.code for f in check(capture).findings}


def test_headers_held_with_the_first_event() -> None:
    """A WSGI app (gunicorn, Werkzeug) sends its headers with the first write: the answer's, 1.6 s in."""
    report = check(T.collected_answer(headers_at=1.6))
    held = only(report, "headers-held")
    assert (held.evidence.headers_t, held.evidence.first_byte_t, held.t) == (1.6, 1.6, 1.6)
    assert held.severity == Severity.WARNING
    assert report.verdict.startswith("BUFFERED: ")  # the flush is the more telling
    alone = check(T.paced(T.openai_events(20), ttft=2.0, headers_at=2.0))
    assert alone.verdict == f"AT RISK: {only(alone, 'headers-held').message}"


@pytest.mark.parametrize(
    ("headers_at", "ttft", "held"),
    [
        (2.0, 2.0, True),
        (2.0, 2.0 + 0.04, True),  # within a release's span (burst_span_ms): two writes, read apart
        (2.0, 2.0 + 0.2, False),  # the headers, then the first event, later
        (0.1, 3.0, False),  # headers at once, a late first token
        (0.05, 0.05, False),  # a fast stream: headers and first event together, early
        (0.99, 0.99, False),
    ],
)
def test_headers_held_needs_them_together_and_late(headers_at: float, ttft: float, held: bool) -> None:
    capture = T.paced(T.openai_events(20), ttft=ttft, headers_at=headers_at)
    assert ("headers-held" in {f.code for f in check(capture).findings}) is held


@pytest.mark.parametrize(
    ("silence", "limit", "hops"),
    [
        (20.0, 20, ("azure-app-gateway",)),
        (30.4, 30, ("azure-front-door", "cloudfront")),
        (50.0, 50, ("haproxy",)),
        (55.0, 55, ("heroku",)),
        (59.0, 60, ("nginx", "aws-alb", "apache", "varnish")),
        (60.02, 60, ("nginx", "aws-alb", "apache", "varnish")),
        (61.0, 60, ("nginx", "aws-alb", "apache", "varnish")),
        (100.5, 100, ("cloudflare",)),
        (302.9, 300, ("apache", "envoy")),  # 1% of a long limit: 3 s
    ],
)
def test_idle_timeout_cuts_name_the_hops_of_that_limit(silence: float, limit: float, hops: tuple[str, ...]) -> None:
    report = check(T.cut_after_silence(silence))
    cut = only(report, "idle-timeout-cut")
    assert (cut.evidence.seconds, cut.evidence.limit_s, cut.evidence.hops) == (pytest.approx(silence), limit, hops)
    assert cut.severity == Severity.ERROR and report.verdict == f"CUT: {cut.message}"
    assert "long-silence" not in {f.code for f in report.findings}  # the silence that cut is the cut's
    assert "keep-alive" in cut.fix and "first token" in cut.fix


@pytest.mark.parametrize("silence", [57.0, 61.5, 45.0, 80.0, 304.0])
def test_a_cut_after_a_silence_of_no_known_limit_is_a_long_silence(silence: float) -> None:
    report = check(T.cut_after_silence(silence))
    assert "idle-timeout-cut" not in {f.code for f in report.findings}
    assert only(report, "long-silence").evidence.final and "missing-end-marker" in {f.code for f in report.findings}


def test_a_silence_of_a_limit_that_did_not_cut_is_no_cut() -> None:
    """The answer's end marker came, then 60 s later the connection closed: the answer was whole."""
    for capture in (T.cut_after_silence(60.0, marker=True), T.cut_after_silence(60.0, kind="client-disconnected")):
        codes = {f.code for f in check(capture).findings}
        assert "idle-timeout-cut" not in codes and "total-timeout-cut" not in codes


@pytest.mark.parametrize(
    ("total", "limit", "hops"),
    [
        (10.0, 10, ("vercel",)),
        (15.0, 15, ("envoy",)),
        (30.0, 30, ("gunicorn", "aws-api-gateway")),
        (29.2, 29, ("aws-api-gateway", "gunicorn")),
        (302.0, 300, ("cloud-run",)),
    ],
)
def test_total_timeout_cuts_name_the_hops_of_that_limit(total: float, limit: float, hops: tuple[str, ...]) -> None:
    report = check(T.cut_while_flowing(total))
    cut = only(report, "total-timeout-cut")
    assert (cut.evidence.seconds, cut.evidence.limit_s, cut.evidence.hops) == (total, limit, hops)
    assert report.verdict == f"CUT: {cut.message}"
    assert "keep-alives do not help" in cut.fix and "idle-timeout-cut" not in {f.code for f in report.findings}


@pytest.mark.parametrize("capture", [pytest.param(T.cut_while_flowing(47.0), id="cut-at-47s"),
                                     pytest.param(T.cut_while_flowing(30.0, kind="complete"), id="clean-end-at-30s"),
                                     pytest.param(T.cut_while_flowing(31.5), id="cut-at-31.5s")])  # fmt: skip
def test_no_total_timeout_cut_off_a_limit_or_on_a_clean_end(capture: Capture) -> None:
    assert "total-timeout-cut" not in {f.code for f in check(capture).findings}


def test_the_idle_limit_wins_over_the_total_when_both_match() -> None:
    """10 tokens, then 59.5 s of silence, cut 60.07 s in: the silence is the cause (nginx's 60 s idle), though
    the whole also matches a 60 s duration (Vercel's)."""
    report = check(T.cut_after_silence(59.5))
    assert report.analysis.timing.total == pytest.approx(60.07)
    assert {f.code for f in report.findings} & TIMING == {"idle-timeout-cut"}


@pytest.mark.parametrize(
    ("threshold", "capture", "code", "found"),
    [
        ("single_flush_min_chars=500", lambda: T.collected_answer(400), "single-flush", False),
        ("single_flush_min_chars=20", lambda: T.collected_answer(60), "single-flush", True),
        ("headers_held_s=2", lambda: T.collected_answer(headers_at=1.6), "headers-held", False),
        ("headers_held_s=0.04", lambda: T.paced(T.openai_events(5), ttft=0.05, headers_at=0.05), "headers-held", True),
        ("timeout_tolerance_s=2", lambda: T.cut_after_silence(61.5), "idle-timeout-cut", True),
        ("timeout_tolerance_s=0.1", lambda: T.cut_after_silence(59.0), "idle-timeout-cut", False),
    ],
)
def test_the_new_thresholds_are_set_from_the_command_line(
    tmp_path: Path, threshold: str, capture: Callable[[], Capture], code: str, found: bool
) -> None:
    from .test_check_cli import run, write

    path = write(tmp_path, "c.jsonl", capture())
    _, default, _ = run("check", "--json", path)
    _, tuned, _ = run("check", "--json", "--threshold", threshold, path)
    codes = [{f["code"] for f in json.loads(out)["captures"][0]["findings"]} for out in (default, tuned)]
    assert (code in codes[0], code in codes[1]) == (not found, found)


LAB = CORPUS.parent / "lab-timing"
"""Real recordings from the hop lab (tests/hop_lab.py): the seed's Flask app, good and buggy, under gunicorn
and Werkzeug, 30 words from an upstream 60 ms apart, recorded at the client by mitmdump."""


@pytest.mark.parametrize(
    ("name", "text_events"),
    [("flask-bug-string-gunicorn", 1), ("flask-bug-string-werkzeug", 1), ("flask-bug-list-gunicorn", 30)],
)
def test_real_recordings_of_the_classic_bugs_are_flagged(name: str, text_events: int) -> None:
    """The data is plain text (`data: w0 w1 ...`) then `data: [DONE]`: read as text (the generic dialect)."""
    report = check_capture(load_capture(LAB / f"{name}.jsonl"), dialect="generic")
    flush = only(report, "single-flush")
    assert flush.evidence.text_events == text_events and flush.evidence.held_s > 1.5
    assert report.verdict == f"BUFFERED: {flush.message}"
    held = only(report, "headers-held").evidence  # a WSGI server sends its headers with the first write
    assert abs(held.first_byte_t - held.headers_t) < 0.05 and held.headers_t > 1.5


@pytest.mark.parametrize("name", ["flask-good-gunicorn", "flask-good-werkzeug"])
def test_real_recordings_of_the_good_app_are_clean(name: str) -> None:
    report = check_capture(load_capture(LAB / f"{name}.jsonl"), dialect="generic")
    assert [f for f in report.findings if f.severity > Severity.INFO] == []
    assert report.verdict.startswith("OK: 31 events") and "not judged" not in report.verdict


def test_a_real_recording_of_the_good_app_behind_nginx_is_held_by_nginx() -> None:
    """nginx's defaults held the good app's 30 events: many events in one flush (no single event holds the
    answer, so the size rule does not speak: that is the bursts' and the two-point diff's to tell)."""
    report = check_capture(load_capture(LAB / "flask-good-gunicorn-nginx.jsonl"), dialect="generic")
    flush = only(report, "single-flush")
    assert flush.evidence.text_events == 30 and flush.evidence.chars is None
    assert {"buffering-burst", "headers-held"} <= {f.code for f in report.findings}


# -- a cut before the first body byte (review F2) ------------------------------------------------


def test_an_idle_cut_before_the_first_byte_is_judged_from_the_headers() -> None:
    """nginx's `proxy_read_timeout` counts from its last read from upstream, the headers: 60 s after them and
    no body byte, the cut is its idle limit; the capture is timed (the headers' and the end's times), so no
    code is skipped as "untimed", and the codes that need a body byte say that is why."""
    report = check(T.cut_before_first_byte(60.28))
    cut = only(report, "idle-timeout-cut")
    assert cut.evidence.seconds == pytest.approx(60.28) and "nginx" in cut.evidence.hops
    assert "since the response headers (t=0.0 to 60.3 s)" in cut.message
    assert report.verdict == f"CUT: {cut.message}"
    assert not any("untimed" in s.reason for s in report.skipped)
    [skip] = report.skipped
    assert skip.codes == ("buffering-burst", "single-flush", "fixed-size-flush", "headers-held")
    assert skip.reason == "no body byte arrived, so nothing was released to time"


def test_a_silence_before_the_first_byte_off_any_limit_is_a_long_silence() -> None:
    report = check(T.cut_before_first_byte(45.0))
    assert "idle-timeout-cut" not in {f.code for f in report.findings}
    assert only(report, "long-silence").evidence.final


# -- a provider's batches; a few big events spread over a few writes (review F11, F1) ----------------


def test_a_gemini_answer_whole_in_one_chunk_is_its_own_shape() -> None:
    """Gemini sends text in batches: a thinking model's 91-character answer in one chunk after 2.4 s is OK."""
    report = check(T.gemini_one_chunk_answer())
    assert report.analysis.grammar.name == "gemini"
    assert not {f.code for f in report.findings} & TIMING and report.verdict.startswith("OK: 1 events")


@pytest.mark.parametrize("dialect", ["openai-chat", "generic", "text"])
def test_the_same_answer_from_an_app_in_one_event_is_still_a_single_flush(dialect: str) -> None:
    """The near miss's other side: the same one big event in a grammar an app writes is the classic bug."""
    report = check_capture(T.collected_answer(400, silence=2.4, plain=dialect != "openai-chat"), dialect=dialect)
    assert only(report, "single-flush").evidence.chars == 400


@pytest.mark.parametrize(
    ("sizes", "every"),
    [((200, 200, 200), 0.02), ((150, 150, 150, 150), 0.01), ((300, 300), 0.045)],
)
def test_a_few_big_events_written_apart_within_the_span_are_a_single_flush(sizes: tuple[int, ...],
                                                                          every: float) -> None:  # fmt: skip
    """A held answer written in a few writes over 20-45 ms after 3 s of silence: as held as in one write."""
    report = check(T.few_big_events_spread(sizes, every=every))
    flush = only(report, "single-flush")
    assert (flush.evidence.text_events, flush.evidence.chars, flush.evidence.held_s) == (len(sizes), sum(sizes), 3.0)
    assert f"{len(sizes)} text events within" in flush.message and report.verdict.startswith("BUFFERED: ")


@pytest.mark.parametrize(
    ("sizes", "every", "silence"),
    [((200, 200, 200), 0.06, 3.0),  # one of them past the span: written apart, as a model may
     ((40, 40, 40), 0.02, 3.0),  # small events: what a model streams
     ((200, 200, 200), 0.02, 0.1)],  # no silence before them
)
def test_a_few_events_past_the_span_small_or_early_are_not_a_single_flush(sizes: tuple[int, ...], every: float,
                                                                          silence: float) -> None:  # fmt: skip
    report = check(T.few_big_events_spread(sizes, every=every, silence=silence))
    assert "single-flush" not in {f.code for f in report.findings}


# -- lumps: a few events a read, read after read (review F1/F7) -------------------------------------------


@pytest.mark.parametrize(
    ("per", "period", "gap_ms"),
    [(3, 1.0, 0.0), (4, 1.0, 0.0), (4, 0.24, 0.05), (2, 0.3, 0.1)],
)
def test_a_few_events_a_read_read_after_read_are_lumps(per: int, period: float, gap_ms: float) -> None:
    """Fewer than `burst_min_events` events a flush: no burst, but every read after a silence holds several."""
    report = check(T.lumps(per, period, gap_ms=gap_ms))
    burst = only(report, "buffering-burst")
    assert f"60 of 60 text events arrived in lumps of {per}" in burst.message
    assert isinstance(burst.evidence, Bursts) and burst.evidence.lumps
    assert burst.evidence.events_held == 60 and len(burst.evidence.bursts) == -(-60 // per)
    assert {b.events for b in burst.evidence.bursts} == {per}


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: T.lumps(3, 0.03), id="a-fast-model-3-events-a-read-30ms-apart"),
        pytest.param(lambda: T.lumps(1, 0.3), id="a-slow-model-an-event-a-write"),
        pytest.param(lambda: T.lumps(3, 1.0, n=12), id="four-lumps"),
        pytest.param(lambda: T.capture(T.at([0.5 * (i + 1) for i in range(8)], T.gemini_events(8))),
                     id="gemini-one-event-chunks"),
        pytest.param(lambda: T.lumps(4, 0.24, gap_ms=15.0), id="events-of-a-read-15ms-apart"),
    ],
)
def test_no_lumps_without_silences_reads_of_several_or_enough_of_them(build: Callable[[], Capture]) -> None:
    assert "buffering-burst" not in {f.code for f in check(build()).findings}


def test_lumps_must_hold_most_of_the_answer() -> None:
    """A model streaming one event a write whose events now and then share a read after a pause: no lumps."""
    events, chunks, t, i = T.openai_events(100), [], 0.3, 0
    while i < len(events):
        pair = i % 20 == 10  # five times: a 300 ms pause, then two events in one read
        t += 0.3 if pair else 0.05
        chunks.append((round(t, 6), b"".join(events[i : i + 1 + pair])))
        i += 1 + pair
    report = check(T.capture(chunks))
    assert sum(c.data.count(b"data: ") == 2 for c in report.analysis.capture.chunks) == 5
    assert "buffering-burst" not in {f.code for f in report.findings}


def test_the_real_haproxy_recording_arrives_in_lumps() -> None:
    """The hop lab's HAProxy (tests/hop_lab.py): the app yields an event every 60 ms, the client reads 4 events
    every ~240 ms."""
    report = check_capture(load_capture(LAB / "haproxy.jsonl"), dialect="generic")
    burst = only(report, "buffering-burst")
    assert "arrived in lumps of" in burst.message and burst.evidence.events_held >= 24


def test_a_pace_of_microseconds_is_no_pace() -> None:
    """The list bug's 30 events read within 2 ms: their gaps are no pace, and the rule says so (not "0.0 ms")."""
    report = check_capture(load_capture(LAB / "flask-bug-list-gunicorn.jsonl"), dialect="generic")
    burst = only(report, "buffering-burst")
    assert "0.0 ms" not in burst.message and "µs apart on average" in burst.message
    assert "so the stream has no pace to compare with" in burst.message


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_threshold_must_be_a_finite_number(value: str) -> None:
    with pytest.raises(SSEInspectError, match="takes a finite number"):
        parse_threshold(Thresholds(), f"burst_window_ms={value}")


# -- a fast provider's short answer (review F22) ----------------------------------------------------------


def test_a_fast_providers_short_answer_is_not_a_flush() -> None:
    """Groq: 19 tokens, each in its own read 2 ms apart, after a 0.6 s time to first token: a model streaming
    fast, not a hop's flush (which reaches the reader in reads of several events, or reads µs apart)."""
    report = check(T.paced(T.openai_events(19), ttft=0.6, every=0.002))
    assert not {f.code for f in report.findings} & TIMING and report.verdict.startswith("OK: ")


@pytest.mark.parametrize(
    ("every", "per"),
    [(0.00005, 1), (0.002, 2)],  # reads 50 µs apart; two events a read
)
def test_the_same_answer_read_as_a_flush_is_still_one(every: float, per: int) -> None:
    events = T.openai_events(20)
    body = [b"".join(events[i : i + per]) for i in range(0, len(events), per)]
    report = check(T.capture(T.at([round(0.6 + every * i, 6) for i in range(len(body))], body)))
    assert {"single-flush", "buffering-burst"} <= {f.code for f in report.findings}


# -- the docs' limit tables are the code's (review F13) ----------------------------------------------------


@pytest.mark.parametrize(
    ("section", "limits"), [("idle-timeout-cut", "IDLE_LIMITS"), ("total-timeout-cut", "TOTAL_LIMITS")]
)
def test_the_limit_tables_of_docs_signatures_are_the_codes(section: str, limits: str) -> None:
    """docs/signatures.md lists one row per limit the check matches: hop, seconds, whether verified."""
    import re

    from sse_inspect.checks import _timeouts

    doc = (Path(__file__).parents[2] / "docs" / "signatures.md").read_text()
    part = doc.split(f"## `{section}`", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (\d+) s( \[unverified\])? \|", part, re.MULTILINE)
    table = sorted((hop, float(seconds), not unverified) for hop, seconds, unverified in rows)
    code = sorted((limit.hop, float(limit.seconds), limit.verified) for limit in getattr(_timeouts, limits))
    assert table == code
