"""Reading captures as a stream: the same results as loading them whole, in memory that stays flat."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os
import threading
from unittest import mock
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import (
    analyze,
    capture_from_body,
    dump_capture,
    load_capture,
    parse_capture,
    parse_events,
    parse_rechunk_spec,
)
from sse_inspect._capture import Capture, Chunk
from sse_inspect import _loading
from sse_inspect._limits import PIECE
from sse_inspect._loading import open_capture
from sse_inspect._secrets import TOKEN_BYTES, BodyScanner
from sse_inspect.checks import CODES, check_capture
from sse_inspect.checks.evidence import Lines

from .checks import timelines as T
from .helpers import CORPUS, ROOT, split_at
from .huge import measured, peak_rss, write_openai_capture

FILES = sorted([*CORPUS.glob("*.sse"), *(ROOT / "captures").glob("*.jsonl"), ROOT / "tests/data/v1-sample.jsonl"])
TIMELINES = {
    "burst": T.burst_after_silence(),
    "nginx-4k": T.nginx_4k_buffer(),
    "gzipped": T.gzipped(),
    "corrupt-gzip": T.gzipped(corrupt_at=10),
    "silent-gap": T.silent_gap(keepalive_every=10.0),
    "anthropic": T.anthropic_paced(),
    "responses": T.responses_paced(),
    "steady": T.steady(),
}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_stream_yields_what_loading_gives(path: Path) -> None:
    """Read from the file line by line, as parsed from its bytes in memory (load_capture streams too)."""
    loaded = parse_capture(path.read_bytes(), path=str(path))
    with open_capture(path) as stream:
        assert stream.capture.chunks == () and (stream.capture.end is None or stream.capture.raw)
        chunks = tuple(stream)
        assert stream.bytes_read == path.stat().st_size == stream.size
    assert chunks == loaded.chunks
    assert stream.capture == dataclasses.replace(loaded, chunks=())


def test_a_stream_is_read_once(tmp_path: Path) -> None:
    with open_capture(ROOT / "captures/nginx-buffered.jsonl") as stream:
        list(stream)
        with pytest.raises(RuntimeError, match="read once"):
            list(stream)


def test_a_cut_off_stream_keeps_every_written_chunk_and_warns(tmp_path: Path) -> None:
    text = dump_capture(T.steady(n=20))
    path = tmp_path / "cut.jsonl"
    path.write_text(text[: text.rindex('{"t"') + 9])  # the last chunk line half written, no end line
    with open_capture(path) as stream:
        chunks = list(stream)
    assert len(chunks) == len(T.steady(n=20).chunks) - 1
    assert stream.capture.end is None
    assert "half-written last line" in stream.capture.warnings[0]


def test_a_raw_body_is_read_in_pieces(tmp_path: Path) -> None:
    body = b"".join(b'data: {"n": %d, "pad": "%s"}\n\n' % (i, b"x" * 200) for i in range(12000))
    assert len(body) > 2 * PIECE
    path = tmp_path / "raw.sse"
    path.write_bytes(body)
    with open_capture(path) as stream:
        analysis = analyze(stream, keep=False)
    assert stream.capture.raw and analysis.timing.chunks == 3 and analysis.timing.bytes == len(body)
    assert analysis.timing.events == len(parse_events(body)) == 12000
    assert analysis.answer.text.count("\n") == 11999  # generic: the data of each event, one per line


@pytest.mark.parametrize("name", TIMELINES)
def test_keeping_nothing_changes_no_result(name: str) -> None:
    capture = TIMELINES[name]
    kept = check_capture(capture)
    flat = check_capture(capture, keep=False)
    assert flat.analysis.events == () and flat.analysis.chunks == () and not flat.analysis.kept
    assert flat.analysis.answer == dataclasses.replace(kept.analysis.answer, text_events=())
    assert flat.analysis.timing == kept.analysis.timing
    assert flat.findings == kept.findings and flat.verdict == kept.verdict


def _same_results(capture: Capture, block: int = 4) -> None:
    """Kept and not, the same results; read in blocks of `block` chunks, so that a small capture's later blocks
    take the block path (the per-chunk hooks that read a stream's start are done by then)."""
    kept = check_capture(capture)
    with mock.patch.object(_loading, "IN_BLOCK", block):
        flat = check_capture(capture, keep=False)
    assert flat.analysis.answer == dataclasses.replace(kept.analysis.answer, text_events=())
    assert flat.analysis.timing == kept.analysis.timing and flat.analysis.outcome == kept.analysis.outcome
    assert flat.analysis.notice_counts == kept.analysis.notice_counts
    assert flat.findings == kept.findings and flat.verdict == kept.verdict


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_keeping_nothing_changes_no_result_on_the_captures(path: Path) -> None:
    """Without keeping, a block whose chunks each completed one event takes the block path (`_Pass.take`):
    its events read together (`Reader.feed_many`), counted by C loops; kept, one at a time."""
    _same_results(load_capture(path))


_TOKEN = 'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n'
_PIECES = st.sampled_from([
    _TOKEN % "a", _TOKEN % "b c", _TOKEN % "\\u00e9", 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    "data: [DONE]\n\n", 'data: {"error":{"message":"overloaded"}}\n\n', ": keep-alive\n\n", "data: not json\n\n",
    'data: {"choices":[{"index":0,"delta":{"content":"x","role":"assistant"}}]}\n\n', "data: caf\udce9\n\n",
])  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(_PIECES, min_size=1, max_size=60), cuts=st.lists(st.integers(0, 4000), max_size=30),
       gaps=st.lists(st.sampled_from([0.0, 0.001, 0.03, 0.6]), min_size=1, max_size=8))  # fmt: skip
