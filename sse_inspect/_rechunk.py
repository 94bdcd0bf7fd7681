"""Re-cut a stream's bytes into other chunks: the same bytes must always give the same events.

Specs: `original`, `whole`, `bytes:N`, `event`, `line`, `crlf`, `utf8`, `random:SEED`.
`crlf` cuts between every CR and the LF after it, `utf8` inside every multi-byte character:
the two places where naive clients break. A new chunk
arrives when the original chunk holding its last byte arrived: re-cutting never makes
a byte available earlier than it was.
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._capture import Chunk
from ._errors import RechunkSpecError
from ._events import Event
from ._parser import EventStreamParser

__all__ = ["RECHUNK_FORMS", "RechunkSpec", "parse_rechunk_spec", "rechunk", "replay_chunks"]

RECHUNK_FORMS = "original, whole, bytes:N, event, line, crlf, utf8, random:SEED"
_RANDOM_BITS = 8
"""Random cuts are 1 to 2**8 bytes, log-uniform: as many one- and two-byte cuts (which split
characters and CRLFs) as cuts of a few hundred bytes (which hold whole events)."""
_LINE_END = re.compile(rb"\r\n|\r|\n")
_CRLF = re.compile(rb"\r(?=\n)")
_UTF8_LEAD = re.compile(rb"[\xc2-\xf4](?=[\x80-\xbf])")


@dataclass(frozen=True, slots=True)
class RechunkSpec:
    """A way to cut: `kind` is one of original/whole/bytes/event/line/crlf/utf8/random; `n` the size or seed."""

    kind: str
    n: int = 0

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}" if self.kind in ("bytes", "random") else self.kind


def parse_rechunk_spec(text: str) -> RechunkSpec:
    """Parse a spec such as "bytes:16"; raises RechunkSpecError naming the forms it knows."""
    kind, sep, arg = text.strip().partition(":")
    kind = kind.lower()
    if kind in ("original", "whole", "event", "line", "crlf", "utf8") and not sep:
        return RechunkSpec(kind)
    if kind in ("bytes", "random") and sep:
        try:
            n = int(arg)
        except ValueError:
            n = -1
        if kind == "random" and n >= 0 or kind == "bytes" and n >= 1:
            return RechunkSpec(kind, n)
        what = "a size of at least 1" if kind == "bytes" else "a whole-number seed"
        raise RechunkSpecError(f"bad rechunk spec {text!r}: {kind}: takes {what}", hint=f"forms: {RECHUNK_FORMS}")
    raise RechunkSpecError(f"unknown rechunk spec {text!r}; use one of: {RECHUNK_FORMS}", hint=f"forms: {RECHUNK_FORMS}")


def replay_chunks(chunks: Sequence[Chunk], spec: str | RechunkSpec | None) -> tuple[Chunk, ...]:
    """The chunks a replay sends: `chunks` re-cut as `spec` (text or parsed) says, or as they are."""
    if isinstance(spec, str):
        spec = parse_rechunk_spec(spec)
    return tuple(rechunk(chunks, spec) if spec else chunks)


def rechunk(chunks: Sequence[Chunk], spec: RechunkSpec) -> list[Chunk]:
    """The same bytes as `chunks`, cut as `spec` says."""
    if spec.kind == "original":
        return list(chunks)
    body = b"".join(c.data for c in chunks)
    if not body:
        return []
    if spec.kind == "whole":
        cuts: list[int] = []
    elif spec.kind == "bytes":
        cuts = list(range(spec.n, len(body), spec.n))
    elif spec.kind == "line":
        cuts = [m.end() for m in _LINE_END.finditer(body)]
    elif spec.kind == "event":
        cuts = _event_cuts(body)
    elif spec.kind == "crlf":
        cuts = [m.end() for m in _CRLF.finditer(body)]
    elif spec.kind == "utf8":
        cuts = [m.end() for m in _UTF8_LEAD.finditer(body)]
    else:
        rng = random.Random(spec.n)
        cuts, pos = [], 0
        while True:
            pos += int(2 ** rng.uniform(0, _RANDOM_BITS))
            if pos >= len(body):
                break
            cuts.append(pos)
    return _cut(chunks, body, cuts)


def _event_cuts(body: bytes) -> list[int]:
    """Cut after each event's blank line (after the whole CRLF, never between CR and LF)."""
    parser = EventStreamParser()
    ends = [item.end for item in parser.feed_iter(body) if isinstance(item, Event)]
    ends += [item.end for item in parser.close() if isinstance(item, Event)]
    return [end + 1 if body[end - 1 : end + 1] == b"\r\n" else end for end in ends]


def _cut(chunks: Sequence[Chunk], body: bytes, cuts: list[int]) -> list[Chunk]:
    ends, total = [], 0  # ends[i]: offset just past original chunk i
    for c in chunks:
        total += len(c.data)
        ends.append(total)
    out = []
    start = 0
    for stop in [*(c for c in cuts if 0 < c < len(body)), len(body)]:
        if stop <= start:
            continue
        holder = chunks[bisect.bisect_left(ends, stop)]  # the chunk holding byte stop-1
        out.append(Chunk(holder.t, body[start:stop]))
        start = stop
    return out
