"""Re-cut a stream's bytes into other chunks: the same bytes must always give the same events.

Specs: `original`, `whole`, `bytes:N`, `event` (or `item`: after each item of any framing), `line`, `crlf`,
`utf8`, `random:SEED`.
`crlf` cuts between every CR and the LF after it, `utf8` inside every multi-byte character:
the two places where naive clients break. A new chunk
arrives when the original chunk holding its last byte arrived: re-cutting never makes
a byte available earlier than it was.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._capture import Chunk
from ._errors import RechunkSpecError
from ._events import Event
from ._framing import BodyFramer

if TYPE_CHECKING:
    import random

__all__ = [
    "RECHUNK_FORMS",
    "RECHUNK_MATRIX",
    "RechunkSpec",
    "ReplayChunks",
    "iter_rechunk",
    "parse_rechunk_spec",
    "rechunk",
    "replay_chunks",
]

RECHUNK_FORMS = "original, whole, bytes:N, event, line, crlf, utf8, random:SEED"
RECHUNK_MATRIX = (
    "original", "whole", "event", "line", "bytes:1", "bytes:7", "crlf", "utf8", "random:1", "random:2", "random:3",
)  # fmt: skip
"""The standard cuts: whole, per event, per line, 1 and 7 bytes, inside every CRLF and every
multi-byte character, and three random seeds. A correct client gives the same answer for all
(the pytest plugin's `sse_rechunk` runs a test once per cut, `certify` runs a client under each)."""
_RANDOM_BITS = 8
"""Random cuts are 1 to 2**8 bytes, log-uniform: as many one- and two-byte cuts (which split
characters and CRLFs) as cuts of a few hundred bytes (which hold whole events)."""
# The cut patterns go through re's own cache, compiled by the one spec that uses them: every command
# imports this module (for `--rechunk`), and few re-cut.
_LINE_END = rb"\r\n|\r|\n"
_CRLF = rb"\r(?=\n)"
_UTF8_LEAD = rb"[\xc2-\xf4](?=[\x80-\xbf])"


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
    if kind == "item" and not sep:  # the `event` cut by its name for the framings without events (NDJSON, ...)
        kind = "event"
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


class ReplayChunks:
    """The chunks a replay sends, cut afresh each time they are iterated (by every client of a
    server): a re-cut into one-byte pieces holds the body once, shared, never a `Chunk` per piece."""

    def __init__(self, chunks: Sequence[Chunk], spec: RechunkSpec | None, *, framing: str | None = None) -> None:
        self.chunks = chunks
        self.framing = framing
        self.spec = None if spec is None or spec.kind == "original" else spec
        self._cutting: tuple[bytes, list[int]] | None = None

    def __iter__(self) -> Iterator[Chunk]:
        if self.spec is None:
            return iter(self.chunks)
        if self._cutting is None:
            self._cutting = b"".join(c.data for c in self.chunks), _ends(self.chunks)
        body, ends = self._cutting
        return _cut(self.chunks, ends, body, _cuts(body, self.spec, self.framing))


def replay_chunks(chunks: Sequence[Chunk], spec: str | RechunkSpec | None) -> ReplayChunks:
    """The chunks a replay sends: `chunks` re-cut as `spec` (text or parsed) says, or as they are."""
    if isinstance(spec, str):
        spec = parse_rechunk_spec(spec)
    return ReplayChunks(chunks, spec)


def rechunk(chunks: Sequence[Chunk], spec: RechunkSpec) -> list[Chunk]:
    """The same bytes as `chunks`, cut as `spec` says."""
    return list(iter_rechunk(chunks, spec))


def iter_rechunk(chunks: Sequence[Chunk], spec: RechunkSpec, *, framing: str | None = None) -> Iterator[Chunk]:
    """The same bytes as `chunks`, cut as `spec` says, one chunk at a time: the body is held once
    (joined), the cuts and the new chunks are made as they are asked for. `framing` says how the body is
    framed for the `event` cut (one of `_ndjson.FRAMINGS`; None: its first bytes tell, `_framing.BodyFramer`)."""
    if spec.kind == "original":
        yield from chunks
        return
    body = b"".join(c.data for c in chunks)
    yield from _cut(chunks, _ends(chunks), body, _cuts(body, spec, framing))


def _cuts(body: bytes, spec: RechunkSpec, framing: str | None = None) -> Iterator[int]:
    """Where to cut `body`, in increasing order (some may be 0 or past its end)."""
    if spec.kind == "bytes":
        return iter(range(spec.n, len(body), spec.n))
    if spec.kind == "line":
        return (m.end() for m in re.finditer(_LINE_END, body))
    if spec.kind == "event":
        return _event_cuts(body, framing)
    if spec.kind == "crlf":
        return (m.end() for m in re.finditer(_CRLF, body))
    if spec.kind == "utf8":
        return (m.end() for m in re.finditer(_UTF8_LEAD, body))
    if spec.kind == "random":
        import random  # loaded for this spec only: every command imports this module

        return _random_cuts(len(body), random.Random(spec.n))
    return iter(())  # whole


def _random_cuts(size: int, rng: random.Random) -> Iterator[int]:
    pos = 0
    while True:
        pos += int(2 ** rng.uniform(0, _RANDOM_BITS))
        if pos >= size:
            return
        yield pos


def _event_cuts(body: bytes, framing: str | None) -> Iterator[int]:
    """Cut after each item: an event's blank line (after the whole CRLF, never between CR and LF), an NDJSON
    line's LF, an array element's comma, an event stream message's CRC."""
    parser = BodyFramer(framing=framing)
    yield from _after_events(body, parser.feed_iter(body))
    yield from _after_events(body, parser.close())  # called once the feed is read through


def _after_events(body: bytes, items: Iterable[object]) -> Iterator[int]:
    for item in items:
        if isinstance(item, Event):
            end = item.end
            yield end + 1 if body[end - 1 : end + 1] == b"\r\n" else end


def _ends(chunks: Sequence[Chunk]) -> list[int]:
    """The offset just past each chunk."""
    return list(itertools.accumulate(len(c.data) for c in chunks))


def _cut(chunks: Sequence[Chunk], ends: list[int], body: bytes, cuts: Iterable[int]) -> Iterator[Chunk]:
    """`body` (the chunks joined) cut at `cuts`, each piece at the time of the original chunk holding
    its last byte (`ends`: the offset just past each chunk); none when `body` is empty."""
    if not body:
        return
    from bisect import bisect_left  # (here: a command that does not re-cut starts without it)

    start = 0
    for stop in itertools.chain((c for c in cuts if 0 < c < len(body)), (len(body),)):
        if stop <= start:
            continue
        holder = chunks[bisect_left(ends, stop)]  # the chunk holding byte stop-1
        yield Chunk(holder.t, body[start:stop])
        start = stop
