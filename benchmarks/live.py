"""What watching a stream live costs: the live model and the recorder's tap, against the pass `show` makes.

    python benchmarks/live.py            # 20k and 200k events, slices of 1, 16 and 256 events
    python benchmarks/live.py --quick    # 20k events only

An OpenAI-style stream (one token an event) is read as a proxy reads it, in slices of k events:
- `analyze`: the whole capture in one pass (`analyze(keep=False)`, what `show` and `check` do after);
- `LiveStream.feed`: the live model, a slice at a time, then `close` (what `record`'s views run on the
  proxy's event loop);
- `record`: a `StreamRecorder` writing the capture file, a flush a slice, without a live view (the
  stream's end, and the check of its file that a session then makes in a thread, are not timed);
- `record + live`: the same with a `LiveSession` tapping it (no view drawing: the table redraws on a
  timer, four times a second, whatever the stream's pace).
Ratios are against `analyze` (for the live model) and against `record` (for the tap): the cost a live
view adds to the proxy. Per-event costs at 20k and 200k events show whether it stays linear.
"""

from __future__ import annotations

import argparse
import gc
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import cpu_model, table, versions  # noqa: E402
from sse_inspect import Capture, Chunk, End, Request, Response, analyze  # noqa: E402
from sse_inspect._live import LiveStream  # noqa: E402
from sse_inspect._redact import Redactor  # noqa: E402
from sse_inspect.live import LiveSession  # noqa: E402
from sse_inspect.recorder import CaptureWriter, Stage, StreamRecorder  # noqa: E402

HEAD = Capture(request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
               response=Response(status=200, headers=(("Content-Type", "text/event-stream"),)))  # fmt: skip


def events(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                 "choices": [{"index": 0, "delta": {"content": f" w{i % 1000}"}, "finish_reason": None}]}  # fmt: skip
        out.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    return out + [b"data: [DONE]\n\n"]


def slices(evs: list[bytes], k: int) -> list[tuple[float, bytes]]:
    return [(0.001 * (i // k + 1), b"".join(evs[i : i + k])) for i in range(0, len(evs), k)]


def run_analyze(cuts: list[tuple[float, bytes]]) -> float:
    capture = dataclasses.replace(HEAD, chunks=tuple(Chunk(t, d) for t, d in cuts), end=End(kind="complete", t=9.0))
    t0 = time.perf_counter()
    analyze(capture, keep=False)
    return time.perf_counter() - t0


def run_live(cuts: list[tuple[float, bytes]]) -> float:
    t0 = time.perf_counter()
    stream = LiveStream(HEAD)
    for t, data in cuts:
        stream.feed([t], [data])
    stream.close(End(kind="complete", t=9.0))
    return time.perf_counter() - t0


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def run_record(cuts: list[tuple[float, bytes]], live: bool) -> float:
    with tempfile.TemporaryDirectory() as folder:
        clock = Clock()
        session = LiveSession(clock=clock) if live else None
        t0 = time.perf_counter()
        writer = CaptureWriter.create(folder, request=HEAD.request, response=HEAD.response,  # type: ignore[arg-type]
                                      redactor=Redactor(), recorder="benchmark")  # fmt: skip
        recorder = StreamRecorder(writer, 0.0, attach=0, schedule=lambda f: None, clock=clock)
        if session is not None:
            session.on_capture(Stage.STARTED, recorder)
        for t, data in cuts:
            clock.now = t
            recorder.take(data)
            recorder.flush()
        elapsed = time.perf_counter() - t0  # (the end, and the file's check the session makes off the loop: not timed)
        recorder.finish("complete")
        if session is not None:
            session.close()
        return elapsed


def best(fn: object, *args: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        times.append(fn(*args))  # type: ignore[operator]
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [20_000] if args.quick else [20_000, 200_000]
    rows = []
    for n in sizes:
        evs = events(n)
        for k in (1, 16, 256):
            cuts = slices(evs, k)
            a = best(run_analyze, cuts, runs=args.runs)
            lv = best(run_live, cuts, runs=args.runs)
            rec = best(run_record, cuts, False, runs=args.runs)
            tap = best(run_record, cuts, True, runs=args.runs)
            per = 1e6 / n
            rows.append([f"{n:,}", str(k), f"{a * per:.2f}", f"{lv * per:.2f}", f"{lv / a:.2f}", f"{rec * per:.2f}",
                         f"{tap * per:.2f}", f"{tap / rec:.2f}"])  # fmt: skip
    print(f"# live views' cost ({cpu_model()}; {', '.join(f'{k} {v}' for k, v in versions(['mitmproxy', 'rich']).items())}; "
          f"Python {sys.version.split()[0]}; best of {args.runs})\n")  # fmt: skip
    print(table(["events", "events a slice", "analyze µs/event", "live µs/event", "live ÷ analyze",
                 "record µs/event", "record+live µs/event", "(record+live) ÷ record"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
