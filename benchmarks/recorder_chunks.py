"""What the recorder costs per chunk in the proxy's process, without the proxy: `take` then `flush`.

    /work/venv/bin/python benchmarks/recorder_chunks.py              # from the repository root
    PYTHONPATH=/some/other/checkout python benchmarks/recorder_chunks.py   # another version, same chunks

A `StreamRecorder` writing into a temporary file with redaction on (as the addon by default), fed
30,000 events as a proxy feeds it: `--batch` chunks taken (one loop iteration), then the scheduled
flush, again and again. Three kinds of event, one chunk each: 200-byte events like
`recorder_latency.py`'s, and the OpenAI and Anthropic streams of `_corpus.py`. Per chunk, this
thread's CPU time (`time.thread_time_ns`, which waiting for a core does not count), the least of
`--runs` runs, with the body attached up to 4 MiB (the addon's default) and not at all.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _corpus

from sse_inspect._secrets import StreamRedactor
from sse_inspect.recorder import CaptureWriter, StreamRecorder

EVENTS = 30_000


def bench_events() -> list[bytes]:
    """`recorder_latency.py`'s events: 200 bytes, a counter and a stamp, padded with x."""
    out = []
    for k in range(EVENTS):
        head = b'data: {"i":%d,"t":%d,"pad":"' % (k, time.perf_counter_ns())
        out.append(head + b"x" * (200 - len(head) - 4) + b'"}\n\n')
    return out


def corpus_events(body: bytes) -> list[bytes]:
    return [event + b"\n\n" for event in body.split(b"\n\n") if event][:EVENTS]


def per_chunk_ns(chunks: list[bytes], batch: int, attach: int, folder: Path) -> float:
    """One run: CPU ns per chunk of taking and flushing `chunks`, `batch` an iteration."""
    path = folder / "capture.jsonl"
    writer = CaptureWriter(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), path, redactor=StreamRedactor())
    pending: list[Callable[[], None]] = []
    recorder = StreamRecorder(writer, time.monotonic(), attach=attach, schedule=pending.append)
    take, batches = recorder.take, [chunks[k : k + batch] for k in range(0, len(chunks), batch)]
    start = time.thread_time_ns()
    for chunks_of_one_iteration in batches:
        for chunk in chunks_of_one_iteration:
            take(chunk)
        for flush in pending:
            flush()
        pending.clear()
    took = time.thread_time_ns() - start
    writer.close()
    return took / len(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[512, 1], help="chunks an iteration (512 1)")
    parser.add_argument("--runs", type=int, default=9, help="runs a cell; the least is shown (default 9)")
    args = parser.parse_args()
    kinds = {"200 B events": bench_events(), "OpenAI": corpus_events(_corpus.openai_chat(6_000_000).data),
             "Anthropic": corpus_events(_corpus.anthropic_messages(4_000_000).data)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sse-bench-") as folder:
        for batch in args.batch:
            for name, chunks in kinds.items():
                cells = []
                for attach in (4 << 20, 0):
                    best = min(per_chunk_ns(chunks, batch, attach, Path(folder)) for _ in range(args.runs))
                    cells.append(f"attach {attach >> 20} MiB: {best:6.0f} ns")
                print(f"{batch:4} a batch, {name:13} ({sum(map(len, chunks)) / len(chunks):.0f} B): {', '.join(cells)}")


if __name__ == "__main__":
    main()
