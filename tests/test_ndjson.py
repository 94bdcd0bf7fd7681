"""The NDJSON and JSON-array framers against their formats' rules, whole and cut every way, and the sniffer."""

from __future__ import annotations

import json
import re
import struct
import time
import zlib
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_inspect._events import Event, Notice
from sse_inspect._eventstream import MESSAGE_LIMIT, encode_message
from sse_inspect._ndjson import FRAMINGS, JSONArrayParser, NDJSONParser, sniff_framing

from .helpers import CORPUS, holder, split_at, untimed

Parser = NDJSONParser | JSONArrayParser
Items = list[Event | Notice]


def run(make: Callable[[], Parser], chunks: list[bytes]) -> Items:
    """Everything a framer gives for `chunks`, fed one by one at times 0, 1, 2, ..."""
    parser = make()
    items: Items = []
    for i, chunk in enumerate(chunks):
        items += parser.feed(chunk, float(i))
    return items + parser.close()


def datas(items: Items) -> list[str]:
    return [x.data for x in items if isinstance(x, Event)]


def kinds(items: Items) -> list[str]:
    return [x.kind for x in items if isinstance(x, Notice)]


# -- NDJSON: the rules, one case each (ndjson-spec, jsonlines.org) -------------------------------------------

NDJSON_CASES = [
    ("one line", b'{"a":1}\n', ['{"a":1}'], []),
    ("lines", b'{"a":1}\n[2]\n{"b":3}\n', ['{"a":1}', "[2]", '{"b":3}'], []),
    ("a CRLF's CR belongs to the line end", b'{"a":1}\r\n{"b":2}\r\n', ['{"a":1}', '{"b":2}'], []),
    ("blank lines are skipped", b'\n{"a":1}\n\n\r\n{"b":2}\n', ['{"a":1}', '{"b":2}'], ["blank-line"]),
    ("whitespace-only lines are skipped", b' \t\n{"a":1}\n  \r\n', ['{"a":1}'], ["blank-line"]),
    ("whitespace around the text is kept", b' {"a": 1} \n', [' {"a": 1} '], []),
    ("the last line without LF is read", b'{"a":1}\n{"b":2}', ['{"a":1}', '{"b":2}'], ["unterminated-line"]),
    ("and without LF but with CR", b'{"a":1}\r', ['{"a":1}'], ["unterminated-line"]),
    ("whitespace after the last LF is a blank line", b'{"a":1}\n  ', ['{"a":1}'], ["blank-line"]),
    ("a line that is not an object or array", b'{"a":1}\n42\n"s"\n', ['{"a":1}', "42", '"s"'],
     ["not-json-line", "not-json-line"]),
    ("not parsed: a broken object is a line", b'{"a":\n', ['{"a":'], []),
    ("a BOM opening the stream is skipped", b'\xef\xbb\xbf{"a":1}\n', ['{"a":1}'], ["bom"]),
    ("a BOM later is content", b'{}\n\xef\xbb\xbf{}\n', ["{}", "\ufeff{}"], ["not-json-line"]),
    ("two BOMs: the second is content", b'\xef\xbb\xbf\xef\xbb\xbf{}\n', ["\ufeff{}"], ["bom", "not-json-line"]),
    ("a BOM's start alone is content", b"\xef\xbb", ["\ufffd"], ["invalid-utf8", "not-json-line", "unterminated-line"]),
    ("invalid UTF-8 becomes U+FFFD", b'{"a":"\xff"}\n', ['{"a":"\ufffd"}'], ["invalid-utf8"]),
    ("a lone CR inside a line is content", b'{"a":1,\r"b":2}\n', ['{"a":1,\r"b":2}'], ["splitlines-break"]),
    ("NEL inside a string: one line here", '{"a":"x\x85y"}\n'.encode(), ['{"a":"x\x85y"}'], ["splitlines-break"]),
    ("U+2028 too", '{"a":"x\u2028y"}\n{"a":"\u2029"}\n'.encode(), ['{"a":"x\u2028y"}', '{"a":"\u2029"}'],
     ["splitlines-break"]),
    ("empty stream", b"", [], []),
]  # fmt: skip


@pytest.mark.parametrize(("body", "expected", "notices"), [c[1:] for c in NDJSON_CASES],
                         ids=[c[0] for c in NDJSON_CASES])  # fmt: skip
