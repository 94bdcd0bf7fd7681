"""What recording costs mitmproxy's CPU, per event, with as little else on the machine as can be.

    /work/venv/bin/python benchmarks/recorder_cpu.py                  # from the repository root
    /work/venv/bin/python benchmarks/recorder_cpu.py --rounds 40 --events 20000

One mitmdump with `addons/sse_capture.py`, whose `sse_capture_filter` records only `/rec` requests,
and `recorder_latency.py`'s event-stream server behind it. Bursts of `--events` events of `--size`
bytes go through it, recorded (`/rec`) and not (`/plain`) alternately, rec plain in even rounds,
plain rec in odd ones, on one keep-alive connection. The client is a bare socket that sleeps until
64 KiB are buffered (`SO_RCVLOWAT`): it takes almost no CPU, so the proxy has a core to itself
more often than with httpx (`recorder_latency.py` measures with what SDKs use). Per burst: the
CPU time the proxy process spent (`/proc/PID/task/*/schedstat`), per event. The same process
serves both kinds of burst, so one process's luck (memory layout, hash seed) weighs on both.
Printed: the medians, and per round the CPU the recorder adds and the ratio not recorded / recorded
(the throughput ratio where the proxy's CPU is the limit), with their quartiles, and the load
average before and after. Loopback only; an alarm ends the run after `--limit` seconds.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import statistics
import tempfile
from pathlib import Path

from recorder_latency import RECORDER_ADDON, Setup, _load, _start_mitmdump, _stop, serve, time_limit


def burst(sock: socket.socket, path: str, events: int, size: int) -> None:
    """One burst through the proxy, read to its last chunk."""
    sock.sendall(f"GET /{path}?n={events}&size={size}&interval_ms=0 HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 65536)
    sock.settimeout(0.2)
    tail = b""
    while not tail.endswith(b"\r\n0\r\n\r\n"):  # the chunked body's end
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:  # the last bytes, under 64 KiB: take them as they come
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)
            continue
        if not data:
            raise SystemExit(f"/{path}: the proxy closed the connection")
        tail = (tail + data)[-16:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="bursts of each kind (default 30)")
    parser.add_argument("--events", type=int, default=20_000, help="events a burst (default 20000)")
    parser.add_argument("--size", type=int, default=200, help="bytes an event (default 200)")
    parser.add_argument("--limit", type=int, default=600, help="stop after this many seconds (default 600)")
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"rec": [], "plain": []}
    with time_limit(args.limit), tempfile.TemporaryDirectory(prefix="sse-bench-") as tmp_name:
        tmp, load_before = Path(tmp_name), _load()
        receive_port, send_port = multiprocessing.Pipe(duplex=False)
        server = multiprocessing.get_context("spawn").Process(target=serve, args=(send_port,), daemon=True)
        server.start()
        options = ["--set", f"sse_capture_dir={tmp / 'captures'}", "--set", "sse_capture_filter=~u /rec\\?"]
        proxy = Setup("recorder, /rec only", 0, RECORDER_ADDON, options)
        try:
            if not receive_port.poll(20):
                raise SystemExit("the server did not start")
            _start_mitmdump(proxy, receive_port.recv(), tmp / "proxy")
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
                for path in cpu:  # warm up
                    burst(sock, path, 2000, args.size)
                for k in range(args.rounds):
                    for path in ("rec", "plain") if k % 2 == 0 else ("plain", "rec"):
                        before = proxy.cpu_ns()
                        burst(sock, path, args.events, args.size)
                        cpu[path].append((proxy.cpu_ns() - before) / 1000 / args.events)
        finally:
            _stop(proxy)
            server.terminate()
            server.join(5)
    added = [r - p for r, p in zip(cpu["rec"], cpu["plain"], strict=True)]
    ratio = [p / r for r, p in zip(cpu["rec"], cpu["plain"], strict=True)]
    q_added, q_ratio = statistics.quantiles(added), statistics.quantiles(ratio)
    print(f"load average {load_before} before, {_load()} after; {args.rounds} rounds of {args.events} events of "
          f"{args.size} B")  # fmt: skip
    print(f"proxy CPU per event: not recorded {statistics.median(cpu['plain']):.2f} µs, recorded "
          f"{statistics.median(cpu['rec']):.2f} µs (medians)")  # fmt: skip
    print(f"per round: the recorder adds {statistics.median(added):+.2f} µs (quartiles {q_added[0]:+.2f}, "
          f"{q_added[2]:+.2f}); not recorded / recorded {statistics.median(ratio):.3f} (quartiles {q_ratio[0]:.3f}, "
          f"{q_ratio[2]:.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
