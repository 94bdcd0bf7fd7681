"""The parser against the WHATWG rules, whole and cut every way."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_inspect import Comment, Event, EventStreamParser, Notice, parse_events
from sse_inspect._parser_accel import Accelerator

from .helpers import holder, parse_all, reference_events, simple, split_at, untimed


def events_of(body: bytes) -> list[tuple[str, str, str, int | None]]:
    return simple(parse_all([body]))


def notices_of(body: bytes) -> list[str]:
    return [x.kind for x in parse_all([body]) if isinstance(x, Notice)]


# -- the field rules, one case each (WHATWG "Interpreting an event stream") -----------------

SPEC_CASES = [
    ("one event", b"data: a\n\n", [("message", "a", "", None)]),
    ("no space after colon", b"data:a\n\n", [("message", "a", "", None)]),
    ("only one leading space removed", b"data:  a \n\n", [("message", " a ", "", None)]),
    ("data lines joined with LF", b"data: a\ndata: b\ndata\n\n", [("message", "a\nb\n", "", None)]),
    ("field without colon has empty value", b"data\n\n", [("message", "", "", None)]),
    ("empty data still dispatches", b"data:\n\n", [("message", "", "", None)]),
    ("event without data is not dispatched", b"event: x\n\n", []),
    ("event type resets after a blank line", b"event: x\n\ndata: y\n\n", [("message", "y", "", None)]),
    ("event type applies", b"event: delta\ndata: y\n\n", [("delta", "y", "", None)]),
    ("empty event type means message", b"event:\ndata: y\n\n", [("message", "y", "", None)]),
    ("id persists across events", b"id: 1\ndata: a\n\ndata: b\n\n", [("message", "a", "1", None), ("message", "b", "1", None)]),
    ("empty id resets it", b"id: 1\ndata: a\n\nid\ndata: b\n\n", [("message", "a", "1", None), ("message", "b", "", None)]),
    ("id with NUL is ignored", b"id: 1\n\nid: a\x00b\ndata: c\n\n", [("message", "c", "1", None)]),
    ("id set by a data-less event", b"id: 7\n\ndata: x\n\n", [("message", "x", "7", None)]),
    ("retry sets reconnection time", b"retry: 1500\ndata: a\n\n", [("message", "a", "", 1500)]),
    ("retry with a letter is ignored", b"retry: 15a\ndata: a\n\n", [("message", "a", "", None)]),
    ("negative retry is ignored", b"retry: -1\ndata: a\n\n", [("message", "a", "", None)]),
    ("non-ASCII digits are not digits", "retry: \u0661\u0662\ndata: a\n\n".encode(), [("message", "a", "", None)]),
    ("empty retry is ignored", b"retry\ndata: a\n\n", [("message", "a", "", None)]),
    ("comments are ignored", b": hello\ndata: a\n:\n\n", [("message", "a", "", None)]),
    ("unknown fields are ignored", b"foo: bar\ndata: a\n\n", [("message", "a", "", None)]),
    ("a space before the colon is part of the name", b"data : a\n\n", []),
    ("a colon inside the value stays", b"data: a: b:c\n\n", [("message", "a: b:c", "", None)]),
    ("CRLF line ends", b"data: a\r\ndata: b\r\n\r\n", [("message", "a\nb", "", None)]),
    ("lone CR line ends", b"data: a\rdata: b\r\r", [("message", "a\nb", "", None)]),
    ("mixed line ends", b"data: a\r\ndata: b\rdata: c\n\r\n", [("message", "a\nb\nc", "", None)]),
    ("CR CR LF is two line ends", b"data: a\r\r\n", [("message", "a", "", None)]),
    ("extra blank lines dispatch nothing", b"\n\n\ndata: a\n\n\n\n", [("message", "a", "", None)]),
    ("one leading BOM is dropped", b"\xef\xbb\xbfdata: a\n\n", [("message", "a", "", None)]),
    ("a second BOM is part of the field name", b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", [("message", "b", "", None)]),
    ("a BOM later is data", "data: \ufeffa\n\n".encode(), [("message", "\ufeffa", "", None)]),
    (
        "U+2028, U+0085, VT and FF are not line ends",
        "data: a\u2028b\u0085c\x0bd\x0ce\n\n".encode(),
        [("message", "a\u2028b\u0085c\x0bd\x0ce", "", None)],
    ),
    ("NUL in data is kept", b"data: a\x00b\n\n", [("message", "a\x00b", "", None)]),
    ("invalid UTF-8 becomes U+FFFD", b"data: a\xffb\n\n", [("message", "a\ufffdb", "", None)]),
    ("a cut-off character becomes U+FFFD", b"data: a\xe2\x82\n\n", [("message", "a\ufffd", "", None)]),
    ("unterminated last event is discarded", b"data: a\n\ndata: b", [("message", "a", "", None)]),
    ("an event without its blank line is discarded", b"data: a\n\ndata: b\n", [("message", "a", "", None)]),
    ("empty stream", b"", []),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES])
def test_spec_case(body: bytes, expected: list[tuple[str, str, str, int | None]]) -> None:
    assert events_of(body) == expected
    assert simple(parse_all([bytes([b]) for b in body])) == expected, "one byte at a time"
    assert reference_events(body) == expected, "the reference parser agrees with the case"


def test_cr_at_chunk_end_and_lf_at_next_start_is_one_line_end() -> None:
    # Were the CR and the LF two line ends, the LF would make a blank line and dispatch "a".
    items = parse_all([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert simple(items) == [("message", "a\nb", "", None)]


def test_character_split_across_chunks_decodes_whole() -> None:
    body = "data: €😀\n\n".encode()
    for cut in range(len(body) + 1):
        assert simple(parse_all([body[:cut], body[cut:]])) == [("message", "€😀", "", None)], cut


def test_last_event_id_and_retry_properties() -> None:
    parser = EventStreamParser()
    parser.feed(b"id: 42\nretry: 3000\ndata: x\n\nid: 43\n")
    assert parser.last_event_id == "42", "an id takes effect only when its event's blank line arrives"
    parser.feed(b"\n")
    assert parser.last_event_id == "43"
    assert parser.retry == 3000


# -- provenance ---------------------------------------------------------------------------


def test_event_offsets_times_and_chunk() -> None:
    chunks = [b": ping\n\nda", b"ta: a\n", b"\ndata: b\r", b"\n\r\n"]
    items = parse_all(chunks)
    events = [x for x in items if isinstance(x, Event)]
    comments = [x for x in items if isinstance(x, Comment)]
    assert comments == [Comment(text=" ping", offset=0, t=0.0, chunk=0)]
    a, b = events
    assert (a.start, a.end, a.t_first, a.t, a.chunk) == (8, 17, 0.0, 2.0, 2)
    body = b"".join(chunks)
    assert body[a.start : a.end] == b"data: a\n\n"
    assert (b.start, b.end, b.t_first, b.t, b.chunk) == (17, 27, 2.0, 3.0, 3)
    assert body[b.start : b.end] == b"data: b\r\n\r", "a CRLF blank line ends past its CR"
    assert [e.index for e in events] == [0, 1]


def test_bom_shifts_the_first_offset() -> None:
    (event,) = [x for x in parse_all([b"\xef\xbb\xbfdata: a\n\n"]) if isinstance(x, Event)]
    assert event.start == 3


# -- notices: what a client may mishandle ----------------------------------------------------


def test_notices() -> None:
    assert notices_of(b"\xef\xbb\xbfdata: a\n\n") == ["bom"]
    assert notices_of(b"data: a\r\n\r\n") == ["line-ending"]
    assert notices_of(b"data: a\r\rdata: b\r\n\r\n") == ["line-ending", "line-ending"]
    assert notices_of(b"data: a\n\n") == []
    assert notices_of(b"foo: 1\ndata: a\n\n") == ["ignored-field"]
    assert notices_of(b"id: a\x00\ndata: a\n\n") == ["invalid-id"]
    assert notices_of(b"retry: soon\ndata: a\n\n") == ["invalid-retry"]
    assert notices_of(b"data: a\n\ndata: b") == ["unterminated-event"]
    assert notices_of(b"data: a\n\nevent: x\n") == ["unterminated-event"]
    assert notices_of(b"data: a\n\n: trailing comment\n") == []


def test_invalid_utf8_notice_has_the_offset() -> None:
    (notice,) = [x for x in parse_all([b"data: ok\n\ndata: a\xffb\n\n"]) if isinstance(x, Notice)]
    assert (notice.kind, notice.offset) == ("invalid-utf8", 17)


def test_unterminated_event_notice_points_at_its_start() -> None:
    notice = parse_all([b"data: a\n\n", b"data: b"])[-1]
    assert isinstance(notice, Notice)
    assert (notice.kind, notice.offset, notice.t) == ("unterminated-event", 9, 1.0)


def test_stats_count_line_endings() -> None:
    parser = EventStreamParser()
    parser.feed(b"data: a\r")
    parser.feed(b"\ndata: b\rdata: c\n\n\xef")
    parser.close()
    s = parser.stats
    assert (s.lf, s.crlf, s.cr, s.events, s.bytes) == (2, 1, 1, 1, 27)


def test_feed_after_close_is_a_bug() -> None:
    parser = EventStreamParser()
    parser.close()
    with pytest.raises(RuntimeError, match="after close"):
        parser.feed(b"data: a\n\n")
    assert parser.close() == []


@pytest.mark.parametrize("method", ["feed", "feed_iter"])
def test_linear_in_bytes_for_a_long_line_fed_one_byte_at_a_time(method: str) -> None:
    """A 200 KB data line fed byte by byte must not be rescanned per byte (that would take minutes)."""
    body = b"data: " + b"x" * 200_000 + b"\n\n"
    feed = getattr(EventStreamParser(), method)
    out = []
    for i in range(len(body)):
        out += feed(body[i : i + 1])
    assert [len(e.data) for e in out if isinstance(e, Event)] == [200_000]


# -- properties --------------------------------------------------------------------------

TOKENS = [
    b"data", b"event", b"id", b"retry", b"foo", b":", b": ", b" ", b"\r", b"\n", b"\r\n", b"a", b"7",
    b"\xef\xbb\xbf", b"\xe2\x82\xac", b"\xe2\x82", b"\xff", b"\x00", "\u2028".encode(),
]  # fmt: skip
sse_bodies = st.lists(st.sampled_from(TOKENS), max_size=80).map(b"".join)
_values = st.sampled_from([b"x", b"", b" a", b"{\"k\": 1}", b"\xe2\x82\xac", b"\xff", b"[DONE]", b"data: y"])
_blocks = st.one_of(
    _values.map(lambda v: b"data: " + v + b"\n\n"),
    st.tuples(st.sampled_from([b"delta", b"", b" x"]), _values).map(lambda p: b"event: " + p[0] + b"\ndata: " + p[1] + b"\n\n"),
    st.sampled_from([b": ping\n\n", b"id: 4\n", b"retry: 10\n", b"\n", b"data:x\n\n", b"data: a\r\n\r\n", b"data: b\r\r",
                     b"event: e\n", b"\xef\xbb\xbf", b"data: a\ndata: b\n\n"]),
)
llm_bodies = st.lists(_blocks, max_size=25).map(b"".join)
"""Streams made of the blocks LLM servers send, with the odd line thrown in: the parser's fast path."""
any_bodies = st.one_of(sse_bodies, llm_bodies, st.binary(max_size=300))
cut_lists = st.lists(st.integers(min_value=0, max_value=400), max_size=30)