def test_ndjson_case(body: bytes, expected: list[str], notices: list[str]) -> None:
    items = run(NDJSONParser, [body])
    assert datas(items) == expected
    assert sorted(kinds(items)) == sorted(notices)
    assert untimed(run(NDJSONParser, [bytes([b]) for b in body])) == untimed(items), "one byte at a time"
    assert all(x.type == "message" and x.id == "" and x.retry is None for x in items if isinstance(x, Event))


def test_ndjson_offsets_times_and_chunk() -> None:
    chunks = [b'{"a"', b':1}\r', b'\n\n{"b":2}\n{', b'"c":3}']
    items = run(NDJSONParser, chunks)
    body = b"".join(chunks)
    a, b, c = (x for x in items if isinstance(x, Event))
    assert (a.index, a.start, a.end, a.t_first, a.t, a.chunk) == (0, 0, 9, 0.0, 2.0, 2)
    assert body[a.start : a.end] == b'{"a":1}\r\n', "the end is past the LF"
    assert (b.index, b.start, b.end, b.t_first, b.t, b.chunk) == (1, 10, 18, 2.0, 2.0, 2)
    assert (c.index, c.start, c.end, c.t_first, c.t, c.chunk) == (2, 18, 25, 2.0, 3.0, 3)
    notices = [(x.kind, x.offset, x.t) for x in items if isinstance(x, Notice)]
    assert notices == [("blank-line", 9, 2.0), ("unterminated-line", 18, 3.0)]


def test_ndjson_a_line_starting_at_a_chunk_end_starts_with_the_next_chunk() -> None:
    a, b = (x for x in run(NDJSONParser, [b"{}\n", b"", b"[]\n"]) if isinstance(x, Event))
    assert (b.start, b.t_first, b.t) == (3, 2.0, 2.0)


def test_ndjson_bom_shifts_the_first_offset_and_notices_point_at_bytes() -> None:
    items = run(NDJSONParser, [b"\xef", b"\xbb\xbf{}\n", b'{"\xff"}\n'])
    event = next(x for x in items if isinstance(x, Event))
    assert (event.start, event.end) == (3, 6)
    notices = [(x.kind, x.offset, x.t) for x in items if isinstance(x, Notice)]
    assert notices == [("bom", 0, 0.0), ("invalid-utf8", 8, 2.0)]


def test_ndjson_stats() -> None:
    parser = NDJSONParser(limit=12)
    for chunk in [b"\xef\xbb\xbf{}\r", b"\n\n \n[1]\n", b'{"long":"line"}\n{"x":"\xff"}\n{"n":"\xc2\x85"}\n{}']:
        parser.feed(chunk)
    parser.close()
    s = parser.stats
    assert (s.bytes, s.items, s.blank, s.lf, s.crlf, s.bom) == (53, 5, 2, 6, 1, True)
    assert (s.invalid_utf8, s.too_long, s.split) == (1, 1, 1)


@pytest.mark.parametrize("make", [NDJSONParser, JSONArrayParser])
def test_feed_after_close_is_a_bug(make: Callable[[], Parser]) -> None:
    parser = make()
    parser.close()
    with pytest.raises(RuntimeError, match="after close"):
        parser.feed(b"{}\n")
    assert parser.close() == []


# -- the streamed JSON array (RFC 8259 section 5) ------------------------------------------------------------

