"""sse-inspect's framers of the other framings (NDJSON, the streamed JSON array, the AWS event stream) against
the readers Python clients use for them, on the same bytes.

    /work/venv/bin/python benchmarks/framers.py                     # full run: 10 MB bodies, 5 runs a cell
    /work/venv/bin/python benchmarks/framers.py --quick             # 1 MB bodies, 3 runs a cell: about 30 s
    /work/venv/bin/python benchmarks/framers.py --json framers.json # also write every number to a file

(from the repository root; any Python with sse-inspect, httpx and botocore installed; ijson when it is
importable, else its cells are skipped with a note.) Not a test: it prints tables (stdout; progress on
stderr) and never fails on a slow result. Modelled on benchmarks/parsers.py (its timing, without the
prefix probes: a run that passes --cell-limit is stopped by an alarm and its cell skipped).

Readers, each fed the same list of byte chunks and driven as its library drives it. Nobody's JSON decoding
is timed where a reader can leave it out (the items are the JSON texts, or the message payloads); ijson
cannot, so the JSON array table also times sse-inspect's items through `json.loads` ("+ json.loads"):

  NDJSON (an Ollama /api/chat stream):
    sse-inspect   `NDJSONParser.feed(chunk, t)` per chunk (a whole body through `feed_iter`), then `close()`;
                  counts the `Event` items.
    httpx         `Response.iter_lines()` as httpx runs it, which is what the ollama library reads with
                  (`for line in r.iter_lines(): part = json.loads(line)`): httpx's `TextDecoder` +
                  `TextChunker` (`iter_text`) then `LineDecoder` over the chunks; the transport is left out.
    naive split   `lines = (buf + chunk).split(b"\\n"); buf = lines.pop()`: decodes nothing, so a bound.
  JSON array (a Gemini :streamGenerateContent body without alt=sse):
    sse-inspect   `JSONArrayParser`, as above; "+ json.loads" decodes each item's text too (not a peer).
    ijson         its push interface, `ijson.items_coro(sink, "item", use_float=True)`, a `send` per chunk
                  (the yajl2_c backend when built): it yields decoded objects, so it decodes as it goes.
  AWS event stream (a Bedrock ConverseStream body):
    sse-inspect   `EventStreamFrameParser`, as above (CRCs checked, headers read, payloads decoded as UTF-8).
    botocore      `botocore.eventstream.EventStreamBuffer`: `add_data(chunk)`, then its messages, as
                  `EventStream` runs it (CRCs checked, headers read; the payload's parsing after it not timed).

Bodies (benchmarks/_corpus.py, deterministic; MB = 10**6 bytes): `ollama_chat`, `gemini_array`,
`bedrock_converse`, cut into chunks of the whole body, 64 KiB, 4 KiB, 128 B, 16 B and 1 B. Full run: 10 MB
bodies (the 1 B cut on a 1 MB body); --quick: 1 MB bodies.

Timing: as parsers.py: chunks made before timing, a cell the median of 5 runs (--quick: 3), readers' runs
interleaved, gc.collect() before each, perf_counter around the reader alone, the objects alive before the
runs gc.freeze()-d.

Agreement: every timed run's item count is compared with the body's (known by construction); a reader that
counts wrong is marked ✗ and never "the fastest peer". At the whole body, 4 KiB and the smallest cut each
reader's items are compared one by one with the body's: NDJSON the line texts, the array the decoded values
(json.loads of the expected texts against ijson's objects), the event stream the event types and payloads.

Tables: per body, each reader's MB/s and items/s per cut, sse-inspect's speed divided by the fastest correct
peer's (>1: sse-inspect is faster) and by the fastest library's (the naive split left out), the agreement.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # sse_inspect from this checkout, for the corpus's event stream encoder too

import _corpus as corpus  # noqa: E402
from _corpus import MB, Body  # noqa: E402
from _timing import RunTimeout, _alarm, commit_of, cpu_model, fmt_mbs, fmt_ratio, table, timed, versions  # noqa: E402

Got = tuple[str, Any]  # what a reader's item is compared by: (type, payload)


@dataclass(frozen=True)
class Reader:
    name: str
    count: Callable[[list[bytes]], int]
    """The timed run: the number of items."""
    items: Callable[[list[bytes]], list[Got]]
    """The same run, keeping what is compared."""
    library: bool = True
    peer: bool = True  # False: a variant of sse-inspect, shown beside it


# ---------------------------------------------------------------------------------------------
# The readers.


def _ours(make: Callable[[], Any], decode: bool = False, values: bool = False) -> tuple[
        Callable[[list[bytes]], int], Callable[[list[bytes]], list[Got]]]:  # fmt: skip
    """A framer of sse-inspect: `feed` per chunk, `feed_iter` for a whole body, then `close()`. `decode`: each
    item's text through `json.loads` in the timed run too; `values`: items compared by their decoded values."""
    from sse_inspect import Event

    loads = json.loads

    def count(chunks: list[bytes]) -> int:
        p = make()
        feed = p.feed_iter if len(chunks) == 1 else p.feed
        n = 0
        for chunk in chunks:
            for x in feed(chunk, 0.0):
                if type(x) is Event:
                    if decode:
                        loads(x.data)
                    n += 1
        for x in p.close():
            if type(x) is Event:
                n += 1
        return n

    def items(chunks: list[bytes]) -> list[Got]:
        p = make()
        got = [x for chunk in chunks for x in p.feed(chunk, 0.0)] + p.close()
        return [(x.type, loads(x.data) if values else x.data) for x in got if isinstance(x, Event)]

    return count, items


