"""Finding out what a file is and reading it as a capture: `load_capture`, `open_capture`, `parse_capture`.

An sse-capture/1 file is read line by line (`CaptureLines`); a HAR, curl trace or mitmproxy flow
file is imported (`interop.sniff`); any other file is read as a raw response body: no headers, no
timing, whatever its bytes (a body in UTF-16 or Latin-1 is read, and a warning says what is wrong
with it). A gzip- or zstd-compressed file is read decoded, incrementally. Only a file that is
plainly another format by its magic bytes (an image, an archive, a PDF, an executable, a
database) is refused. `load_capture` and `open_capture` are the functions of the core that touch
the file system.

This module sits above `interop` (it sniffs those formats) and below the checks and the edges.
"""

from __future__ import annotations

import dataclasses
import io
import math
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO, Self

from ._capture import Capture, CaptureLines, Chunk, End, is_capture_header, read_header_line
from ._decoding import zstd_reader
from ._errors import CaptureError
from ._limits import PIECE

__all__ = [
    "CaptureStream",
    "load_capture",
    "open_capture",
    "parse_capture",
    "raw_warnings",
    "read_file",
    "utf16_encoding",
]


def load_capture(path: str | os.PathLike[str]) -> Capture:
    """Read a capture file, or a raw event-stream body; "-" reads standard input."""
    with open_capture(path) as stream:
        return stream.load()


def open_capture(path: str | os.PathLike[str]) -> CaptureStream:
    """Open a capture to read its chunks one at a time, in memory that does not grow with the file.

    sse-capture/1 files and raw event-stream bodies (in 1 MiB pieces) are streamed; HAR, curl
    trace and mitmproxy flow files are read whole. "-" reads standard input (a FIFO works too).
    """
    name = os.fspath(path)
    if name == "-":
        return CaptureStream(sys.stdin.buffer, "<stdin>", None, owned=False)
    f = _open(name, "a capture file")  # closed by the stream
    try:
        size = os.fstat(f.fileno()).st_size if os.path.isfile(name) else None
    except OSError as exc:
        f.close()
        raise CaptureError(f"cannot read: {exc.strerror or exc}", path=name) from None
    return CaptureStream(f, name, size)


def read_file(path: str | os.PathLike[str], what: str = "a capture file") -> bytes:
    """The bytes of a file, whole ("-": standard input), or a CaptureError saying in a few words why not."""
    name = os.fspath(path)
    if name == "-":
        return sys.stdin.buffer.read()
    with _open(name, what) as f:
        try:
            return f.read()
        except OSError as exc:
            raise CaptureError(f"cannot read: {exc.strerror or exc}", path=name) from None


def _open(name: str, what: str) -> BinaryIO:
    """`name` opened to read bytes, or a CaptureError: no such file, a directory (not `what`), cannot read."""
    if os.path.isdir(name):
        raise CaptureError(f"is a directory, not {what}", path=name)
    try:
        return open(name, "rb")  # the caller closes it
    except FileNotFoundError:
        raise CaptureError("no such file", path=name) from None
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", path=name) from None


