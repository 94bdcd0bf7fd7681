"""`_fastjson`: the compiled reader (msgspec) and the standard one give the same values and the same errors,
on event payloads (`loads`) and on capture chunk lines (`CaptureLines.chunks`), and switching it off works."""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import _fastjson
from sse_inspect import _capture
from sse_inspect._capture import CaptureLines, Chunk
from sse_inspect._errors import CaptureError

pytest.importorskip("msgspec")


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    """The compiled reader back as it was after each test (the tests here switch it on and off)."""
    was = _fastjson.accelerated()
    yield
    _fastjson.use_accel(was)
    if was:
        _fastjson.accelerate()


def _both(function, *args):  # type: ignore[no-untyped-def]
    """What `function(*args)` gives (a value, or its exception's type) the standard way, then the compiled way."""
    results = []
    for on in (False, True):
        _fastjson.use_accel(on)
        if on:
            assert _fastjson.accelerate()
        try:
            results.append(("value", function(*args)))
        except (ValueError, RecursionError, CaptureError) as exc:
            results.append(("error", type(exc)))
    return results


def _same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (1 != 1.0 here; -0.0 != 0.0; NaN == NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b


TRICKY = [
    '{"a": 100000000000000000000000000000000000000000000000}',  # a big int stays an int
    '{"a": 18446744073709551616, "b": -9223372036854775809}',
    '{"a": 1E5, "b": -0.0, "c": 1e-400, "d": 1.7976931348623157e308, "e": 0.1e1, "f": 5e-324}',
    '{"a": 1e400}',  # json: inf; msgspec refuses
    '{"a": 1, "a": 2.5}',  # duplicate keys: the last wins
    '"\\ud800"',  # a lone surrogate
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    "NaN",
    '{"a": -Infinity}',
    "[1] x",
    ' {"a": 1} ',
    "\ufeff{}",
    '"a\x01b"',
    "",
    " ",
    "[1,]",
    '"\\u12"',
    '{"a": "\\u0000"}',
    "01",
    "1.",
    "\ud800",  # a lone surrogate in the text itself
    '{"a": "\udcff"}',
]


@pytest.mark.parametrize("text", TRICKY)
def test_loads_tricky(text: str) -> None:
    plain, fast = _both(_fastjson.loads, text)
    assert plain[0] == fast[0] and _same(plain[1], fast[1]), (plain, fast)
    if plain[0] == "value":
        assert _same(plain[1], json.loads(text))


@pytest.mark.parametrize("depth", [10, 47, 48, 49, 200, 900, 990, 993, 996, 1000, 3000])
def test_loads_nested_as_json_does(depth: int) -> None:
    """Near the recursion limit the two readers differ by a few levels: such documents go json's way."""
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        plain, fast = _both(_fastjson.loads, text)
        assert plain[0] == fast[0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_loads_any_value(value: object, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)  # NaN and Infinity as Python writes them
    plain, fast = _both(_fastjson.loads, text)
    assert plain[0] == fast[0] == "value"
    assert _same(plain[1], fast[1])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('{}[]",:0123456789.eE+- \\ntrufalsNI\ud800u'), max_size=24))
def test_loads_any_text(text: str) -> None:
    """Any text, mostly not JSON: the same value or the same kind of error."""
    plain, fast = _both(_fastjson.loads, text)
    assert plain[0] == fast[0]
    assert plain[0] == "error" or _same(plain[1], fast[1])


def _read(lines: bytes, block: int | None = None) -> tuple[list[Chunk], object, list[str]]:
    if block is not None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_capture, "BLOCK", block)
            return _read(lines)
    head = CaptureLines(b'{"format": "sse-capture/1"}\n', "x.jsonl")
    chunks = list(head.chunks(io.BytesIO(lines)))
    return chunks, head.end, head.warnings


def _read_both(lines: bytes, block: int | None = None):  # type: ignore[no-untyped-def]
    return _both(_read, lines, block)


def _chunks_same(a: list[Chunk], b: list[Chunk]) -> bool:
    return len(a) == len(b) and all(_same(x.t, y.t) and x.data == y.data for x, y in zip(a, b, strict=True))