PATHS = ["as shipped", "all in slices", "spec only"]


class SmallPieces(EventStreamParser):
    PIECE = 64  # feed_iter's pieces: small bodies go in several


def make_parser(path: str) -> EventStreamParser:
    """The parser as shipped; with "all in slices", no read goes block by block and the accelerator's C-checked
    slices (and feed_iter's pieces) are 64 bytes, so that the property tests' small bodies take the path of big
    reads too; with "spec only", no accelerator."""
    if path == "as shipped":
        return EventStreamParser()
    if path == "all in slices":
        return SmallPieces(accelerate=Accelerator(small=0, slice=64))
    return EventStreamParser(accelerate=False)


def parse_in(path: str, chunks: list[bytes]) -> list[Event | Comment | Notice]:
    """`parse_all(chunks)` with the parser `make_parser(path)`."""
    parser = make_parser(path)
    items: list[Event | Comment | Notice] = []
    for i, chunk in enumerate(chunks):
        items += parser.feed(chunk, float(i))
    return items + parser.close()


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=400, deadline=None)
@given(body=any_bodies, cuts=cut_lists)
@example(body=b"data: a\r\n\r\n", cuts=[8, 9, 10])
@example(body=b"\xef\xbb\xbfdata: \xe2\x82\xac\r\n\r\n", cuts=[1, 2, 8, 9])
def test_any_cut_gives_the_same_events(body: bytes, cuts: list[int], path: str) -> None:
    """Cutting the same bytes anywhere (empty chunks too) changes only times and chunk indices."""
    assert untimed(parse_in(path, split_at(body, cuts))) == untimed(parse_in(path, [body]))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=400, deadline=None)