class CaptureStream:
    """A capture read while it is iterated: chunks are yielded, never kept.

        with open_capture("big.jsonl") as stream:
            stream.capture            # the header (request, response, ...) with no chunks
            for chunk in stream: ...  # once
            stream.capture            # now with its end and warnings as well

    `bytes_read` and `size` (both None for a pipe) say how far the reading got, for progress bars.
    """

    def __init__(self, f: BinaryIO, path: str, size: int | None, *, owned: bool = True) -> None:
        self._f = self._source = f
        self._owned = owned
        self.path = path
        self.size = size
        self._iterated = False
        try:
            self._f, self._decoders = _decompressed(f, path)
            first = self._f.readline(PIECE)
            self._pieces: Iterable[list[Chunk]]  # a block's chunks at a time
            if is_capture_header(first):
                first = read_header_line(self._f, first, path)  # a header line longer than a piece (a long prompt)
                lines = CaptureLines(first, path)
                self.capture = lines.head
                self._pieces = self._jsonl(lines)
            elif _maybe_imported(first):  # a HAR, a curl trace, a flow file, a JSON document: read whole
                whole = parse_capture(first + self._f.read(), path=path)
                self.capture = dataclasses.replace(whole, chunks=(), warnings=self._warnings(whole.warnings))
                self._pieces = in_blocks(whole.chunks)
            else:
                if not first:
                    problems = _problems(self._decoders)
                    raise CaptureError(problems[-1] if problems else "empty file: neither a capture nor an event stream",
                                       path=path)  # fmt: skip
                self._raw_notes = raw_warnings(first if len(first) >= _SAMPLE else first + _peek(self._f))
                self.capture = Capture(timed=False, raw=True, path=path, recorder="raw body", end=End(kind="complete"),
                                       warnings=self._warnings(self._raw_notes))  # fmt: skip
                self._pieces = self._raw(first)
        except OSError as exc:
            self.close()
            raise CaptureError(f"cannot read: {exc.strerror or exc}", path=path) from None
        except BaseException:
            self.close()
            raise

    def _warnings(self, more: Iterable[str] = ()) -> tuple[str, ...]:
        """What decoding noted (and found wrong, once read), then `more`."""
        return (*_decoding_notes(self._decoders), *more)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._source.close()

    def __iter__(self) -> Iterator[Chunk]:
        for block in self.blocks():
            yield from block

    def blocks(self) -> Iterator[list[Chunk]]:
        """The chunks as `iter` gives them, in lists (never empty) of those read together: a long capture's
        per-chunk work then runs in loops over lists. Either this or `iter`, once."""
        if self._iterated:
            raise RuntimeError("a CaptureStream is read once; open the capture again")
        self._iterated = True
        clock = _Clock()
        try:
            yield from clock.watch(self._pieces)
        except OSError as exc:
            raise CaptureError(f"cannot read: {exc.strerror or exc}", path=self.path) from None
        notes = clock.notes(self.capture)
        if notes:
            self.capture = dataclasses.replace(self.capture, warnings=(*self.capture.warnings, *notes))

    @property
    def bytes_read(self) -> int | None:
        """Bytes of the file read so far (None when that cannot be told, as for a pipe)."""
        if self.size is None:
            return None
        try:
            return self._source.tell()
        except OSError:
            return None

    def load(self) -> Capture:
        """The whole capture in memory."""
        chunks = tuple(self)
        return dataclasses.replace(self.capture, chunks=chunks)

    def _jsonl(self, lines: CaptureLines) -> Iterator[list[Chunk]]:
        yield from lines.blocks(self._f)
        self.capture = dataclasses.replace(self.capture, end=lines.end, warnings=self._warnings(lines.warnings))

    def _raw(self, first: bytes) -> Iterator[list[Chunk]]:
        piece = first + self._f.read(PIECE - len(first)) if len(first) < PIECE else first
        interactive = not self._decoders and _isatty(self._source)
        while piece:
            yield [Chunk(None, piece)]
            if interactive and len(piece) < PIECE:  # a short read was the end: a terminal's Ctrl-D comes once
                break
            piece = self._f.read(PIECE)
        if self._decoders:
            self.capture = dataclasses.replace(self.capture, warnings=self._warnings(self._raw_notes))


IN_BLOCK = 256
"""Chunks per block, at most, when a capture in memory is read in blocks (`in_blocks`)."""
BLOCK_BYTES = 1 << 16
"""Bytes per block, at most, but for a block of one chunk: a block's events are all parsed before any is
looked at, so a block of big chunks (a HAR's body in 1 MiB pieces) would hold all their events at once."""


def in_blocks(chunks: Sequence[Chunk]) -> Iterator[list[Chunk]]:
    """`chunks` in lists of at most IN_BLOCK chunks and BLOCK_BYTES bytes (one chunk alone may be bigger;
    none empty), as a capture file is read (a block is about one 64 KiB read of it)."""
    block: list[Chunk] = []
    size = 0
    for chunk in chunks:
        if block and (len(block) == IN_BLOCK or size + len(chunk.data) > BLOCK_BYTES):
            yield block
            block, size = [], 0
        block.append(chunk)
        size += len(chunk.data)
    if block:
        yield block


