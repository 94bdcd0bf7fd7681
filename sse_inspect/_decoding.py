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


class _Step(Protocol):
    def decode(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Zlib:
    def __init__(self, wbits: int) -> None:
        self._d: Any = zlib.decompressobj(wbits=wbits)
        self._deflate = wbits == 15  # "deflate" is zlib-wrapped by the RFC, raw by some servers

    def decode(self, data: bytes) -> bytes:
        try:
            return self._d.decompress(data)
        except zlib.error as exc:
            if self._deflate:
                self._deflate = False
                self._d = zlib.decompressobj(wbits=-15)
                return self.decode(data)
            raise ContentDecodingError(str(exc)) from None

    def flush(self) -> bytes:
        return self._d.flush()


class _Brotli:
    def __init__(self) -> None:
        import brotli  # type: ignore[import-not-found]

        self._d = brotli.Decompressor()
        self._error = brotli.error

    def decode(self, data: bytes) -> bytes:
        try:
            return self._d.process(data)
        except self._error as exc:
            raise ContentDecodingError(str(exc)) from None

    def flush(self) -> bytes:
        return b""


class _Zstd:
    def __init__(self) -> None:
        self._m = zstd_module()
        self._error = self._m.ZstdError
        self._d: Any = self._new()

    def _new(self) -> Any:
        if hasattr(self._m, "ZstdFile"):  # the standard library's API (PEP 784) and its backport
            return self._m.ZstdDecompressor()
        return self._m.ZstdDecompressor().decompressobj()

    def decode(self, data: bytes) -> bytes:
        out = []
        try:
            while data:  # a decompressor reads one frame: the next frame gets a new one
                if self._d.eof:
                    self._d = self._new()
                out.append(self._d.decompress(data))
                data = self._d.unused_data if self._d.eof else b""
        except self._error as exc:
            raise ContentDecodingError(str(exc)) from None
        return b"".join(out)

    def flush(self) -> bytes:
        return b""


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

    def decode(self, data: bytes) -> bytes:
        for step in self._steps:
            data = step.decode(data)
        return data

    def flush(self) -> bytes:
        data = b""
        for step in self._steps:
            data = step.decode(data) + step.flush()
        return data


def body_chunks(
    capture: Capture, notices: list[Notice] | None = None, chunks: Iterable[Chunk] | None = None
) -> Iterator[Chunk]:
    """The capture's body chunks (or `chunks` of it) with the Content-Encoding undone, each at its arrival time.

    A body that stops decoding ends there, with a "decode-error" notice added to `notices`.
    """
    wire = capture.chunks if chunks is None else chunks
    try:
        decoder = BodyDecoder(capture.content_encoding)
    except ContentDecodingError as exc:
        _note(notices, f"body left as sent: {exc}", 0, None)
        yield from wire
        return
    if decoder.identity:
        yield from wire
        return
    offset = 0
    t = None
    try:
        for chunk in wire:
            t = chunk.t
            data = decoder.decode(chunk.data)
            offset += len(chunk.data)
            if data:
                yield Chunk(chunk.t, data)
        tail = decoder.flush()
        if tail:
            yield Chunk(t, tail)
    except ContentDecodingError as exc:
        _note(notices, f"the {capture.content_encoding} body stops decoding at wire byte {offset}: {exc}", offset, t)


def is_identity(capture: Capture) -> bool:
    """Whether the capture's body is sent as it is (no Content-Encoding, or identity)."""
    try:
        return BodyDecoder(capture.content_encoding).identity
    except ContentDecodingError:
        return False


def _note(notices: list[Notice] | None, message: str, offset: int, t: float | None) -> None:
    if notices is not None:
        notices.append(Notice(kind="decode-error", message=message, offset=offset, t=t))
