"""What the recording addon costs a stream: added latency per event and burst throughput, on loopback.

    /work/venv/bin/python benchmarks/recorder_latency.py            # from the repository root
    /work/venv/bin/python benchmarks/recorder_latency.py --rounds 15 --burst-events 100000

Three processes on this machine: a scripted event-stream server, a mitmdump in reverse mode in front
of it, and this script as the client, reading with httpx's `iter_raw`. Two mitmdumps run side by
side, identical but for the addon they load:

  (a) baseline: a five-line addon that only sets `flow.response.stream = True` for event streams,
      so mitmproxy streams them as it does with the recorder (without it, it buffers whole bodies);
  (b) recorder: `-s addons/sse_capture.py`, capturing into a temporary folder.

The server sends N events of a fixed size, one HTTP chunk (one `sendall`) each, every event
stamped with `time.perf_counter_ns()` taken just before its write. Linux's perf_counter is
CLOCK_MONOTONIC, one clock for every process, so the client's receive time minus the stamp is the
event's delivery latency. Every round starts both mitmdumps afresh (one process can run a few per
cent faster or slower than another for all its life: memory layout, hash seed), and each setup has
one client, one keep-alive connection, for the round. A round runs, for each setup:

  latency:    `--events` events `--interval-ms` apart (a fast token stream), p50 and p99;
  throughput: `--burst-events` events sent as fast as the server can, MB/s and events/s measured
              at the client from the first body byte to the last, the CPU time the proxy process
              spent per event (from /proc/PID/task/*/schedstat) and this client's (process time).

The latency runs go a then b in even rounds, b then a in odd ones; then the throughput runs, back
to back, a b b a (b a a b in odd rounds), so that other load on the machine, which comes and goes
over seconds, weighs on both setups of a round alike. A direct run (no proxy) gives the floor of
this server and client. The table shows each setup, the latency the recorder adds (b - a), and
the throughput ratio b / a twice: as the ratio of the medians, and as the median of the per-round
ratios (b's two runs against a's), with their spread. Last, the proxy's CPU time per event, the
steadiest number (waiting for a core does not count): a / b is the throughput ratio where the
proxy's CPU is the limit. The client's CPU per event says how much of the two cores the client
takes itself (httpx and h11 cost about as much per event as the proxy). The load average is
printed before and after. Loopback only; every read is bounded, and an alarm ends the whole run
after `--limit` seconds (600 by default: a busy machine slows every round).
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.connection
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from urllib.parse import parse_qs, urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
MITMDUMP = Path(sys.executable).with_name("mitmdump")
RECORDER_ADDON = ROOT / "addons" / "sse_capture.py"
BASELINE_ADDON = '''
def responseheaders(flow):
    """Stream event streams through, as the recorder does, and nothing else."""
    if flow.response.headers.get("content-type", "").startswith("text/event-stream"):
        flow.response.stream = True
'''
IO_TIMEOUT = 10.0
_STAMP = re.compile(rb'"t":(\d+)')


# -- the server (its own process, so it never shares a GIL with the client) -------------------


def _event(k: int, size: int) -> bytes:
    """Event `k`, stamped now, padded to `size` bytes."""
    head = b'data: {"i":%d,"t":%d,"pad":"' % (k, time.perf_counter_ns())
    return head + b"x" * max(0, size - len(head) - 4) + b'"}\n\n'


def _respond(conn: socket.socket, target: str) -> None:
    query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
    n, size, interval = int(query["n"]), int(query["size"]), float(query["interval_ms"]) / 1000
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    start = time.perf_counter()
    for k in range(n):
        if interval:
            delay = start + k * interval - time.perf_counter()  # an absolute schedule: no drift
            if delay > 0:
                time.sleep(delay)
        event = _event(k, size)
        conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
    conn.sendall(b"0\r\n\r\n")


def _connection(conn: socket.socket) -> None:
    conn.settimeout(IO_TIMEOUT)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = b""
    with conn:
        try:
            while True:  # keep-alive: one request after another
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")  # GET only: no request body
                _respond(conn, head.split(b" ", 2)[1].decode())
        except OSError:
            return


def serve(port_out: multiprocessing.connection.Connection) -> None:
    """Accept forever on a free loopback port (sent back through `port_out`); the parent terminates us."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    port_out.send(listener.getsockname()[1])
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_connection, args=(conn,), daemon=True).start()


# -- the proxies ----------------------------------------------------------------------------