@given(body=any_bodies)
def test_matches_the_reference_algorithm(body: bytes, path: str) -> None:
    """The incremental parser and a plain whole-stream reading of the spec agree."""
    assert simple(parse_in(path, [body])) == reference_events(body)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=200, deadline=None)
@given(body=any_bodies)
def test_one_byte_at_a_time(body: bytes, path: str) -> None:
    assert untimed(parse_in(path, [bytes([b]) for b in body])) == untimed(parse_in(path, [body]))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=200, deadline=None)
@given(body=any_bodies, cuts=cut_lists)
def test_event_offsets_slice_the_body(body: bytes, cuts: list[int], path: str) -> None:
    """Each event's [start, end) holds its own lines: re-parsing the slice gives the event back."""
    for e in (x for x in parse_in(path, split_at(body, cuts)) if isinstance(x, Event)):
        if body[e.start : e.start + 3] == b"\xef\xbb\xbf":
            continue  # re-parsed alone, a BOM opening the slice would be taken as the stream's own
        again = [x for x in parse_in(path, [body[e.start : e.end]]) if isinstance(x, Event)]
        assert [(x.type, x.data) for x in again] == [(e.type, e.data)]


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=400, deadline=None)
@given(body=any_bodies, cuts=cut_lists)
@example(body=b"data: a\n\nevent: x\ndata: b\n\n", cuts=[3, 3, 12, 20])
def test_times_follow_the_bytes(body: bytes, cuts: list[int], path: str) -> None:
    """With chunk i arriving at t=i: an event's t is when its last byte came, t_first when its first did,
    and a comment's t when its line end came."""
    chunks = split_at(body, cuts)
    items = parse_in(path, chunks)
    for c in (x for x in items if isinstance(x, Comment)):
        line_end = min(i for i in (body.find(b"\r", c.offset), body.find(b"\n", c.offset)) if i >= 0)
        assert c.t == c.chunk == holder(chunks, line_end), c
    for e in (x for x in items if isinstance(x, Event)):
        assert e.t == e.chunk == holder(chunks, e.end - 1), e
        first_line = 0 if e.start == 3 and body.startswith(b"\xef\xbb\xbf") else e.start  # the BOM's line
        assert e.t_first == holder(chunks, first_line), e


