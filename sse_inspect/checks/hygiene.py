"""Findings about the capture file itself: a secret written into it."""

from __future__ import annotations

from collections.abc import Iterator

from .._analysis import Analysis, Observer
from .._capture import Chunk
from .._secrets import BodyScanner, header_secrets
from ._context import HEAD, Context
from ._model import Finding, Severity

__all__ = ["HygieneProbe"]


_BATCH = 1 << 16
"""Body bytes gathered before a search: one search per 64 KiB, not one per (often tiny) chunk."""


class HygieneProbe(Observer):
    """Searches the body for keys and tokens as it passes, 64 KiB at a time."""

    def __init__(self) -> None:
        self.scanner = BodyScanner()
        self.pending: list[bytes] = []
        self.size = 0
        self.head = b""
        """The first bytes of the body, to quote an error response (`HEAD` of them)."""

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        self.pending.append(chunk.data)
        self.size += len(chunk.data)
        if self.size >= _BATCH:
            self._scan()

    def _scan(self) -> None:
        body = b"".join(self.pending)
        if len(self.head) < HEAD:
            self.head += body[: HEAD - len(self.head)]
        self.scanner.feed(body)
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
        evidence = {"leaks": [{"where": k.where, "kind": k.kind, "offset": k.offset} for k in leaks[:100]]}
        message = f"{len(leaks)} secret(s) in the capture: {shown}"
        yield Finding(code="secret-in-capture", severity=Severity.ERROR, offset=offset, message=message,
                      evidence=evidence)  # fmt: skip
