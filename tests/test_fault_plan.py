"""The replay plan (`_fault_plan`): what a replay writes, when and how it ends, for every fault, at every cut.

Each property is stated against the stream's own bytes, read independently (the body parsed whole), and
holds whatever re-cut the replay also takes: a fault at an event lands past that event's blank line
whether the body comes whole, a byte at a time or cut inside every CRLF. And the tool's own diagnosis
(`check`) of a faulted replay, read back as a capture, names the fault it models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, End, Request, Response, check_capture, load_capture
from sse_inspect._events import Comment, Event
from sse_inspect._fault_plan import CLOSE, COMPLETE, RESET, End as PlanEnd, ReplayPlan, Send
from sse_inspect._faults import FaultSet
from sse_inspect._parser import EventStreamParser
from sse_inspect._rechunk import parse_rechunk_spec
from sse_inspect.dialects import get_dialect

from .helpers import split_at

CUTS = ["original", "whole", "event", "line", "bytes:1", "bytes:7", "crlf", "utf8", "random:1", "random:2"]
URL = "https://api.openai.com/v1/chat/completions"


def chat_body(texts: Sequence[str], newline: bytes, done: bool, comments: bool) -> bytes:
    """An OpenAI Chat stream of `texts`, with `newline` line ends, `[DONE]` at the end if `done`."""
    out = b""
    for i, text in enumerate(texts):
        if comments and i % 3 == 1:
            out += b": ping" + newline
        payload = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
        out += b"data: " + json.dumps(payload, ensure_ascii=False).encode() + newline + newline
    if done:
        out += b"data: [DONE]" + newline + newline
    return out


@st.composite
def captures(draw: st.DrawFn) -> Capture:
    texts = draw(st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=6),
                          min_size=0, max_size=9))  # fmt: skip
    body = chat_body(texts, draw(st.sampled_from([b"\n", b"\r\n"])), draw(st.booleans()), draw(st.booleans()))
    cuts = draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=8))
    pieces = [p for p in split_at(body, cuts) if p]
    gaps = draw(st.lists(st.floats(0, 2), min_size=len(pieces), max_size=len(pieces)))
    t, chunks = 0.1, []
    for piece, gap in zip(pieces, gaps):
        t += gap
        chunks.append(Chunk(round(t, 6), piece))
    end = draw(st.sampled_from([End(kind="complete", t=t + 0.5), End(kind="server-disconnected", t=t + 0.5), None]))
    return Capture(chunks=tuple(chunks), request=Request(method="POST", url=URL),
                   response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.1), end=end)  # fmt: skip


def body_of(capture: Capture) -> bytes:
    return b"".join(c.data for c in capture.chunks)


def boundaries(body: bytes) -> list[int]:
    """Where each event of `body` ends: past the LF of a CRLF blank line (read from the body whole)."""
    parser = EventStreamParser()
    ends = [e.end for e in [*parser.feed(body), *parser.close()] if isinstance(e, Event)]
    return [end + 1 if body[end - 1 : end + 1] == b"\r\n" else end for end in ends]


def run(capture: Capture, faults: Sequence[str], cut: str = "original", speed: float | None = None,
        dialect: str | None = "openai-chat") -> tuple[list[Send], PlanEnd]:  # fmt: skip
    plan = ReplayPlan(capture, rechunk=parse_rechunk_spec(cut), faults=FaultSet.parse(faults), dialect=dialect)
    steps = list(plan.steps(speed))
    sends, end = steps[:-1], steps[-1]
    assert isinstance(end, PlanEnd) and all(isinstance(s, Send) for s in sends)
    assert [s.at for s in steps] == sorted(s.at for s in steps)  # time never goes back
    return sends, end  # type: ignore[return-value]


def sent(sends: Sequence[Send]) -> bytes:
    return b"".join(s.data for s in sends)


def recorded_end(capture: Capture) -> str:
    return COMPLETE if capture.end is not None and capture.end.kind == "complete" else RESET


@settings(max_examples=60, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.sampled_from([None, 1.0, 4.0]))
def test_without_faults_the_replay_is_the_recording(capture: Capture, cut: str, speed: float | None) -> None:
    sends, end = run(capture, [], cut, speed)
    assert sent(sends) == body_of(capture)
    assert end.how == recorded_end(capture)
    if cut == "original":
        assert [s.data for s in sends] == [c.data for c in capture.chunks]
        assert [s.at for s in sends] == [c.t / speed if speed else 0.0 for c in capture.chunks]  # type: ignore[operator]


@settings(max_examples=80, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.integers(0, 12), st.booleans())
def test_a_cut_at_an_event_ends_past_its_blank_line_at_every_cut(capture: Capture, cut: str, n: int, reset: bool) -> None:
    body = body_of(capture)
    ends = boundaries(body)
    sends, end = run(capture, [f"cut:event={n}" + (",reset" if reset else "")], cut)
    if n <= len(ends):
        assert sent(sends) == body[: ([0] + ends)[n]]
        assert end.how == (RESET if reset else CLOSE)
    else:  # fewer events than that: the stream plays as recorded
        assert sent(sends) == body and end.how == recorded_end(capture)


@settings(max_examples=60, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.data())
def test_a_cut_at_a_byte_or_a_share_ends_there(capture: Capture, cut: str, data: st.DataObject) -> None:
    body = body_of(capture)
    n = data.draw(st.integers(0, len(body) + 3))
    sends, end = run(capture, [f"cut:byte={n}"], cut)
    assert sent(sends) == body[:n]
    assert end.how == (CLOSE if n <= len(body) else recorded_end(capture))
    percent = data.draw(st.integers(0, 100))
    events = len(boundaries(body))
    sends, end = run(capture, [f"cut:event={percent}%"], cut)
    assert sent(sends) == body[: ([0] + boundaries(body))[events * percent // 100]]


@settings(max_examples=60, deadline=None)
@given(captures(), st.sampled_from(CUTS))
def test_no_end_marker_leaves_out_the_done_and_ends_cleanly(capture: Capture, cut: str) -> None:
    sends, end = run(capture, ["no-end-marker"], cut)
    events = [(e.type, e.data) for e in EventStreamParser().feed(body_of(capture)) if isinstance(e, Event)]
    left = [(e.type, e.data) for e in EventStreamParser().feed(sent(sends)) if isinstance(e, Event)]
    assert left == [e for e in events if e[1] != "[DONE]"]
    assert end.how == COMPLETE


@settings(max_examples=60, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.integers(0, 12))
def test_the_in_band_error_comes_after_n_events_then_the_end(capture: Capture, cut: str, n: int) -> None:
    body = body_of(capture)
    ends = boundaries(body)
    sends, end = run(capture, [f"error:after-event={n}"], cut)
    if n <= len(ends):
        assert sent(sends) == body[: ([0] + ends)[n]] + get_dialect("openai-chat").fault_error(n)
        assert end.how == COMPLETE
    else:
        assert sent(sends) == body


@settings(max_examples=60, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.sampled_from([0.05, 0.3, 1.0]), st.sampled_from([None, 1.0, 2.0]))
def test_keepalives_go_between_events_in_the_silences(capture: Capture, cut: str, every: float, speed: float | None) -> None:
    body = body_of(capture)
    sends, _ = run(capture, [f"keepalive:every={every}s,text=still here"], cut, speed)
    newline = b"\r\n" if b"\r\n" in body else b"\n"
    comment = b": still here" + newline + newline
    pieces = [s.data for s in sends]
    assert b"".join(p for p in pieces if p != comment) == body  # only comments were added ...
    at = 0
    for piece in pieces:  # ... each where an event had ended (or before the first)
        if piece == comment:
            assert at == 0 or at in boundaries(body)
        else:
            at += len(piece)
    if cut == "original" and capture.chunks:  # one a period of every silence before a chunk that opens with an event
        ends = [0, *boundaries(body)]
        expected, pos, last = 0, 0, 0.1
        for chunk in capture.chunks:
            if pos in ends:
                expected += len([k for k in range(1, 200) if last + k * every < chunk.t])  # type: ignore[operator]
            pos += len(chunk.data)
            last = chunk.t  # type: ignore[assignment]
        if capture.end is not None and pos in ends:
            expected += len([k for k in range(1, 200) if last + k * every < capture.end.t])  # type: ignore[operator]
        assert pieces.count(comment) == expected


@settings(max_examples=40, deadline=None)
@given(captures(), st.sampled_from(CUTS), st.integers(0, 12), st.sampled_from([None, 1.0]))
def test_a_stall_holds_everything_after_it_back_by_its_length(capture: Capture, cut: str, n: int, speed: float | None) -> None:
    body = body_of(capture)
    ends = [0, *boundaries(body)]
    sends, end = run(capture, [f"stall:after-event={n},for=7s"], cut, speed)
    plain, _ = run(capture, [], cut, speed)
    assert sent(sends) == body
    if n >= len(ends):
        assert [s.at for s in sends] == [s.at for s in plain]
        return
    offsets = [0]
    for s in sends:
        offsets.append(offsets[-1] + len(s.data))
    before = [s for s, o in zip(sends, offsets) if o < ends[n]]
    after = [s for s, o in zip(sends, offsets) if o >= ends[n]]
    assert all(s.at >= 7 for s in after) and end.at >= 7
    if speed is None:  # no waiting but the stall's
        assert {s.at for s in before} <= {0.0} and {s.at for s in after} <= {7.0}


@settings(max_examples=40, deadline=None)
@given(captures(), st.sampled_from([1, 25, 1000]))
def test_a_slow_link_carries_the_same_bytes_no_faster_than_its_rate(capture: Capture, rate: int) -> None:
    body = body_of(capture)
    sends, end = run(capture, [f"slow:bytes-per-s={rate}"], "original", 1.0)
    assert sent(sends) == body
    assert all(len(s.data) <= max(1, rate // 10) for s in sends)
    carried = 0
    for s in sends:  # by the time a piece arrives, the link has had time for it and everything before
        carried += len(s.data)
        assert s.at >= carried / rate - 1e-9
    assert end.at >= len(body) / rate - 1e-9


def test_a_cut_at_a_recorded_time_ends_there() -> None:
    capture = load_capture("captures/lab-flask-good-gunicorn.jsonl")
    sends, end = run(capture, ["cut:time=1s,reset"], speed=2.0, dialect=None)
    kept = [c for c in capture.chunks if c.t is not None and c.t <= 1.0]
    assert sent(sends) == b"".join(c.data for c in kept) and 0 < len(kept) < len(capture.chunks)
    assert end == PlanEnd(0.5, RESET)  # 1 s of recorded time at twice the speed


def test_the_status_fault_is_the_providers_error_answer() -> None:
    plan = ReplayPlan(load_capture("captures/anthropic-text-then-tooluse.jsonl"), faults=FaultSet.parse(["status:529,retry-after=1.5"]))
    status, headers, payload = plan.error_response()
    assert status == 529 and ("Retry-After", "2") in headers  # whole seconds, rounded up
    assert (dict(headers)["Content-Type"], payload) == plan.dialect.error_body(529)
    assert plan.dialect.name == "anthropic"


def test_a_compressed_body_is_served_decoded_when_the_faults_need_its_events() -> None:
    capture = load_capture("captures/nginx-gzip.jsonl")
    assert not ReplayPlan(capture).decoded  # as recorded: the wire's bytes
    plan = ReplayPlan(capture, faults=FaultSet.parse(["cut:event=2"]))
    assert plan.decoded
    events = [e for e in EventStreamParser().feed(sent([s for s in plan.steps(None) if isinstance(s, Send)])) if isinstance(e, Event)]
    assert len(events) == 2
    byte_cut = ReplayPlan(capture, faults=FaultSet.parse(["cut:byte=10"]))
    assert not byte_cut.decoded  # a byte of the wire needs no events
    assert sent([s for s in byte_cut.steps(None) if isinstance(s, Send)]) == capture.chunks[0].data[:10]


def as_capture(capture: Capture, sends: Sequence[Send], end: PlanEnd) -> Capture:
    """The replay as a recorder on the client's side would have written it."""
    kind = "complete" if end.how == COMPLETE else "server-disconnected"
    return Capture(chunks=tuple(Chunk(s.at, s.data) for s in sends), request=capture.request,
                   response=capture.response, end=End(kind=kind, t=end.at))  # fmt: skip