def test_parser_keeps_few_attributes() -> None:
    """CPython 3.11 shares an instance's attribute keys only up to 30 of them: past that, every attribute
    access on the parser's hot path gets slower."""
    assert len(vars(EventStreamParser())) < 30


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=300, deadline=None)
@given(body=st.lists(any_bodies, min_size=2, max_size=8).map(b"".join), cuts=st.lists(st.integers(0, 2400), max_size=4))
@example(body=b"\x00" * 165 + b"\n\n" + b"\x00" * 63 + b"\n\x00", cuts=[103])
@example(body=b"data" * 2 + b"\x00" * 56 + b"\r\n\r\n" + b"\x00" * 25 + b"\n\n" + b"data" * 8 + b"\ndata", cuts=[])
@example(body=b"\x00" * 58 + b"\n\ndata\r\n\r\n\r\n" + b"data" * 12 + b"\r" + b"\x00" * 13, cuts=[])
@example(body=b"\x00" * 63 + b"\n\n\ndata: " + b"\x00" * 43 + b"\n\ndatadata\ndata", cuts=[])
def test_feed_iter_yields_what_feed_returns(body: bytes, cuts: list[int], path: str) -> None:
    """`feed_iter` yields exactly the items `feed` returns, in order and with the same provenance, at any cut
    (all in slices, a chunk of more than 128 bytes goes in several pieces)."""
    lists, iters = make_parser(path), make_parser(path)
    for i, chunk in enumerate(split_at(body, cuts)):
        assert list(iters.feed_iter(chunk, float(i))) == lists.feed(chunk, float(i))
    assert iters.close() == lists.close()
    assert iters.stats == lists.stats


