"""The analysis pass's block hooks (`Observer.wire_block`, `event_block`, `chunk_block`): a speed path that
sees what the per-item hooks see, and the checks that use it find what they find without it."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect._analysis import Observer, analyze
from sse_inspect._capture import Capture, Chunk, End, Request, Response, dump_capture
from sse_inspect._events import Event
from sse_inspect._loading import BLOCK_BYTES, IN_BLOCK, CaptureStream, in_blocks, open_capture
from sse_inspect.checks import CHECKS, check_capture
from sse_inspect.checks._check import Check
from sse_inspect.checks._model import Thresholds
from sse_inspect.checks.lifecycle import _RECENT, _tail_after
from sse_inspect.dialects import EventFlags

ROOT = Path(__file__).parent.parent
CAPTURES = sorted((ROOT / "captures").glob("*.jsonl"))


class PerItem(Observer):
    """Logs the per-item calls."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def wire(self, chunk: Chunk) -> None:
        self.log.append(("wire", chunk.data))

    def event(self, event: Event, flags: EventFlags) -> None:
        self.log.append(("event", event.index))

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        self.log.append(("chunk", index))


class Blocks(Observer):
    """Logs the block calls."""

    def __init__(self) -> None:
        self.wires: list[bytes] = []
        self.events: list[Event] = []
        self.chunks: list[int] = []
        self.early: list[int] = []  # events not yet seen when the chunk that completed them came

    def wire_block(self, chunks: list[Chunk]) -> None:
        assert chunks
        self.wires += [c.data for c in chunks]

    def event_block(self, events: list[tuple[Event, EventFlags]]) -> None:
        self.events += [e for e, _ in events]

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        seen = {e.index for e in self.events}
        last = chunks[-1][0] if chunks else -1
        self.early += [e.index for e in self._all if e.chunk <= last and e.index not in seen]
        self.chunks += [index for index, _, _ in chunks]

    _all: list[Event] = []


def _long_stream(path: Path, events: int = 3000) -> Path:
    """An OpenAI stream long enough for many blocks, one event a chunk, a comment now and then."""
    chunks = []
    for i in range(events):
        payload = {"choices": [{"index": 0, "delta": {"content": f"tok{i} "}}]}
        comment = b": ping\n\n" if i % 97 == 0 else b""
        chunks.append(Chunk(0.1 + i / 1000, comment + f"data: {json.dumps(payload)}\n\n".encode()))
    chunks.append(Chunk(0.1 + events / 1000, b"data: [DONE]\n\n"))
    capture = Capture(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.05),
                      chunks=tuple(chunks), end=End(kind="complete", t=0.2 + events / 1000))  # fmt: skip
    path.write_text(dump_capture(capture), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["long", *[p.name for p in CAPTURES[:6]]])
def test_block_hooks_see_what_the_per_item_hooks_see_and_leave_their_order_alone(name: str, tmp_path: Path) -> None:
    path = _long_stream(tmp_path / "long.jsonl") if name == "long" else ROOT / "captures" / name
    alone = PerItem()
    with open_capture(path) as stream:
        everything = analyze(stream, observers=[alone])
    Blocks._all = list(everything.events)
    beside, blocks = PerItem(), Blocks()
    with open_capture(path) as stream:
        analyze(stream, observers=[beside, blocks])
    assert beside.log == alone.log  # a per-item observer beside a block one: the same calls in the same order
    assert blocks.wires == [d for kind, d in alone.log if kind == "wire"]
    assert [e.index for e in blocks.events] == [i for kind, i in alone.log if kind == "event"]
    assert blocks.chunks == [i for kind, i in alone.log if kind == "chunk"]
    assert blocks.early == []  # a block's events come before its chunks
    if name == "long":
        assert len(blocks.chunks) > 3000


def _per_item(check: type[Check]) -> type[Check]:
    """`check` with its block hooks switched off: the pass calls its per-item ones."""
    off = {name: getattr(Observer, name) for name in ("wire_block", "event_block", "chunk_block")}
    return type(check.__name__, (check,), off)


def _report(source: Capture | Path, checks: tuple[type[Check], ...]) -> tuple[Any, ...]:
    if isinstance(source, Path):
        with open_capture(source) as stream:
            report = check_capture(stream, checks=checks)
    else:
        report = check_capture(source, checks=checks)
    return report.findings, report.skipped, report.verdict


