"""Bytes to lines: an incremental CR / LF / CRLF splitter that never rescans.

WHATWG: "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED
(CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single U+000D
CARRIAGE RETURN (CR) character." A CR that ends one chunk is a line end at once; if
the next chunk starts with LF, that LF completes the same CRLF and starts no line.

Each byte is looked at once: finished lines are cut out of the chunk they end in, and
an unfinished line waits as a list of pieces joined only when its end arrives.
"""

from __future__ import annotations

__all__ = ["LineSplitter"]

_LF = 10


class LineSplitter:
    """Cuts a byte stream into lines, keeping the offset where each line starts."""

    def __init__(self) -> None:
        self._offset = 0  # stream offset of the next byte to arrive
        self._parts: list[bytes] = []  # pieces of the unfinished line
        self._partial_start = 0  # its offset, when _parts is not empty
        self._after_cr = False  # the last byte seen was a CR that ended a line
        self._held = False  # _parts may hold whole lines, kept by `hold`
        self.lf = 0
        """How many lines ended in LF alone."""
        self.crlf = 0
        self.cr = 0
        self.first_cr: int | None = None
        """Offset of the first lone CR line end."""
        self.first_crlf: int | None = None

    @property
    def offset(self) -> int:
        """How many bytes went in so far."""
        return self._offset

    @property
    def partial_start(self) -> int | None:
        """Offset where the unfinished line starts, or None when there is none."""
        return self._partial_start if self._parts else None

    @property
    def pending_start(self) -> int:
        """Offset of the bytes not yet cut into lines (the current offset when there are none)."""
        return self._partial_start if self._parts else self._offset

    @property
    def after_cr(self) -> bool:
        """The last byte was a CR ending a line: an LF next would belong to it."""
        return self._after_cr

    def absorb(self, chunk: bytes) -> int:
        """Take a chunk that ends no line (no CR, no LF, no CR pending): it joins the unfinished line.

        Returns 0, and takes nothing, when the chunk needs `feed`; 2 when it started the
        unfinished line; 1 otherwise. Two scans in C: the cheap way through the many small
        reads that end no line.
        """
        if self._after_cr or b"\n" in chunk or b"\r" in chunk:
            return 0
        if not chunk:
            return 1
        self._offset += len(chunk)
        if self._parts:
            self._parts.append(chunk)
            return 1
        self._partial_start = self._offset - len(chunk)
        self._parts = [chunk]
        return 2

    def pending(self) -> bytes:
        """The bytes not yet cut into lines (b"" when none): an unfinished line, or what `hold` kept."""
        if len(self._parts) > 1:
            self._parts = [b"".join(self._parts)]
        return self._parts[0] if self._parts else b""

    def hold(self, data: bytes) -> None:
        """Keep `data`, which starts a line and does not end in CR, uncut until more bytes come.

        The parser's fast path takes whole events only; what follows the last one waits here,
        so that the next chunk can start at an event's first byte again.
        """
        if data:
            self._partial_start = self._offset
            self._parts = [data]
            self._offset += len(data)
            self._held = b"\n" in data or b"\r" in data

    def skip(self, n: int, lf: int = 0, crlf: int = 0, first_crlf: int | None = None) -> None:
        """The caller consumed the pending bytes and `n` more, holding `lf` LF and `crlf` CRLF line ends."""
        self._parts = []
        self._held = False
        self._offset += n
        self.lf += lf
        self.crlf += crlf
        if self.first_crlf is None:
            self.first_crlf = first_crlf

    def feed(self, chunk: bytes) -> list[tuple[int, bytes]]:
        """Take the next bytes; return the lines they finish as (start offset, line without its end)."""
        if self._held:  # cut what `hold` kept, with the new bytes
            chunk = b"".join(self._parts) + chunk
            self._offset = self._partial_start
            self._parts = []
            self._held = False
        lines: list[tuple[int, bytes]] = []
        base = self._offset
        n = len(chunk)
        pos = 0
        if self._after_cr and n:
            self._after_cr = False
            if chunk[0] == _LF:
                pos = 1
                self._count_crlf(base - 1)
            else:
                self._count_cr(base - 1)
        # Two memchr scans, each moving forward only: linear, and far faster than a regex on long lines.
        find = chunk.find
        lf = find(b"\n", pos)
        cr = find(b"\r", pos)
        while lf >= 0 or cr >= 0:
            if cr < 0 or 0 <= lf < cr:
                s = lf
                e = s + 1
                self.lf += 1
                lf = find(b"\n", e)
            else:
                s = cr
                e = s + 1
                if e < n and chunk[e] == _LF:
                    e += 1
                    self._count_crlf(base + s)
                    lf = find(b"\n", e)
                elif e == n:
                    self._after_cr = True  # CR or CRLF: the next chunk tells
                else:
                    self._count_cr(base + s)
                cr = find(b"\r", e)
            if self._parts:
                self._parts.append(chunk[pos:s])
                lines.append((self._partial_start, b"".join(self._parts)))
                self._parts = []
            else:
                lines.append((base + pos, chunk[pos:s]))
            pos = e
        if pos < n:
            if not self._parts:
                self._partial_start = base + pos
            self._parts.append(chunk[pos:] if pos else chunk)
        self._offset = base + n
        return lines

    def close(self) -> tuple[int, bytes] | None:
        """End of stream: return the unfinished last line (start offset, bytes), or None.

        Call `feed(b"")` first when bytes may be held: it returns their whole lines.
        """
        if self._after_cr:
            self._after_cr = False
            self._count_cr(self._offset - 1)
        if not self._parts:
            return None
        rest = (self._partial_start, b"".join(self._parts))
        self._parts = []
        return rest

    def _count_cr(self, offset: int) -> None:
        self.cr += 1
        if self.first_cr is None:
            self.first_cr = offset

    def _count_crlf(self, offset: int) -> None:
        self.crlf += 1
        if self.first_crlf is None:
            self.first_crlf = offset