def _httpx_lines() -> tuple[Callable[[list[bytes]], int], Callable[[list[bytes]], list[Got]]]:
    from httpx._decoders import LineDecoder, TextChunker, TextDecoder

    def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
        # httpx.Response.iter_lines over iter_text, minus its request_context; the chunks stand for iter_bytes().
        def iter_text() -> Iterator[str]:
            decoder = TextDecoder(encoding="utf-8")
            chunker = TextChunker(chunk_size=None)
            for byte_content in chunks:
                text_content = decoder.decode(byte_content)
                yield from chunker.decode(text_content)
            yield from chunker.decode(decoder.flush())
            yield from chunker.flush()

        decoder = LineDecoder()
        for text in iter_text():
            yield from decoder.decode(text)
        yield from decoder.flush()

    def count(chunks: list[bytes]) -> int:
        n = 0
        for _ in iter_lines(chunks):
            n += 1
        return n

    def items(chunks: list[bytes]) -> list[Got]:
        return [("message", line) for line in iter_lines(chunks)]

    return count, items


def _naive_lines() -> tuple[Callable[[list[bytes]], int], Callable[[list[bytes]], list[Got]]]:
    def count(chunks: list[bytes]) -> int:
        buf = b""
        n = 0
        for chunk in chunks:
            lines = (buf + chunk).split(b"\n")
            buf = lines.pop()
            n += len(lines)
        return n + (1 if buf else 0)

    def items(chunks: list[bytes]) -> list[Got]:
        buf, got = b"", []
        for chunk in chunks:
            lines = (buf + chunk).split(b"\n")
            buf = lines.pop()
            got += [("message", line.decode("utf-8", "replace")) for line in lines]
        return got + ([("message", buf.decode("utf-8", "replace"))] if buf else [])

    return count, items


def _ijson() -> tuple[Callable[[list[bytes]], int], Callable[[list[bytes]], list[Got]]] | None:
    try:
        import ijson
    except ImportError:
        return None

    def run(chunks: list[bytes]) -> list[Any]:
        out: list[Any] = []
        sink = ijson.sendable_list()
        coro = ijson.items_coro(sink, "item", use_float=True)
        for chunk in chunks:
            coro.send(chunk)
            out += sink
            del sink[:]
        coro.close()
        out += sink
        return out

    def count(chunks: list[bytes]) -> int:
        sink = ijson.sendable_list()
        coro = ijson.items_coro(sink, "item", use_float=True)
        n = 0
        for chunk in chunks:
            coro.send(chunk)
            n += len(sink)
            del sink[:]
        coro.close()
        return n + len(sink)

    def items(chunks: list[bytes]) -> list[Got]:
        return [("message", value) for value in run(chunks)]

    return count, items


