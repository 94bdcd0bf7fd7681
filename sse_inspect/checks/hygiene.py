"""Findings about the capture file itself: a secret written into it (checked on every capture)."""

from __future__ import annotations

from collections.abc import Iterator

from .._analysis import Analysis
from .._capture import Chunk
from .._secrets import BodyScanner, header_secrets
from ._check import Check, Context
from ._model import Finding, Thresholds
from .evidence import Leak, Leaks

__all__ = ["HygieneCheck"]


_BATCH = 1 << 16
"""Body bytes gathered before a search: one search per 64 KiB, not one per (often tiny) chunk."""


class HygieneCheck(Check):
    """Searches the headers, and the body as it passes, 64 KiB at a time, for keys and tokens."""

    family = "hygiene"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.scanner = BodyScanner()
        self.pending: list[bytes] = []
        self.size = 0

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        self.pending.append(chunk.data)
        self.size += len(chunk.data)
        if self.size >= _BATCH:
            self._scan()

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        datas = [chunk.data for _, chunk, _ in chunks]
        self.pending += datas
        self.size += sum(map(len, datas))
        if self.size >= _BATCH:  # (a scan's pieces can be a block longer: the scanner finds a token across pieces)
            self._scan()

    def _scan(self) -> None:
        self.scanner.feed(b"".join(self.pending))
        self.pending.clear()
        self.size = 0

    def close(self, analysis: Analysis) -> None:
        self._scan()

    def findings(self, ctx: Context) -> Iterator[Finding]:
        leaks = header_secrets(ctx.capture) + self.scanner.close()
        if not leaks:
            return
        shown = "; ".join(str(leak) for leak in leaks[:3]) + (f"; and {len(leaks) - 3} more" if len(leaks) > 3 else "")
        offset = next((leak.offset for leak in leaks if leak.where == "response body"), None)
        evidence = Leaks(tuple(Leak(k.where, k.kind, k.offset) for k in leaks[:100]))
        yield self.found("secret-in-capture", f"{len(leaks)} secret(s) in the capture: {shown}", offset=offset,
                         evidence=evidence)  # fmt: skip
