"""`EventStreamParser.feed_block` against `feed`: a block of chunks read at once gives, chunk for chunk, what `feed`
gives for each in turn, and leaves the parser as `feed` leaves it, however the chunks are cut and grouped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_inspect import Comment, Event, EventStreamParser, Notice
from sse_inspect._parser_accel import Accelerator

from .helpers import split_at
from .test_parser import SmallPieces, _blocks, _values
from .test_parser_accel import _comparable, bodies

Item = Event | Comment | Notice

KINDS: dict[str, Callable[[int], EventStreamParser]] = {
    "as shipped": lambda limit: EventStreamParser(line_limit=limit),
    "all in slices": lambda limit: SmallPieces(accelerate=Accelerator(small=0, slice=64), line_limit=limit),
    "all block by block": lambda limit: EventStreamParser(accelerate=Accelerator(small=10**9), line_limit=limit),
    "spec only": lambda limit: EventStreamParser(accelerate=False, line_limit=limit),
}
LIMITS = st.one_of(st.just(EventStreamParser.LINE_LIMIT), st.integers(0, 80))

# Chunks of whole events, as a live recording reads them: an event or a few a chunk, of the usual shapes; with LF or
# CRLF line ends; and chunks of anything (`_blocks`: comments, ids, retry, lone CRs, bytes not UTF-8, ...).
_usual = st.one_of(
    _values.map(lambda v: b"data: " + v + b"\n\n"),
    st.tuples(st.sampled_from([b"delta", b"", b" x"]), _values).map(lambda p: b"event: " + p[0] + b"\ndata: " + p[1] + b"\n\n"),
)  # fmt: skip
_usual_chunks = st.lists(st.lists(_usual, min_size=1, max_size=3).map(b"".join), min_size=1, max_size=40)
whole_event_chunks = st.one_of(
    _usual_chunks,
    _usual_chunks.map(lambda chunks: [c.replace(b"\n", b"\r\n") for c in chunks]),
    st.lists(st.lists(st.one_of(_usual, _blocks), max_size=3).map(b"".join), max_size=40),
)


def cut_anywhere(body: bytes, cuts: list[int]) -> list[bytes]:
    return split_at(body, cuts)


any_chunks = st.one_of(
    whole_event_chunks,
    st.builds(cut_anywhere, bodies, st.lists(st.integers(0, 2400), max_size=30)),
    # whole-event chunks, a few of them cut in two
    st.builds(
        lambda chunks, cuts: [part for i, c in enumerate(chunks) for part in (split_at(c, [cuts[i]]) if i in cuts else [c])],
        whole_event_chunks, st.dictionaries(st.integers(0, 40), st.integers(0, 200), max_size=4),
    ),
)  # fmt: skip


def grouped(chunks: list[bytes], sizes: list[int]) -> list[list[bytes]]:
    """`chunks` in consecutive blocks of the given sizes (at least one chunk each), the last holding the rest."""
    blocks, i = [], 0
    for size in sizes:
        if i >= len(chunks):
            break
        blocks.append(chunks[i : i + max(size, 1)])
        i += max(size, 1)
    if i < len(chunks):
        blocks.append(chunks[i:])
    return blocks


def state(parser: EventStreamParser) -> dict[str, object]:
    """All of the parser's state but its accelerator (which keeps the last block shape it saw: a guess, no state
    of the stream)."""
    return {name: value for name, value in vars(parser).items() if name != "_accel"}


def per_chunk(parser: EventStreamParser, blocks: list[list[bytes]]) -> tuple[list[list[Item]], dict[str, object]]:
    out = []
    i = 0
    for block in blocks:
        for data in block:
            out.append(parser.feed(data, float(i)))
            i += 1
    return out, state(parser)


def by_block(parser: EventStreamParser, blocks: list[list[bytes]]) -> tuple[list[list[Item]], dict[str, object]]:
    out = []
    i = 0
    for block in blocks:
        got = parser.feed_block(block, [float(t) for t in range(i, i + len(block))])
        assert len(got) == len(block)
        out += got
        i += len(block)
    return out, state(parser)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=400, deadline=None)
@given(chunks=any_chunks, sizes=st.lists(st.integers(1, 50), max_size=10), limit=LIMITS)
@example(chunks=[b": hi\n\n", b"data: a\n\n", b"data: b\n\n"], sizes=[3], limit=EventStreamParser.LINE_LIMIT)
@example(chunks=[b": hi\r\n\r\n", b"data: a\r\n\r\n", b"data: b\r\n\r\n"], sizes=[3], limit=EventStreamParser.LINE_LIMIT)
@example(chunks=[b": hi\n\n", b"data: a\n\ndata: b\n\n", b"data: c\n\ndata", b": d\n\n", b"data: e\n\n"], sizes=[5],
         limit=EventStreamParser.LINE_LIMIT)  # fmt: skip
@example(chunks=[b": hi\n\n", b"data: a\n\n", b"", b"data: b\n\n", b"data: c\n\n"], sizes=[5], limit=EventStreamParser.LINE_LIMIT)
@example(chunks=[b": hi\n\n", b"data: a\n\n", b"data: 0123456789\n\n"], sizes=[3], limit=10)
def test_a_block_gives_what_feed_gives_chunk_by_chunk(kind: str, chunks: list[bytes], sizes: list[int], limit: int) -> None:
    """Item for item (every field of every item: times, offsets, chunk numbers, notices' times too), chunk for
    chunk, then the close's items, and the parser's whole state after each way."""
    blocks = grouped(chunks, sizes)
    one, two = KINDS[kind](limit), KINDS[kind](limit)
    expected, expected_state = per_chunk(one, blocks)
    got, got_state = by_block(two, blocks)
    assert got == expected
    assert got_state == expected_state
    assert two.close() == one.close()
    assert (two.stats, two.last_event_id, two.retry) == (one.stats, one.last_event_id, one.retry)


@settings(max_examples=200, deadline=None)
@given(chunks=any_chunks, sizes=st.lists(st.integers(1, 50), max_size=10), limit=LIMITS)
def test_a_block_gives_what_the_spec_path_gives(chunks: list[bytes], sizes: list[int], limit: int) -> None:
    """The accelerated block read against the rules alone: the same items, each event from the chunk that
    completed it (a notice aside, as in test_parser_accel: one about a held line comes with the next chunk)."""
    blocks = grouped(chunks, sizes)
    spec, fast = EventStreamParser(accelerate=False, line_limit=limit), EventStreamParser(line_limit=limit)
    expected, got = per_chunk(spec, blocks)[0], by_block(fast, blocks)[0]
    assert [[x for x in items if type(x) is Event] for items in got] == [
        [x for x in items if type(x) is Event] for items in expected
    ]
    assert [_comparable(x) for items in [*got, fast.close()] for x in items] == [
        _comparable(x) for items in [*expected, spec.close()] for x in items
    ]
    assert fast.stats == spec.stats


class Counted(EventStreamParser):
    """A parser that counts its `feed` calls: the chunks the block read left to `feed`."""

    fed = 0

    def feed(self, data: bytes, t: float | None = None) -> list[Item]:
        self.fed += 1
        return super().feed(data, t)


@pytest.mark.parametrize("nl", [b"\n", b"\r\n"])
@pytest.mark.parametrize("head", [b"data: ", b"event: delta\ndata: "])
def test_a_block_of_whole_events_is_taken_at_once(head: bytes, nl: bytes) -> None:
    """After the stream's first line (which `feed` reads: it may open with a BOM, and tells the first CRLF), a
    block of chunks of whole events goes to the accelerator whole: no `feed` call per chunk."""
    event = head.replace(b"\n", nl) + b'{"x": 1}' + nl + nl
    chunks = [b": hello" + nl + nl] + [event] * 100 + [event * 3] * 10
    parser, spec = Counted(), EventStreamParser(accelerate=False)
    got = parser.feed_block(chunks, [float(i) for i in range(len(chunks))])
    assert parser.fed == 1
    assert got == [spec.feed(c, float(i)) for i, c in enumerate(chunks)]
    assert sum(map(len, got)) == 1 + 130 + (nl == b"\r\n")  # the comment, the events (CRLF: the first CRLF's notice)


def test_a_chunk_that_cuts_an_event_is_read_by_feed_and_those_after_it_at_once() -> None:
    """The accelerator takes the chunks up to the first that ends inside an event; `feed` reads that one and the
    next (which ends the event), and the accelerator the rest of the block."""
    event = b"data: abc\n\n"
    chunks = [b": hello\n\n"] + [event] * 20 + [event + b"da", b"ta: x\n\n"] + [event] * 20
    parser, spec = Counted(), EventStreamParser(accelerate=False)
    got = parser.feed_block(chunks, [float(i) for i in range(len(chunks))])
    assert parser.fed == 3
    assert got == [spec.feed(c, float(i)) for i, c in enumerate(chunks)]


def test_a_chunk_of_another_shape_is_read_by_feed_and_those_after_it_at_once() -> None:
    """A keep-alive comment: the accelerator takes the chunks before it, `feed` reads it, the accelerator the rest."""
    event = b"event: delta\ndata: abc\n\n"
    chunks = [b": hello\n\n"] + [event] * 20 + [b": keep-alive\n\n"] + [event] * 20
    parser, spec = Counted(), EventStreamParser(accelerate=False)
    got = parser.feed_block(chunks, [float(i) for i in range(len(chunks))])
    assert parser.fed == 2
    assert got == [spec.feed(c, float(i)) for i, c in enumerate(chunks)]


def test_a_block_it_cannot_take_is_read_by_feed() -> None:
    """Offered chunks it takes none of (a comment in every chunk), it is not offered the block again."""
    chunks = [b": hello\n\n"] + [b"data: a\n\n: ping\n\n"] * 20
    parser, spec = Counted(), EventStreamParser(accelerate=False)
    got = parser.feed_block(chunks, [float(i) for i in range(len(chunks))])
    assert parser.fed == 21
    assert got == [spec.feed(c, float(i)) for i, c in enumerate(chunks)]


def test_feed_block_after_close_is_a_bug() -> None:
    parser = EventStreamParser()
    parser.feed(b": hi\n\n")
    parser.close()
    with pytest.raises(RuntimeError, match="after close"):
        parser.feed_block([b"data: a\n\n", b"data: b\n\n"], [0.0, 1.0])
