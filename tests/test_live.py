"""The live model (`_live.LiveStream`): fed what a recorder writes, slice by slice, it ends where `analyze`
ends on the file, at any cut; it tells the dialect early and, when it must, again; it notices a stall,
a resumption and a burst as they happen, with the thresholds `check` judges with."""

from __future__ import annotations

import dataclasses
import glob
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, load_capture
from sse_inspect._live import Burst, LiveStream, Stall
from sse_inspect.checks import Thresholds, check_capture

from .helpers import ROOT

CAPTURES = sorted(
    [*glob.glob(str(ROOT / "captures" / "*.jsonl")), *glob.glob(str(ROOT / "tests" / "data" / "formats" / "*.jsonl"))]
)
SSE = (("Content-Type", "text/event-stream"),)


def head_of(capture: Capture) -> Capture:
    return dataclasses.replace(capture, chunks=(), end=None)


def live_through(capture: Capture, slices: list[tuple[float, bytes]] | None = None) -> tuple[LiveStream, str]:
    """Feed `capture` (or `slices` of its body) to a LiveStream as a recorder would, close it as the
    capture ended; the stream and the answer's text as its steps built it."""
    stream = LiveStream(head_of(capture))
    text = ""
    for t, data in slices if slices is not None else [(c.t or 0.0, c.data) for c in capture.chunks]:
        step = stream.feed([t], [data])
        text = step.text if step.restarted else text + step.text
    step = stream.close(capture.end or End(kind="complete", t=None))
    text = step.text if step.restarted else text + step.text
    return stream, text


def summary(stream: LiveStream) -> dict[str, object]:
    assert stream.outcome is not None
    return {
        "dialect": stream.dialect.name, "events": stream.events, "text_events": stream.text_events,
        "chunks": stream.chunks, "bytes": stream.bytes, "decoded": stream.decoded_bytes,
        "outcome": (stream.outcome.state, stream.outcome.cause), "ttfb": stream.ttfb,
        "first_token": stream.first_token, "end_marker": stream.end_marker,
    }  # fmt: skip


def analysed(capture: Capture) -> dict[str, object]:
    a = analyze(capture)
    t = a.timing
    return {
        "dialect": a.dialect, "events": t.events, "text_events": t.text_events, "chunks": t.chunks,
        "bytes": t.bytes, "decoded": t.decoded_bytes, "outcome": (a.outcome.state, a.outcome.cause),
        "ttfb": t.ttfb, "first_token": t.first_token, "end_marker": t.end_marker,
    }  # fmt: skip


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: Path(p).name)
def test_at_the_end_a_live_stream_is_what_analyze_says(path: str) -> None:
    """Every bundled capture and every format fixture (SSE, NDJSON, the JSON array, AWS event stream,
    gzip-encoded bodies), fed chunk by chunk: the counts, times, dialect, outcome and answer text."""
    capture = load_capture(path)
    stream, text = live_through(capture)
    want = analysed(capture)
    got = summary(stream)
    if not capture.timed:  # (an untimed capture has no times to compare: the live stream was fed 0.0)
        for key in ("ttfb", "first_token", "end_marker"):
            del got[key], want[key]
    assert got == want
    answer = analyze(capture).answer.text
    assert text == answer
    assert stream.text_chars == len(answer) and answer.endswith(stream.tail)
    assert stream.sure


CUT_CAPTURES = ["openai-chat-text", "anthropic-text-then-tooluse", "nginx-gzip", "gemini-split-tokens"]


@pytest.mark.parametrize("name", CUT_CAPTURES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_cut_of_the_bytes_ends_the_same(name: str, data: st.DataObject) -> None:
    """The bytes cut anywhere, into slices arriving at any (rising) times: the live stream ends where
    `analyze` ends on a capture of those very slices."""
    capture = load_capture(ROOT / "captures" / f"{name}.jsonl")
    body = capture.body
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=12), label="cuts")))
    edges = [0, *cuts, len(body)]
    pieces = [body[a:b] for a, b in zip(edges, edges[1:]) if b > a]
    times = [0.01 * (i + 1) for i in range(len(pieces))]
    recut = dataclasses.replace(capture, chunks=tuple(Chunk(t, p) for t, p in zip(times, pieces)), timed=True,
                                end=End(kind="complete", t=times[-1] + 0.01))  # fmt: skip
    stream, text = live_through(recut)
    assert summary(stream) == analysed(recut)
    assert text == analyze(recut).answer.text