ARRAY_CASES = [
    ("elements", b'[{"a":1},{"b":2}]', ['{"a":1}', '{"b":2}'], []),
    ("empty", b"[]", [], []),
    ("whitespace anywhere", b' \r\n[ \n{"a":1}\r\n,\r\n{"b":2}\n]\n ', ['{"a":1}', '{"b":2}'], []),
    ("text exactly as sent", b'[{ "a" :\n [1, 2] }]', ['{ "a" :\n [1, 2] }'], []),
    ("a ] or } in a string ends nothing", b'[{"a":"]}"},["]"]]', ['{"a":"]}"}', '["]"]'], []),
    ("an escaped quote does not end a string", b'[{"a":"\\"]"}]', ['{"a":"\\"]"}'], []),
    ("an escaped backslash does", b'[{"a":"\\\\"},1]', ['{"a":"\\\\"}', "1"], []),
    ("scalars and strings", b'[1, -2.5e3 ,true,null, "x,y"]', ["1", "-2.5e3", "true", "null", '"x,y"'], []),
    ("nested arrays", b"[[1,[2]],[]]", ["[1,[2]]", "[]"], []),
    ("not an array", b'{"a":1}', [], ["not-an-array"]),
    ("not an array: ignored whole", b'x[{"a":1}]', [], ["not-an-array"]),
    ("empty body", b"", [], ["not-an-array"]),
    ("trailing data", b'[{"a":1}] {"b":2}', ['{"a":1}'], ["trailing-data"]),
    ("trailing whitespace is fine", b"[{}]\r\n", ["{}"], []),
    ("unterminated after an element", b'[{"a":1},', ['{"a":1}'], ["unterminated-array"]),
    ("unterminated inside an element: no item", b'[{"a":1},{"b":', ['{"a":1}'], ["unterminated-array"]),
    ("a whole last element is an item", b'[{"a":1},{"b":2}', ['{"a":1}', '{"b":2}'], ["unterminated-array"]),
    ("a scalar at the end may be cut short", b"[1, 23", ["1"], ["unterminated-array"]),
    ("only the opening", b"[", [], ["unterminated-array"]),
    ("a missing comma", b"[{} {}]", ["{}", "{}"], ["missing-comma"]),
    ("an empty element", b"[{},,{}]", ["{}", "{}"], ["empty-element"]),
    ("a comma before the end", b"[{},]", ["{}"], []),
    ("a BOM first", b"\xef\xbb\xbf[{}]", ["{}"], ["bom"]),
    ("invalid UTF-8 in an element", b'["\xff"]', ['"\ufffd"'], ["invalid-utf8"]),
]  # fmt: skip


@pytest.mark.parametrize(("body", "expected", "notices"), [c[1:] for c in ARRAY_CASES], ids=[c[0] for c in ARRAY_CASES])
def test_array_case(body: bytes, expected: list[str], notices: list[str]) -> None:
    items = run(JSONArrayParser, [body])
    assert datas(items) == expected
    assert kinds(items) == notices
    assert untimed(run(JSONArrayParser, [bytes([b]) for b in body])) == untimed(items), "one byte at a time"


def test_array_offsets_times_and_chunk() -> None:
    chunks = [b'[{"a":', b'1}\r\n', b',\r\n{"b":2}\n', b",3", b"]"]
    items = run(JSONArrayParser, chunks)
    body = b"".join(chunks)
    a, b, c = (x for x in items if isinstance(x, Event))
    assert (a.start, a.end, a.t_first, a.t, a.chunk) == (1, 8, 0.0, 1.0, 1)
    assert (b.start, b.end, b.t_first, b.t, b.chunk) == (13, 20, 2.0, 2.0, 2), "whole at its closing brace"
    assert (c.start, c.end, c.t_first, c.t, c.chunk) == (22, 23, 3.0, 4.0, 4), "a scalar: at the byte after it"
    assert [body[x.start : x.end] for x in (a, b, c)] == [b'{"a":1}', b'{"b":2}', b"3"]
    stats = JSONArrayParser()
    stats.feed(body)
    assert (stats.stats.items, stats.stats.closed, stats.stats.bytes) == (3, True, len(body))


def test_array_notices_point_at_bytes() -> None:
    items = run(JSONArrayParser, [b'[{"a":1}', b' x', b"]", b" y"])
    assert [(x.kind, x.offset, x.t) for x in items if isinstance(x, Notice)] == [
        ("missing-comma", 9, 1.0), ("trailing-data", 12, 3.0)
    ]  # fmt: skip
    assert datas(items) == ['{"a":1}', "x"], "x: a scalar, read as the next element, ended by the ]"
    items = run(JSONArrayParser, [b'[{"a":1}]', b" \n x"])
    assert [(x.kind, x.offset, x.t) for x in items if isinstance(x, Notice)] == [("trailing-data", 12, 1.0)]


# -- properties: any cut, the same items ------------------------------------------------------------------

ND_TOKENS = [
    b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b"1", b"a", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\n\n",
    b'{"k": "v"}\n', b"\xef\xbb\xbf", b"\xe2\x82\xac", b"\xe2\x82", b"\xc2\x85", b"\xff", b"\x00",
]  # fmt: skip
nd_bodies = st.one_of(st.lists(st.sampled_from(ND_TOKENS), max_size=80).map(b"".join), st.binary(max_size=200))
cut_lists = st.lists(st.integers(min_value=0, max_value=300), max_size=30)

