"""The analysis pass's parse step alone: a capture's chunks, in the blocks they are read in, through the parser.

    python -m benchmarks.parse_pass /work/bench/openai-50mb.jsonl /work/bench/anthropic-50mb.jsonl
    python -m benchmarks.parse_pass --runs 7 CAPTURE...

(from the repository root.) Not a test: it prints a table and never fails on a slow result.

Each capture is read in two ways of blocking: the blocks `open_capture(...).blocks()` gives (a file read's
lines: "as read"), and lists of up to 256 chunks and 64 KiB (`_loading.in_blocks`, a capture in memory).

Two ways, on the same blocks, their runs interleaved (so that a busy machine slows both alike), each the
median of --runs runs, gc.collect() before each, time.perf_counter around the parse alone:

  per chunk   `parser.feed(chunk.data, chunk.t)` for each chunk, in a comprehension per block (what
              `_analysis.parse_blocks` did before `feed_block`)
  by block    `_analysis.parse_blocks`, which hands each block to `parser.feed_block`

The blocks are read (and the capture's JSON lines decoded) before timing. Both ways' items are compared,
item for item, once, before timing: a difference stops the run.
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
    start = time.perf_counter()
    for _ in way(blocks):
        pass
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("captures", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print("| capture | blocks | chunks | per chunk (s) | by block (s) | per chunk / by block |")
    print("| --- | --- | --- | --- | --- | --- |")
    for path, blocking in itertools.product(args.captures, ["as read", "in memory"]):
        with open_capture(path) as stream:
            blocks = list(stream.blocks())
        if blocking == "in memory":
            blocks = list(in_blocks([chunk for block in blocks for chunk in block]))
        if list(per_chunk(blocks)) != list(by_block(blocks)):
            raise SystemExit(f"{path}: the two ways give different items")
        gc.freeze()  # the blocks: collections walk what the parser makes
        times: dict[str, list[float]] = {name: [] for name in WAYS}
        ratios = []
        for _ in range(args.runs):
            run = {name: timed(way, blocks) for name, way in WAYS.items()}
            for name, seconds in run.items():
                times[name].append(seconds)
            ratios.append(run["per chunk"] / run["by block"])
        gc.unfreeze()
        median = {name: statistics.median(ts) for name, ts in times.items()}
        chunks = sum(map(len, blocks))
        print(f"| {path} | {blocking}: {len(blocks):,} | {chunks:,} | {median['per chunk']:.3f} | {median['by block']:.3f} | "
              f"x{statistics.median(ratios):.2f} (runs: {min(ratios):.2f}-{max(ratios):.2f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