def chat(*pieces: str, done: bool = True) -> list[bytes]:
    events = [b'data: {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "%s"}}]}\n\n'
              % p.encode() for p in pieces]  # fmt: skip
    return events + ([b"data: [DONE]\n\n"] if done else [])


def chat_head() -> Capture:
    return Capture(request=Request(method="POST", url="https://api.example/v1/chat/completions"),
                   response=Response(status=200, headers=SSE, t=0.01))  # fmt: skip


def test_the_dialect_is_told_from_the_first_event_not_after_fifty() -> None:
    """A slow stream's answer shows from its first event: the dialect is told at once, provisionally,
    and for good once the stream has as many events as `analyze` looks at (or at its end)."""
    stream = LiveStream(chat_head())
    step = stream.feed([0.5], [chat("Hel")[0]])
    assert stream.dialect.name == "openai-chat" and not stream.sure
    assert step.text == "Hel" and stream.text_events == 1
    for i in range(60):
        stream.feed([0.6 + i / 100], [chat(f"{i} ")[0]])
    assert stream.sure


def test_when_the_dialect_changes_the_answer_is_read_again() -> None:
    """The first event looks like nobody's in particular; the next ones are Anthropic's: the events are
    read again by the new dialect, the step says `restarted` and its text replaces the text shown."""
    stream = LiveStream(Capture(request=Request(url="https://api.example/stream"), response=Response(status=200, headers=SSE)))
    first = stream.feed([0.1], [b"data: hello\n\n"])
    before = stream.dialect.name
    anthropic = [
        b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m1", "role": "assistant", "content": []}}\n\n',
        b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}\n\n',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}\n\n',
    ]  # fmt: skip
    steps = [stream.feed([0.2 + i / 10], [e]) for i, e in enumerate(anthropic)]
    assert stream.dialect.name == "anthropic" != before, (before, first)
    assert any(s.restarted for s in steps)
    end = stream.close(End(kind="complete", t=1.0))
    whole = Capture(chunks=tuple(Chunk(0.1 * (i + 1), d) for i, d in enumerate([b"data: hello\n\n", *anthropic])),
                    request=stream.head.request, response=stream.head.response, end=End(kind="complete", t=1.0))  # fmt: skip
    assert stream.dialect.name == analyze(whole).dialect and end.outcome is not None


def test_a_stall_is_noticed_once_and_its_end_said() -> None:
    stream = LiveStream(chat_head(), stall_s=2.0)
    stream.feed([0.3], [chat("a")[0]])
    assert stream.tick(1.0) is None and stream.tick(2.29) is None
    stall = stream.tick(2.4)
    assert stall == Stall(since=0.3, silence_s=pytest.approx(2.1), first_byte=False)
    assert stream.tick(3.0) is None  # once per silence
    assert stream.stalled is not None and stream.silence(3.0) == pytest.approx(2.7)
    step = stream.feed([5.3], [chat("b")[0]])
    assert step.resumed is not None and step.resumed.silence_s == pytest.approx(5.0)
    assert stream.stalled is None and stream.stalls == 1
    assert stream.tick(7.4) is not None and stream.stalls == 2


def test_waiting_for_the_first_byte_is_a_stall_too() -> None:
    stream = LiveStream(chat_head(), stall_s=1.0)
    stall = stream.tick(1.5)
    assert stall is not None and stall.first_byte and stall.since == 0.0


def test_a_held_release_is_a_burst_as_it_happens() -> None:
    """Four events 100 ms apart, then 2 s of silence, then 40 events in one read (a hop that held them):
    the read is a burst of 40 after 2 s; `check` on the same bytes finds the buffering too."""
    stream = LiveStream(chat_head())
    events = chat(*(f"w{i} " for i in range(44)))
    for i in range(4):
        assert stream.feed([0.1 * (i + 1)], [events[i]]).burst is None
    step = stream.feed([2.4], [b"".join(events[4:44])])
    assert step.burst == Burst(t=2.4, events=40, silence_s=pytest.approx(2.0))
    assert stream.bursts == [step.burst]
    stream.feed([2.401], [events[44]])


def test_a_steady_stream_has_no_burst() -> None:
    stream = LiveStream(chat_head())
    for i, event in enumerate(chat(*(f"w{i} " for i in range(100)))):
        assert stream.feed([0.02 * (i + 1)], [event]).burst is None
    assert stream.bursts == []


