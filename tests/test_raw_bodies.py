"""Raw bodies are read whatever their bytes, and say what is wrong with them (issue 15, part 3).

Each body is read as a raw file (the CLI, `load_capture`, `open_capture`, `parse_capture`) and as the
same bytes inside an sse-capture/1 file: the events must be the same. Files that are plainly another
format are refused in one line; gzip and zstd are decoded as they are read.
"""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_inspect import (
    CaptureError,
    CaptureStream,
    analyze,
    capture_from_body,
    dump_capture,
    load_capture,
    open_capture,
    parse_capture,
)
from sse_inspect.cli import cli

OPENAI = (b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
          b'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\ndata: [DONE]\n\n')  # fmt: skip

# id, body, the warning the raw read must give (None: none), the check code that must be found
BODIES = [
    ("utf-16le-bom", "data: héllo\n\n".encode("utf-16"), "UTF-16LE", "utf-16"),
    ("utf-16be-bom", b"\xfe\xff" + "data: héllo\n\n".encode("utf-16-be"), "UTF-16BE", "utf-16"),
    ("utf-16le-no-bom", "data: hello there\n\n".encode("utf-16-le"), "UTF-16LE", "utf-16"),
    ("latin-1-byte", b"data: caf\xe9\n\ndata: ok\n\n", None, "invalid-utf8"),
    ("nul-in-comment", b": keep\x00alive\ndata: x\n\n", None, None),
    ("nul-in-data", b"data: a\x00b\n\n", None, None),
    ("partial-bom", b"\xef\xbbdata: x\n\ndata: y\n\n", None, "invalid-utf8"),
    ("bom-alone", b"\xef\xbb\xbf", None, "incomplete-event"),
    ("cr-only", b"data: a\rdata: b\r\rdata: c\r\r", None, "cr-line-endings"),
    ("openai", OPENAI, None, None),
]
IDS = [b[0] for b in BODIES]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, body: bytes) -> tuple[Path, Path]:
    """The body as a raw file, and the same bytes inside a capture."""
    raw = tmp_path / "body.sse"
    raw.write_bytes(body)
    inside = tmp_path / "inside.jsonl"
    inside.write_text(dump_capture(capture_from_body(body)))
    return raw, inside


def events_json(path: Path) -> list[dict[str, object]]:
    code, out, err = run("events", "--json", str(path))
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(("body", "warning", "code"), [b[1:] for b in BODIES], ids=IDS)
def test_cli_reads_the_raw_body_as_the_capture_does(body: bytes, warning: str | None, code: str | None,
                                                    tmp_path: Path) -> None:  # fmt: skip
    raw, inside = write(tmp_path, body)
    from_raw, from_capture = events_json(raw), events_json(inside)
    assert from_raw == from_capture
    assert [e["data"] for e in from_raw] == [e.data for e in analyze(parse_capture(body)).events]

    status, out, err = run("check", "--json", "--fail-on", "never", str(raw))
    assert status == 0, err
    found = {f["code"] for f in json.loads(out)["captures"][0]["findings"]}
    if code is not None:
        assert code in found
    assert ("utf-16" in found) == (code == "utf-16")

    status, out, err = run("show", str(raw))
    assert status == 0, err
    assert "Traceback" not in err
    if warning is not None:
        assert f"looks like {warning}" in out + err


@pytest.mark.parametrize(("body", "warning"), [b[1:3] for b in BODIES], ids=IDS)
def test_library_reads_the_raw_body_as_the_capture_does(body: bytes, warning: str | None, tmp_path: Path) -> None:
    raw, inside = write(tmp_path, body)
    loaded = load_capture(raw)
    assert loaded.raw and loaded.body == body
    assert parse_capture(body).body == body
    with open_capture(raw) as stream:
        assert b"".join(c.data for c in stream) == body
        warnings = stream.capture.warnings
    assert warnings == loaded.warnings == parse_capture(body).warnings
    if warning is None:
        assert warnings == ()
    else:
        assert len(warnings) == 1 and f"looks like {warning}" in warnings[0]
    assert analyze(loaded).events == analyze(load_capture(inside)).events


