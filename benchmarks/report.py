"""`sse-inspect report` on big captures: its time next to `check`'s, its peak memory and the page's size;
and `check` over a folder of captures, one after the other against one process per core.

    python benchmarks/report.py CAPTURE...                 # report and check on each, interleaved
    python benchmarks/report.py --lumpy CAPTURE...         # the same on a copy WITH findings (see below)
    python benchmarks/report.py --folder DIR [--runs 2]    # check DIR sequentially vs in parallel

(from the repository root; CAPTURE: sse-capture/1 files, e.g. the ones `end_to_end.py --keep DIR`
leaves.) Not a test: it prints a Markdown table and never fails on a slow result.

`--lumpy` first writes, next to nothing but a temporary folder, a copy of each capture whose chunks
are released in lumps of 5,000 (each after 2 s of silence), with a 45 s silence before the 41st lump,
and cut before `[DONE]` with no end line: `buffering-burst` and `long-silence` point into the middle of
the stream, `missing-end-marker` at its end, so the report reads the file a second time for the
events around them (up to the last one wanted).

Each run is a fresh process started through a small launcher that reaps it with `os.wait4`: wall
time from spawn to reap, and the ru_maxrss of that child alone (see end_to_end.py). The cells are
medians of --runs runs, the commands' runs interleaved; the ratio `report / check` is the report's
cost over the check it contains, measured in one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SSE_INSPECT = str(Path(sys.executable).with_name("sse-inspect"))
LAUNCHER = """\
import os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(f"\\nlauncher: {time.perf_counter() - t0} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}", file=sys.stderr)
"""
SEQUENTIAL = """\
import sys
from sse_inspect.cli import _check, main
_check.PARALLEL_FROM = 10**9
sys.argv = ["sse-inspect", *sys.argv[1:]]
main()
"""
ENV = {**os.environ, "PYTHONUTF8": "1", "NO_COLOR": "1", "COLUMNS": "100"}
LUMP, HOLD, SILENCE_AT = 5000, 2.0, 40


def launch(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of `argv` run to its end, its output dropped."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=ENV, check=False)  # fmt: skip
    line = done.stderr.rstrip().rpartition("launcher: ")[2].split()
    seconds, rss_kb, code = float(line[0]), int(line[1]), int(line[2])
    if code not in (0, 1):  # check exits 1 on findings
        raise SystemExit(f"{' '.join(argv)}: exit {code}\n{done.stderr[-2000:]}")
    return seconds, rss_kb / 1024


def lumpy(src: Path, folder: Path) -> Path:
    """A copy of `src` released in lumps, with a long silence, cut before [DONE] with no end line."""
    dst = folder / f"lumpy-{src.name}"
    i = 0
    with src.open("rb") as f, dst.open("wb") as out:
        out.write(f.readline())  # the header line
        while lines := f.readlines(1 << 24):
            kept = []
            for line in lines:
                if not line.startswith(b'{"t": ') or b"data: [DONE]" in line:
                    continue  # the end line and the end marker: cut
                lump, k = divmod(i, LUMP)
                t = 0.3 + lump * HOLD + k * 1e-5 + (45.0 if lump >= SILENCE_AT else 0.0)
                kept.append(b'{"t": %.6f%s' % (t, line[line.index(b", ", 6) :]))
                i += 1
            out.write(b"".join(kept))
    return dst


def reports(captures: list[Path], runs: int) -> None:
    print("| capture | MB | check s | report s | report / check | check MiB | report MiB | HTML KB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        for cap in captures:
            checks, made = [], []
            for _ in range(runs):
                checks.append(launch([SSE_INSPECT, "check", "--fail-on", "never", str(cap)]))
                made.append(launch([SSE_INSPECT, "report", str(cap), "-o", str(page)]))
            c_s, c_m = statistics.median(s for s, _ in checks), max(m for _, m in checks)
            r_s, r_m = statistics.median(s for s, _ in made), max(m for _, m in made)
            print(f"| {cap.name} | {cap.stat().st_size / 1e6:.0f} | {c_s:.2f} | {r_s:.2f} | {r_s / c_s:.2f} | "
                  f"{c_m:.0f} | {r_m:.0f} | {page.stat().st_size / 1000:.0f} |", flush=True)  # fmt: skip


def folder(path: Path, runs: int) -> None:
    count = sum(1 for p in path.rglob("*") if p.suffix in (".jsonl", ".sse") and p.is_file())
    seq, par = [], []
    for _ in range(runs):
        seq.append(launch([sys.executable, "-c", SEQUENTIAL, "check", "--fail-on", "never", str(path)])[0])
        par.append(launch([SSE_INSPECT, "check", "--fail-on", "never", str(path)])[0])
    s, p = statistics.median(seq), statistics.median(par)
    print(f"| check over {count} captures in {path} | one after the other | {os.cpu_count()} processes | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| seconds (median of {runs}) | {s:.2f} | {p:.2f} | {s / p:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="*", type=Path)
    ap.add_argument("--lumpy", action="store_true", help="measure copies with findings in the middle")
    ap.add_argument("--folder", type=Path, help="check this folder one after the other, then in parallel")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    if args.folder:
        folder(args.folder, args.runs)
    if args.captures:
        if not args.lumpy:
            reports(args.captures, args.runs)
            return
        with tempfile.TemporaryDirectory() as tmp:
            reports([lumpy(c, Path(tmp)) for c in args.captures], args.runs)


if __name__ == "__main__":
    main()
