"""A real `mitmdump` running the recording addon, for end-to-end tests.

`start_proxy(mode="regular" | "reverse:http://127.0.0.1:PORT", **options)` starts the venv's
`mitmdump` on a free loopback port with its own confdir (the CA it generates stays in the test's
temporary directory) and `-s addons/sse_capture.py`, `--set sse_capture_dir=<tmp>/caps` (unless given), plus one
`--set name=value` per option (a sequence: one per item). Teardown stops it with SIGINT first, so the addon's `done()` runs as
on a user's Ctrl-C, kills it if that takes too long, prints its log (pytest shows it for a failed
test) and fails the test when the log holds a traceback through the addon: an addon error never
goes unseen, even when the stream survived it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from sse_inspect import Capture, load_capture

from .helpers import ROOT, free_port, wait_listening
from .sse_server import SSEServer

MITMDUMP = Path(sys.executable).with_name("mitmdump")
ADDON = ROOT / "addons" / "sse_capture.py"
TIMEOUT = httpx.Timeout(5.0)
"""Every client read, write and connect: a stalled proxy fails a test instead of hanging it."""

OptionValue = str | bool | int | Sequence[str]

_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\n(?:[ \t].*\n)*")
"""A traceback's frames, to tell the addon's errors from mitmproxy's own shutdown noise (a
CancelledError logged when it stops with a connection open)."""


@dataclass
class Proxy:
    """A running mitmdump and where it records."""

    mode: str
    port: int
    capture_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def confdir(self) -> Path:
        """mitmproxy's folder: its CA (`mitmproxy-ca-cert.pem`) is generated there at start."""
        return self.log_path.parent / "conf"

    def log(self) -> str:
        """Everything mitmdump printed so far."""
        return self.log_path.read_text(errors="replace")

    def client(self, timeout: httpx.Timeout = TIMEOUT) -> httpx.Client:
        """A client that goes through this proxy: as its proxy in regular mode, as its server in
        reverse mode (the way an LLM SDK is pointed at it with a base URL)."""
        proxy = self.url if self.mode == "regular" else None
        return httpx.Client(proxy=proxy, trust_env=False, timeout=timeout)

    def async_client(self, limits: httpx.Limits) -> httpx.AsyncClient:
        """The same, for asyncio; `limits` to allow as many connections as streams at once."""
        proxy = self.url if self.mode == "regular" else None
        return httpx.AsyncClient(proxy=proxy, trust_env=False, timeout=TIMEOUT, limits=limits)

    def target(self, url: str) -> str:
        """What a client asks for to reach the upstream `url` through this proxy."""
        if self.mode == "regular":
            return url
        parts = urlsplit(url)
        return urlunsplit(("http", f"127.0.0.1:{self.port}", parts.path, parts.query, ""))

    def capture_files(self) -> list[Path]:
        return sorted(self.capture_dir.glob("*.jsonl")) if self.capture_dir.is_dir() else []

    def captures(self, count: int, timeout: float = 10.0) -> list[Capture]:
        """Wait until `count` capture files exist, each with its end line; exactly `count`, by name."""
        deadline = time.monotonic() + timeout
        while True:
            loaded = [load_capture(p) for p in self.capture_files()]
            if len(loaded) >= count and all(c.end is not None for c in loaded):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"wanted {count} finished captures after {timeout} s, got {loaded}\n{self.log()}")
            time.sleep(0.02)
        assert len(loaded) == count, f"{loaded}\n{self.log()}"
        return loaded

    def stop(self, timeout: float = 10.0) -> int:
        """SIGINT (mitmproxy shuts down and calls `done()`), then SIGKILL after `timeout` s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode


READY = "sse-inspect: recording event streams into"
"""What the addon logs in `running()`, once its options are configured: mitmproxy 12 may accept
connections before that, and a stream taken then would meet an addon not yet configured."""


def _wait_listening(proxy: Proxy, timeout: float, *, addon: bool = False) -> None:
    deadline = time.monotonic() + timeout
    try:
        wait_listening(proxy.port, proxy.process, "mitmdump", proxy.log, timeout)
        while addon and READY not in proxy.log():
            if proxy.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"mitmdump's addon never said it was running:\n{proxy.log()}")
            time.sleep(0.02)
    except AssertionError:
        proxy.stop()
        raise


def _set_args(options: dict[str, OptionValue]) -> list[str]:
    args: list[str] = []
    for name, value in options.items():
        if isinstance(value, bool):
            values = ["true" if value else "false"]
        elif isinstance(value, str | int | float):
            values = [str(value)]
        else:
            values = list(value)  # a sequence option: one --set per item
        for v in values:
            args += ["--set", f"{name}={v}"]
    return args


StartProxy = Callable[..., Proxy]


@pytest.fixture
def start_proxy(tmp_path: Path) -> Iterator[StartProxy]:
    """Factory: `start_proxy(mode="regular", *, addon=True, extra_args=(), **options) -> Proxy`;
    `extra_args` go to mitmdump as they are (e.g. `["-w", path]`), with or without the addon."""
    if not MITMDUMP.exists():
        pytest.skip(f"no mitmdump next to {sys.executable}")
    started: list[Proxy] = []

    def start(mode: str = "regular", *, addon: bool = True, extra_args: Sequence[str] = (), **options: OptionValue) -> Proxy:
        home = tmp_path / f"mitmdump-{len(started)}"
        home.mkdir()
        options = {"sse_capture_dir": str(tmp_path / "caps"), **options}
        port, capture_dir, log_path = free_port(), Path(str(options["sse_capture_dir"])), home / "mitmdump.log"
        args = [str(MITMDUMP), "--mode", mode, "--listen-host", "127.0.0.1", "--listen-port", str(port)]
        args += ["--set", f"confdir={home / 'conf'}"]
        if addon:
            args += ["-s", str(ADDON), *_set_args(options)]
        args += extra_args
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with log_path.open("wb") as log:
            process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        proxy = Proxy(mode, port, capture_dir, log_path, process)
        started.append(proxy)
        _wait_listening(proxy, timeout=20.0, addon=addon)
        return proxy

    yield start

    broken = []
    for proxy in started:
        proxy.stop()
        log = proxy.log()
        print(f"--- mitmdump {proxy.mode} on port {proxy.port}, exit {proxy.process.returncode} ---\n{log}")
        if "has crashed" in log or any("sse_inspect" in tb or str(ADDON) in tb for tb in _TRACEBACK.findall(log)):
            broken.append(log)
    if broken:
        pytest.fail("the addon raised inside mitmdump:\n" + "\n".join(broken), pytrace=False)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    """A scripted loopback SSE server for one test."""
    with SSEServer() as s:
        yield s


def chat_events(*words: str) -> list[bytes]:
    """OpenAI Chat Completions stream events for `words`, then `[DONE]`."""
    deltas = [json.dumps({"choices": [{"index": 0, "delta": {"content": w}}]}) for w in words]
    return [f"data: {d}\n\n".encode() for d in deltas] + [b"data: [DONE]\n\n"]
