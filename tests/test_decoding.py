"""Content-Encoding is undone chunk by chunk, each decoded piece at its chunk's time."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import pytest

from sse_inspect import Capture, Chunk, End, Notice, Response, _decoding, analyze
from sse_inspect._decoding import PIECE, BodyDecoder, ContentDecodingError, body_chunks

EVENTS = b"".join(b'data: {"n": %d}\n\n' % i for i in range(50))


def gzip_stream(parts: list[bytes]) -> list[bytes]:
    """gzip the parts with a sync flush after each: what compression middleware sends."""
    z = zlib.compressobj(wbits=31)
    out = [z.compress(p) + z.flush(zlib.Z_SYNC_FLUSH) for p in parts]
    out[-1] += z.flush()
    return out


def capture_of(wire: list[bytes], encoding: str) -> Capture:
    return Capture(
        chunks=tuple(Chunk(float(i), w) for i, w in enumerate(wire)),
        response=Response(headers=(("Content-Type", "text/event-stream"), ("Content-Encoding", encoding))),
        end=End(kind="complete", t=float(len(wire))),
    )


def test_gzip_keeps_timing() -> None:
    parts = [EVENTS[:300], EVENTS[300:600], EVENTS[600:]]
    capture = capture_of(gzip_stream(parts), "gzip")
    decoded = list(body_chunks(capture))
    assert b"".join(c.data for c in decoded) == EVENTS
    assert [c.t for c in decoded] == [0.0, 1.0, 2.0]
    analysis = analyze(capture)
    assert len(analysis.events) == 50
    assert analysis.timing.bytes < analysis.timing.decoded_bytes


@pytest.mark.parametrize("wbits", [15, -15], ids=["zlib-wrapped", "raw"])
def test_deflate_zlib_wrapped_or_raw(wbits: int) -> None:
    z = zlib.compressobj(wbits=wbits)
    wire = z.compress(EVENTS) + z.flush()
    d = BodyDecoder("deflate")
    assert d.decode(wire[:10]) + d.decode(wire[10:]) + d.flush() == EVENTS


def test_identity_is_skipped() -> None:
    assert BodyDecoder("identity").identity
    d = BodyDecoder("gzip, identity")
    assert d.decode(gzip.compress(EVENTS)) + d.flush() == EVENTS


def test_stacked_encodings_are_undone_in_reverse() -> None:
    wire = zlib.compress(gzip.compress(EVENTS))
    d = BodyDecoder("gzip, deflate")
    assert d.decode(wire) + d.flush() == EVENTS


def test_brotli_when_installed() -> None:
    brotli = pytest.importorskip("brotli")
    d = BodyDecoder("br")
    assert d.decode(brotli.compress(EVENTS)) + d.flush() == EVENTS


def test_corrupt_gzip_keeps_what_decoded_and_says_where() -> None:
    wire = gzip_stream([EVENTS[:400], EVENTS[400:]])
    wire[1] = b"\x00garbage" + wire[1]
    analysis = analyze(capture_of(wire, "gzip"))
    assert 0 < len(analysis.events) < 50
    (notice,) = [n for n in analysis.notices if n.kind == "decode-error"]
    assert "stops decoding" in notice.message


def test_unknown_encoding_is_left_as_sent() -> None:
    analysis = analyze(capture_of([EVENTS], "snappy"))
    assert len(analysis.events) == 50
    assert "unknown content encoding 'snappy'" in analysis.notices[0].message
    with pytest.raises(ContentDecodingError):
        BodyDecoder("snappy")


def zstd_frames(parts: list[bytes]) -> list[bytes]:
    """One zstd frame per part, by the implementation installed (zstandard, or backports.zstd / the
    standard library's `compression.zstd`): a server flushing a frame per event."""
    from sse_inspect._decoding import zstd_module

    module = zstd_module()
    if hasattr(module, "ZstdFile"):
        return [module.compress(p) for p in parts]
    return [module.ZstdCompressor().compress(p) for p in parts]


@pytest.mark.parametrize("cut", [1, 7, 64, 10_000])
def test_zstd_frames_decode_at_any_cut(cut: int) -> None:
    """Content-Encoding: zstd on both stacks (mitmproxy 11 brings zstandard, 12 backports.zstd): frame
    after frame, cut anywhere, the events come out whole."""
    wire = b"".join(zstd_frames([EVENTS[:300], EVENTS[300:600], EVENTS[600:]]))
    decoder = BodyDecoder("zstd")
    out = b"".join(decoder.decode(wire[i : i + cut]) for i in range(0, len(wire), cut)) + decoder.flush()
    assert out == EVENTS


def test_corrupt_zstd_is_a_decoding_error() -> None:
    with pytest.raises(ContentDecodingError):
        BodyDecoder("zstd").decode(b"\x28\xb5\x2f\xfd" + b"\xff" * 32)


# -- bounded decoding: hostile bodies ---------------------------------------------------------------------------


def _compressed(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, compresslevel=1)
    if encoding == "br":
        brotli = pytest.importorskip("brotli")
        return bytes(brotli.compress(data, quality=1))
    from sse_inspect._decoding import zstd_module

    module = zstd_module()
    if hasattr(module, "compress"):
        return bytes(module.compress(data))
    return bytes(module.ZstdCompressor().compress(data))


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_a_big_chunk_decodes_in_bounded_pieces(encoding: str) -> None:
    """One small wire chunk that decodes to 5 MiB comes out in pieces of at most PIECE bytes, all of it, at the
    chunk's time."""
    body = EVENTS * (5 * (1 << 20) // len(EVENTS))
    capture = capture_of([_compressed(encoding, body)], encoding)
    pieces = list(body_chunks(capture))
    assert max(len(c.data) for c in pieces) <= PIECE
    assert len(pieces) >= 5
    assert {c.t for c in pieces} == {0.0}
    assert b"".join(c.data for c in pieces) == body


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_a_bomb_stops_decoding_with_a_notice(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past BOMB_FLOOR decoded bytes (made small here), a body expanding more than BOMB_RATIO times stops
    decoding; the rest of the wire chunks is still read (a capture loaded as it is read gets to its end)."""
    monkeypatch.setattr(_decoding, "BOMB_FLOOR", 4 << 20)
    wire = _compressed(encoding, bytes(64 << 20))
    assert len(wire) * _decoding.BOMB_RATIO < 64 << 20
    chunks = [wire[i : i + 1000] for i in range(0, len(wire), 1000)] + [b"after"]
    read: list[Chunk] = []

    def reading() -> Iterator[Chunk]:
        for chunk in capture.chunks:
            read.append(chunk)
            yield chunk

    notices: list[Notice] = []
    capture = capture_of(chunks, encoding)
    decoded = sum(len(c.data) for c in body_chunks(capture, notices, reading()))
    assert (4 << 20) < decoded <= (4 << 20) + PIECE
    assert len(read) == len(chunks)
    (notice,) = notices
    assert notice.kind == "decode-bomb"
    assert f"the {encoding} body expands" in notice.message and "decoding stopped" in notice.message


def test_a_real_stream_is_no_bomb() -> None:
    """An LLM stream (repetitive JSON chunks) compresses some 10-30 times: far from the bomb ratio."""
    body = b"".join(
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":'
        b'[{"index":0,"delta":{"content":" w%d"},"finish_reason":null}]}\n\n' % i
        for i in range(400_000)
    )
    notices: list[Notice] = []
    decoded = b"".join(c.data for c in body_chunks(capture_of(gzip_stream([body]), "gzip"), notices))
    assert len(decoded) > _decoding.BOMB_FLOOR
    assert decoded == body and notices == []