MAGIC = [
    ("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "a PNG image"),
    ("jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "a JPEG image"),
    ("gif", b"GIF89a\x01\x00\x01\x00", "a GIF image"),
    ("zip", b"PK\x03\x04\x14\x00\x00\x00", "a zip archive"),
    ("pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF document"),
    ("elf", b"\x7fELF\x02\x01\x01\x00", "an ELF executable"),
    ("sqlite", b"SQLite format 3\x00\x10\x00", "an SQLite database"),
    ("xz", b"\xfd7zXZ\x00\x00\x04", "an xz archive"),
    ("tar", b"data.txt".ljust(257, b"\x00") + b"ustar\x0000", "a tar archive"),
]


@pytest.mark.parametrize(("data", "what"), [m[1:] for m in MAGIC], ids=[m[0] for m in MAGIC])
def test_other_formats_are_refused_in_one_line(data: bytes, what: str, tmp_path: Path) -> None:
    path = tmp_path / "file.sse"
    path.write_bytes(data + b"\n" * 10)
    for command in ("events", "check", "show"):
        code, out, err = run(command, str(path))
        assert code == 2
        assert out == "" or command == "check"  # check lists the capture as unreadable in its table
        assert len(err.strip().splitlines()) == 1
        assert what in err and "not a capture or an event stream" in err
        assert "gzip" not in err
    with pytest.raises(CaptureError, match=what):
        load_capture(path)
    with pytest.raises(CaptureError, match=what):
        parse_capture(path.read_bytes())


def test_an_empty_file_stays_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.sse"
    path.write_bytes(b"")
    code, out, err = run("events", "--json", str(path))
    assert code == 2 and out == "" and "empty file" in err


def test_gzip_body_is_read_decoded_with_a_note(tmp_path: Path) -> None:
    raw, inside = write(tmp_path, OPENAI)
    packed = tmp_path / "body.sse.gz"
    packed.write_bytes(gzip.compress(OPENAI))
    assert events_json(packed) == events_json(inside)
    capture = load_capture(packed)
    assert capture.body == OPENAI
    assert capture.warnings == ("gzip-compressed file: read decoded",)
    code, out, _ = run("text", str(packed))
    assert code == 0 and out == "Hello\n"


def test_gzip_of_a_capture_file_and_of_several_members(tmp_path: Path) -> None:
    inside = dump_capture(capture_from_body([(0.1, OPENAI[:40]), (0.2, OPENAI[40:])])).encode()
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(inside[:50]) + gzip.compress(inside[50:]))  # `cat a.gz b.gz`
    capture = load_capture(packed)
    assert not capture.raw and [c.t for c in capture.chunks] == [0.1, 0.2] and capture.body == OPENAI


def test_a_cut_gzip_keeps_what_decoded_and_says_so(tmp_path: Path) -> None:
    """curl -N stopped with ^C leaves a gzip without its end: what arrived is still worth reading."""
    z = zlib.compressobj(wbits=31)
    wire = z.compress(OPENAI) + z.flush(zlib.Z_SYNC_FLUSH)  # all the bytes, no end marker
    path = tmp_path / "cut.sse"
    path.write_bytes(wire)
    capture = load_capture(path)
    assert capture.body == OPENAI
    assert capture.warnings == ("gzip-compressed file: read decoded",
                                "the gzip data is cut off before its end; what decoded is read")  # fmt: skip
    assert parse_capture(wire).warnings == capture.warnings
    code, out, err = run("show", str(path))
    assert code == 0 and "cut off before its end" in out + err


def zstd_frames(*parts: bytes) -> bytes:
    """`parts` compressed as one zstd frame each, by whichever zstd implementation is installed."""
    from sse_inspect._decoding import zstd_module

    module = zstd_module()
    if hasattr(module, "ZstdFile"):
        return b"".join(module.compress(p) for p in parts)
    return b"".join(module.ZstdCompressor().compress(p) for p in parts)


def test_zstd_body_is_read_decoded(tmp_path: Path) -> None:
    """zstd from the implementation each stack has (mitmproxy 11 brings zstandard, 12 backports.zstd),
    across frames, whole and streamed."""
    path = tmp_path / "body.sse.zst"
    half = len(OPENAI) // 2
    path.write_bytes(zstd_frames(OPENAI[:half], OPENAI[half:]))
    capture = load_capture(path)
    assert capture.body == OPENAI and capture.warnings == ("zstd-compressed file: read decoded",)
    with open_capture(path) as stream:
        assert b"".join(c.data for c in stream) == OPENAI


def test_zstd_cut_off_reads_what_decoded(tmp_path: Path) -> None:
    """A zstd file cut inside its second frame reads its first frame whole; where the implementation
    tells a cut (the standard library's API, backports.zstd) it says so."""
    from sse_inspect._decoding import zstd_module

    half = len(OPENAI) // 2
    first, second = zstd_frames(OPENAI[:half]), zstd_frames(OPENAI[half:])
    path = tmp_path / "body.sse.zst"
    path.write_bytes(first + second[: len(second) // 2])
    capture = load_capture(path)
    assert capture.body.startswith(OPENAI[:half]) and OPENAI.startswith(capture.body)
    if hasattr(zstd_module(), "ZstdFile"):
        assert "the zstd data is cut off before its end; what decoded is read" in capture.warnings


def test_gzip_is_decoded_in_flat_memory(tmp_path: Path) -> None:
    """A 64 MiB body that gzips to about 64 KiB: streaming it must not hold it (nor a bomb)."""
    event = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    size = 64 << 20
    z = zlib.compressobj(9, wbits=31)
    path = tmp_path / "big.sse.gz"
    with path.open("wb") as f:
        block = event * (1 << 14)
        for _ in range(size // len(block)):
            f.write(z.compress(block))
        f.write(z.flush())
    assert path.stat().st_size < size // 100
    tracemalloc.start()
    try:
        total = 0
        with open_capture(path) as stream:
            for chunk in stream:
                total += len(chunk.data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == size // len(block) * len(block)
    assert peak < total // 8  # a few 1 MiB pieces, never the body


PIECES = [b"data", b"event", b"id", b"retry", b":", b" ", b"x", b"\xc3\xa9", b"\xe9", b"\x00", b"\xff\xfe", b"\xfe\xff",
          b"\xef\xbb", b"\xef\xbb\xbf", b"\r", b"\n", b"\r\n", b"{", b"[DONE]", b"\x80"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map(b"".join))
def test_any_raw_body_reads_as_the_same_bytes_inside_a_capture(body: bytes) -> None:
    """Whatever the bytes, a raw body is refused only as a JSON document, and else reads the same
    events, by `parse_capture` and by the streamed reader, as inside a capture."""
    inside = analyze(capture_from_body(body)).events
    try:
        whole = parse_capture(body)
    except CaptureError as exc:
        assert "a JSON document" in str(exc)
        return
    f = io.BufferedReader(io.BytesIO(body))  # type: ignore[arg-type]
    with CaptureStream(f, "<body>", len(body)) as stream:
        streamed = stream.load()
    assert whole.body == streamed.body == body
    assert analyze(whole).events == analyze(streamed).events == inside
    assert whole.warnings == streamed.warnings
