"""Undo a response's Content-Encoding chunk by chunk, so compressed streams keep their timing.

A recorder stores the bytes as they crossed the wire; mitmproxy does not decode a streamed
body. gzip and deflate come from zlib; br from the `brotli` package and zstd from the first
of the standard library's `compression.zstd` (Python 3.14), its backport `backports.zstd`
(mitmproxy 12 depends on it) and `zstandard` (mitmproxy 11 does) that is installed.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any, BinaryIO, Protocol

from ._capture import Capture, Chunk
from ._events import Notice
from ._limits import BOMB_FLOOR, BOMB_RATIO, PIECE

__all__ = ["BodyDecoder", "ContentDecodingError", "body_chunks", "is_identity", "zstd_module", "zstd_reader"]

_ZSTD_MODULES = ("compression.zstd", "backports.zstd", "zstandard")


def zstd_module() -> ModuleType:
    """The zstd implementation at hand (see the module's docstring); ImportError when there is none."""
    for name in _ZSTD_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("no zstd decoder: pip install backports.zstd (or zstandard)")


def zstd_reader(f: BinaryIO) -> tuple[Any, type[Exception]]:
    """A file object reading `f` decoded, across frames, and the error it raises on corrupt data."""
    module = zstd_module()
    if hasattr(module, "ZstdFile"):  # the standard library's API (PEP 784) and its backport
        return module.ZstdFile(f, mode="rb"), module.ZstdError
    reader = module.ZstdDecompressor().stream_reader(f, read_across_frames=True, closefd=False)
    return reader, module.ZstdError


class ContentDecodingError(ValueError):
    """The body does not decode as its Content-Encoding says."""


_WIRE_PIECE = 1 << 16
"""Wire bytes given to the decoder at a time, so that what expanded how much is known closely."""


class _Step(Protocol):
    def decode(self, data: bytes) -> Iterator[bytes]:
        """The bytes `data` decodes to, in pieces of at most PIECE bytes."""
        ...

    def flush(self) -> bytes: ...


class _Zlib:
    def __init__(self, wbits: int) -> None:
        self._d: Any = zlib.decompressobj(wbits=wbits)
        self._deflate = wbits == 15  # "deflate" is zlib-wrapped by the RFC, raw by some servers

    def decode(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = self._d.decompress(data, PIECE)
            except zlib.error as exc:
                if self._deflate:
                    self._deflate = False
                    self._d = zlib.decompressobj(wbits=-15)
                    continue
                raise ContentDecodingError(str(exc)) from None
            self._deflate = False
            if out:
                yield out
            data = self._d.unconsumed_tail
            if not data and len(out) < PIECE:  # (a full piece may leave output inside zlib: ask again)
                return

    def flush(self) -> bytes:
        return self._d.flush()


class _Brotli:
    """brotli >= 1.2 bounds each call's output (to about twice the limit asked); older releases decode all that
    the input allows, so the input goes in at a few bytes a time (one byte of brotli can stand for megabytes)."""

    _SMALL_INPUT = 16

    def __init__(self) -> None:
        import brotli  # type: ignore[import-not-found]

        self._d = brotli.Decompressor()
        self._error = brotli.error
        self._bounded = hasattr(self._d, "can_accept_more_data")

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            if self._bounded:  # the limit stops the output buffer's growth, past which it may still go: cut it
                out = self._d.process(data, output_buffer_limit=PIECE)
                while out:  # more may wait: empty input asks for it
                    yield from _cut(out)
                    out = self._d.process(b"", output_buffer_limit=PIECE)
                return
            for i in range(0, len(data), self._SMALL_INPUT):
                out = self._d.process(data[i : i + self._SMALL_INPUT])
                yield from _cut(out)
        except self._error as exc:
            raise ContentDecodingError(str(exc)) from None

    def flush(self) -> bytes:
        return b""


class _Zstd:
    """The standard library's API (and its backport) bounds each call's output; `zstandard`'s decompressobj
    does not, so there the input goes in at a few hundred bytes a time (a zstd block, 128 KiB decoded at most,
    takes four bytes or more)."""

    _SMALL_INPUT = 256

    def __init__(self) -> None:
        self._m = zstd_module()
        self._error = self._m.ZstdError
        self._bounded = hasattr(self._m, "ZstdFile")  # the standard library's API (PEP 784) and its backport
        self._d: Any = self._new()

    def _new(self) -> Any:
        if self._bounded:
            return self._m.ZstdDecompressor()
        return self._m.ZstdDecompressor().decompressobj()

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            if self._bounded:
                yield from self._bounded_decode(data)
            else:
                for i in range(0, len(data), self._SMALL_INPUT):
                    yield from _cut(self._unbounded_decode(data[i : i + self._SMALL_INPUT]))
        except self._error as exc:
            raise ContentDecodingError(str(exc)) from None

    def _bounded_decode(self, data: bytes) -> Iterator[bytes]:
        while True:  # a decompressor reads one frame: the next frame gets a new one
            if self._d.eof:
                if not data:
                    return
                self._d = self._new()
            out = self._d.decompress(data, PIECE)
            if out:
                yield out
            if self._d.eof:
                data = self._d.unused_data
            elif self._d.needs_input:
                return
            else:
                data = b""

    def _unbounded_decode(self, data: bytes) -> bytes:
        out = []
        while data:  # a decompressor reads one frame: the next frame gets a new one
            if self._d.eof:
                self._d = self._new()
            out.append(self._d.decompress(data))
            data = self._d.unused_data if self._d.eof else b""
        return b"".join(out)

    def flush(self) -> bytes:
        return b""


def _cut(data: bytes) -> Iterator[bytes]:
    """`data` in pieces of at most PIECE bytes."""
    if len(data) <= PIECE:
        if data:
            yield data
        return
    view = memoryview(data)
    for i in range(0, len(data), PIECE):
        yield bytes(view[i : i + PIECE])


def _step(name: str) -> _Step:
    if name in ("gzip", "x-gzip"):
        return _Zlib(31)
    if name == "deflate":
        return _Zlib(15)
    try:
        if name == "br":
            return _Brotli()
        if name == "zstd":
            return _Zstd()
    except ImportError:
        raise ContentDecodingError(f"decoding {name!r} needs the package that provides it") from None
    raise ContentDecodingError(f"unknown content encoding {name!r}")


class BodyDecoder:
    """Decodes a body incrementally by its Content-Encoding header (e.g. "gzip", "br", "gzip, br")."""

    def __init__(self, content_encoding: str | None) -> None:
        names = [n.strip().lower() for n in (content_encoding or "").split(",")]
        # Encodings are listed in the order they were applied, so they are undone in reverse.
        self._steps = [_step(n) for n in reversed(names) if n and n != "identity"]

    @property
    def identity(self) -> bool:
        return not self._steps

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """What `data` decodes to, in pieces of at most PIECE bytes, made as they are taken."""
        return self._through(0, data)

    def _through(self, first: int, data: bytes) -> Iterator[bytes]:
        if first == len(self._steps):
            if data:
                yield data
            return
        for piece in self._steps[first].decode(data):
            yield from self._through(first + 1, piece)

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def flush(self) -> bytes:
        data = b""
        for step in self._steps:
            data = b"".join(step.decode(data)) + step.flush()
        return data


def body_chunks(
    capture: Capture, notices: list[Notice] | None = None, chunks: Iterable[Chunk] | None = None
) -> Iterator[Chunk]:
    """The capture's body chunks (or `chunks` of it) with the Content-Encoding undone, each at its arrival time.

    A big chunk decodes to pieces of at most PIECE bytes, each at the chunk's time. A body that stops
    decoding ends there, with a "decode-error" notice added to `notices`; one that expands more than
    BOMB_RATIO times its wire size (past BOMB_FLOOR decoded bytes) is cut there, with a "decode-bomb" notice.
    Either way the rest of the wire chunks is read, undecoded.
    """
    wire = capture.chunks if chunks is None else chunks
    try:
        decoder = BodyDecoder(capture.content_encoding)
    except ContentDecodingError as exc:
        _note(notices, "decode-error", f"body left as sent: {exc}", 0, None)
        yield from wire
        return
    if decoder.identity:
        yield from wire
        return
    wire = iter(wire)
    offset = decoded = 0
    t = None
    try:
        for chunk in wire:
            t = chunk.t
            for i in range(0, len(chunk.data), _WIRE_PIECE):
                data = chunk.data[i : i + _WIRE_PIECE]
                read = offset + len(data)  # wire bytes given to the decoder so far
                for piece in decoder.pieces(data):
                    decoded += len(piece)
                    yield Chunk(chunk.t, piece)
                    if decoded > BOMB_FLOOR and decoded > BOMB_RATIO * read:
                        _note(notices, "decode-bomb", f"the {capture.content_encoding} body expands "
                              f"{decoded // read}x ({decoded >> 20} MiB from {read} wire bytes): decoding "
                              f"stopped there", read, t)  # fmt: skip
                        _drain(wire)
                        return
                offset = read
        tail = decoder.flush()
        if tail:
            yield Chunk(t, tail)
    except ContentDecodingError as exc:
        _note(notices, "decode-error", f"the {capture.content_encoding} body stops decoding at wire byte {offset}: "
              f"{exc}", offset, t)  # fmt: skip
        _drain(wire)


def _drain(wire: Iterator[Chunk]) -> None:
    """Read the rest of the wire chunks undecoded: a capture read as it is loaded gets to its end (its end line,
    its chunk count)."""
    for _ in wire:
        pass


def is_identity(capture: Capture) -> bool:
    """Whether the capture's body is sent as it is (no Content-Encoding, or identity)."""
    try:
        return BodyDecoder(capture.content_encoding).identity
    except ContentDecodingError:
        return False


def _note(notices: list[Notice] | None, kind: str, message: str, offset: int, t: float | None) -> None:
    if notices is not None:
        notices.append(Notice(kind=kind, message=message, offset=offset, t=t))