def test_keeping_nothing_changes_no_result_whatever_the_chunks(pieces: list[str], cuts: list[int], gaps: list[float]) -> None:
    """The block path and the item path agree on streams of token events with ends, errors, comments and
    junk among them, cut anywhere (a chunk of one event, of several, of part of one) and timed at any pace."""
    datas = [piece.encode("utf-8", "surrogateescape") for piece in pieces]
    body = b"".join(datas)
    ends = list(itertools.accumulate(map(len, datas)))  # a live stream's reads: an event each, most of them
    bounds = sorted({0, len(body), *(ends[c % len(ends)] if c % 3 else c % (len(body) + 1) for c in cuts), *ends[::2]})
    t, chunks = 0.1, []
    for n, (start, stop) in enumerate(zip(bounds, bounds[1:])):
        t += gaps[n % len(gaps)]
        chunks.append(Chunk(t, body[start:stop]))
    capture = capture_from_body(body)
    _same_results(dataclasses.replace(capture, chunks=tuple(chunks), timed=True))


def test_a_fifo_is_read_as_it_is_written(tmp_path: Path) -> None:
    from .test_cli import run

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    text = dump_capture(T.steady(n=50)).encode()

    def write() -> None:
        with open(fifo, "wb") as f:
            f.writelines(split_at(text, range(0, len(text), 1000)))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, out, err = run("text", str(fifo))
    writer.join(timeout=10)
    assert (code, err) == (0, "")
    assert out == T.steady(n=50).text + "\n"


TOKEN = b"sk-" + b"a1B2c3D4" * 6


@given(
    st.lists(st.sampled_from([b"data: ", TOKEN, b" ", b"eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", b"x", b"\n\n",
                              b"AIza" + b"S" * 35, b"-", b"."]), max_size=30),
    st.lists(st.integers(0, 400), max_size=12),
)  # fmt: skip
def test_the_body_scanner_finds_the_same_tokens_at_any_cut(pieces: list[bytes], cuts: list[int]) -> None:
    body = b"".join(pieces)
    scanner = BodyScanner()
    for chunk in split_at(body, cuts):
        scanner.feed(chunk)
    assert [leak.offset for leak in scanner.close()] == [m.start() for m in TOKEN_BYTES.finditer(body)]


