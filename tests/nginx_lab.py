"""A real nginx between a loopback LLM-like SSE server and the client: the buffering lab.

`Nginx` runs Debian's nginx as its own master, with a generated config in a temporary
folder, listening on 127.0.0.1 and a free port, as a reverse proxy to an upstream. The
`Scenario` constants are the configurations users actually run into; `openai_events` makes an
OpenAI-style answer, and a scenario's upstream sends it at a model's pace.

`run(scenario, root, start_proxy)` sends one chat request through the whole chain, recorded
by real mitmdumps running the addon:

    client -> mitmdump (regular) -> nginx -> [mitmdump (reverse), two_point=True] -> upstream

Run as a script to (re)record the demo captures kept in captures/:

    .venv/bin/python -m tests.nginx_lab captures/
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from sse_inspect import Capture

from .helpers import ROOT, free_port, wait_listening
from .recording_fixtures import ADDON, MITMDUMP, OptionValue, Proxy, StartProxy, _set_args, _wait_listening
from .sse_server import SSE_HEADERS, Framing, Script, Served, SSEServer

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONF = """\
worker_processes 1;
error_log {root}/error.log warn;
pid {root}/nginx.pid;
{user}
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    {http}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            {location}
        }}
    }}
}}
"""


def nginx_available() -> str | None:
    """Why nginx cannot run here, or None when it can."""
    if not os.path.exists(NGINX):
        return f"nginx is not installed ({NGINX} missing): .ci/run installs Debian's nginx-light"
    return None


@dataclass
class Nginx:
    """One nginx master proxying 127.0.0.1:`port` to 127.0.0.1:`upstream`."""

    root: Path
    upstream: int
    location: str = ""
    """Directives inside `location /` (e.g. `proxy_buffering off;`)."""
    http: str = ""
    """Directives inside `http` (e.g. `gzip on;`)."""
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        self.port = self.port or free_port()
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        user = "user root;" if os.geteuid() == 0 else ""
        conf = self.root / "nginx.conf"
        conf.write_text(CONF.format(root=self.root, user=user, http=self.http, port=self.port,
                                    upstream=self.upstream, location=self.location))  # fmt: skip
        self.process = subprocess.Popen([NGINX, "-p", str(self.root), "-c", str(conf), "-g", "daemon off;"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            wait_listening(self.port, self.process, "nginx", self.log, timeout)
        except AssertionError as exc:
            self.stop()
            raise RuntimeError(str(exc)) from None  # the session probe turns it into a skip (or a CI failure)
        return self

    def log(self) -> str:
        path = self.root / "error.log"
        err = self.process.stderr.read().decode(errors="replace") if self.process and self.process.poll() else ""
        return err + (path.read_text(errors="replace") if path.exists() else "")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)  # fast shutdown: drops open connections
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def openai_events(words: int, *, pad: int = 0) -> list[bytes]:
    """An OpenAI chat stream of `words` content chunks (each about 150 + `pad` bytes), a finish chunk, [DONE]."""
    base = {"id": "chatcmpl-lab", "object": "chat.completion.chunk", "created": 1764471600, "model": "lab-model"}
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    for i in range(words):
        word = f"w{i}" + ("." * pad) + " "
        events.append({**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]})
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]


def answer_of(words: int, *, pad: int = 0) -> str:
    return "".join(f"w{i}" + ("." * pad) + " " for i in range(words))


# -- scenarios -----------------------------------------------------------------------------

CHAT_PATH = "/v1/chat/completions"
CHAT_REQUEST = json.dumps(
    {"model": "lab-model", "stream": True, "messages": [{"role": "user", "content": "Count, one word per token."}]}
).encode()
"""What an SDK posts: no credentials, so the demo captures hold nothing to redact."""
CLIENT_TIMEOUT = httpx.Timeout(10.0)
"""Every read of the lab's client: longer than any scenario's hold, so a hang fails instead of waiting."""


@dataclass(frozen=True)
class Scenario:
    """An OpenAI-style upstream answering `words` words, one event per `interval` s, and the
    nginx directives in front of it."""

    words: int
    interval: float
    framing: Framing = "chunked"
    """"close": a body that ends when the connection closes, what gunicorn's sync workers, uvicorn's
    h11 implementation and many small servers answer to nginx's default HTTP/1.0 request."""
    headers: tuple[tuple[str, str], ...] = SSE_HEADERS
    location: str = ""
    http: str = ""

    @property
    def events(self) -> list[bytes]:
        return openai_events(self.words)

    @property
    def body(self) -> bytes:
        return b"".join(self.events)

    def script(self) -> Script:
        return Script.events(*self.events, interval=self.interval, framing=self.framing, headers=self.headers)


X_ACCEL_NO = (*SSE_HEADERS, ("X-Accel-Buffering", "no"))
GZIP_SSE = "gzip on; gzip_types text/event-stream; gzip_min_length 1;"