@pytest.mark.parametrize("nl", [b"\n", b"\r\n"])
def test_feed_iter_makes_items_a_piece_at_a_time(nl: bytes) -> None:
    block = b"data: " + b"x" * 100 + nl + nl
    parser = EventStreamParser()
    items = (x for x in parser.feed_iter(block * 10_000, 1.0) if isinstance(x, Event))
    assert next(items) == Event(0, "message", "x" * 100, "", None, 0, 106 + len(nl) + 1, 1.0, 1.0, 0)
    assert parser.stats.events < 1000, "the rest of the body is not parsed yet"
    rest = list(items)
    assert len(rest) == 9999 and rest[-1].chunk == 0 and rest[-1].end == len(block) * 10_000 - len(nl) + 1


def test_line_ending_notice_comes_before_the_event_of_its_line() -> None:
    """Also when many blocks are taken at once (a big read, after an LF event): where the line rules put it."""
    parser = EventStreamParser()
    items = parser.feed(b"data: a\n\n") + parser.feed(b"data: b\r\n\r\n" * 200)
    assert [type(x).__name__ for x in items[:3]] == ["Event", "Notice", "Event"]
    assert items[1] == Notice(kind="line-ending", message="a line ends in CRLF", offset=16, t=None)


# -- the line limit: the one departure from the spec ---------------------------------------------------------

_LINE_AND_END = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n|$)")


def without_long_lines(body: bytes, limit: int) -> bytes:
    """`body` with every line longer than `limit` bytes removed with its line end: what the parser reads. (The
    kept lines end in LF: a CR then an LF, once apart, would join into one CRLF.)"""
    kept = []
    for i, m in enumerate(_LINE_AND_END.finditer(body)):
        line = m.group().rstrip(b"\r\n")
        if len(line) <= limit:
            kept.append(line + b"\n" if len(line) < len(m.group()) else line)
        elif i == 0:
            kept.append(_BOM)  # the first line dropped, BOM and all: the next one's BOM is no stream BOM
    return b"".join(kept)