def test_memory_stays_flat_as_the_capture_grows(tmp_path: Path) -> None:
    """The four commands that read a capture through, on 6 MB and on 30 MB: peak RSS grows by neither
    its events nor its answer's text (`text` spools it to a file, `show` keeps its ends, `check` its
    length; tests/test_holding.py measures that each holds no more of it)."""
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    small_text = write_openai_capture(small, 6_000_000)
    big_text = write_openai_capture(big, 30_000_000)
    assert big_text - small_text > 400_000
    for command in (["events", "--json"], ["text"], ["check"], ["show"]):
        grown = peak_rss(*command, big) - peak_rss(*command, small)
        assert grown < 4_000_000, (command, grown)


def test_capture_from_a_huge_body_is_checked_in_one_pass() -> None:
    body = b"".join(T.openai_events(3000))
    report = check_capture(capture_from_body(body), keep=False)
    assert report.analysis.timing.events == 3001 and report.analysis.answer.complete


HUGE_MB = int(os.environ.get("SSE_INSPECT_HUGE_MB", "0"))
"""Opt in to the 1 GB run: SSE_INSPECT_HUGE_MB=1000 (about 2 minutes per command on 2 cores)."""


@pytest.mark.skipif(not HUGE_MB, reason="opt-in: set SSE_INSPECT_HUGE_MB (e.g. 1000) to stream a capture that big")
def test_a_huge_capture_streams_through_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    text = write_openai_capture(path, HUGE_MB * 1_000_000)
    for command in (["events", "--json"], ["text"], ["check"], ["show"]):
        code, _, err, rss = measured(*command, path)
        print(f"{' '.join(command)} on {path.stat().st_size / 1e6:.0f} MB: exit {code}, peak RSS {rss / 1e6:.1f} MB")
        assert code == 0, err
        assert rss < 64 << 20 and text > 10 * HUGE_MB, (command, rss)  # flat: the answer is not held


@pytest.mark.parametrize("kind", ["event-stream line", "text line", "capture line"])
def test_a_single_huge_line_is_read_not_refused(kind: str, tmp_path: Path) -> None:
    """A 200 MB line without an end: a raw event-stream line, a line of any text, or one chunk line of a
    capture (20 MB unless SSE_INSPECT_HUGE_MB is set): read and reported, in a few times its size. The body's
    line is over the parser's line limit (16 MiB): dropped, and said (an error, so check exits 1)."""
    size = 200_000_000 if kind != "capture line" or HUGE_MB else 20_000_000
    path = tmp_path / "line"
    with open(path, "wb") as f:
        if kind == "capture line":
            f.write(b'{"format": "sse-capture/1"}\n{"t": 0.1, "text": "data: ' + b"z" * size + b'\\n\\n"}\n')
            f.write(b'{"end": "complete", "t": 0.2}\n')
        else:
            f.write((b"data: " if kind == "event-stream line" else b"just text ") + b"x" * size)
    code, out, err, rss = measured("check", "--json", path, keep_output=True)
    report = json.loads(out)["captures"][0]
    codes = {f["code"] for f in report["findings"]}
    if kind == "capture line":  # read whole by the loader; its one event's data line is the parser's to drop
        assert (code, report["stats"]["events"]) == (1, 0) and "line-too-long" in codes, (err, codes)
    else:
        assert code == 1 and {"incomplete-event", "line-too-long"} <= codes, (err, codes)
    assert rss < 100_000_000 + 7 * size, rss


