"""The NDJSON accelerator against the rules: `NDJSONParser()` and `NDJSONParser(accelerate=False)` give the same
items (offsets, times, chunk numbers, notices) and the same stats at every cut, on hostile bodies too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_inspect import Event
from sse_inspect._ndjson import NDJSONParser
from sse_inspect._ndjson_accel import Accelerator

from .helpers import split_at

ACCELERATED: dict[str, Callable[[int], NDJSONParser]] = {
    "as shipped": lambda limit: NDJSONParser(limit),
    "small slices": lambda limit: NDJSONParser(limit, accelerate=Accelerator(small=0, slice=40)),
    "any chunk": lambda limit: NDJSONParser(limit, accelerate=Accelerator(small=0)),
}
LIMIT = NDJSONParser.LINE_LIMIT


def run(parser: NDJSONParser, chunks: list[bytes], lazily: bool = False) -> dict[str, object]:
    """Everything observable: the items (chunk i at t=i, so that a wrong time or chunk shows), then the stats."""
    items = []
    for i, chunk in enumerate(chunks):
        items += list(parser.feed_iter(chunk, float(i))) if lazily else parser.feed(chunk, float(i))
    items += parser.close()
    return {"items": items, "stats": parser.stats}


def both(kind: str, chunks: list[bytes], limit: int = LIMIT, lazily: bool = False) -> tuple[object, object]:
    return run(NDJSONParser(limit, accelerate=False), chunks, lazily), run(ACCELERATED[kind](limit), chunks, lazily)


# Lines as servers send them, and lines the rules have something to say about.
plain = st.builds(lambda s, n: json.dumps({"content": s, "n": n}, ensure_ascii=False).encode() + b"\n",
                  st.text(st.characters(blacklist_categories=("Cs",)), max_size=12), st.integers(0, 999))
"""A JSON object a line, any text in it (raw NEL, LS and PS too: json.dumps escapes none of them)."""
hostile = st.sampled_from([
    b"\n", b"  \n", b"\t\r\n", b'{"a":1}\r\n', b'{"a":1}\r', b'{"a":\r1}\n', b"\r", b"\r\n", b'[1,2]\n',
    b' {"a":1}\n', b'x{"a":1}\n', b'"str"\n', b'{"a":"\xff\xfe"}\n', b'{"a":"caf\xc3"}\n', b"\xc3",
    b'{"a":"\xc2\x85"}\n', b'{"a":"\xe2\x80\xa8"}\n', b'{"a":"\xe2\x80\xa9"}\n', b'{"a":"\x0b\x0c"}\n',
    b'{"a":"\x1c\x1d\x1e"}\n', b'{"a":"\xc2"}\n', b"\xef\xbb\xbf", b'{"a":"\x85"}\n', b"{}", b"[",
    b'{"a":"\xe2\x80\xa8{"}\n', b'{"a":"\xc2\x85[1]"}\n', b'{"a":"\x0c{}"}\n', b'{"a":"\r{"}\n',
])  # fmt: skip
"""Blank and whitespace lines, CR and CRLF, lines that open with no `{` or `[`, bytes that are not UTF-8 (a
character cut by the body's end too), what `str.splitlines()` breaks at (then a `{` or `[`, so that the
piece after it opens as a JSON line would), a BOM's bytes mid-stream, a line without its LF."""
long_lines = st.integers(10, 90).map(lambda n: b'{"x":"' + b"y" * n + b'"}\n')
lines = st.lists(st.one_of(plain, plain, plain, hostile, long_lines), max_size=30).map(b"".join)
bodies = st.one_of(lines, st.tuples(st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\n"]), lines).map(b"".join))


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=400, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 3000), max_size=30))
@example(body=b'{"a":1}\n{"b":2}\n', cuts=[])
@example(body=b'{"a":1}\n\n{"b":2}\n', cuts=[3, 3])
@example(body=b'{"a":1}\r\n{"b":2}\n{"c":3}', cuts=[9])
@example(body=b'\xef\xbb\xbf{"a":1}\n{"b":"\xc2\x85"}\n', cuts=[1, 2])
def test_both_ways_give_the_same_items(kind: str, body: bytes, cuts: list[int]) -> None:
    """Any cut (empty chunks too, from repeated or out-of-range cuts): items, offsets, times, notices, stats."""
    spec, accelerated = both(kind, split_at(body, cuts))
    assert accelerated == spec


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=100, deadline=None)
@given(body=bodies)
def test_both_ways_agree_cut_at_every_byte(kind: str, body: bytes) -> None:
    spec, accelerated = both(kind, [body[i : i + 1] for i in range(len(body))])
    assert accelerated == spec


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=300, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 3000), max_size=10), limit=st.integers(0, 100))
@example(body=b'{"x":"yyyy"}\n{"x":"yyyyy"}\n{"x":"yyy"}\r\n', cuts=[], limit=12)
def test_both_ways_drop_the_same_long_lines(kind: str, body: bytes, cuts: list[int], limit: int) -> None:
    """Lines near a small limit, shorter, as long as it, a byte over (with and without a CR before the LF)."""
    spec, accelerated = both(kind, split_at(body, cuts), limit)
    assert accelerated == spec


