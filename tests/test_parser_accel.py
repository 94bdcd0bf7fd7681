"""The accelerator against the spec path: `EventStreamParser()` and `EventStreamParser(accelerate=False)`
give the same items at every cut."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_inspect import Comment, Event, EventStreamParser, Notice
from sse_inspect._parser_accel import HOLD, KEEP, Accelerator

from .helpers import split_at
from .test_parser import SmallPieces, any_bodies, llm_bodies, make_parser

Item = Event | Comment | Notice


ACCELERATED: dict[str, Callable[[], EventStreamParser]] = {
    "as shipped": EventStreamParser,
    "all in slices": lambda: make_parser("all in slices"),  # feed_iter's pieces and the slices: 64 bytes
    "all block by block": lambda: EventStreamParser(accelerate=Accelerator(small=10**9)),
}


def run(parser: EventStreamParser, chunks: list[bytes], lazily: bool = False) -> dict[str, object]:
    """Everything observable: the items (chunk i at t=i), then the parser's state after close(); and that
    each event came out of the call that completed it."""
    items: list[Item] = []
    for i, chunk in enumerate(chunks):
        got = list(parser.feed_iter(chunk, float(i))) if lazily else parser.feed(chunk, float(i))
        # An event comes out of the very call that fed the byte completing it, whichever way it was read.
        assert all(x.chunk == i for x in got if isinstance(x, Event)), (i, got)
        items += got
    at_close = parser.close()
    assert not any(isinstance(x, Event) for x in at_close), at_close
    items += at_close
    return {
        "items": [_comparable(x) for x in items],
        "stats": parser.stats,
        "last_event_id": parser.last_event_id,
        "retry": parser.retry,
    }


def _comparable(item: Item) -> object:
    """An item as the two ways must agree on it: all of it, but a notice's arrival time. (The accelerator may
    keep whole lines of an unfinished event unread until the next chunk, `wait` in its contract; a notice about
    one of them then says the next chunk's time, as a notice about a CR ending a chunk always does.)"""
    if isinstance(item, Notice):
        return ("notice", item.kind, item.message, item.offset)
    return item


def spec_and_accelerated(kind: str, chunks: list[bytes], lazily: bool = False) -> tuple[object, object]:
    return run(EventStreamParser(accelerate=False), chunks, lazily), run(ACCELERATED[kind](), chunks, lazily)


huge_lines = st.tuples(
    st.sampled_from([b"data: ", b"event: x\ndata: ", b": ", b"id: 1\ndata: "]),
    st.integers(min_value=1000, max_value=70_000),
    st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r", b"\n"]),
).map(lambda p: p[0] + b"y" * p[1] + p[2])
bodies = st.one_of(
    any_bodies,
    st.lists(any_bodies, min_size=2, max_size=8).map(b"".join),
    st.lists(st.one_of(llm_bodies, huge_lines), min_size=1, max_size=4).map(b"".join),
)


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=300, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 2400), max_size=30))
@example(body=b"data: a\n\nevent: x\ndata: b\n\n", cuts=[3, 3, 12, 20])
@example(body=b"data: a\n\nretry: 10\ndata: b", cuts=[12])
@example(body=b"data: a\n\n: ping\ndata: b\n\n", cuts=[13])
@example(body=b"data: a\r\n\r\nid: a\x00b\r\ndata: b\r\n\r\n", cuts=[17])
@example(body=b"\xef\xbb\xbfdata: a\r\n\r\ndata: \xff\r\n\r\n", cuts=[5, 13])
@example(body=b"data: x\r\n\r\ndata: a\n\nb\r\n\r\n", cuts=[11, 22])  # an LF-LF inside a CRLF read's "data line"
@example(body=b"data: x\r\n\r\ndata: a\r", cuts=[11])  # a held CR ends the stream
@example(body=b"data: x\r\n\r\ndata: [DONE]\r\r", cuts=[11])  # a CR, then a CR that ends the blank line
@example(body=b"data: x\r\n\r\ndata: a\r\n\r\ndata: b\r\n\r\n", cuts=[21])  # a read ends in a blank line's CR
@example(body=b"data: x\r\n\r\ndata: a\r\n\rdata: b\r\n\r\n", cuts=[21])  # ... which is a lone CR
def test_both_ways_give_the_same_items(kind: str, body: bytes, cuts: list[int]) -> None:
    """Events (every field: offsets, times, chunk indices), comments, notices, stats, last event id and retry."""
    spec, fast = spec_and_accelerated(kind, split_at(body, cuts))
    assert fast == spec


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=100, deadline=None)
@given(body=st.lists(st.one_of(llm_bodies, any_bodies), max_size=4).map(b"".join))
def test_both_ways_agree_cut_at_every_byte(kind: str, body: bytes) -> None:
    """Each event split at every byte: the body in two at each offset, and one byte at a time."""
    for cut in range(len(body) + 1):
        spec, fast = spec_and_accelerated(kind, [body[:cut], body[cut:]])
        assert fast == spec, cut
    spec, fast = spec_and_accelerated(kind, [bytes([b]) for b in body])
    assert fast == spec


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=100, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 2400), max_size=4))
def test_both_ways_agree_through_feed_iter(kind: str, body: bytes, cuts: list[int]) -> None:
    spec, fast = spec_and_accelerated(kind, split_at(body, cuts), lazily=True)
    assert fast == spec