class _Clock:
    """Watches a capture's times as its chunks pass: one that is negative, or earlier than the one
    before it, is kept (the views show what was recorded) but said in a warning."""

    def __init__(self) -> None:
        self.negative = self.backwards = 0
        self.first_negative: tuple[int, float] | None = None
        self.first_backwards: tuple[int, float, float] | None = None
        self.last: float | None = None

    def watch(self, blocks: Iterable[list[Chunk]]) -> Iterator[list[Chunk]]:
        last = 0.0
        index = -1
        for block in blocks:
            ts = [chunk.t for chunk in block]
            if (None not in ts and math.isfinite(sum(ts)) and ts[0] >= 0.0 and ts[0] >= last  # type: ignore[arg-type, operator]
                    and ts == sorted(ts)):  # type: ignore[type-var]  # fmt: skip
                index += len(block)  # (the common block, told by C loops: finite times in order, none negative)
                last = self.last = ts[-1]  # type: ignore[assignment]
                yield block
                continue
            for chunk in block:
                index += 1
                t = chunk.t
                if t is not None:
                    if t < 0.0:
                        self.negative += 1
                        self.first_negative = self.first_negative or (index, t)
                    elif t < last:
                        self.backwards += 1
                        self.first_backwards = self.first_backwards or (index, t, last)
                    last = t
                    self.last = t
            yield block

    def notes(self, capture: Capture) -> list[str]:
        notes = []
        response_t = capture.response.t if capture.response is not None else None
        if response_t is not None and response_t < 0:
            notes.append(f"the response's time is negative (t={response_t:g} s): times are as recorded")
        if self.first_negative is not None:
            index, t = self.first_negative
            notes.append(f"{self.negative} chunk(s) with a negative time, the first #{index} at t={t:g} s: "
                         "times are as recorded")  # fmt: skip
        if self.first_backwards is not None:
            index, t, before = self.first_backwards
            notes.append(f"times go backwards {self.backwards} time(s), first at chunk #{index} (t={t:g} s after "
                         f"t={before:g} s): times are as recorded")  # fmt: skip
        end = capture.end
        if end is not None and end.t is not None and self.last is not None and end.t < self.last:
            notes.append(f"the end line's time (t={end.t:g} s) is before the last chunk's (t={self.last:g} s)")
        return notes


def _isatty(f: BinaryIO) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError, OSError):
        return False



def _maybe_imported(first: bytes) -> bool:
    """Whether a first line may open a file `parse_capture` reads whole: a HAR or other JSON document,
    a curl trace, a mitmproxy flow file. Anything else is a raw body, streamed."""
    line = first.lstrip()
    return line[:1] in (b"{", b"[") or bool(re.match(_TNETSTRING, first) or re.match(_CURL_TRACE, first))


def parse_capture(data: bytes, *, path: str | None = None) -> Capture:
    """A capture from the bytes of a capture file, of a file `interop` imports, or of a raw body
    (gzip- or zstd-compressed bytes are decoded first)."""
    f, decoders = _decompressed(io.BytesIO(data), path)
    if not decoders:
        return _parse(data, path)
    data = f.read()
    problems = _problems(decoders)
    if not data and problems:
        raise CaptureError(problems[-1], path=path)
    capture = _parse(data, path)
    return dataclasses.replace(capture, warnings=(*_decoding_notes(decoders), *capture.warnings))


def _parse(data: bytes, path: str | None) -> Capture:
    rest = io.BytesIO(data)  # shares the bytes, no copy
    first = rest.readline(PIECE)
    if is_capture_header(first):  # as `open_capture` reads it
        lines = CaptureLines(read_header_line(rest, first, path), path)
        chunks = tuple(lines.chunks(rest))
        return dataclasses.replace(lines.head, chunks=chunks, end=lines.end, warnings=tuple(lines.warnings))
    from .interop import sniff  # below this module; imported only when a file is not a capture (saves start-up)

    return sniff(data, path) or _parse_raw(data, path)