BUFFERED = Scenario(20, 0.04, "close")
"""nginx defaults (`proxy_buffering on`) in front of a close-delimited upstream: held to the end."""
BUFFERED_LONG = Scenario(1500, 0.002, "close")
"""The same with a long answer: released one full 4 KiB proxy buffer at a time."""
UNBUFFERED = Scenario(20, 0.04, "close", headers=X_ACCEL_NO)
"""The upstream opts out of nginx's buffering per response, with `X-Accel-Buffering: no`."""
BUFFERING_OFF = Scenario(20, 0.04, "close", location="proxy_buffering off;")
"""The nginx config opts out: `proxy_buffering off;`."""
CHUNKED = Scenario(20, 0.04)
"""nginx defaults in front of a chunked upstream: nginx passes each chunk on as it comes."""
GZIPPED = Scenario(20, 0.04, http=GZIP_SSE)
"""`gzip on` with text/event-stream among `gzip_types`: the compressor holds the stream."""
READ_TIMEOUT = Scenario(20, 2.0, location="proxy_read_timeout 1s;")
"""A model pausing longer than `proxy_read_timeout` (60 s by default, 1 s here): nginx cuts the stream."""


# -- one request through the chain ----------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One chat request through client -> mitmdump -> nginx -> [mitmdump ->] upstream."""

    served: Served
    """What the upstream received, and when it sent each write."""
    received: bytes
    """The body as the client read it off the wire (still compressed when Content-Encoded)."""
    error: str | None
    """Why the client's read failed, when it did (a stream cut mid-body)."""
    client: Capture
    """Recorded by the mitmdump in front of nginx: what the user's client saw."""
    upstream: Capture | None
    """Recorded by the mitmdump between nginx and the upstream (with `two_point`)."""


def post(proxy: Proxy, url: str) -> tuple[bytes, str | None]:
    """POST the chat request to `url` through `proxy`, like an SDK: the raw body, and the error that cut it."""
    headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream"), ("Accept-Encoding", "gzip")]
    received = bytearray()
    with proxy.client(CLIENT_TIMEOUT) as client:
        try:
            with client.stream("POST", proxy.target(url), content=CHAT_REQUEST, headers=headers) as response:
                for data in response.iter_raw():
                    received += data
        except httpx.RemoteProtocolError as exc:
            return bytes(received), str(exc)
    return bytes(received), None


def run(scenario: Scenario, root: Path, start_proxy: StartProxy, *, two_point: bool = False) -> Run:
    """Send one chat request through nginx configured as `scenario` says, and wait for the captures."""
    with SSEServer({CHAT_PATH: scenario.script()}) as upstream:
        upstream_proxy = None
        if two_point:
            upstream_proxy = start_proxy(f"reverse:{upstream.url('')}", sse_capture_dir=str(root / "caps-upstream"))
        client_proxy = start_proxy("regular", sse_capture_dir=str(root / "caps-client"))
        hop = upstream_proxy.port if upstream_proxy else upstream.port
        with Nginx(root / "nginx", hop, location=scenario.location, http=scenario.http) as nginx:
            received, error = post(client_proxy, nginx.url + CHAT_PATH)
            served = upstream.request(CHAT_PATH)
            served.wait()
            # before nginx stops: its shutdown would end a capture still open
            [client] = client_proxy.captures(1)
            [upstream_capture] = upstream_proxy.captures(1) if upstream_proxy else [None]
    return Run(served, received, error, client, upstream_capture)


# -- the demo captures ----------------------------------------------------------------------


@contextmanager
def mitmdumps(home: Path) -> Iterator[StartProxy]:
    """`start_proxy` outside pytest: mitmdumps with the addon, stopped (SIGINT) on exit."""
    started: list[Proxy] = []

    def start(mode: str = "regular", **options: OptionValue) -> Proxy:
        folder = home / f"mitmdump-{len(started)}"
        folder.mkdir(parents=True)
        port = free_port()
        args = [str(MITMDUMP), "--mode", mode, "--listen-host", "127.0.0.1", "--listen-port", str(port),
                "--set", f"confdir={folder / 'conf'}", "-s", str(ADDON), *_set_args(options)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with (folder / "mitmdump.log").open("wb") as log:
            process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        proxy = Proxy(mode, port, Path(str(options["sse_capture_dir"])), folder / "mitmdump.log", process)
        started.append(proxy)
        _wait_listening(proxy, timeout=20.0)
        return proxy

    try:
        yield start
    finally:
        for proxy in started:
            proxy.stop()


DEMOS: tuple[tuple[str, Scenario], ...] = (
    ("nginx-buffered", BUFFERED),
    ("nginx-unbuffered", UNBUFFERED),
    ("nginx-gzip", GZIPPED),
    ("nginx-cut", READ_TIMEOUT),
)
"""Demo capture names and their scenarios; nginx-buffered is recorded on both sides of nginx,
its upstream side as nginx-buffered-upstream."""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.nginx_lab FOLDER", file=sys.stderr)
        return 2
    if reason := nginx_available():
        print(reason, file=sys.stderr)
        return 1
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, scenario in DEMOS:
            root = Path(tmp) / name
            with mitmdumps(root) as start_proxy:
                recorded = run(scenario, root, start_proxy, two_point=scenario is BUFFERED)
            sides = [(name, recorded.client), (f"{name}-upstream", recorded.upstream)]
            for file, capture in sides:
                if capture is not None:
                    assert capture.path is not None
                    shutil.copyfile(capture.path, out / f"{file}.jsonl")
                    print(out / f"{file}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
