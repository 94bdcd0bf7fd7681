"""Timing findings on realistic timed streams: buffered ones are caught, healthy pacing never is."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import pytest

from sse_inspect import Capture, Chunk, End, SSEInspectError, analyze, parse_capture, parse_rechunk_spec
from sse_inspect._diff import HeldRelease, diff_timing
from sse_inspect._release import Release
from sse_inspect.checks import CODES, Finding, Report, Severity, Thresholds, check_capture, parse_threshold
from sse_inspect.checks._check import Context
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
    assert burst.evidence.events_held == 40
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
    capture = stalled(60.0, "server-disconnected")
    timing = analyze(capture).timing
    last = capture.chunks[-1].t or 0.0
    assert timing.max_gap == pytest.approx(60.0) and timing.max_gap_at == pytest.approx(last + 60.0)
    assert timing.max_gap_final and timing.end_silence == (last, pytest.approx(last + 60.0))
    silence = only(check(capture), "long-silence")  # the check counts the same silence
    assert silence.evidence.gap_s == pytest.approx(timing.max_gap) and silence.evidence.final is True
    assert "no byte for 60.0 s before the cut (" in silence.message


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
