"""How an answer's text is held (`Holding`): whole, spooled to a file, glimpsed or counted.

The bounded ways are a memory trick behind a small contract (`Passage`): these tests prove that every
way tells the same text (or as much of it as it keeps), that the spool round-trips any text, that the
bounded ways hold memory that does not grow with the answer, and that the commands using them print
what they printed when the answer was held whole.
"""

from __future__ import annotations

import io
import json
import pickle
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from sse_inspect import analyze, load_capture
from sse_inspect._capture import Capture, Chunk, End, Request, Response, dump_capture
from sse_inspect.cli import cli
from sse_inspect.cli._render import SHOWN_CHARS, clipped, print_text, safe
from sse_inspect.dialects import GLIMPSED, Holding, Passage, TextNotKept
from sse_inspect.dialects._accumulate import CHANNELS, SPOOL_AT, Channel, CountChannel, GlimpseChannel, SpoolChannel
from sse_inspect.dialects._answer import Spooled

CAPTURES = sorted((Path(__file__).parent.parent / "captures").glob("*.jsonl"))

# any text, lone surrogates too (a JSON escape like "\ud800" makes one), in pieces as a stream brings them
any_text = st.text(st.characters(blacklist_categories=()), max_size=40)
pieces_strategy = st.lists(any_text.filter(bool), max_size=60)


def _fed(channel: Channel, pieces: list[str]) -> Channel:
    for piece in pieces:
        channel.append(piece)
    return channel


def _extended(channel: Channel, pieces: list[str], cuts: list[int]) -> Channel:
    """`_fed`, the pieces given in runs cut at `cuts` (`Channel.extend`: a block's tokens read by envelope)."""
    bounds = sorted({0, len(pieces), *(c % (len(pieces) + 1) for c in cuts)})
    for start, stop in zip(bounds, bounds[1:]):
        channel.extend(pieces[start:stop])
    return channel


_MADE = {
    "whole": Channel, "count": CountChannel, "spool": lambda: SpoolChannel(at=7),
    "glimpse": lambda: GlimpseChannel(glimpsed=9),
}  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(sorted(_MADE)), pieces=st.lists(any_text, max_size=3000),
       cuts=st.lists(st.integers(0, 5000), max_size=6), n=st.integers(0, 12))  # fmt: skip
def test_pieces_given_in_runs_are_held_as_pieces_given_one_by_one(kind: str, pieces: list[str], cuts: list[int], n: int) -> None:
    """Whatever the holding, `extend` (runs of over a thousand pieces too) holds what `append` of each holds."""
    one_by_one, runs = _fed(_MADE[kind](), pieces).passage(), _extended(_MADE[kind](), pieces, cuts).passage()
    assert len(runs) == len(one_by_one) and runs.kept == one_by_one.kept
    if runs.kept:
        assert str(runs) == str(one_by_one)
    if kind != "count":
        assert _told(runs.head, n) == _told(one_by_one.head, n) and _told(runs.tail, n) == _told(one_by_one.tail, n)


def _told(method: Callable[[int], str], n: int) -> str | type[Exception]:
    try:
        return method(n)
    except TextNotKept:  # (a glimpse asked for more than it kept)
        return TextNotKept


# -- the passages tell the same text ------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(pieces=pieces_strategy, at=st.integers(1, 50), block=st.integers(1, 9), n=st.integers(0, 80))
def test_the_spool_round_trips_any_text(pieces: list[str], at: int, block: int, n: int) -> None:
    """Spilled to its file every `at` characters and read back `block` bytes at a time (cutting UTF-8
    sequences and surrogates anywhere), a spooled text is the text, piece by piece and whole."""
    whole = "".join(pieces)
    channel = _fed(SpoolChannel(at=at), pieces)
    passage = channel.passage()
    if hasattr(passage, "block"):
        passage.block = block  # type: ignore[attr-defined]
    assert len(passage) == len(whole) and bool(passage) == bool(whole) and passage.kept
    assert "".join(passage.pieces()) == whole and str(passage) == whole == str(channel)
    assert passage.head(n) == whole[:n] and passage.tail(n) == (whole[-n:] if n else "")
    assert passage == _fed(Channel(), pieces).passage()


def test_a_long_text_is_spooled_to_a_file_and_a_short_one_is_not() -> None:
    short = _fed(SpoolChannel(at=100), ["abc"] * 30).passage()
    long = _fed(SpoolChannel(at=100), ["abc"] * 40).passage()
    assert type(short).__name__ == "Whole" and type(long).__name__ == "Spooled"
    assert str(long) == "abc" * 40
    # a passage taken mid-stream keeps its length: the channel goes on
    channel = _fed(SpoolChannel(at=10), ["0123456789"] * 3)
    early = channel.passage()
    channel.append("more")
    assert str(early) == "0123456789" * 3 and str(channel.passage()) == "0123456789" * 3 + "more"