def test_a_fast_model_after_a_pause_is_no_burst_live_nor_for_check() -> None:
    """A model that thinks for a second, then streams a token a read 1.5 ms apart (Groq, Cerebras): the reads
    are closer than `burst_window_ms`, yet each holds one event at a model's pace, so this is no hop's flush.
    The live stream says so as check does, by check's own rule (`TimingCheck.holding`)."""
    stream = LiveStream(chat_head())
    events = chat(*(f"w{i} " for i in range(44)))
    times = [0.1 * (i + 1) for i in range(4)] + [1.4 + 0.0015 * i for i in range(40)] + [1.47]
    steps = [stream.feed([t], [e]) for t, e in zip(times, events)]
    assert [s.burst for s in steps] == [None] * len(steps) and stream.bursts == []
    capture = Capture(chunks=tuple(Chunk(t, e) for t, e in zip(times, events)), request=chat_head().request,
                      response=chat_head().response, end=End(kind="complete", t=1.5))  # fmt: skip
    assert "buffering-burst" not in {f.code for f in check_capture(capture).findings}


def test_a_silence_no_longer_than_the_streams_pace_allows_is_no_burst() -> None:
    """A slow model (a token every 300 ms), then 600 ms of nothing and five tokens at once: the silence passes
    `burst_min_silence_ms` but not `burst_silence_factor` times the stream's pace, so it is no burst (as check
    judges it); after a 2 s silence the same release is one."""
    for silence, bursts in ((0.6, 0), (2.0, 1)):
        stream = LiveStream(chat_head())
        events = chat(*(f"w{i} " for i in range(11)))
        for i in range(6):
            stream.feed([0.3 * (i + 1)], [events[i]])
        stream.feed([1.8 + silence], [b"".join(events[6:])])
        assert len(stream.bursts) == bursts, silence


def test_a_burst_is_counted_once_when_the_dialect_is_told_again() -> None:
    """The dialect changes inside a release (a first event nobody's in particular, then Anthropic's, 1 ms
    later): the timing is fed again with the new dialect's flags, in place of what it had, so the burst
    holds the six text events once."""
    stream = LiveStream(Capture(request=Request(url="https://api.example/stream"), response=Response(status=200, headers=SSE)))
    stream.feed([1.0], [b"data: hello\n\n"])
    deltas = [b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": '
              b'{"type": "text_delta", "text": "w%d "}}\n\n' % i for i in range(6)]  # fmt: skip
    start = b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m1", "role": "assistant"}}\n\n'
    step = stream.feed([1.001], [start + b"".join(deltas)])
    assert step.restarted and stream.dialect.name == "anthropic"
    assert step.burst == Burst(t=1.0, events=6, silence_s=1.0)


def test_a_burst_needs_the_silence_thresholds_say() -> None:
    """The same release after 300 ms is no burst at the default 500 ms; with the threshold lowered, it is."""
    events = chat(*(f"w{i} " for i in range(10)))
    for min_silence, bursts in ((500.0, 0), (200.0, 1)):
        stream = LiveStream(chat_head(), thresholds=Thresholds(burst_min_silence_ms=min_silence))
        stream.feed([0.3], [b"".join(events)])
        assert len(stream.bursts) == bursts


def test_a_closed_stream_takes_nothing_more() -> None:
    stream = LiveStream(chat_head())
    stream.close(End(kind="server-disconnected", t=0.5))
    with pytest.raises(ValueError):
        stream.feed([0.6], [b"data: x\n\n"])
    with pytest.raises(ValueError):
        stream.close(End(kind="complete", t=0.7))
    assert stream.outcome is not None and not stream.outcome.ok and stream.silence(9.0) == 0.0


def test_a_closed_stream_lets_its_reader_go_and_keeps_its_tail() -> None:
    """A session keeps its finished streams for the views: what grew with the stream (the reader and its
    answer) goes at the end; the tail the views show stays, and the whole answer is the file's."""
    stream = LiveStream(chat_head())
    stream.feed([0.1], [b"".join(chat(*(f"w{i} " for i in range(2000))))])
    assert len(stream.answer().text) == stream.text_chars > 4000
    stream.close(End(kind="complete", t=0.2))
    assert len(stream.tail) == 4000 and stream.tail.endswith("w1999 ")
    with pytest.raises(ValueError, match="capture file"):
        stream.answer()