@dataclass
class Setup:
    name: str
    port: int
    addon: Path | None = None
    """The proxy's addon (None: no proxy, the direct setup)."""
    options: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    latencies_us: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    """Each throughput run's time from its first body byte to its last."""
    cpu_us_per_event: list[float] = field(default_factory=list)
    client_us_per_event: list[float] = field(default_factory=list)

    def cpu_ns(self) -> int:
        """CPU time the proxy process has used so far (0 for the direct setup: no proxy)."""
        if self.process is None:
            return 0
        tasks = Path(f"/proc/{self.process.pid}/task")
        return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks.iterdir())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_mitmdump(setup: Setup, upstream_port: int, home: Path) -> None:
    """Start a fresh mitmdump for `setup` and wait until it listens."""
    assert setup.addon is not None
    home.mkdir()
    setup.port = _free_port()
    args = [str(MITMDUMP), "--mode", f"reverse:http://127.0.0.1:{upstream_port}", "--listen-host", "127.0.0.1",
            "--listen-port", str(setup.port), "--set", f"confdir={home / 'conf'}", "-s", str(setup.addon),
            *setup.options]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with (home / "mitmdump.log").open("wb") as log:
        setup.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 20
    while True:
        if setup.process.poll() is not None:
            output = (home / "mitmdump.log").read_text()
            raise SystemExit(f"mitmdump {setup.name} exited with {setup.process.returncode}:\n{output}")
        try:
            socket.create_connection(("127.0.0.1", setup.port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"mitmdump {setup.name} not listening after 20 s") from None
            time.sleep(0.05)


def _stop(setup: Setup) -> None:
    """Stop `setup`'s mitmdump, if it runs."""
    process, setup.process = setup.process, None
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# -- the client -----------------------------------------------------------------------------


def latency_run(client: httpx.Client, url: str) -> list[float]:
    """Per-event latency in µs: receive time minus the server's stamp."""
    out: list[float] = []
    pending = b""
    with client.stream("GET", url) as response:
        for chunk in response.iter_raw():
            now = time.perf_counter_ns()
            pending += chunk
            *complete, pending = pending.split(b"\n\n")
            out += [(now - int(m.group(1))) / 1000 for e in complete if (m := _STAMP.search(e))]
    return out


def burst_run(client: httpx.Client, url: str, expected: int) -> float:
    """Seconds from the first body byte to the last (of `expected` bytes)."""
    got, first = 0, 0.0
    with client.stream("GET", url) as response:
        for chunk in response.iter_raw():
            if not got:
                first = time.perf_counter()
            got += len(chunk)
    elapsed = time.perf_counter() - first
    if got != expected:
        raise SystemExit(f"{url}: got {got} bytes, expected {expected}")
    return elapsed


def throughput(setup: Setup, client: httpx.Client, url: str, events: int, size: int) -> None:
    """One throughput run through `setup`: its time, and the proxy's and this client's CPU per event."""
    proxy_before, client_before = setup.cpu_ns(), time.process_time_ns()
    seconds = burst_run(client, url, events * size)
    setup.cpu_us_per_event.append((setup.cpu_ns() - proxy_before) / 1000 / events)
    setup.client_us_per_event.append((time.process_time_ns() - client_before) / 1000 / events)
    setup.seconds.append(seconds)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Interrupt the run after `seconds`; the callers' finally blocks stop every process."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(f"stopped: the run took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def machine() -> str:
    from mitmproxy.version import VERSION

    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), "?")
    return (f"{os.cpu_count()} CPUs ({cpu}), {platform.platform()}, Python {platform.python_version()}, "
            f"mitmproxy {VERSION}, httpx {httpx.__version__}")  # fmt: skip


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="events in a latency run (default 2000)")
    parser.add_argument("--interval-ms", type=float, default=1.0, help="pause between them (default 1 ms)")
    parser.add_argument("--burst-events", type=int, default=30_000, help="events in a throughput run (default 30000)")
    parser.add_argument("--size", type=int, default=200, help="bytes per event, about an LLM token event (default 200)")
    parser.add_argument("--rounds", type=int, default=7, help="latency + throughput runs per setup (default 7)")
    parser.add_argument("--limit", type=int, default=600, help="stop after this many seconds (default 600)")
    args = parser.parse_args()
    if not MITMDUMP.exists():
        raise SystemExit(f"no mitmdump next to {sys.executable}")

    with time_limit(args.limit), tempfile.TemporaryDirectory(prefix="sse-bench-") as tmp_name:
        started, load_before = time.monotonic(), _load()
        tmp = Path(tmp_name)
        baseline_addon = tmp / "stream_only.py"
        baseline_addon.write_text(BASELINE_ADDON)
        receive_port, send_port = multiprocessing.Pipe(duplex=False)
        server = multiprocessing.get_context("spawn").Process(target=serve, args=(send_port,), daemon=True)
        server.start()
        proxies: list[Setup] = []
        try:
            if not receive_port.poll(20):
                raise SystemExit("the server did not start")
            server_port = receive_port.recv()
            direct = Setup("direct (no proxy)", server_port)
            recording = ["--set", f"sse_capture_dir={tmp / 'captures'}"]
            proxies += [Setup("a: mitmdump, stream only", 0, baseline_addon),
                        Setup("b: mitmdump + recorder", 0, RECORDER_ADDON, recording)]  # fmt: skip
            setups = [direct, *proxies]
            paced = f"/paced?n={args.events}&size={args.size}&interval_ms={args.interval_ms}"
            burst = f"/burst?n={args.burst_events}&size={args.size}&interval_ms=0"
            for k in range(args.rounds):
                pair = proxies if k % 2 == 0 else proxies[::-1]
                for proxy in pair:  # fresh processes every round: no setup keeps a lucky or unlucky one all along
                    _start_mitmdump(proxy, server_port, tmp / f"{proxy.name[0]}{k}")
                with ExitStack() as stack:  # one client, one keep-alive connection, per setup
                    clients = {
                        s.name: stack.enter_context(httpx.Client(trust_env=False, timeout=IO_TIMEOUT)) for s in setups
                    }
                    for setup in setups:  # warm up: first flows pay for imports and lazy set-up
                        burst_run(clients[setup.name], f"http://127.0.0.1:{setup.port}/warmup?n=500&size={args.size}"
                                  "&interval_ms=0", 500 * args.size)  # fmt: skip
                    for setup in [direct, *pair]:
                        setup.latencies_us += latency_run(clients[setup.name], f"http://127.0.0.1:{setup.port}{paced}")
                    for setup in [direct, *pair, *reversed(pair)]:  # back to back: a b b a, or b a a b
                        throughput(setup, clients[setup.name], f"http://127.0.0.1:{setup.port}{burst}",
                                   args.burst_events, args.size)  # fmt: skip
                for proxy in pair:
                    _stop(proxy)
            recorded = _recorded_chunks(tmp / "captures")
        finally:
            for proxy in proxies:
                _stop(proxy)
            server.terminate()
            server.join(5)
        report(args, setups, recorded, time.monotonic() - started, (load_before, _load()))


