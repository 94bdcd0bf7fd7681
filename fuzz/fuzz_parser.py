"""Coverage-guided fuzzing of the event stream parser and the capture reader (outside pytest).

Invariant, for ANY bytes:

1. `EventStreamParser` never raises: feeding the body whole (then `close()`) and feeding it cut
   into pieces at any positions (then `close()`) both finish without an exception, and give the
   same events, compared on (type, data, id, retry, start, end); only arrival times and chunk
   indices may follow the cuts. `parse_events(body)` agrees with both.
2. The accelerator changes nothing: cut the same way, `EventStreamParser(accelerate=False)` (the
   spec path alone) gives the same items as `EventStreamParser()`, times and chunk indices included
   (but a notice's time: see tests/test_parser_accel.py), and the same stats, last event id and retry;
   either way an event comes out of the `feed` call whose chunk completed it, never out of `close()`.
3. `sse_inspect.parse_capture(bytes)` returns a `Capture` or raises `sse_inspect.CaptureError`,
   never any other exception.

Input layout: the fuzzer's bytes; the first two bytes choose the cut positions (byte 0: the first
cut, byte 1: the second, each modulo the body's length + 1), the rest is the body. When the input
is shorter than 2 bytes the body is the input, uncut.

    python fuzz/fuzz_parser.py                      # atheris, 180 s, corpus in fuzz/corpus/
    python fuzz/fuzz_parser.py --time 600
    python fuzz/fuzz_parser.py --hypothesis         # no atheris: hypothesis-driven random search
    python fuzz/fuzz_parser.py --replay FILE...     # run saved inputs once (e.g. fuzz/crashes/*)

With atheris (libFuzzer) the run is coverage guided; without it (atheris not installable), a
hypothesis search over SSE-shaped and raw bytes runs in batches until the time budget is spent.
Either way a failing input is saved to fuzz/crashes/ (`crash-<sha1>` for atheris, `hyp-<sha1>`
otherwise) and the run goes on, so one run can find several distinct failures; each distinct
failure (exception type and place) is saved once and printed with its input.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CRASHES = HERE / "crashes"
CORPUS = HERE / "corpus"
sys.path.insert(0, str(ROOT))

try:
    import atheris
except ImportError:  # the fallback below needs only hypothesis
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["sse_inspect"]):
        import sse_inspect
        import sse_inspect.interop  # parse_capture imports it lazily: instrument it now
        from sse_inspect import CaptureError, EventStreamParser, parse_capture, parse_events
        from sse_inspect._events import Event, Notice
else:
    import sse_inspect
    import sse_inspect.interop
    from sse_inspect import CaptureError, EventStreamParser, parse_capture, parse_events
    from sse_inspect._events import Event, Notice


class InvariantBroken(AssertionError):
    """Whole and cut parses disagree (not a crash inside the library, a wrong answer)."""


def key(event: Event) -> tuple[object, ...]:
    return (event.type, event.data, event.id, event.retry, event.start, event.end)


def parsed(chunks: list[bytes], accelerate: bool = True) -> tuple[list[object], object]:
    """The items (a notice without its time) and the parser's state after close()."""
    parser = EventStreamParser(accelerate=accelerate)
    items = []
    for i, chunk in enumerate(chunks):
        got = parser.feed(chunk, float(i))
        if any(x.chunk != i for x in got if isinstance(x, Event)):
            raise InvariantBroken(f"an event came out of a later call than the one that completed it ({accelerate=})")
        items += got
    at_close = parser.close()
    if any(isinstance(x, Event) for x in at_close):
        raise InvariantBroken(f"close() returned an event ({accelerate=})")
    items += at_close
    items = [(x.kind, x.message, x.offset) if isinstance(x, Notice) else x for x in items]
    return items, (parser.stats, parser.last_event_id, parser.retry)


def events_of(chunks: list[bytes]) -> list[tuple[object, ...]]:
    return [key(x) for x in parsed(chunks)[0] if isinstance(x, Event)]


def split(data: bytes) -> tuple[bytes, list[bytes]]:
    """(body, body cut at the two positions the first two bytes choose)."""
    if len(data) < 2:
        return data, [data]
    body = data[2:]
    a, b = sorted((data[0] % (len(body) + 1), data[1] % (len(body) + 1)))
    return body, [body[:a], body[a:b], body[b:]]


def check(data: bytes) -> None:
    """Raise when `data` breaks the invariant (see the module docstring)."""
    body, pieces = split(data)
    whole = events_of([body])
    cut = events_of(pieces)
    if whole != cut:
        raise InvariantBroken(
            f"whole and cut parses differ: cuts {[len(p) for p in pieces]}\nwhole {whole}\ncut   {cut}"
        )
    if [key(e) for e in parse_events(body)] != whole:
        raise InvariantBroken("parse_events(body) differs from feeding the body whole")
    for chunks in ([body], pieces):
        if parsed(chunks, accelerate=False) != parsed(chunks):
            raise InvariantBroken(f"the spec path and the accelerator differ: cuts {[len(p) for p in pieces]}")
    try:
        parse_capture(body)
    except CaptureError:
        pass


_seen: set[str] = set()