def _parse_raw(data: bytes, path: str | None) -> Capture:
    if not data:
        raise CaptureError("empty file: neither a capture nor an event stream", path=path)
    if data.lstrip()[:1] in (b"[", b"{") and _is_json(data):
        raise CaptureError(
            "a JSON document: neither an sse-capture/1 file (JSON Lines) nor a text/event-stream body",
            path=path,
        )
    return Capture(
        chunks=(Chunk(None, data),),
        end=End(kind="complete"),
        timed=False,
        raw=True,
        path=path,
        recorder="raw body",
        warnings=raw_warnings(data[:_SAMPLE]),
    )


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except RecursionError:  # nested deeper than Python parses: a JSON document all the same
        return True
    except ValueError:
        return False
    return True


# -- raw bodies: what they are, and what is wrong with them ----------------------------------

# Through re's own cache: compiled for a first line that opens no JSON document (never an sse-capture/1 file's)
_TNETSTRING = rb"\d{1,12}:"
_CURL_TRACE = rb"(?:\d\d:\d\d:\d\d\.\d{6} )?(?:== Info: |=> Send |<= Recv )"
_SAMPLE = 8192
"""Bytes of a raw body looked at to say what is wrong with its text."""
_MAGIC_BYTES = 512
_NESTED_ENCODINGS = 4
"""A gzip inside a gzip is decoded too, up to this many layers."""
_ENCODINGS = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))
_FORMATS = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a zip archive (or a file built on zip: docx, xlsx, jar, wheel)"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"%PDF-", "a PDF document"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x00asm", "a WebAssembly module"),
    (b"\xca\xfe\xba\xbe", "a Java class file or a Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O binary"),
    (b"\xce\xfa\xed\xfe", "a Mach-O binary"),
    (b"OggS\x00", "an Ogg media file"),
    (b"fLaC", "a FLAC audio file"),
    (b"PAR1", "a Parquet file"),
    (b"\x1a\x45\xdf\xa3", "a Matroska / WebM video"),
)
_RIFF = {b"WEBP": "a WebP image", b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}


def _sniff_magic(head: bytes, path: str | None) -> str | None:
    """The compression to undo ("gzip", "zstd") or None; raises CaptureError for another format."""
    for magic, encoding in _ENCODINGS:
        if head.startswith(magic):
            return encoding
    what = next((name for magic, name in _FORMATS if head.startswith(magic)), None)
    if what is None and head.startswith(b"RIFF"):
        what = _RIFF.get(head[8:12])
    if what is None and head.startswith(b"BZh") and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        what = "a bzip2 archive"
    if what is None and head[257:262] == b"ustar":
        what = "a tar archive"
    if what is None and head.startswith(b"ID3") and head[3:4] in (b"\x02", b"\x03", b"\x04"):
        what = "an MP3 audio file"
    if what is not None:
        raise CaptureError(f"{what}, not a capture or an event stream", path=path)
    return None


def _decompressed(f: BinaryIO, path: str | None) -> tuple[BinaryIO, tuple[_Decoded, ...]]:
    """`f` with its gzip or zstd layers (as many as _NESTED_ENCODINGS) undone as it is read, and
    their decoders, outermost first (none for a file that is not compressed)."""
    decoders: list[_Decoded] = []
    for _ in range(_NESTED_ENCODINGS):
        encoding = _sniff_magic(_peek(f), path)
        if encoding is None:
            break
        decoders.append(_Decoded(f, encoding, path))
        f = io.BufferedReader(decoders[-1])  # type: ignore[assignment]
    return f, tuple(decoders)


def _problems(decoders: Iterable[_Decoded]) -> list[str]:
    """What the decoders found wrong, once read (a cut-off or corrupt stream)."""
    return [d.problem for d in decoders if d.problem]


