"""A real nginx between a loopback LLM-like SSE server and the client: the buffering lab.

`Nginx` runs Debian's nginx as its own master, with a generated config in a temporary
folder, listening on 127.0.0.1 and a free port, as a reverse proxy to an upstream. The
scenarios are the configurations users actually run into; `openai_stream` makes an
OpenAI-style answer at a model's pace.

Run as a script to (re)record the demo captures kept in captures/:

    .venv/bin/python -m tests.nginx_lab captures/
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.process.returncode}: {self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx not listening on {self.port} after {timeout} s: {self.log()}")

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