def test_a_header_only_capture_is_empty_not_ok(tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_text('{"format": "sse-capture/1"}\n')
    code, out, _, _ = measured("check", path, keep_output=True)
    assert code == 0 and "EMPTY: no event" in out and "recording-incomplete" in out


def test_reading_a_big_capture_on_a_terminal_shows_progress(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rich.console import Console

    from sse_inspect.cli import _reading, _render

    err = io.StringIO()
    monkeypatch.setattr(_render, "console", lambda stderr=False: Console(file=err, force_terminal=True, width=100))
    monkeypatch.setattr(_reading, "PROGRESS_FROM", 1_000_000)
    monkeypatch.setenv("FORCE_TERMINAL", "1")  # stderr is no tty under pytest: let rich's console decide
    path = tmp_path / "big.jsonl"
    write_openai_capture(path, 3_000_000)
    with _reading.reading(str(path)) as (stream, watchers):
        assert len(watchers) == 1
        analyze(stream, keep=False, observers=watchers)
    assert "reading big.jsonl" in err.getvalue() and "3.0 MB" in err.getvalue()
    with _reading.reading(str(ROOT / "captures/nginx-buffered.jsonl")) as (stream, watchers):
        assert watchers == []  # a small one reads too fast to need a bar
    monkeypatch.setattr(_render, "console", lambda stderr=False: Console(file=err, force_terminal=False))
    with _reading.reading(str(path)) as (stream, watchers):
        assert watchers == []  # off a terminal: no bar


def test_notices_are_counted_all_and_kept_a_hundred_of_a_kind() -> None:
    body = b"".join(b"data: caf\xe9 %d\n\n" % i for i in range(300))
    flat = analyze(capture_from_body(body), keep=False)
    assert [n.kind for n in flat.notices] == ["invalid-utf8"] * 100
    assert flat.notice_counts == {"invalid-utf8": 300} == analyze(capture_from_body(body)).notice_counts
    report = check_capture(capture_from_body(body), keep=False)
    [finding] = [f for f in report.findings if f.code == "invalid-utf8"]
    assert finding.evidence == Lines(300)


CUTS = ["bytes:1", "bytes:7", "random:3", "whole"]


PLAIN = [p for p in FILES if load_capture(p).content_encoding is None]


@pytest.mark.parametrize("path", PLAIN, ids=[p.name for p in PLAIN])
def test_the_probes_find_the_same_at_any_cut(path: Path) -> None:
    """What the framing, lifecycle and hygiene probes keep (tails of the body, held tokens, first
    events) does not depend on where the chunks were cut."""
    # the timing family's codes change with the cut, and so does the advice that follows the timing
    timing = {name for name, code in CODES.items() if code.family == "timing"} | {"x-accel-buffering"}
    leak = b"data: {\"key\": \"sk-" + b"Z9" * 20 + b"\"}\n\ndata: [DONE]\r\r"

    def findings(spec: str | None) -> list[tuple[str, str]]:
        capture = load_capture(path)
        capture = dataclasses.replace(capture, chunks=(*capture.chunks, dataclasses.replace(capture.chunks[-1], data=leak)))
        report = check_capture(capture, rechunk=parse_rechunk_spec(spec) if spec else None, keep=False)
        return [(f.code, f.message) for f in report.findings if f.code not in timing]

    original = findings(None)
    assert {"secret-in-capture", "done-not-json"} <= {code for code, _ in original}
    for spec in CUTS:
        assert findings(spec) == original, spec


def test_a_steady_token_stream_read_in_blocks_is_timed_as_kept() -> None:
    """Blocks of text events only (the block path's common case): the first and last token's times, the rate."""
    datas = [_TOKEN.encode() % b"w%d" % n for n in range(40)]
    capture = capture_from_body(b"".join(datas))
    capture = dataclasses.replace(capture, chunks=tuple(Chunk(0.1 + n * 0.03, d) for n, d in enumerate(datas)), timed=True)
    _same_results(capture)
    with mock.patch.object(_loading, "IN_BLOCK", 4):
        timing = check_capture(capture, keep=False).analysis.timing
    assert timing.first_token == 0.1 and timing.tokens_per_s == pytest.approx(1 / 0.03)


def test_a_capture_file_is_read_in_blocks_of_its_block_size(tmp_path: Path) -> None:
    """A file's blocks are BLOCK bytes and the rest of their last line (`read`, not `read1`: after the line's
    `readline`, `read1` would give only what the buffer held, and the blocks would be a few KiB)."""
    from sse_inspect._capture import BLOCK

    path = tmp_path / "big.jsonl"
    write_openai_capture(path, 2_000_000)
    with open_capture(path) as stream:
        blocks = list(stream.blocks())
    assert len(blocks) <= path.stat().st_size // BLOCK + 2