@settings(max_examples=300, deadline=None)
@given(pieces=pieces_strategy, glimpsed=st.integers(0, 30), n=st.integers(0, 30))
def test_a_glimpse_keeps_a_short_text_whole_and_the_ends_of_a_long_one(
    pieces: list[str], glimpsed: int, n: int
) -> None:
    whole = "".join(pieces)
    passage = _fed(GlimpseChannel(glimpsed=glimpsed), pieces).passage()
    assert len(passage) == len(whole) and bool(passage) == bool(whole)
    if len(whole) <= 2 * glimpsed:
        assert passage.kept and str(passage) == whole
        return
    assert not passage.kept
    with pytest.raises(TextNotKept):
        str(passage)
    if n <= glimpsed:
        assert passage.head(n) == whole[:n] and passage.tail(n) == (whole[-n:] if n else "")
    else:
        with pytest.raises(TextNotKept):
            passage.head(n)


@given(pieces=pieces_strategy)
def test_a_count_keeps_the_length_alone(pieces: list[str]) -> None:
    whole = "".join(pieces)
    passage = _fed(CountChannel(), pieces).passage()
    assert len(passage) == len(whole) and bool(passage) == bool(whole) and passage.kept == (not whole)
    if whole:
        with pytest.raises(TextNotKept):
            str(passage)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_every_holding_reads_a_capture_as_the_whole_does(path: Path) -> None:
    """Each bundled capture under each holding: the same answer but for the text; the text (and each
    other channel) the same as far as it is kept, and always of the same length."""
    capture = load_capture(path)
    whole = analyze(capture).answer
    for holding in Holding:
        answer = analyze(capture, holding=holding).answer
        assert (answer.finish_reason, answer.complete, answer.errors, answer.usage, answer.end_markers) == (
            whole.finish_reason, whole.complete, whole.errors, whole.usage, whole.end_markers)  # fmt: skip
        assert answer.output_chars == whole.output_chars
        for mine, theirs in zip(answer.choices, whole.choices, strict=True):
            for name in ("held_text", "held_reasoning", "held_refusal", "held_plan"):
                held: Passage = getattr(mine, name)
                assert len(held) == len(getattr(theirs, name))
                if held.kept:
                    assert str(held) == str(getattr(theirs, name))
            assert [(c.name, c.id, len(c.held_arguments)) for c in mine.tool_calls] == [
                (c.name, c.id, len(c.held_arguments)) for c in theirs.tool_calls]  # fmt: skip
        if holding is not Holding.COUNT:
            assert [c.arguments_valid_json for c in answer.tool_calls] == [
                c.arguments_valid_json for c in whole.tool_calls]  # fmt: skip
        if holding in (Holding.WHOLE, Holding.SPOOL):
            assert answer == whole


def test_a_counted_answer_crosses_processes() -> None:
    """`check` of many captures sends each report back from a worker process: a counted answer pickles."""
    answer = analyze(load_capture(CAPTURES[0]), holding=Holding.COUNT).answer
    again = pickle.loads(pickle.dumps(answer))
    assert again == answer and again.output_chars == answer.output_chars


# -- memory that does not grow with the answer --------------------------------------------------------


def _stream(events: int) -> Capture:
    """An OpenAI Chat stream of `events` token events of 50 characters each (every 7th an emoji's), one
    a chunk as a live recording has them."""
    chunks = []
    for i in range(events):
        token = ("😀" if i % 7 == 0 else "x") * 50
        payload = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": token}}]}
        chunks.append(Chunk(0.2 + i / 1e5, f"data: {json.dumps(payload)}\n\n".encode()))
    chunks.append(Chunk(0.5, b"data: [DONE]\n\n"))
    return Capture(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                   response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.1),
                   chunks=tuple(chunks), end=End(kind="complete", t=0.6))  # fmt: skip


def _peak(capture: Capture, holding: Holding) -> int:
    tracemalloc.start()
    try:
        analysis = analyze(capture, keep=False, holding=holding)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert analysis.answer.output_chars == 50 * analysis.timing.events - 50  # (the last event is [DONE])
    return peak


def test_an_analysis_that_glimpses_or_counts_holds_memory_that_does_not_grow_with_the_answer() -> None:
    """The peak of analysing 4x the events grows by less than 100 KB when the text is glimpsed or counted
    (40 bytes measured); held whole, by more than the added text (150,000 characters, emoji among them: 600 KB)."""
    small, big = _stream(1_000), _stream(4_000)  # 50,000 and 200,000 characters of text
    holdings = (Holding.WHOLE, Holding.GLIMPSE, Holding.COUNT)
    grown = {holding: _peak(big, holding) - _peak(small, holding) for holding in holdings}
    assert grown[Holding.GLIMPSE] < 100_000 and grown[Holding.COUNT] < 100_000, grown
    assert grown[Holding.WHOLE] > 600_000, grown  # the measure sees the text when it is held