# JSON values written with the whitespace a server may put anywhere
_ws = st.sampled_from([b"", b" ", b"\n", b"\r\n", b"\t "])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_element = st.tuples(_json, st.booleans()).map(lambda e: json.dumps(e[0], ensure_ascii=e[1], indent=None))
arrays = st.tuples(st.lists(st.tuples(_ws, _element, _ws), max_size=6), _ws, st.booleans()).map(
    lambda a: (b"[" + b",".join(w1 + e.encode() + w2 for w1, e, w2 in a[0]) + a[1] + (b"]" if a[2] else b""),
               [e for _, e, _ in a[0]], a[2])
)  # fmt: skip
"""(body, the elements' texts, closed): valid arrays, closed or not."""
ARRAY_TOKENS = [
    b"[", b"]", b"{", b"}", b'"', b"\\", b'\\"', b",", b":", b" ", b"\r\n", b"1", b"true", b'"]"', b"\xef\xbb\xbf",
    b"\xe2\x82\xac", b"\xff",
]  # fmt: skip
array_bodies = st.one_of(
    arrays.map(lambda a: a[0]),
    st.lists(st.sampled_from(ARRAY_TOKENS), max_size=60).map(b"".join),
    st.binary(max_size=120),
)


def _same_at_any_cut(make: Callable[[], Parser], body: bytes, cuts: list[int]) -> None:
    whole = untimed(run(make, [body]))
    assert untimed(run(make, split_at(body, cuts))) == whole
    assert untimed(run(make, [bytes([b]) for b in body])) == whole


@settings(max_examples=400, deadline=None)
@given(body=nd_bodies, cuts=cut_lists)
@example(body=b'{"a":1}\r\n{"b":2}\r\n', cuts=[8, 9])  # a CRLF split
@example(body='{"a":"€"}\n'.encode(), cuts=[7, 8])  # a character split
@example(body=b"\xef\xbb\xbf{}\n", cuts=[1, 2])  # a BOM split
def test_ndjson_any_cut_gives_the_same_items(body: bytes, cuts: list[int]) -> None:
    _same_at_any_cut(NDJSONParser, body, cuts)


@settings(max_examples=400, deadline=None)
@given(body=array_bodies, cuts=cut_lists)
@example(body=b'[{"a":"\\"]"}]', cuts=[7, 8])  # an escape split
@example(body='["€"]'.encode(), cuts=[3])
def test_array_any_cut_gives_the_same_items(body: bytes, cuts: list[int]) -> None:
    _same_at_any_cut(JSONArrayParser, body, cuts)


def reference_ndjson(body: bytes) -> list[tuple[str, int, int]]:
    """The rules written as plainly as possible: (data, start, end) of each line that is not blank."""
    out = []
    start = 3 if body.startswith(b"\xef\xbb\xbf") else 0
    for m in re.finditer(rb"[^\n]*\n|[^\n]+$", body[start:]):
        line = m.group().removesuffix(b"\n").removesuffix(b"\r")
        if line.strip(b" \t\r\n"):
            out.append((line.decode("utf-8", "replace"), start + m.start(), start + m.end()))
    return out


@settings(max_examples=400, deadline=None)
@given(body=nd_bodies, cuts=cut_lists)
def test_ndjson_matches_the_reference(body: bytes, cuts: list[int]) -> None:
    items = run(NDJSONParser, split_at(body, cuts))
    assert [(x.data, x.start, x.end) for x in items if isinstance(x, Event)] == reference_ndjson(body)
    assert [x.index for x in items if isinstance(x, Event)] == list(range(len(reference_ndjson(body))))


@settings(max_examples=400, deadline=None)
@given(array=arrays, cuts=cut_lists)
def test_array_elements_are_the_texts_sent(array: tuple[bytes, list[str], bool], cuts: list[int]) -> None:
    """Every element of a valid array, its text exactly as written, its offsets slicing it from the body."""
    body, texts, closed = array
    items = run(JSONArrayParser, split_at(body, cuts))
    events = [x for x in items if isinstance(x, Event)]
    # (a bare scalar is whole at the byte after it: last in a body cut short, it is no item)
    scalar_last = bool(texts) and not closed and texts[-1][0] not in '{["' and body.endswith(texts[-1].encode())
    assert [e.data for e in events] == (texts[:-1] if scalar_last else texts)
    assert all(body[e.start : e.end].decode() == e.data for e in events)
    assert [json.loads(e.data) for e in events] == [json.loads(t) for t in texts[: len(events)]]
    assert kinds(items) == ([] if closed else ["unterminated-array"])