def _recorded_chunks(folder: Path) -> list[int]:
    """Chunk lines in each capture of the recorder's throughput runs (header and end lines left out)."""
    return [sum(1 for _ in p.open()) - 2 for p in sorted(folder.glob("*-burst.jsonl"))]


def _load() -> str:
    """The 1-minute load average."""
    return Path("/proc/loadavg").read_text().split()[0]


def _spread(values: list[float], spec: str) -> str:
    return f"{min(values):{spec}}-{max(values):{spec}}"


def report(args: argparse.Namespace, setups: list[Setup], recorded: list[int], took: float,
           load: tuple[str, str]) -> None:  # fmt: skip
    print(f"machine: {machine()}; load average {load[0]} before, {load[1]} after")
    print(f"latency runs: {args.events} events of {args.size} B, {args.interval_ms} ms apart; throughput runs: "
          f"{args.burst_events} events of {args.size} B unpaced; {args.rounds} rounds, setups alternating")  # fmt: skip
    print()
    header = (f"{'setup':<26} {'p50 µs':>8} {'p99 µs':>8} {'max µs':>8} {'MB/s':>7} {'(min-max)':>11} "
              f"{'events/s':>9} {'proxy CPU µs/event':>19} {'client CPU µs/event':>20}")  # fmt: skip
    print(header)
    print("-" * len(header))
    megabytes = args.burst_events * args.size / 1e6
    for s in setups:
        lat, mb_per_s = s.latencies_us, [megabytes / x for x in s.seconds]
        cpu = f"{statistics.median(s.cpu_us_per_event):.2f}" if s.addon else "-"
        print(f"{s.name:<26} {percentile(lat, 0.5):8.0f} {percentile(lat, 0.99):8.0f} {max(lat):8.0f} "
              f"{statistics.median(mb_per_s):7.1f} {_spread(mb_per_s, '.1f'):>11} "
              f"{args.burst_events / statistics.median(s.seconds):9.0f} {cpu:>19} "
              f"{statistics.median(s.client_us_per_event):20.2f}")  # fmt: skip
    a, b = setups[1], setups[2]
    print()
    added50 = percentile(b.latencies_us, 0.5) - percentile(a.latencies_us, 0.5)
    added99 = percentile(b.latencies_us, 0.99) - percentile(a.latencies_us, 0.99)
    print(f"added by the recorder (b - a): p50 {added50:+.0f} µs, p99 {added99:+.0f} µs per event")
    ratio = statistics.median(a.seconds) / statistics.median(b.seconds)
    paired = [sum(a.seconds[k : k + 2]) / sum(b.seconds[k : k + 2]) for k in range(0, len(a.seconds), 2)]
    print(f"throughput b / a: {ratio:.2f} (ratio of the medians); per round: {statistics.median(paired):.2f} median, "
          f"{_spread(paired, '.2f')} ({', '.join(f'{x:.2f}' for x in paired)})")  # fmt: skip
    cpu_a, cpu_b = statistics.median(a.cpu_us_per_event), statistics.median(b.cpu_us_per_event)
    print(f"proxy CPU per event: a {cpu_a:.2f} µs ({_spread(a.cpu_us_per_event, '.2f')}), b {cpu_b:.2f} µs "
          f"({_spread(b.cpu_us_per_event, '.2f')}), medians: the recorder adds {cpu_b - cpu_a:+.2f} µs; "
          f"a / b {cpu_a / cpu_b:.2f}")  # fmt: skip
    if recorded:
        print(f"chunks recorded per throughput run: {', '.join(map(str, recorded))} ({args.burst_events}: one per HTTP "
              "chunk; more: some HTTP chunks were read in two parts)")  # fmt: skip
    print(f"whole run: {took:.1f} s")


if __name__ == "__main__":
    main()