@pytest.mark.parametrize(
    ("path", "faults", "finding"),
    [
        ("captures/openai-chat-text.jsonl", ["cut:event=50%"], "missing-end-marker"),
        ("captures/openai-chat-text.jsonl", ["cut:byte=50%,reset"], "missing-end-marker"),
        ("captures/anthropic-text-then-tooluse.jsonl", ["no-end-marker"], "missing-end-marker"),
        ("captures/openai-chat-text.jsonl", ["no-end-marker"], "missing-end-marker"),
        ("captures/openai-chat-text.jsonl", ["error:after-event=3"], "error-event"),
        ("captures/anthropic-text-then-tooluse.jsonl", ["error:after-event=50%"], "error-event"),
        ("captures/openai-responses-functioncall.jsonl", ["error:after-event=2"], "error-event"),
        # Gemini writes its error as a bare JSON object, not an event (Gemini.fault_error): SSE readers miss it
        ("captures/gemini-split-tokens.jsonl", ["error:after-event=1"], "missing-end-marker"),
        ("captures/lab-flask-good-gunicorn.jsonl", ["keepalive:every=100ms"], "heartbeats"),
        ("captures/lab-flask-good-gunicorn.jsonl", ["stall:after-event=5,for=31s"], "long-silence"),
    ],
)
def test_check_names_the_fault_a_replay_suffered(path: str, faults: list[str], finding: str) -> None:
    capture = load_capture(path)
    before = {f.code for f in check_capture(capture).findings}
    assert finding not in before
    sends, end = run(capture, faults, speed=1.0, dialect=None)
    after = {f.code for f in check_capture(as_capture(capture, sends, end)).findings}
    assert finding in after