_BOM = b"\xef\xbb\xbf"
limits = st.integers(min_value=0, max_value=40)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=300, deadline=None)
@given(body=any_bodies, limit=limits)
@example(body=b"\xef\xbb\xbfdata: long line\n\xef\xbb\xbfdata: b\n\n", limit=12)
def test_lines_over_the_limit_are_dropped(body: bytes, limit: int, path: str) -> None:
    """With a line limit, the events are those of the body without its long lines, and a notice says where
    each dropped line started."""
    parser = _limited(path, limit)
    items = parser.feed(body, 0.0) + parser.close()
    assert simple(items) == within_limit(reference_events(without_long_lines(body, limit)), limit)
    dropped = [x.offset for x in items if isinstance(x, Notice) and x.kind == "line-too-long"]
    starts = [m.start() for m in _LINE_AND_END.finditer(body) if len(m.group().rstrip(b"\r\n")) > limit]
    assert dropped == starts


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=300, deadline=None)
@given(body=any_bodies, limit=limits, cuts=cut_lists)
@example(body=b"\xef\xbb\xbfdata: long line\n\xef\xbb\xbfdata: b\n\n", limit=12, cuts=[])
def test_the_line_limit_gives_the_same_items_at_any_cut(body: bytes, limit: int, cuts: list[int], path: str) -> None:
    def parse(chunks: list[bytes]) -> list[Event | Comment | Notice]:
        parser = _limited(path, limit)
        return [x for i, chunk in enumerate(chunks) for x in parser.feed(chunk, float(i))] + parser.close()

    assert untimed(parse(split_at(body, cuts))) == untimed(parse([body]))
    assert untimed(parse([bytes([b]) for b in body])) == untimed(parse([body]))


def within_limit(events: list[tuple[str, str, str, int | None]], limit: int) -> list[tuple[str, str, str, int | None]]:
    """The events the parser keeps under `limit`: an event whose data is longer is dropped."""
    return [e for e in events if len(e[1]) <= limit]


_data_lines = st.lists(st.binary(max_size=12).map(lambda v: b"data: " + v.replace(b"\n", b"").replace(b"\r", b"")),
                       min_size=1, max_size=5)  # fmt: skip
_many_line_events = st.lists(
    st.tuples(_data_lines, st.sampled_from([b"", b"id: 7\n", b"event: e\n", b": c\n"])).map(
        lambda e: e[1] + b"\n".join(e[0]) + b"\n\n"
    ),
    max_size=8,
).map(b"".join)
"""Events of several data lines, each line short: their data may be over a small limit while no line is."""


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=300, deadline=None)
@given(body=_many_line_events, limit=st.integers(min_value=6, max_value=40), cuts=cut_lists)
@example(body=b"data: abcd\ndata: efgh\n\ndata: ij\n\n", limit=8, cuts=[])
def test_events_over_the_limit_are_dropped_at_any_cut(body: bytes, limit: int, cuts: list[int], path: str) -> None:
    """An event whose data lines, each within the line limit, join to more than the limit is dropped with an
    "event-too-long" notice at its first byte; the other events are those of the spec, whatever the cuts."""
    def parse(chunks: list[bytes]) -> list[Event | Comment | Notice]:
        parser = _limited(path, limit)
        return [x for i, chunk in enumerate(chunks) for x in parser.feed(chunk, float(i))] + parser.close()

    items = parse(split_at(body, cuts))
    kept = without_long_lines(body, limit)
    expected = reference_events(kept)
    assert simple(items) == within_limit(expected, limit)
    dropped = [x for x in items if isinstance(x, Notice) and x.kind == "event-too-long"]
    assert len(dropped) == len(expected) - len(within_limit(expected, limit))
    if kept == body:  # no line dropped: each notice points at its event's first field line
        assert all((x.offset == 0 or body[x.offset - 1] == 10) and body.startswith((b"data", b"id", b"event"), x.offset) for x in dropped)
    assert untimed(items) == untimed(parse([body])) == untimed(parse([bytes([b]) for b in body]))


