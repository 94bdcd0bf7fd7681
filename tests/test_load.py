"""The proxy under load: many concurrent streams through one mitmdump running the addon.

An agent fanning out hundreds of streamed calls, some of whose users press Stop and some of whose
upstreams die: every capture must still be exact and end the right way, the proxy must not leak a
file handle per stream, and no stream may be held up by another (a gated, abandoned or reset
stream next to it).

Scale comes from the environment, so CI stays fast and the full run is one variable away:

    SSE_INSPECT_LOAD_STREAMS   concurrent streams (default 200)
    SSE_INSPECT_LOAD_EVENTS    events per stream (default 100; the full load test is 2000)
    SSE_INSPECT_LOAD_SEED      seed of the per-stream choices (default 20261130)

    SSE_INSPECT_LOAD_EVENTS=2000 .venv/bin/python -m pytest tests/test_load.py -s

Loopback only; every wait is bounded (client timeouts, one deadline over all streams, the
server's `io_timeout` on its gates, proxy start and stop).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import pytest

pytest.importorskip("mitmproxy", reason="load tests need mitmproxy (the [record] extra)")

import httpx

from .recording_fixtures import Proxy, StartProxy, chat_events
from .sse_server import Script, Served, SSEServer, Write

STREAMS = int(os.environ.get("SSE_INSPECT_LOAD_STREAMS", "200"))
EVENTS = int(os.environ.get("SSE_INSPECT_LOAD_EVENTS", "100"))
SEED = int(os.environ.get("SSE_INSPECT_LOAD_SEED", "20261130"))

FD_SLACK = 8
"""Open descriptors mitmdump may hold after the run beyond before it (lazily opened files, an
epoll or a socketpair of asyncio's): a leak of one per stream is hundreds."""

Kind = Literal["normal", "client-disconnect", "server-reset"]


@dataclass
class Plan:
    """What one stream does: its events, and where (k) a client leaves or the server resets."""

    path: str
    kind: Kind
    events: list[bytes]
    k: int = 0
    """client-disconnect: the client reads at least k events, then closes;
    server-reset: the server sends k events, then resets the connection."""
    served_before_hold: int = 0
    """client-disconnect: the server sends this many events (>= k), then holds the rest until the
    client is gone: the proxy may have forwarded more than the client read."""
    gate: threading.Event = field(default_factory=threading.Event)
    """server-reset: released once the client holds all k events, then the server resets."""

    @property
    def body(self) -> bytes:
        return b"".join(self.events)

    def script(self) -> Script:
        if self.kind == "normal":
            return Script.events(*self.events)
        if self.kind == "client-disconnect":
            never = threading.Event()  # the server holds here until the client (the proxy) goes away
            writes = [Write(e, gate=never if i == self.served_before_hold else None) for i, e in enumerate(self.events)]
            return Script(writes)
        return Script([Write(e) for e in self.events[: self.k]], ending="reset", end_gate=self.gate)


@dataclass
class Outcome:
    received: bytes = b""
    error: str | None = None
    """The transport error that ended the stream at the client, if any."""
    started: float = 0.0
    finished: float = 0.0
    first_byte: float | None = None
    """Seconds from the request to the first chunk at the client."""
    longest_gap: float = 0.0
    """Longest wait for the next chunk at the client, after the first one."""

    @property
    def duration(self) -> float:
        return self.finished - self.started


class TimedServer(SSEServer):
    """Notes when each request arrived (`arrived[path]`, monotonic), to tell where a slow start was spent."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.arrived: dict[str, float] = {}

    def _read_request(self, conn, buffer):  # type: ignore[no-untyped-def]
        served: Served | None = super()._read_request(conn, buffer)
        if served is not None:
            self.arrived[served.target] = time.monotonic()
        return served


def relay_time(server: TimedServer, plan: Plan, outcome: Outcome) -> float:
    """Seconds from the server's first write of `plan`'s stream to the client's first byte of it."""
    [served] = [s for s in server.served if s.target == plan.path]
    assert served.sent and outcome.first_byte is not None, (plan.path, served.sent, outcome.first_byte)
    return outcome.started + outcome.first_byte - served.sent[0]


def where_the_time_went(server: TimedServer, plan: Plan, outcome: Outcome) -> str:
    """Client request -> request at the server -> server's first write -> client's first byte."""
    arrived = server.arrived.get(plan.path)
    if arrived is None:
        return "the request never reached the server"
    found = [s for s in server.served if s.target == plan.path]
    first_write = found[0].sent[0] if found and found[0].sent else None
    text = f"request reached the server after {arrived - outcome.started:.2f} s"
    if first_write is None:
        return text + ", which sent nothing"
    text += (
        f", its first write went out after {first_write - outcome.started:.2f} s ({len(found[0].sent)} writes in all)"
    )
    if outcome.first_byte is not None:
        text += f", the client's first byte came after {outcome.first_byte:.2f} s"
    return text


def plans(rng: random.Random, streams: int, events: int) -> list[Plan]:
    """~80% normal, ~10% client disconnects, ~10% server resets, each at a random event k."""
    out = []
    for i in range(streams):
        stream_events = chat_events(*(f"s{i}-w{j}" for j in range(events - 1)))  # N - 1 words + [DONE]
        path = f"/load/{i}"
        roll = rng.random()
        if roll < 0.8:
            out.append(Plan(path, "normal", stream_events))
        elif roll < 0.9:
            k = rng.randint(1, events - 2)
            held_at = rng.randint(k, min(events - 1, k + 50))
            out.append(Plan(path, "client-disconnect", stream_events, k=k, served_before_hold=held_at))
        else:
            out.append(Plan(path, "server-reset", stream_events, k=rng.randint(1, events - 1)))
    return out


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled_fds(pid: int, target: int, at_most: int, timeout: float = 10.0) -> int:
    """mitmdump's open descriptors once they are back to `target`, or after `timeout` s; at most
    `at_most` after 1 s will do (connections close asynchronously)."""
    started = time.monotonic()
    while (count := open_fds(pid)) > target:
        waited = time.monotonic() - started
        if waited > timeout or (waited > 1.0 and count <= at_most):
            break
        time.sleep(0.05)
    return count


async def run_stream(client: httpx.AsyncClient, proxy: Proxy, server: SSEServer, plan: Plan) -> Outcome:
    outcome = Outcome(started=time.monotonic())
    wanted = len(b"".join(plan.events[: plan.k]))  # what the client must hold before it leaves / the reset
    last = outcome.started
    try:
        async with client.stream("GET", proxy.target(server.url(plan.path))) as response:
            assert response.status_code == 200, (plan.path, response.status_code)
            async for chunk in response.aiter_raw():
                now = time.monotonic()
                if outcome.first_byte is None:
                    outcome.first_byte = now - outcome.started
                else:
                    outcome.longest_gap = max(outcome.longest_gap, now - last)
                last = now
                outcome.received += chunk
                if plan.kind == "client-disconnect" and len(outcome.received) >= wanted:
                    break  # the user presses Stop: leaving the block closes the half-read response
                if plan.kind == "server-reset" and len(outcome.received) >= wanted:
                    plan.gate.set()
    except httpx.TransportError as exc:
        outcome.error = repr(exc)
    outcome.finished = time.monotonic()
    return outcome


def deadline_for(streams: int, events: int) -> float:
    """A generous bound on the whole run (measured on 2 cores: ~2 s for 200 x 100, ~6.5 s for 200 x 2000)."""
    return 60.0 + streams * events / 1000.0


def stall_bound(streams: int, events: int) -> float:
    """The longest a stream's first byte may take from the server's first write to the client, or
    its next chunk after that: what one stream held up by another would show.

    The wait before the server sees the request is not bounded here (only by the run's deadline):
    mitmproxy runs one event loop on one core, and once it is saturated it accepts new connections
    late (its listen backlog is asyncio's default of 100, so the rest of 200 simultaneous connects
    wait on SYN retransmissions, 1 s, then 3 s, then 7 s): on a machine whose cores are busy with
    other work that alone took 5.3 s, and it says nothing about streams holding each other up.
    Measured on 2 cores: first byte up to ~2 s from the request at 200 x 100 and up to ~6 s at
    200 x 2000, after the last head at most ~1.6 s between chunks; with both cores busy elsewhere
    (load 6 to 7), 2.0 to 5.3 s from the server's first write to the client at 200 x 100: hence
    `contention()`.
    """
    return 4.0 + streams * events / 40_000


def contention() -> float:
    """How many processes want each core (the 1-minute load average per core), at least 1: on a
    machine busy with other work, every process here (mitmdump, the server's threads, the client)
    waits that many times longer for a core, and the stall bound stretches by as much. A stream
    held up by another waits for it whatever the load: a deadlock still fails (the client's
    timeout, the run's deadline), and on an idle machine the bound is the one measured."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize(("streams", "events"), [(STREAMS, EVENTS)], ids=[f"{STREAMS}x{EVENTS}"])
def test_proxy_under_load(start_proxy: StartProxy, streams: int, events: int) -> None:
    """`streams` concurrent streams of `events` events through one mitmdump: normal ones, clients
    that leave after k events (the server may have sent more, held until they go) and servers that
    reset after k events. Each capture is exact and ends right, one per stream, no descriptor
    leaks, no stream waits on another."""
    rng = random.Random(SEED)
    all_plans = plans(rng, streams, events)
    kinds = {kind: sum(p.kind == kind for p in all_plans) for kind in ("normal", "client-disconnect", "server-reset")}
    # at least one of each kind, whatever the seed and scale
    assert all(kinds.values()), kinds

    with TimedServer({p.path: p.script() for p in all_plans}) as server:
        server.routes["/warm-up"] = Script.events(*chat_events("warm", "up"))
        proxy = start_proxy()
        pid = proxy.process.pid

        # one stream first, so that what mitmdump opens once (logging, the capture folder) is open
        with proxy.client() as client:
            client.get(proxy.target(server.url("/warm-up"))).raise_for_status()
        proxy.captures(1)
        time.sleep(0.5)  # for mitmdump to close the warm-up's connections
        fds_before = open_fds(pid)

        async def run_all() -> list[Outcome]:
            limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
            timeout = httpx.Timeout(stall_bound(streams, events) + 5.0)  # past the bound: the assertions say more
            async with httpx.AsyncClient(proxy=proxy.url, trust_env=False, timeout=timeout, limits=limits) as client:
                tasks = [run_stream(client, proxy, server, plan) for plan in all_plans]
                return await asyncio.wait_for(asyncio.gather(*tasks), deadline_for(streams, events))

        started, cpu_before = time.monotonic(), cpu_seconds(pid)
        outcomes = asyncio.run(run_all())
        elapsed, proxy_cpu = time.monotonic() - started, cpu_seconds(pid) - cpu_before
        fds_at_end = open_fds(pid)

        # first what the clients saw, with where each stream got to on the server's side
        for plan, outcome in zip(all_plans, outcomes, strict=True):
            if (outcome.error is not None) != (plan.kind == "server-reset"):
                pytest.fail(
                    f"{plan.path} ({plan.kind}, k={plan.k}) {outcome.error} after {outcome.duration:.2f} s, "
                    f"{len(outcome.received)} bytes received: {where_the_time_went(server, plan, outcome)}"
                    f"\n{proxy.log()[-5000:]}"
                )

        captures = proxy.captures(streams + 1, timeout=30)
        fds_after = settled_fds(pid, target=fds_before, at_most=fds_before + FD_SLACK)

        # every response is over at the server, the way its kind says
        served = {p.path: server.request(p.path) for p in all_plans}
        for s in served.values():
            s.wait(timeout=15)

    by_path: dict[str, list] = {}
    for capture in captures:
        assert capture.request is not None
        by_path.setdefault(urlsplit(capture.request.url).path, []).append(capture)
    assert set(by_path) == {p.path for p in all_plans} | {"/warm-up"}
    assert all(len(c) == 1 for c in by_path.values()), {p: len(c) for p, c in by_path.items() if len(c) != 1}

    for plan, outcome in zip(all_plans, outcomes, strict=True):
        [capture] = by_path[plan.path]
        end = capture.end.kind if capture.end is not None else None
        where = (plan.path, plan.kind, plan.k, outcome.error, end, served[plan.path].outcome)
        if plan.kind == "normal":
            assert outcome.error is None, where
            assert outcome.received == plan.body, where
            assert capture.body == plan.body, where
            assert len(served[plan.path].sent) == events and served[plan.path].outcome == "clean", where
            assert end == "complete", where
        elif plan.kind == "client-disconnect":
            sent = b"".join(plan.events[: plan.served_before_hold])
            wanted = len(b"".join(plan.events[: plan.k]))
            assert outcome.error is None, where
            assert len(outcome.received) >= wanted and sent.startswith(outcome.received), where
            # the proxy may have forwarded (and recorded) more than the client read, never more than was sent
            assert sent.startswith(capture.body) and len(capture.body) >= len(outcome.received), where
            assert served[plan.path].outcome == "client-gone", where
            assert end == "client-disconnected", where
        else:
            sent = b"".join(plan.events[: plan.k])
            assert outcome.error is not None, where  # a broken stream, never a clean end
            assert outcome.received == sent, where
            assert capture.body == sent, where
            assert served[plan.path].outcome == "reset", where
            assert end == "server-disconnected", where

    slowest = max(outcomes, key=lambda o: o.duration)
    slowest_path = all_plans[outcomes.index(slowest)].path
    longest_gap = max(o.longest_gap for o in outcomes)
    slowest_first_byte = max(o.first_byte or 0.0 for o in outcomes)
    relayed = {plan.path: relay_time(server, plan, outcome) for plan, outcome in zip(all_plans, outcomes, strict=True)}
    slowest_relay = max(relayed.values())
    late = max(range(len(outcomes)), key=lambda i: outcomes[i].first_byte or 0.0)
    late_note = where_the_time_went(server, all_plans[late], outcomes[late])
    print(
        f"\nload {streams} x {events} events (seed {SEED}, {kinds}): {elapsed:.2f} s for all streams "
        f"(mitmdump used {proxy_cpu:.2f} s of CPU); "
        f"slowest stream {slowest_path} {slowest.duration:.2f} s; slowest first byte {slowest_first_byte:.2f} s "
        f"({all_plans[late].path}: {late_note}); "
        f"slowest first byte from the server's first write {slowest_relay:.2f} s; "
        f"longest wait for a chunk after it {longest_gap:.2f} s; "
        f"mitmdump fds before {fds_before}, at the end of the run {fds_at_end}, after {fds_after}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    # no stream stalled: each one ends within the run's bound, and none waited long for its first
    # byte once the server had sent it, or for a chunk after it
    assert slowest.duration < deadline_for(streams, events), slowest_path
    bound = stall_bound(streams, events) * contention()
    assert slowest_relay < bound and longest_gap < bound, (slowest_relay, longest_gap, bound)
    assert fds_after <= fds_before + FD_SLACK, (fds_before, fds_after)