LINES = [
    b'{"t": 1, "text": "a"}\n',  # an int time
    b'{"t": null, "text": "a"}\n',
    b'{"t": 1.5, "text": "\\ud800"}\n',  # a lone surrogate, as the capture format allows
    b'{"t": 1.5, "text": "\\ud83d\\ude00 \xce\xbb"}\n',
    b'{"t": 1e999, "text": "a"}\n',
    b'{"t": 1.0, "t": 2.0, "text": "a"}\n',
    b'{"t": 1.0, "text": "a", "text": "b"}\n',
    b'{"t": 1.0, "text": "\xff"}\n',  # invalid UTF-8
    b'{"t": 1.0, "text": "\xed\xa0\x80"}\n',  # a surrogate encoded in UTF-8
    b'{"t": 1.0, "text": "a", "end": "complete"}\n',
    b'{"t": 1.0, "text": "a", "b64": "YQ=="}\n',
    b'{"t": NaN, "text": "a"}\n',
    b'{"t": 100000000000000000000000000000000000000000000000, "text": "a"}\n',
    b'{"t": true, "text": "a"}\n',
    b'{"t": -0.0, "text": "\\u0000"}\n',
    b'{"t": 1.0, "text": 5}\n',
    b'{"t": 1.0}\n',
    b'  {"t": 1.0, "text": "a"}  \r\n',
    b'{"t": 1.0, "text": "a"} {"t": 2.0}\n',
    b'{"t": 1.0, "text": "a"} {"t": 2.0, "text": "b"}\n',  # two values on one line
    b'{"t": 1.0, "text": "a"}{"t": 2.0, "text": "b"}\n',
    b'{"t": 1.0,\n "text": "a"}\n',  # one value over two lines
    b'{"t": 1.0, "text": "a"} {"t": 2.0,\n"text": "b"}\n{"t": 3.0,\n "text": "c"}\n',
    b'{"t": 1.0,\r "text": "a"}\n',  # a CR inside a line is whitespace, not a line end
    b'{"t": 1.0, "text": "a"}, {"t": 2.0, "text": "b"}\n{"t": 3.0\n, "text": "c"}\n',  # one more, one fewer
    b'{"t": 1.0, "text": "a}\nb"}\n',  # a raw LF in a string
    b"\n",
    b'{"t": 2.5e-3, "text": "data: x\\n\\n"}\n',
    b'{"end": "complete", "t": 3.0}\n{"t": 4.0, "text": "late"}\n',
    b'{"t": 1.0, "text": "cut',  # a half-written last line
    b'{"t": 1.0, "text": "no newline at the end"}',
]


@pytest.mark.parametrize("block", [None, 16, 50])
@pytest.mark.parametrize("line", LINES)
def test_chunk_lines_tricky(line: bytes, block: int | None) -> None:
    good = b'{"t": 0.5, "text": "data: a\\n\\n"}\n'
    plain, fast = _read_both(good + line + good, block)
    assert plain[0] == fast[0], (plain, fast)
    if plain[0] == "value":
        assert _chunks_same(plain[1][0], fast[1][0]) and plain[1][1:] == fast[1][1:]
    else:
        assert plain[1] == fast[1]


finite = st.floats(allow_nan=False, allow_infinity=False)
times = st.one_of(st.none(), finite, st.integers(min_value=-(10**30), max_value=10**30))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(times, st.text(max_size=12), st.booleans()), max_size=6), st.booleans(),
       st.sampled_from([None, 1, 7, 40, 100]))  # fmt: skip
def test_chunk_lines_any(rows: list[tuple[object, str, bool]], cut_last: bool, block: int | None) -> None:
    """Lines written any way json writes them (ints, None, any text with lone surrogates, escaped or
    not), perhaps the last cut: the same chunks, end and warnings both ways."""
    lines = []
    for t, text, ascii_only in rows:
        try:
            body = json.dumps({"t": t, "text": text}, ensure_ascii=ascii_only)
        except ValueError:
            continue
        lines.append(body.encode("utf-8", "surrogatepass") + b"\n")
    data = b"".join(lines)
    if cut_last and data:
        data = data[: len(data) // 2]
    plain, fast = _read_both(data, block)
    assert plain[0] == fast[0]
    if plain[0] == "value":
        assert _chunks_same(plain[1][0], fast[1][0]) and plain[1][1:] == fast[1][1:]
    unblocked = _read_both(data)[0]  # the block size changes nothing
    assert unblocked[0] == plain[0]
    if plain[0] == "value":
        assert _chunks_same(unblocked[1][0], plain[1][0]) and unblocked[1][1:] == plain[1][1:]


def test_switch_off_by_environment() -> None:
    """SSE_INSPECT_NO_ACCEL=1: the compiled reader is never loaded."""
    import subprocess

    code = "from sse_inspect import _fastjson as f; print(f.accelerate(), f.accelerated())"
    out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "SSE_INSPECT_NO_ACCEL": "1"},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.split() == ["False", "False"]
    out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "SSE_INSPECT_NO_ACCEL": ""},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.split() == ["True", "True"]


def test_long_capture_accelerates() -> None:
    """Reading a capture of more than ACCELERATE_AFTER lines loads the compiled reader; the chunks are
    those of the standard way."""
    _fastjson.use_accel(False)
    _fastjson.use_accel(True)  # on, not loaded yet
    assert not _fastjson.accelerated()
    n = _fastjson.ACCELERATE_AFTER * 2
    body = b"".join(b'{"t": %d.5, "text": "data: %d\\n\\n"}\n' % (i, i) for i in range(n))
    chunks, end, warnings = _read(body)
    assert _fastjson.accelerated()
    assert [c.data for c in chunks] == [b"data: %d\n\n" % i for i in range(n)]
    assert [c.t for c in chunks] == [i + 0.5 for i in range(n)]
    assert end is None and warnings == []