def _botocore() -> tuple[Callable[[list[bytes]], int], Callable[[list[bytes]], list[Got]]]:
    from botocore.eventstream import EventStreamBuffer

    def count(chunks: list[bytes]) -> int:
        buf = EventStreamBuffer()
        n = 0
        for chunk in chunks:
            buf.add_data(chunk)
            for _ in buf:
                n += 1
        return n

    def items(chunks: list[bytes]) -> list[Got]:
        buf, got = EventStreamBuffer(), []
        for chunk in chunks:
            buf.add_data(chunk)
            got += [(m.headers.get(":event-type", "message"), m.payload.decode()) for m in buf]
        return got

    return count, items


@dataclass(frozen=True)
class Framing:
    key: str
    label: str
    make: Callable[[int], Body]
    readers: list[Reader]
    note: str = ""
    expected: Callable[[Body], list[Got]] = lambda body: [(t, d) for t, d, _ in body.events]


def framings() -> list[Framing]:
    from sse_inspect._eventstream import EventStreamFrameParser
    from sse_inspect._ndjson import JSONArrayParser, NDJSONParser

    ndjson = [Reader("sse-inspect", *_ours(NDJSONParser)), Reader("httpx iter_lines", *_httpx_lines()),
              Reader("naive split", *_naive_lines(), library=False)]  # fmt: skip
    array = [Reader("sse-inspect", *_ours(JSONArrayParser, values=True)),
             Reader("sse-inspect + json.loads", *_ours(JSONArrayParser, decode=True, values=True),
                    peer=False)]  # fmt: skip
    ij = _ijson()
    note = ""
    if ij is None:
        note = "ijson is not importable here: its cells are skipped (pip install ijson to run them)"
    else:
        array.append(Reader("ijson", *ij))
    es = [Reader("sse-inspect", *_ours(EventStreamFrameParser)), Reader("botocore", *_botocore())]
    return [
        Framing("ndjson", "NDJSON (Ollama /api/chat)", corpus.ollama_chat, ndjson),
        Framing("json-array", "JSON array (Gemini, no alt=sse)", corpus.gemini_array, array, note,
                expected=lambda body: [(t, json.loads(d)) for t, d, _ in body.events]),
        Framing("eventstream", "AWS event stream (Bedrock ConverseStream)", corpus.bedrock_converse, es),
    ]


SUBJECT = "sse-inspect"


# ---------------------------------------------------------------------------------------------
# The plan, the timing.

WHOLE = 0
CUTS = [WHOLE, 65536, 4096, 128, 16, 1]


def plan(quick: bool) -> list[tuple[int, list[int]]]:
    """(body size in MB, its cuts)."""
    return [(1, CUTS)] if quick else [(10, CUTS[:-1]), (1, [1])]


def chunk_label(n: int) -> str:
    if n == WHOLE:
        return "whole"
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


@dataclass
class Cell:
    framing: str
    mb: int
    chunk: int
    reader: str
    status: str = "ok"  # ok | wrong (a wrong count, or it raised) | skipped
    times: list[float] = field(default_factory=list)
    counted: int | None = None
    note: str = ""
    median_s: float | None = None
    mb_s: float | None = None
    items_s: float | None = None
    agrees: str = ""  # where the items were compared one by one: "ok" or how they differ


def measure(f: Framing, mb: int, body: Body, n: int, chunks: list[bytes], runs: int, limit: float) -> dict[str, Cell]:
    expected = len(body.events)
    cells = {r.name: Cell(f.key, mb, n, r.name) for r in f.readers}
    for i in range(runs):
        order = f.readers[i % len(f.readers) :] + f.readers[: i % len(f.readers)]
        for r in order:
            cell = cells[r.name]
            if cell.status != "ok":
                continue
            try:
                dt, counted = timed(r.count, chunks, limit)
            except RunTimeout:
                cell.status, cell.note, cell.times = "skipped", f"skipped (a run passed {limit:g} s)", []
                continue
            except Exception as exc:  # noqa: BLE001 (a reader that raises on content is a finding)
                cell.status, cell.note, cell.times = "wrong", f"✗ raises {type(exc).__name__}", []
                continue
            cell.times.append(dt)
            cell.counted = counted
            if counted != expected:
                cell.status, cell.note = "wrong", f"✗ {counted} items, not {expected}"
    for cell in cells.values():
        if cell.times and cell.status != "skipped":
            cell.median_s = statistics.median(cell.times)
            cell.mb_s = len(body.data) / MB / cell.median_s
            cell.items_s = (cell.counted or 0) / cell.median_s
    return cells