@settings(max_examples=300, deadline=None)
@given(body=st.lists(st.sampled_from(ND_TOKENS), max_size=40).map(b"".join),
       cuts=st.lists(st.integers(0, 200), max_size=8))  # fmt: skip
@example(body=b'{"a":1}\n\n{"b":"\xc2\x85"}\n', cuts=[])
def test_ndjson_reads_as_httpx_iter_lines(body: bytes, cuts: list[int]) -> None:
    """The lines httpx's `iter_lines` gives (what the ollama library decodes, line by line) are the items and the
    blank lines, unless a "splitlines-break" notice says they are not."""
    httpx = pytest.importorskip("httpx")
    chunks = split_at(body, cuts)
    parser = NDJSONParser()
    items = [x for chunk in chunks for x in parser.feed(chunk)] + parser.close()
    lines = list(httpx.Response(200, content=iter(chunks)).iter_lines())
    if parser.stats.bom:  # (httpx keeps it: the ollama library's json.loads fails on it, and the notice says so)
        lines[0] = lines[0].removeprefix("\ufeff")
        if body == b"\xef\xbb\xbf":
            lines = []  # (a body of a BOM alone: no line here)
    blank = [line for line in lines if not line.strip(" \t\r\n")]
    if parser.stats.split:
        assert "splitlines-break" in kinds(items)
    else:
        assert [line for line in lines if line.strip(" \t\r\n")] == datas(items)
        # (the blank lines are as many but for a lone CR in one, which splits it in httpx, harmlessly)
        assert bool(blank) == bool(parser.stats.blank) == ("blank-line" in kinds(items))


@settings(max_examples=300, deadline=None)
@given(body=nd_bodies, cuts=cut_lists)
@example(body=b"\xef\xbb", cuts=[1])  # held as a BOM's start until the end
@example(body=b"\xef\xbb{}\n", cuts=[1, 2])
def test_ndjson_times_follow_the_bytes(body: bytes, cuts: list[int]) -> None:
    """With chunk i arriving at t=i: an item's t is when its LF came (the last chunk's, for an unterminated
    line), t_first when its first byte did."""
    chunks = split_at(body, cuts)
    for e in (x for x in run(NDJSONParser, chunks) if isinstance(x, Event)):
        assert e.t == e.chunk == (holder(chunks, e.end - 1) if body[e.end - 1 : e.end] == b"\n" else len(chunks) - 1)
        assert e.t_first == holder(chunks, e.start)


@settings(max_examples=300, deadline=None)
@given(array=arrays, cuts=cut_lists)
def test_array_times_follow_the_bytes(array: tuple[bytes, list[str], bool], cuts: list[int]) -> None:
    """An object, array or string element is whole with its last byte; a scalar with the byte after it."""
    body, chunks = array[0], split_at(array[0], cuts)
    for e in (x for x in run(JSONArrayParser, chunks) if isinstance(x, Event)):
        last = e.end - 1 if e.data[-1] in '}]"' else e.end
        assert e.t == e.chunk == holder(chunks, last)
        assert e.t_first == holder(chunks, e.start)


class SmallPieces(NDJSONParser):
    PIECE = 7


class SmallArrayPieces(JSONArrayParser):
    PIECE = 7


@pytest.mark.parametrize(("make", "bodies"), [(SmallPieces, nd_bodies), (SmallArrayPieces, array_bodies)])
@settings(max_examples=200, deadline=None)
@given(data=st.data(), cuts=st.lists(st.integers(0, 300), max_size=4))
def test_feed_iter_yields_what_feed_returns(make: Callable[[], Parser], bodies: st.SearchStrategy[bytes],
                                            data: st.DataObject, cuts: list[int]) -> None:  # fmt: skip
    body = data.draw(bodies)
    lists, iters = make(), make()
    for i, chunk in enumerate(split_at(body, cuts)):
        assert list(iters.feed_iter(chunk, float(i))) == lists.feed(chunk, float(i))
    assert iters.close() == lists.close()
    assert iters.stats == lists.stats