def _limited(path: str, limit: int) -> EventStreamParser:
    if path == "as shipped":
        return EventStreamParser(line_limit=limit)
    if path == "all in slices":
        return SmallPieces(accelerate=Accelerator(small=0, slice=64), line_limit=limit)
    return EventStreamParser(accelerate=False, line_limit=limit)


@pytest.mark.parametrize("path", PATHS)
def test_a_line_over_the_limit_is_not_held(path: str) -> None:
    """A line fed in pieces is dropped as soon as it is over the limit: the parser holds no more than the limit
    and a piece, however long the line goes on; the events around it are read."""
    parser = _limited(path, 1000)
    items = parser.feed(b"data: before\n\ndata: ", 0.0)
    for i in range(1, 1001):
        items += parser.feed(b"x" * 100, float(i))
        assert sum(map(len, parser._parts)) <= 1100
    items += parser.feed(b"y\ndata: after\n\n", 1001.0) + parser.close()
    assert simple(items) == [("message", "before", "", None), ("message", "after", "", None)]
    (notice,) = [x for x in items if isinstance(x, Notice) and x.kind == "line-too-long"]
    assert notice.offset == 14
    assert notice.message == "a line of 100007 bytes (over the line limit of 1000) was dropped, from byte 14"
    assert parser.stats.bytes == 14 + 100007 + 1 + 13


@pytest.mark.parametrize("path", PATHS)
def test_an_event_of_many_lines_is_not_held(path: str) -> None:
    """Data lines that never end their event: the parser holds no more of the event's data than the limit,
    however many lines come; the event is dropped at its blank line, the events around it are read, and its
    id still counts."""
    parser = _limited(path, 1000)
    items = parser.feed(b"data: before\n\nid: 5\n", 0.0)
    for i in range(1, 1001):
        items += parser.feed(b"data: 123456789\n" * 10, float(i))
        assert sum(map(len, parser._data)) <= 1000 and sum(map(len, parser._parts)) <= 1000
    items += parser.feed(b"\ndata: after\n\n", 1001.0) + parser.close()
    assert simple(items) == [("message", "before", "", None), ("message", "after", "5", None)]
    (notice,) = [x for x in items if isinstance(x, Notice) and x.kind == "event-too-long"]
    assert notice.offset == 14
    assert notice.message == (
        "an event whose data came to 99999 characters (over the limit of 1000) was dropped, from byte 14"
    )


def test_a_stream_that_ends_inside_an_event_over_the_limit() -> None:
    parser = EventStreamParser(line_limit=10)
    items = parser.feed(b"data: a\n\ndata: 0123\ndata: 4567\ndata: 89\n", 0.0) + parser.close()
    assert [(x.kind, x.offset) for x in items if isinstance(x, Notice)] == [
        ("event-too-long", 9), ("unterminated-event", 9)
    ]


def test_an_event_at_the_limit_is_kept() -> None:
    """The limit counts the data as the event holds it, the LF between its lines included."""
    body = b"data: 01234\ndata: 56789\n\ndata: 01234\ndata: 56789\ndata\n\n"
    parser = EventStreamParser(line_limit=11)
    items = parser.feed(body) + parser.close()
    assert simple(items) == [("message", "01234\n56789", "", None)]
    assert [x.kind for x in items if isinstance(x, Notice)] == ["event-too-long"]


def test_a_stream_that_ends_inside_a_long_line() -> None:
    parser = EventStreamParser(line_limit=10)
    items = parser.feed(b"data: a\n\ndata: 0123456789", 0.0) + parser.close()
    assert [(x.kind, x.offset) for x in items if isinstance(x, Notice)] == [
        ("line-too-long", 9), ("unterminated-event", 9)
    ]


def test_the_default_line_limit_is_generous() -> None:
    body = b"data: " + b"a" * (8 << 20) + b"\n\n"
    assert [len(e.data) for e in parse_events(body)] == [8 << 20]
    assert EventStreamParser.LINE_LIMIT == 16 << 20