def test_comments_and_events_read_back_whole_at_every_cut() -> None:
    """A keep-alive in a CRLF stream is CRLF too: clients that split on the stream's line end still read it."""
    body = chat_body(["a", "b", "c"], b"\r\n", True, False)
    capture = Capture(chunks=(Chunk(0.1, body[:40]), Chunk(3.0, body[40:])), request=Request(url=URL),
                      response=Response(t=0.1), end=End(kind="complete", t=3.1))  # fmt: skip
    for cut in CUTS:
        sends, _ = run(capture, ["keepalive:every=1s"], cut, 1.0)
        items = EventStreamParser().feed(sent(sends))
        assert [e.data for e in items if isinstance(e, Event)] == [e.data for e in EventStreamParser().feed(body) if isinstance(e, Event)]
        assert all(b": keep-alive\r\n\r\n" in s.data or b"keep-alive" not in s.data for s in sends)
        assert sum(isinstance(i, Comment) for i in items) in (0, 2)  # two periods of the 2.9 s silence, where it falls between events


@settings(max_examples=40, deadline=None)
@given(captures(), st.sampled_from(CUTS))
def test_an_untimed_capture_gets_a_keepalive_at_every_event_boundary(capture: Capture, cut: str) -> None:
    """No silences are known: one comment before the first event and after each (what OpenRouter sends
    before its first token, what a server sends between slow events)."""
    from dataclasses import replace

    untimed = replace(capture, timed=False, chunks=tuple(Chunk(None, c.data) for c in capture.chunks))
    body = body_of(untimed)
    sends, _ = run(untimed, ["keepalive:every=15s"], cut)
    newline = b"\r\n" if b"\r\n" in body else b"\n"
    comment = b": keep-alive" + newline + newline
    pieces = [s.data for s in sends]
    assert b"".join(p for p in pieces if p != comment) == body
    at, places = 0, []
    for piece in pieces:
        if piece == comment:
            places.append(at)
        else:
            at += len(piece)
    assert places == [0, *boundaries(body)]


def test_the_end_says_when_it_is_the_recordings_own() -> None:
    """A capture cut as recorded ends with a reset either way; only its own end carries why (what an
    in-process replay says in its error), not a fault's cut, reached or not."""
    capture = load_capture("captures/nginx-cut.jsonl")
    assert run(capture, [], dialect=None)[1].recorded is not None
    assert run(capture, ["cut:event=999,reset"], dialect=None)[1].recorded is not None  # never reached
    assert run(capture, ["keepalive:every=1s", "slow:bytes-per-s=100000"], dialect=None)[1].recorded is not None
    cut = run(capture, ["cut:event=1,reset"], dialect=None)[1]
    assert (cut.how, cut.recorded) == (RESET, None)
    assert run(capture, ["no-end-marker"], dialect=None)[1].recorded is None
