"""Undo a response's Content-Encoding chunk by chunk, so compressed streams keep their timing.

A recorder stores the bytes as they crossed the wire; mitmproxy does not decode a streamed
body. gzip and deflate come from zlib; br and zstd from the `brotli` and `zstandard`
packages when they are installed (mitmproxy depends on both).
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol

__all__ = ["BodyDecoder", "ContentDecodingError"]


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
        import zstandard  # type: ignore[import-not-found]

        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._error = zstandard.ZstdError

    def decode(self, data: bytes) -> bytes:
        try:
            return self._d.decompress(data)
        except self._error as exc:
            raise ContentDecodingError(str(exc)) from None

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