def agreement(f: Framing, body: Body, chunks: list[bytes], cells: dict[str, Cell]) -> None:
    """Each reader's items against the body's, one by one, into the cells' `agrees`."""
    want = f.expected(body)
    gc.disable()
    try:
        for r in f.readers:
            cell = cells[r.name]
            if cell.status == "skipped":
                continue
            try:
                got = r.items(chunks)
            except Exception as exc:  # noqa: BLE001
                cell.agrees = f"raises {type(exc).__name__}"
                continue
            if got == want:
                cell.agrees = "ok"
            elif len(got) != len(want):
                cell.agrees = f"{len(got)} items, not {len(want)}"
            else:
                i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
                cell.agrees = f"item #{i} differs: {str(got[i])[:40]!r}"
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------------
# Output.


def fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e3 else f"{x:.0f}"


def cell_text(c: Cell) -> str:
    if c.status == "skipped" or c.mb_s is None:
        return c.note
    text = f"{fmt_mbs(c.mb_s)} · {fmt_rate(c.items_s or 0)}/s"
    return f"{c.note} ({text})" if c.status == "wrong" else text


def ratio_of(cells: dict[str, Cell], readers: list[Reader], libraries_only: bool = False) -> tuple[float, str] | None:
    """sse-inspect's speed / the fastest correct peer's, and which peer that is."""
    subject = cells[SUBJECT]
    peers = [cells[r.name] for r in readers if r.peer and r.name != SUBJECT and (r.library or not libraries_only)]
    peers = [c for c in peers if c.status == "ok" and c.mb_s]
    if subject.status != "ok" or not subject.mb_s or not peers:
        return None
    best = max(peers, key=lambda c: c.mb_s or 0.0)
    return subject.mb_s / (best.mb_s or 1.0), best.reader