def signature(exc: BaseException) -> str:
    """Exception type and the innermost frame inside sse_inspect: one per distinct bug."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if "sse_inspect" in f.filename
    ] or traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    kind = type(exc).__name__
    if isinstance(exc, InvariantBroken):
        kind += ":" + str(exc).split(":", 1)[0]
    return f"{kind} at {where}"


def save(data: bytes, prefix: str) -> Path:
    CRASHES.mkdir(exist_ok=True)
    path = CRASHES / f"{prefix}-{hashlib.sha1(data).hexdigest()}"
    path.write_bytes(data)
    return path


def run_one(data: bytes, prefix: str | None) -> bool:
    """Check one input; report a new kind of failure (saved under `prefix`, unless None). True when it passed."""
    try:
        check(data)
    except Exception as exc:  # noqa: BLE001 - everything but CaptureError is a finding
        sig = signature(exc)
        if sig not in _seen:
            _seen.add(sig)
            where = f"saved to {save(data, prefix)}" if prefix else "not saved"
            print(f"\n*** {sig}: {exc!r:.300}\n    input {data!r:.500}\n    {where}", file=sys.stderr, flush=True)
            traceback.print_exc(limit=-3, file=sys.stderr)
        return False
    return True


def seed_corpus() -> None:
    """fuzz/corpus/: every bundled capture and corpus stream, plus HAR and curl-trace exports of
    the captures, each behind two cut bytes; made once (libFuzzer adds what it finds)."""
    if CORPUS.is_dir() and any(CORPUS.iterdir()):
        return
    CORPUS.mkdir(exist_ok=True)
    files = sorted((ROOT / "captures").glob("*.jsonl")) + sorted((ROOT / "tests" / "data").rglob("*.sse"))
    files += [ROOT / "tests" / "data" / "v1-sample.jsonl"]
    seeds = [p.read_bytes() for p in files if p.is_file()]
    for p in sorted((ROOT / "captures").glob("*.jsonl"))[:3]:
        capture = sse_inspect.load_capture(p)
        for fmt in ("har", "curl-trace"):
            seeds.append(sse_inspect.interop.export(capture, fmt))
    seeds += [b"data: a\n\n", b"data: a\r\n\r\n", b"event: e\ndata: b\nid: 1\nretry: 5\n\n", b"\xef\xbb\xbfdata: x\r\r"]
    for i, seed in enumerate(seeds):
        (CORPUS / f"seed-{i:03d}").write_bytes(bytes([(i * 37) % 256, (i * 101) % 256]) + seed[:16384])


def run_atheris(seconds: int, extra: list[str]) -> None:
    seed_corpus()
    CRASHES.mkdir(exist_ok=True)

    def one_input(data: bytes) -> None:
        run_one(data, "crash")

    args = [
        sys.argv[0], str(CORPUS), f"-max_total_time={seconds}", "-max_len=16386", "-timeout=10",
        "-print_final_stats=1", f"-artifact_prefix={CRASHES}/", *extra,
    ]  # fmt: skip
    atheris.Setup(args, one_input)
    atheris.Fuzz()


def run_hypothesis(seconds: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    pieces = st.sampled_from([
        b"data:", b"data: ", b"data", b"event: ", b"event:", b"id: ", b"id:\x00", b"retry: ", b"retry: 12",
        b": c", b":", b"\n", b"\r", b"\r\n", b"\n\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"\xef\xbb", b"\xff", b"\xc3",
        b"\xa9", b"\x00", b" ", b"x", b"[DONE]", b'{"a": 1}', b'{"format": "sse-capture/1"}', b'{"t": 0.1, "text": "',
        b'"}', b'{"end": "complete"}', b"\xe2\x80\xa8",
    ])  # fmt: skip
    body = st.one_of(st.binary(max_size=300), st.lists(pieces, max_size=40).map(b"".join))
    data = st.tuples(st.binary(min_size=2, max_size=2), body).map(lambda t: t[0] + t[1])
    runs = 0

    @settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data)
    def search(d: bytes) -> None:
        nonlocal runs
        runs += 1
        run_one(d, "hyp")  # saves and reports; never raises, so the search goes on

    start = time.monotonic()
    while time.monotonic() - start < seconds:
        search()
    elapsed = time.monotonic() - start
    print(
        f"hypothesis search: {runs} inputs in {elapsed:.0f} s ({runs / elapsed:.0f}/s), {len(_seen)} distinct failures"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=int, default=180, help="seconds to fuzz (default 180)")
    ap.add_argument("--hypothesis", action="store_true", help="the hypothesis search even when atheris is installed")
    ap.add_argument("--replay", nargs="+", metavar="FILE", help="check these inputs once and report")
    args, extra = ap.parse_known_args()
    if args.replay:
        failed = [f for f in args.replay if not run_one(Path(f).read_bytes(), None)]
        print(f"{len(args.replay) - len(failed)} passed, {len(failed)} failed")
        sys.exit(1 if failed else 0)
    if atheris is None or args.hypothesis:
        if atheris is None:
            print("atheris is not installed: hypothesis-driven random search instead", file=sys.stderr)
        run_hypothesis(args.time)
    else:
        run_atheris(args.time, extra)
    sys.exit(1 if _seen else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
