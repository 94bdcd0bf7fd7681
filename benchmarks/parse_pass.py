"""The analysis pass's parse step alone: a capture's chunks, in the blocks they are read in, through the parser.

    python -m benchmarks.parse_pass /work/bench/openai-50mb.jsonl /work/bench/anthropic-50mb.jsonl
    python -m benchmarks.parse_pass --runs 7 CAPTURE...

(from the repository root.) Not a test: it prints a table and never fails on a slow result.

Each capture is read in two ways of blocking: the blocks `open_capture(...).blocks()` gives (a file read's
lines: "as read"), and lists of up to 256 chunks and 64 KiB (`_loading.in_blocks`, a capture in memory).

Two ways, on the same blocks, their runs interleaved (so that a busy machine slows both alike), each the
median of --runs runs, gc.collect() before each, the CPU time of the parse alone (time.process_time: on a
shared machine, waiting for a core is no cost of ours):

  per chunk   `parser.feed(chunk.data, chunk.t)` for each chunk, in a comprehension per block (what
              `_analysis.parse_blocks` did before `feed_block`)
  by block    `_analysis.parse_blocks`, which hands each block to `parser.feed_block`

The blocks are read (and the capture's JSON lines decoded) before timing. Both ways' items are compared,
item for item, once, before timing: a difference stops the run.

Then (unless --no-shapes) the same on made-up blocks of 256 chunks, 400 blocks, of the shapes `feed_block`
cannot take, or only in part, beside the one it is made for: what those cost against `feed` alone.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import time
from collections.abc import Callable, Iterator

from sse_inspect._analysis import Parsed, parse_blocks
from sse_inspect._capture import Chunk
from sse_inspect._loading import in_blocks, open_capture
from sse_inspect._parser import EventStreamParser


def per_chunk(blocks: list[list[Chunk]]) -> Iterator[list[Parsed]]:
    parser = EventStreamParser()
    feed = parser.feed
    start = 0
    for block in blocks:
        yield [(index, chunk, feed(chunk.data, chunk.t)) for index, chunk in enumerate(block, start)]
        start += len(block)
    yield [(None, None, parser.close())]


def by_block(blocks: list[list[Chunk]]) -> Iterator[list[Parsed]]:
    return parse_blocks(blocks, EventStreamParser(), [])


WAYS: dict[str, Callable[[list[list[Chunk]]], Iterator[list[Parsed]]]] = {"per chunk": per_chunk, "by block": by_block}


def timed(way: Callable[[list[list[Chunk]]], Iterator[list[Parsed]]], blocks: list[list[Chunk]]) -> float:
    """The blocks parsed, each block's items let go of before the next, as the analysis pass does."""
    gc.collect()
    start = time.process_time()
    for _ in way(blocks):
        pass
    return time.process_time() - start


_EVENT = (b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
          b'{"content":" hello"},"finish_reason":null}]}\n\n')  # fmt: skip
SHAPES: dict[str, list[bytes]] = {
    "an event a chunk": [_EVENT] * 256,
    "a comment in every chunk": [_EVENT + b": ping\n\n"] * 256,
    "every chunk cut in two": [part for _ in range(128) for part in (_EVENT[:50], _EVENT[50:])],
    "every 10th event cut in two": [
        part for i in range(233) for part in ((_EVENT[:50], _EVENT[50:]) if i % 10 == 0 else (_EVENT,))
    ],
    "a keep-alive comment every 32 chunks": [b": keep-alive\n\n" if i % 32 == 31 else _EVENT for i in range(256)],
}
"""Blocks of 256 chunks (one opening comment aside, so that every block is read at an event boundary)."""


def compare(name: str, blocks: list[list[Chunk]], runs: int) -> None:
    if list(per_chunk(blocks)) != list(by_block(blocks)):
        raise SystemExit(f"{name}: the two ways give different items")
    gc.freeze()  # the blocks: collections walk what the parser makes
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    ratios = []
    for _ in range(runs):
        run = {way: timed(parse, blocks) for way, parse in WAYS.items()}
        for way, seconds in run.items():
            times[way].append(seconds)
        ratios.append(run["per chunk"] / run["by block"])
    gc.unfreeze()
    median = {way: statistics.median(ts) for way, ts in times.items()}
    print(f"| {name} | {len(blocks):,} | {sum(map(len, blocks)):,} | {median['per chunk']:.3f} | "
          f"{median['by block']:.3f} | x{statistics.median(ratios):.2f} (runs: {min(ratios):.2f}-{max(ratios):.2f}) |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("captures", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-shapes", action="store_true")
    args = ap.parse_args()
    print("| blocks | blocks | chunks | per chunk (s) | by block (s) | per chunk / by block |")
    print("| --- | --- | --- | --- | --- | --- |")
    for path, blocking in itertools.product(args.captures, ["as read", "in memory"]):
        with open_capture(path) as stream:
            blocks = list(stream.blocks())
        if blocking == "in memory":
            blocks = list(in_blocks([chunk for block in blocks for chunk in block]))
        compare(f"{path}, {blocking}", blocks, args.runs)
    if not args.no_shapes:
        for name, block in SHAPES.items():
            chunks = [Chunk(t=float(i), data=data) for i, data in enumerate(block)]
            compare(name, [[Chunk(t=0.0, data=b": hi\n\n")]] + [chunks] * 400, args.runs)


if __name__ == "__main__":
    main()