LIMITED: dict[str, Callable[[int], EventStreamParser]] = {
    "as shipped": lambda limit: EventStreamParser(line_limit=limit),
    "all in slices": lambda limit: SmallPieces(accelerate=Accelerator(small=0, slice=64), line_limit=limit),
    "all block by block": lambda limit: EventStreamParser(accelerate=Accelerator(small=10**9), line_limit=limit),
}


@pytest.mark.parametrize("kind", LIMITED)
@settings(max_examples=300, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 2400), max_size=30), limit=st.integers(0, 120))
@example(body=b"data: a\n\ndata: 0123456789\r\ndata: b\n\n", cuts=[10, 20], limit=10)
@example(body=b"\xef\xbb\xbfdata: long line\n\xef\xbb\xbfdata: b\n\n", cuts=[3, 9], limit=12)
def test_both_ways_drop_the_same_long_lines(kind: str, body: bytes, cuts: list[int], limit: int) -> None:
    """With a line limit (small, so that the property's bodies have lines on both sides of it): the same items
    at any cut, the long lines' notices among them, whether feed or feed_iter reads them."""
    chunks = split_at(body, cuts)
    spec = run(EventStreamParser(accelerate=False, line_limit=limit), chunks)
    assert run(LIMITED[kind](limit), chunks) == spec
    assert run(LIMITED[kind](limit), chunks, lazily=True) == spec


@pytest.mark.parametrize("kind", LIMITED)
@settings(max_examples=100, deadline=None)
@given(body=st.lists(st.one_of(llm_bodies, any_bodies), max_size=4).map(b"".join), limit=st.integers(0, 60))
def test_both_ways_drop_the_same_long_lines_cut_at_every_byte(kind: str, body: bytes, limit: int) -> None:
    for cut in range(len(body) + 1):
        chunks = [body[:cut], body[cut:]]
        assert run(LIMITED[kind](limit), chunks) == run(EventStreamParser(accelerate=False, line_limit=limit), chunks)
    chunks = [bytes([b]) for b in body]
    assert run(LIMITED[kind](limit), chunks) == run(EventStreamParser(accelerate=False, line_limit=limit), chunks)