@pytest.mark.parametrize(("make", "chunks"), [(NDJSONParser, [b'{"a"', b":1}\n", b"", b"[2]\n{"]),
                                              (JSONArrayParser, [b"[1", b",{}", b"", b"]"])])
def test_feed_block_is_feed_per_chunk(make: Callable[[], Parser], chunks: list[bytes]) -> None:
    parser, blocks = make(), make()
    ts = [float(i) for i in range(len(chunks))]
    assert blocks.feed_block(chunks, ts) == [parser.feed(chunk, t) for chunk, t in zip(chunks, ts)]
    assert blocks.close() == parser.close()


# -- limits ---------------------------------------------------------------------------------------------------

limits = st.integers(min_value=0, max_value=30)


@settings(max_examples=300, deadline=None)
@given(body=nd_bodies, limit=limits, cuts=cut_lists)
@example(body=b"abc\r\n", limit=3, cuts=[4])  # at the limit, with a CR: kept
@example(body=b"abcd\r\n", limit=3, cuts=[4])
def test_ndjson_lines_over_the_limit_are_dropped(body: bytes, limit: int, cuts: list[int]) -> None:
    items = run(lambda: NDJSONParser(limit=limit), split_at(body, cuts))
    expected = [r for r in reference_ndjson(body) if len(_raw_line(body, r[1])) <= limit]
    assert [(x.data, x.start, x.end) for x in items if isinstance(x, Event)] == expected
    starts = [x.offset for x in items if isinstance(x, Notice) and x.kind == "line-too-long"]
    bom = 3 if body.startswith(b"\xef\xbb\xbf") else 0
    assert starts == [bom + m.start() for m in re.finditer(rb"[^\n]*\n|[^\n]+$", body[bom:])
                      if len(m.group().removesuffix(b"\n").removesuffix(b"\r")) > limit]  # fmt: skip
    _same_at_any_cut(lambda: NDJSONParser(limit=limit), body, cuts)


def _raw_line(body: bytes, start: int) -> bytes:
    end = body.find(b"\n", start)
    return (body[start:] if end < 0 else body[start:end]).removesuffix(b"\r")


@settings(max_examples=300, deadline=None)
@given(array=arrays, limit=limits, cuts=cut_lists)
def test_array_elements_over_the_limit_are_dropped(
    array: tuple[bytes, list[str], bool], limit: int, cuts: list[int]
) -> None:
    body, texts, _ = array
    items = run(lambda: JSONArrayParser(limit=limit), split_at(body, cuts))
    whole = [x for x in run(JSONArrayParser, [body]) if isinstance(x, Event)]
    assert datas(items) == [e.data for e in whole if e.end - e.start <= limit]
    assert kinds(items).count("element-too-long") == sum(e.end - e.start > limit for e in whole)
    _same_at_any_cut(lambda: JSONArrayParser(limit=limit), body, cuts)


def test_a_line_over_the_limit_is_not_held() -> None:
    parser = NDJSONParser(limit=1000)
    items = parser.feed(b'{"before":1}\n{"x":"', 0.0)
    for i in range(1, 1001):
        items += parser.feed(b"x" * 100, float(i))
        assert len(parser._pending) <= 1100
    items += parser.feed(b'"}\n{"after":1}\n', 1001.0) + parser.close()
    assert datas(items) == ['{"before":1}', '{"after":1}']
    (notice,) = [x for x in items if isinstance(x, Notice)]
    assert notice.message == "a line of 100008 bytes (over the line limit of 1000) was dropped, from byte 13"


def test_an_element_over_the_limit_is_not_held() -> None:
    parser = JSONArrayParser(limit=1000)
    items = parser.feed(b'[{"before":1},{"x":"', 0.0)
    for i in range(1, 1001):
        items += parser.feed(b"]}x\\\"" * 20, float(i))
        assert len(parser._parts) <= 1100
    items += parser.feed(b'"},{"after":1}]', 1001.0) + parser.close()
    assert datas(items) == ['{"before":1}', '{"after":1}']
    (notice,) = [x for x in items if isinstance(x, Notice)]
    assert notice.message == "an element of 100008 bytes (over the limit of 1000) was dropped, from byte 14"