def machine() -> dict[str, Any]:
    packages = versions(("sse-inspect", "httpx", "ijson", "botocore"))
    try:
        import ijson

        packages["ijson"] = f"{getattr(ijson, '__version__', packages['ijson'])} ({ijson.backend} backend)"
    except ImportError:
        pass
    files = ["sse_inspect/_ndjson.py", "sse_inspect/_ndjson_accel.py", "sse_inspect/_eventstream.py"]
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": packages,
        "accelerators": "off (SSE_INSPECT_NO_ACCEL)" if os.environ.get("SSE_INSPECT_NO_ACCEL", "") not in ("", "0")
        else "on",
        "sse_inspect_commit": commit_of(files, "framer"),
        "loadavg_start": os.getloadavg(),
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 MB bodies, 3 runs a cell: under a minute")
    ap.add_argument("--json", metavar="FILE", help="write every number to FILE")
    ap.add_argument("--runs", type=int, help="runs per cell (default 5; --quick: 3)")
    ap.add_argument("--cell-limit", type=float, help="stop a run longer than this and skip its cell "
                    "(seconds; default 20; --quick: 5)")  # fmt: skip
    args = ap.parse_args(argv)
    runs = args.runs or (3 if args.quick else 5)
    limit = args.cell_limit or (5.0 if args.quick else 20.0)
    started = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    info = machine()
    fs = framings()
    gc.collect()
    gc.freeze()
    command = "benchmarks/framers.py" + (" --quick" if args.quick else "")
    results: dict[str, list[dict[str, Cell]]] = {f.key: [] for f in fs}
    bodies: dict[str, dict[str, Any]] = {}
    for f in fs:
        for mb, cuts in plan(args.quick):
            body = f.make(mb * MB)
            bodies[f"{f.key}-{mb}"] = {"bytes": len(body.data), "items": len(body.events)}
            smallest = min(n for n in cuts if n) if mb <= 1 else 128
            for n in cuts:
                t0 = time.perf_counter()
                chunks = corpus.chunked(body.data, n)
                gc.freeze()
                cells = measure(f, mb, body, n, chunks, runs, limit)
                if n in (WHOLE, 4096, smallest):
                    agreement(f, body, chunks, cells)
                results[f.key].append(cells)
                print(f"  {f.key:<12} {mb} MB {chunk_label(n):>7}: {time.perf_counter() - t0:5.1f} s "
                      f"(total {time.perf_counter() - started:5.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
                del chunks
            del body
            gc.collect()

    elapsed = time.perf_counter() - started
    info["loadavg_end"] = os.getloadavg()
    out = sys.stdout
    print(f"# Framers side by side (`{command}`)\n", file=out)
    print(f"- machine: {info['cpu']}, {info['cores']} cores, {info['python']}, {info['platform']}", file=out)
    print("- packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()), file=out)
    print(f"- sse-inspect at {info['sse_inspect_commit']}; accelerators {info['accelerators']}", file=out)
    print(f"- median of {runs} runs per cell; load average {info['loadavg_start'][0]:.2f} at start, "
          f"{info['loadavg_end'][0]:.2f} at end; whole run {elapsed:.0f} s\n", file=out)  # fmt: skip
    print("Cells: MB/s · items/s (MB = 10^6 bytes); no reader's JSON decoding timed but ijson's, which decodes as "
          "it goes (compare it with 'sse-inspect + json.loads'). Ratio: sse-inspect's speed / the fastest correct "
          "peer's (>1: sse-inspect is faster); 'vs libraries' leaves the naive split out. Agrees: items compared "
          "one by one with the body's (whole, 4 KiB and the smallest cut).\n", file=out)  # fmt: skip
    summary = []
    for f in fs:
        print(f"## {f.label}\n", file=out)
        if f.note:
            print(f"{f.note}\n", file=out)
        names = [r.name for r in f.readers]
        rows = []
        for cells in results[f.key]:
            c0 = cells[SUBJECT]
            agree = "; ".join(f"{x}: {cells[x].agrees}" for x in names if cells[x].agrees and cells[x].agrees != "ok")
            checked = any(cells[x].agrees for x in names)
            rows.append([f"{c0.mb} MB", chunk_label(c0.chunk), *(cell_text(cells[x]) for x in names),
                         fmt_ratio(ratio_of(cells, f.readers)), fmt_ratio(ratio_of(cells, f.readers, True)),
                         (agree or "all") if checked else "count"])  # fmt: skip
            r = ratio_of(cells, f.readers, True)
            summary.append({"framing": f.key, "mb": c0.mb, "chunk": c0.chunk, "vs_libraries": r,
                            "vs_fastest": ratio_of(cells, f.readers)})  # fmt: skip
        print(table(["body", "chunks", *names, "ratio vs fastest", "vs libraries", "agree"], rows) + "\n", file=out)
    print("## sse-inspect's speed / the fastest library's\n", file=out)
    keys = [(mb, n) for mb, cuts in plan(args.quick) for n in cuts]
    rows = []
    for f in fs:
        by = {(s["mb"], s["chunk"]): s["vs_libraries"] for s in summary if s["framing"] == f.key}
        rows.append([f.key, *("n/a" if by[k] is None else f"{by[k][0]:.2f}" for k in keys)])
    print(table(["framing", *(f"{chunk_label(n)}" + ("" if args.quick else f" ({mb} MB)") for mb, n in keys)], rows)
          + "\n", file=out)  # fmt: skip
    if args.json:
        doc = {"command": command, "machine": info, "runs": runs, "cell_limit_s": limit, "elapsed_s": elapsed,
               "bodies": bodies, "notes": {f.key: f.note for f in fs if f.note},
               "cells": [{**vars(c), "chunk_label": chunk_label(c.chunk)} for per in results.values() for cells in per
                         for c in cells.values()],
               "ratios": summary}  # fmt: skip
        Path(args.json).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(f"done in {elapsed:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