@pytest.mark.parametrize("name", ["long", *[p.name for p in CAPTURES]])
def test_the_checks_find_the_same_with_their_block_hooks_and_without(name: str, tmp_path: Path) -> None:
    path = _long_stream(tmp_path / "long.jsonl") if name == "long" else ROOT / "captures" / name
    assert any(c.chunk_block is not Observer.chunk_block for c in CHECKS)  # there is something to switch off
    assert _report(path, CHECKS) == _report(path, tuple(_per_item(c) for c in CHECKS))


_DONE_BODY = (b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n' * 40
              + b"data: [DONE]\r\r\ndata: [DONE]\n\n: after\n\ndata: [done] \n\n")  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(_DONE_BODY) - 1), max_size=30))
def test_lifecycle_places_each_done_the_same_however_the_body_is_cut(cuts: list[int]) -> None:
    """[DONE] sentinels (a lone CR, a clean one, a malformed one), cut anywhere: the block path places them as the
    per-item path does."""
    bounds = [0, *sorted(set(cuts)), len(_DONE_BODY)]
    chunks = tuple(Chunk(0.1 + i / 100, _DONE_BODY[a:b]) for i, (a, b) in enumerate(zip(bounds, bounds[1:])))
    capture = Capture(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.05), chunks=chunks,
                      end=End(kind="complete", t=1.0))  # fmt: skip
    found = _report(capture, CHECKS)
    assert found == _report(capture, tuple(_per_item(c) for c in CHECKS))
    assert any(f.code for f in found[0])  # the sentinels are findings: the comparison compares something


def _tail_by_chunk(tail: bytes, datas: list[bytes]) -> bytes:
    """The per-chunk rule of `LifecycleCheck.chunk`."""
    for data in datas:
        tail = data if len(data) >= _RECENT else (tail + data)[-_RECENT:]
    return tail


@given(st.binary(max_size=2 * _RECENT),
       st.lists(st.binary(max_size=2 * _RECENT) | st.binary(max_size=8), max_size=12))  # fmt: skip
def test_a_blocks_tail_is_what_the_per_chunk_rule_leaves(tail: bytes, datas: list[bytes]) -> None:
    assert _tail_after(tail, datas) == _tail_by_chunk(tail, datas)


def test_a_capture_in_memory_is_read_in_blocks_with_the_same_result_as_its_file(tmp_path: Path) -> None:
    path = _long_stream(tmp_path / "long.jsonl")
    with open_capture(path) as stream:
        streamed = analyze(stream, keep=True)
    loaded = analyze(streamed.capture)
    assert dataclasses.replace(loaded, capture=streamed.capture) == streamed


_TIMES = st.lists(st.none() | st.floats(min_value=-5, max_value=5) | st.sampled_from([0.0, 1.0, 1e300]), max_size=40)


@settings(max_examples=80, deadline=None)
@given(_TIMES)
def test_a_blocks_silences_and_clock_are_what_the_chunk_at_a_time_rules_say(times: list[float | None]) -> None:
    """The block fast paths (C loops over a block's times) against the per-chunk rules they stand for."""
    times = [None if t is None else round(t, 6) for t in times]  # (as a capture file writes them)
    chunks = [Chunk(t, b"data: x\n\n") for t in times]
    capture = Capture(request=Request(method="POST", url="http://x/"), chunks=tuple(chunks), end=End(kind="complete"))
    timing = analyze(capture, keep=False).timing
    timed, last, max_gap, max_gap_at = True, 0.0, None, None
    negative = backwards = 0
    previous = 0.0
    for t in times:
        if t is None:
            timed = False
            continue
        if t < 0.0:
            negative += 1
        elif t < previous:
            backwards += 1
        previous = t
        if timed:
            gap = t - last
            if max_gap is None or gap > max_gap:
                max_gap, max_gap_at = gap, t
            last = t
    if timing.timed:
        assert (timing.max_gap, timing.max_gap_at) == (max_gap, max_gap_at)
    stream_bytes = dump_capture(capture).encode()
    with CaptureStream(io.BytesIO(stream_bytes), "x.jsonl", len(stream_bytes)) as stream:
        for _ in stream.blocks():
            pass
        notes = " ".join(stream.capture.warnings)
    assert (f"{negative} chunk(s) with a negative time" in notes) == (negative > 0)
    assert (f"times go backwards {backwards} time(s)" in notes) == (backwards > 0)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 100, 40_000, BLOCK_BYTES, 3 * BLOCK_BYTES]), max_size=600))