def test_the_default_limit_is_the_sse_line_limit() -> None:
    assert NDJSONParser.LINE_LIMIT == JSONArrayParser.LINE_LIMIT == 16 << 20
    body = b'{"a":"' + b"x" * (8 << 20) + b'"}\n'
    assert [len(d) for d in datas(run(NDJSONParser, [body]))] == [(8 << 20) + 8]


# -- linear at any chunk size -------------------------------------------------------------------------------------


def _one_byte_feed_cost(make: Callable[[], Parser], body: bytes) -> float:
    """The best of three CPU times of feeding `body` a byte at a time (a ratio of these is compared, never a time)."""
    best = float("inf")
    chunks = [body[i : i + 1] for i in range(len(body))]
    for _ in range(3):
        parser = make()
        feed = parser.feed
        began = time.process_time()
        for chunk in chunks:
            feed(chunk)
        parser.close()
        best = min(best, time.process_time() - began)
    return best


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (NDJSONParser, lambda n: b'{"a":"' + b"x" * n + b'"}\n'),
        (JSONArrayParser, lambda n: b'[{"a":"' + b"x\\\"" * (n // 3) + b'"}]'),
        (JSONArrayParser, lambda n: b"[" + b"[" * (n // 2) + b"]" * (n // 2) + b"]"),
    ],
    ids=["ndjson-long-line", "array-long-string", "array-deep"],
)
def test_a_long_item_fed_a_byte_at_a_time_is_linear(make: Callable[[], Parser], shape: Callable[[int], bytes]) -> None:
    """Four times the bytes cost about four times as much (a quadratic framer: sixteen)."""
    small, big = _one_byte_feed_cost(make, shape(50_000)), _one_byte_feed_cost(make, shape(200_000))
    assert big / small < 8


# -- real shapes ------------------------------------------------------------------------------------------------

# Ollama's native API, as its documentation shows it (https://github.com/ollama/ollama/blob/main/docs/api.md,
# "Generate a completion" and "Generate a chat completion", streaming responses): one JSON object per line,
# `application/x-ndjson`, LF line ends, the last object `"done": true` with `done_reason` and the timings.
OLLAMA_GENERATE = b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in [
    {"model": "llama3.2", "created_at": "2023-08-04T08:52:19.385406455-07:00", "response": "The", "done": False},
    {"model": "llama3.2", "created_at": "2023-08-04T08:52:19.585406455-07:00", "response": " sky", "done": False},
    {"model": "llama3.2", "created_at": "2023-08-04T08:52:19.785406455-07:00", "response": " is blue.", "done": False},
    {"model": "llama3.2", "created_at": "2023-08-04T19:22:45.499127Z", "response": "", "done": True,
     "done_reason": "stop", "context": [1, 2, 3], "total_duration": 10706818083, "load_duration": 6338219291,
     "prompt_eval_count": 26, "prompt_eval_duration": 130079000, "eval_count": 259, "eval_duration": 4232710000},
])  # fmt: skip
OLLAMA_CHAT = b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in [
    {"model": "llama3.2", "created_at": "2023-08-04T08:52:19.385406455-07:00",
     "message": {"role": "assistant", "content": "The", "images": None}, "done": False},
    {"model": "llama3.2", "created_at": "2023-08-04T08:52:19.485406455-07:00",
     "message": {"role": "assistant", "content": " sky\u00e9 \u2603"}, "done": False},
    {"model": "llama3.2", "created_at": "2023-08-04T19:22:45.499127Z",
     "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
     "total_duration": 4883583458, "load_duration": 1334875, "prompt_eval_count": 26,
     "prompt_eval_duration": 342546000, "eval_count": 282, "eval_duration": 4535599000},
])  # fmt: skip


@pytest.mark.parametrize(
    ("body", "text"),
    [(OLLAMA_GENERATE, "The sky is blue."), (OLLAMA_CHAT, "The sky\u00e9 \u2603")],
    ids=["generate", "chat"],
)
@settings(max_examples=100, deadline=None)
@given(cuts=cut_lists)
def test_ollama_native_streams(body: bytes, text: str, cuts: list[int]) -> None:
    items = run(NDJSONParser, split_at(body, cuts))
    assert kinds(items) == []
    objects = [json.loads(d) for d in datas(items)]
    assert "".join(o.get("response") or o.get("message", {}).get("content", "") for o in objects) == text
    assert [o["done"] for o in objects] == [False] * (len(objects) - 1) + [True]
    assert objects[-1]["done_reason"] == "stop"
    assert sniff_framing("application/x-ndjson", body[:64]) == sniff_framing(None, body[:64]) == "ndjson"