@pytest.mark.parametrize("kind", ACCELERATED)
@settings(max_examples=100, deadline=None)
@given(body=bodies, cuts=st.lists(st.integers(0, 3000), max_size=4))
def test_both_ways_agree_through_feed_iter(kind: str, body: bytes, cuts: list[int]) -> None:
    spec, accelerated = both(kind, split_at(body, cuts), lazily=True)
    assert accelerated == spec


def test_a_big_read_of_plain_lines_is_taken_by_the_accelerator() -> None:
    """The accelerator does take plain lines (else the tests above would hold the rules to themselves): each
    slice's lines come out of one `take`, and none through the rules' `_line`."""
    body = b"".join(b'{"n":%d,"text":"caf\xc3\xa9 \xf0\x9f\x99\x82"}\n' % i for i in range(2000))
    p = NDJSONParser()
    taken = []
    take = p._accel.take  # type: ignore[union-attr]

    def spy(*args: object) -> tuple[int, int]:
        before = len(args[-1])  # type: ignore[arg-type]
        got = take(*args)  # type: ignore[arg-type]
        taken.append(len(args[-1]) - before)  # type: ignore[arg-type]
        return got

    p._accel.take = spy  # type: ignore[union-attr, method-assign]
    p._line = None  # type: ignore[assignment, method-assign]  # the rules' line reader: not called
    items = p.feed(body, 0.0) + p.close()
    assert len(items) == 2000 and all(isinstance(x, Event) for x in items)
    assert sum(taken) == 2000 and len(taken) == 1


@pytest.mark.parametrize("line", [b"\n", b" \n", b'{"a":1}\r\n', b'x\n', b'{"a":"\xff"}\n', b'{"a":"\xc2\x85"}\n',
                                  b'{"a":"\x1e"}\n'])  # fmt: skip
def test_the_accelerator_declines_a_slice_holding_a_line_the_rules_look_at(line: bytes) -> None:
    body = b'{"a":1}\n' * 10 + line + b'{"b":2}\n' * 10
    p = NDJSONParser(accelerate=Accelerator(small=0))
    out: list = []
    assert p._accel.take(p, body, 0, 0, out) == (0, len(body)) and out == []  # type: ignore[union-attr]


def test_accelerate_false_has_no_accelerator_nor_does_the_environment_switch() -> None:
    assert NDJSONParser(accelerate=False)._accel is None
    assert isinstance(NDJSONParser(accelerate=True)._accel, Accelerator)
    code = "from sse_inspect._ndjson import NDJSONParser; print(NDJSONParser()._accel is None)"
    for value, off in (("1", "True"), ("", "False"), ("0", "False")):
        env = {**os.environ, "SSE_INSPECT_NO_ACCEL": value}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == off, value