def _fed_peak(channel: Channel, pieces: int) -> int:
    piece = "😀" + "x" * 49
    tracemalloc.start()
    try:
        for _ in range(pieces):
            channel.append(piece)
        passage = channel.passage()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(passage) == 50 * pieces and passage.tail(50) == piece
    return peak


def test_a_spool_holds_memory_that_does_not_grow_with_the_text() -> None:
    """Fed 4x the pieces, a spool (here of 20,000 characters) peaks less than 200 KB higher; a whole channel
    by more than the text (3,000,000 characters more, 4 bytes each)."""
    spooled = _fed_peak(SpoolChannel(at=20_000), 80_000) - _fed_peak(SpoolChannel(at=20_000), 20_000)
    whole = _fed_peak(Channel(), 80_000) - _fed_peak(Channel(), 20_000)
    assert spooled < 200_000 and whole > 3_000_000, (spooled, whole)


# -- the commands print what they printed ----------------------------------------------------------


def _long_capture(tmp_path: Path, characters: int) -> tuple[Path, str]:
    """A capture whose answer has `characters` characters, lines of all kinds of text (emoji, CRLF);
    and the answer. (A lone surrogate cannot be written to a UTF-8 stdout: `text` fails on one as it did
    before it spooled.)"""
    lines, size = [], 0
    while size < characters:  # numbered lines: no stretch of the text is another's
        lines.append(f"line {len(lines)}: é😀 ab\r\ncd\n")
        size += len(lines[-1])
    text = "".join(lines)[:characters]
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    body = b"".join(
        f'data: {{"choices": [{{"index": 0, "delta": {{"content": {json.dumps(p)}}}}}]}}\n\n'.encode() for p in pieces
    )
    capture = Capture(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"),), t=0.1),
                      chunks=(Chunk(0.2, body + b"data: [DONE]\n\n"),), end=End(kind="complete", t=0.3))  # fmt: skip
    path = tmp_path / "long.jsonl"
    path.write_text(dump_capture(capture), encoding="utf-8")
    return path, text


def test_text_writes_a_spooled_answer_exactly(tmp_path: Path) -> None:
    """An answer past the spool's size: `text` writes it byte for byte, and `text --json` as the one
    JSON string it is (the spool is read piece by piece in both)."""
    path, text = _long_capture(tmp_path, 3 * SPOOL_AT)
    assert type(analyze(load_capture(path), holding=Holding.SPOOL).answer.choices[0].held_text) is Spooled
    out = CliRunner().invoke(cli, ["text", str(path)])
    assert out.exit_code == 0, out.output
    assert out.stdout_bytes == (text + "\n").encode()
    doc = CliRunner().invoke(cli, ["text", "--json", str(path)])
    parsed = json.loads(doc.stdout_bytes)
    assert parsed["text"] == text == parsed["choices"][0]["text"]


def test_text_says_in_one_line_when_the_spool_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full (or read-only) temporary folder: one line naming it and exit 2, never a traceback."""
    import errno
    import tempfile

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    path, _ = _long_capture(tmp_path, 3 * SPOOL_AT)
    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    out = CliRunner().invoke(cli, ["text", str(path)])
    assert out.exit_code == 2 and out.exception is not None and isinstance(out.exception, SystemExit)
    assert "cannot spool the answer's text to a temporary file: No space left on device" in out.stderr
    assert "TMPDIR" in out.stderr and "Traceback" not in out.stderr


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.text(st.sampled_from("ab \n\r\x1b\u202e😀"), max_size=30), max_size=20))
def test_text_on_a_terminal_prints_pieces_as_it_printed_the_whole(pieces: list[str]) -> None:
    def console() -> tuple[Console, io.StringIO]:
        out = io.StringIO()
        return Console(file=out, force_terminal=True, width=24, highlight=False), out

    whole, expected = console()
    whole.print(safe("".join(pieces)))
    piecewise, printed = console()
    print_text(piecewise, iter(pieces))
    assert printed.getvalue() == expected.getvalue()


def test_show_prints_the_ends_of_a_long_answer_and_says_what_it_left_out(tmp_path: Path) -> None:
    path, text = _long_capture(tmp_path, 3 * SHOWN_CHARS)
    shown = CliRunner().invoke(cli, ["show", str(path)])
    assert shown.exit_code == 0, shown.output
    left_out = len(text) - SHOWN_CHARS
    assert f"[... {left_out:,} characters more: `sse-inspect text` prints them all ...]" in shown.output
    # the view is what clipping the whole text gives: its ends, not its middle
    expected = str(safe(clipped(text)))
    assert expected in shown.output
    middle = text.index("\n", len(text) // 2) + 1
    assert "\n" + text[middle : text.index(":", middle)] + ":" not in shown.output  # (a line of the middle: "line N:")
    assert "\n" + text[text.index("\n", GLIMPSED // 2) + 1 :][:9] in shown.output


def test_the_channel_kinds_are_the_holdings() -> None:
    assert set(CHANNELS) == set(Holding)
    assert CHANNELS[Holding.WHOLE] is Channel