def gemini_array(name: str) -> tuple[bytes, list[str]]:
    """A corpus Gemini SSE capture's JSON objects as the elements of one array, as `:streamGenerateContent` without
    `alt=sse` sends them (`[`, the objects with `,` and a line end between them, `]`: the whitespace is a guess, no
    capture of that shape is in the corpus), and the objects' texts."""
    body = (CORPUS / name).read_bytes().decode()
    texts = [line[len("data: ") :] for line in body.split("\r\n") if line.startswith("data: ")]
    assert texts
    return ("[" + ",\r\n".join(texts) + "]").encode(), texts


GEMINI = sorted(p.name for p in CORPUS.glob("gemini-*.sse"))


@pytest.mark.parametrize("name", GEMINI)
@settings(max_examples=50, deadline=None)
@given(cuts=cut_lists)
def test_gemini_array_from_the_corpus(name: str, cuts: list[int]) -> None:
    body, texts = gemini_array(name)
    items = run(JSONArrayParser, split_at(body, cuts))
    assert datas(items) == texts and kinds(items) == []
    assert json.loads(body) == [json.loads(d) for d in datas(items)], "each element exactly as sent"
    assert sniff_framing("application/json; charset=UTF-8", body[:64]) == "json-array"


def test_the_gemini_corpus_is_there() -> None:
    assert len(GEMINI) >= 3


# -- sniff_framing ----------------------------------------------------------------------------------------------


def eventstream_prelude(total: int = 100, headers: int = 40, crc: int | None = None) -> bytes:
    head = struct.pack(">II", total, headers)
    return head + struct.pack(">I", zlib.crc32(head) if crc is None else crc) + b"\x0b:event-type"


SNIFF_CASES = [
    ("text/event-stream", b'{"a":1}\n', "sse"),
    ("Text/Event-Stream; charset=utf-8", b"", "sse"),
    ("application/x-ndjson", b"data: x\n\n", "ndjson"),
    ("application/jsonl", b"", "ndjson"),
    ("application/json-lines", b"", "ndjson"),
    ("application/jsonlines", b"", "ndjson"),
    ("application/ndjson", b"", "ndjson"),
    ("application/vnd.amazon.eventstream", b"", "eventstream"),
    ("application/json", b"[{", "json-array"),
    ("application/json; charset=UTF-8", b' \r\n[{"candidates"', "json-array"),
    ("application/json", b'{"model":"x"}\n', "ndjson"),
    (None, b"data: {}\n\n", "sse"),
    (None, b"event: delta\ndata: {}\n\n", "sse"),
    (None, b": keep-alive\n\n", "sse"),
    ("text/plain", b"id: 1\ndata: x\n\n", "sse"),
    (None, b'{"model":"llama3.2"', "ndjson"),
    (None, b'\xef\xbb\xbf{"a":1}\n', "ndjson"),
    (None, b"\n[", "json-array"),
    ("application/octet-stream", eventstream_prelude(), "eventstream"),
    (None, eventstream_prelude(), "eventstream"),
    (None, eventstream_prelude(crc=0), "sse"),
    (None, eventstream_prelude(total=8), "sse"),
    (None, eventstream_prelude(total=100, headers=90), "sse"),
    (None, eventstream_prelude(total=MESSAGE_LIMIT + 1), "sse"),
    (None, eventstream_prelude(total=MESSAGE_LIMIT, headers=(128 << 10) + 1), "sse"),
    (None, encode_message({":message-type": "event", ":event-type": "messageStart"}, b'{"role":"assistant"}'),
     "eventstream"),
    (None, b"", "sse"),
    (None, b"hello", "sse"),
]  # fmt: skip


@pytest.mark.parametrize(("content_type", "head", "framing"), SNIFF_CASES)
def test_sniff_framing(content_type: str | None, head: bytes, framing: str) -> None:
    assert sniff_framing(content_type, head) == framing
    assert framing in FRAMINGS