@pytest.mark.parametrize("nl", [b"\n", b"\r\n"])
@pytest.mark.parametrize("head", [b"data: ", b"event: delta\ndata: "])
def test_a_big_read_of_llm_blocks_is_taken_whole_by_the_accelerator(head: bytes, nl: bytes) -> None:
    """The accelerator takes every event of a big read of the usual shapes (nothing left to the line rules),
    and they are the spec path's."""
    prefix = b": hello" + nl + nl
    blocks = (head.replace(b"\n", nl) + b'{"x": 1}' + nl + nl) * 5000
    fast, spec = Watched(), EventStreamParser(accelerate=False)
    assert fast.feed(prefix, 0.0) == spec.feed(prefix, 0.0)
    assert fast.left() == (len(prefix), KEEP, 2), "read by the rules: the stream's first line, and its blank line"
    items = fast.feed(blocks, 1.0)
    assert fast.left() == (len(prefix) + len(blocks), KEEP, 0), "all of it taken, nothing left to the line rules"
    assert items == spec.feed(blocks, 1.0)
    assert len(items) == 5000  # (a CRLF stream: its notice came with the comment's line)
    assert fast.stats == spec.stats


class Watched(EventStreamParser):
    """A parser that counts the lines its line rules read, to tell them from the events the accelerator takes."""

    def __init__(self, accelerate: bool | Accelerator = True) -> None:
        super().__init__(accelerate)
        self.by_rules = 0

    def _line(self, *args: object) -> None:  # type: ignore[override]
        self.by_rules += 1
        super()._line(*args)  # type: ignore[arg-type]

    def left(self) -> tuple[int, int, int]:
        """How the last reads left the stream: where the pending bytes start, whether they wait unread (HOLD:
        whole lines of an unfinished event) or are the start of a line (KEEP), and the lines the rules read
        since the last call."""
        read, self.by_rules = self.by_rules, 0
        return self._offset, HOLD if self._held else KEEP, read


@pytest.mark.parametrize(
    "body",
    [b"id: 1\ndata: a\n\n" * 3, b"data: a\ndata: b\n\n" * 3, b"data: a\rdata: b\r\r" * 3, b"data: \xff\n\n" * 3],
)
def test_the_accelerator_declines_other_shapes(body: bytes) -> None:
    """At an event boundary it takes nothing it cannot take exactly: other fields, several data lines, lone CR
    line ends, bytes that are not UTF-8 all go to the line rules."""
    parser, spec = Watched(), EventStreamParser(accelerate=False)
    opening = b": open\r\n\r\n"  # (its CRLF notice given: a small read goes block by block)
    assert parser.feed(opening, 0.0) == spec.feed(opening, 0.0)
    parser.left()
    assert parser.feed(body, 1.0) + parser.close() == spec.feed(body, 1.0) + spec.close()
    assert parser.left()[2] == body.count(b"\n") + body.count(b"\r"), "every line read by the rules"


def test_accelerate_false_has_no_accelerator() -> None:
    assert EventStreamParser(accelerate=False)._accel is None
    assert isinstance(EventStreamParser()._accel, Accelerator)


def test_an_unfinished_event_waits_unread_and_is_read_as_the_rules_say() -> None:
    """HOLD: the whole lines of an event cut by the read wait for the next chunk, which the accelerator then
    takes from the event's first byte; the items are the spec path's, times included."""
    chunks = [b": open\n\n", b"data: a\n\nevent: x\ndata: {", b'"k": 1}\n\n']
    fast, spec = Watched(), EventStreamParser(accelerate=False)
    fast_items, left = [], []
    for i, chunk in enumerate(chunks):
        fast_items += fast.feed(chunk, float(i))
        left.append(fast.left())
    fast_items += fast.close()
    spec_items = [x for i, c in enumerate(chunks) for x in spec.feed(c, float(i))] + spec.close()
    assert left[1:] == [(len(chunks[0]) + 9, HOLD, 0), (sum(map(len, chunks)), KEEP, 0)]
    assert fast_items == spec_items
    assert [(e.type, e.data, e.t_first, e.t) for e in fast_items if isinstance(e, Event)] == [
        ("message", "a", 1.0, 1.0), ("x", '{"k": 1}', 1.0, 2.0)
    ]