def _decoding_notes(decoders: Iterable[_Decoded]) -> list[str]:
    """A note per layer decoded, each followed by what it found wrong."""
    return [note for d in decoders for note in (f"{d.encoding}-compressed file: read decoded", d.problem) if note]


def _peek(f: BinaryIO) -> bytes:
    """The first bytes of `f`, left unread."""
    peek = getattr(f, "peek", None)
    if peek is not None:
        return bytes(peek(_MAGIC_BYTES)[:_MAGIC_BYTES])
    if f.seekable():
        at = f.tell()
        head = f.read(_MAGIC_BYTES)
        f.seek(at)
        return head
    return b""


def utf16_encoding(head: bytes) -> str | None:
    """"UTF-16LE" / "UTF-16BE" (or UTF-32) when the first bytes of a body are that rather than UTF-8:
    by its byte order mark, or by a NUL in every other byte of text."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32" + ("LE" if head[0] == 0xFF else "BE") + " (its byte order mark opens the body)"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16" + ("LE" if head[0] == 0xFF else "BE") + " (its byte order mark opens the body)"
    sample = head[:64] if len(head) >= 8 else b""
    sample = sample[: len(sample) // 2 * 2]
    if sample:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) == len(odd) and even.count(0) == 0:
            return "UTF-16LE (a NUL after every character)"
        if even.count(0) == len(even) and odd.count(0) == 0:
            return "UTF-16BE (a NUL before every character)"
    return None


def raw_warnings(head: bytes) -> tuple[str, ...]:
    """What is wrong with the text of a raw body, from its first bytes."""
    wide = utf16_encoding(head)
    if wide is not None:
        return (f"the body looks like {wide}: event streams are UTF-8, so no client reads events from it",)
    return ()


class _Decoded(io.RawIOBase):
    """A gzip or zstd stream decoded as it is read, at most a read's worth in memory (bombs stay small).

    A stream cut off before its end, or corrupt, reads as what decoded, and `problem` says why it stopped.
    """

    _IN = 1 << 16

    def __init__(self, f: BinaryIO, encoding: str, path: str | None) -> None:
        self._f = f
        self.encoding = encoding
        self.problem: str | None = None
        self._d: Any = zlib.decompressobj(wbits=31)
        self._zstd: Any = None
        self._zstd_error: type[Exception] = zlib.error
        if encoding == "zstd":
            try:
                self._zstd, self._zstd_error = zstd_reader(f)
            except ImportError:
                raise CaptureError(
                    "zstd-compressed data: reading it needs a zstd decoder",
                    path=path,
                    hint="pip install backports.zstd (or zstandard), or decompress it first (zstd -d)",
                ) from None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.problem is not None:
            return 0
        n = len(buffer)
        try:
            # read1: what has decoded, not a wait for n bytes (which a cut-off frame would turn into an error)
            data = self._zstd.read1(n) if self._zstd is not None else self._gzip(n)
        except (zlib.error, self._zstd_error) as exc:
            self.problem = f"the {self.encoding} data is corrupt ({exc}); what decoded before that is read"
            return 0
        except EOFError:  # the standard library's zstd reader on a cut-off frame
            self.problem = f"the {self.encoding} data is cut off before its end; what decoded is read"
            return 0
        buffer[: len(data)] = data
        return len(data)

    def _gzip(self, n: int) -> bytes:
        while True:
            d = self._d
            if d.eof:
                rest = d.unused_data or self._f.read(self._IN)
                if not rest:
                    return b""
                if not rest.startswith(b"\x1f\x8b"):  # gzip -d ignores zero padding; other bytes are worth a word
                    if rest.strip(b"\0"):
                        self.problem = "bytes after the end of the gzip data were ignored"
                    return b""
                d = self._d = zlib.decompressobj(wbits=31)  # another member follows
                data = d.decompress(rest, n)
            elif d.unconsumed_tail:
                data = d.decompress(d.unconsumed_tail, n)
            else:
                raw = self._f.read(self._IN)
                if not raw:
                    self.problem = "the gzip data is cut off before its end; what decoded is read"
                    return b""
                data = d.decompress(raw, n)
            if data:
                return data