def test_a_capture_in_memory_is_cut_into_blocks_bounded_in_chunks_and_bytes(sizes: list[int]) -> None:
    """Blocks of a capture in memory hold every chunk once, in order, none empty, at most IN_BLOCK chunks and
    BLOCK_BYTES bytes but for a chunk alone (a HAR's 1 MiB body pieces are parsed one block each)."""
    chunks = [Chunk(float(i), b"x" * n) for i, n in enumerate(sizes)]
    blocks = list(in_blocks(chunks))
    assert [c for block in blocks for c in block] == chunks
    for block in blocks:
        assert 0 < len(block) <= IN_BLOCK
        assert len(block) == 1 or sum(len(c.data) for c in block) <= BLOCK_BYTES


# A stream for the checks' hooks, driven directly: each chunk (time, size, text events), its times paced (ties,
# 20-50 ms, within and past the release window), with untimed ones, times going backwards and long silences.
_STEPS = st.sampled_from([0.0, 0.0001, 0.0002, 0.001, 0.009, 0.01, 0.0101, 0.02, 0.03, 0.05, 0.12, 0.6, 31.0, -0.002])
_SIZES = st.sampled_from([0, 1, 60, 120, 1023, 1024, 1025, 2048]) | st.integers(0, 1100)


@st.composite
def _paced_chunks(draw: st.DrawFn) -> list[tuple[float | None, int, int]]:
    pace = draw(st.sampled_from([0.001, 0.02, 0.03, 0.05]) | st.floats(0.0, 0.06))
    t = draw(st.sampled_from([0.0, 0.3, 1.0]))
    out: list[tuple[float | None, int, int]] = []
    for step, size, texts, untimed in draw(st.lists(st.tuples(st.just(pace) | _STEPS, _SIZES, st.sampled_from(
            [0, 1, 1, 1, 2, 3, 5, 8]), st.integers(0, 40)), max_size=80)):  # fmt: skip
        t += step
        out.append((None if untimed == 0 else round(t, 6), size, texts))
    return out


def _state(observer: Observer) -> str:
    """An observer's state, every field (floats' signs too)."""
    return repr(sorted(vars(observer).items()))


def _drive(observer: Observer, specs: list[tuple[float | None, int, int]], cuts: list[int], *, blocks: bool) -> list[str]:
    """Feed `observer` the chunks of `specs`, each with its text events, in the blocks `cuts` makes, through its
    block hooks or its per-item ones; its state after each block."""
    chunks = [Chunk(t, (b"data: x\n\n" * (size // 9 + 1))[:size]) for t, size, _ in specs]
    bounds = [0, *sorted({c % (len(chunks) + 1) for c in cuts}), len(chunks)]
    states = []
    index = 0
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        block = [(i, chunks[i], specs[i][2]) for i in range(a, b)]
        events = []
        for i, chunk, texts in block:
            events += [(Event(index + k, data="x" * 20, t=chunk.t, chunk=i), EventFlags.TEXT) for k in range(texts)]
            index += texts
        if blocks:
            observer.wire_block(chunks[a:b])
            observer.event_block(events)
            observer.chunk_block(block)
        else:
            for chunk in chunks[a:b]:
                observer.wire(chunk)
            for event, flags in events:
                observer.event(event, flags)
            for i, chunk, texts in block:
                observer.chunk(i, chunk, texts)
        states.append(_state(observer))
    return states


@settings(max_examples=300, deadline=None)
@given(_paced_chunks(), st.lists(st.integers(0, 200), max_size=12))
def test_the_timing_checks_block_hooks_leave_the_state_its_per_item_hooks_leave(
    specs: list[tuple[float | None, int, int]], cuts: list[int]
) -> None:
    """Releases (joined, trivial, judged), the lead, the wire's runs and silences, the text events' gaps: the
    same after every block, however the chunks are timed, sized and cut into blocks."""
    from sse_inspect.checks.timing import TimingCheck

    th = Thresholds()
    assert _drive(TimingCheck(th), specs, cuts, blocks=True) == _drive(TimingCheck(th), specs, cuts, blocks=False)


@settings(max_examples=150, deadline=None)
@given(_paced_chunks(), st.lists(st.integers(0, 200), max_size=12))
def test_the_headers_and_lifecycle_checks_and_the_timelines_block_hooks_leave_the_per_item_state(
    specs: list[tuple[float | None, int, int]], cuts: list[int]
) -> None:
    from sse_inspect.checks.headers import HeadersCheck
    from sse_inspect.checks.lifecycle import LifecycleCheck
    from sse_inspect.cli._render import Arrivals

    th = Thresholds()
    for make in (lambda: HeadersCheck(th), lambda: LifecycleCheck(th), Arrivals):
        assert _drive(make(), specs, cuts, blocks=True) == _drive(make(), specs, cuts, blocks=False)
