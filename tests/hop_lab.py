"""The hop lab: real app servers, frameworks and proxies between a paced OpenAI-style upstream and
a client, each recorded on both sides by real mitmdumps running the addon.

    client -> mitmdump (regular) -> [hop ->] app server -> mitmdump (reverse) -> upstream

The upstream is `tests/sse_server.py` answering an OpenAI chat stream at a model's pace. The
apps (tests/lab_apps/) read it and stream the answer on: the tutorial's Flask proxy (good and its
classic bugs) under gunicorn or Flask's dev server (Werkzeug), an Express app with the
`compression` middleware, a Django `StreamingHttpResponse` with `GZipMiddleware`. The hops in
front are Debian's nginx, Apache httpd (mod_proxy), HAProxy and Caddy, each run as its own
foreground process with a generated config in a temporary folder, on 127.0.0.1 and a free port.

A `Scenario` names one chain and what truly buffers it (by construction); `Lab` starts what the
scenarios need once, shares it between them, and `Lab.record(scenario)` sends one request through
the chain and returns both recordings. Run as a script to (re)record every scenario into a
folder, with an INDEX.md, or only the bundled ones:

    .venv/bin/python -m tests.hop_lab /work/lab/out        # every scenario, both points
    .venv/bin/python -m tests.hop_lab captures/ --bundled   # the lab-*.jsonl kept in captures/
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from sse_inspect import Capture, load_capture

from .helpers import ROOT, free_port, wait_listening
from .nginx_lab import CHAT_PATH, NGINX, answer_of, mitmdumps, nginx_available, openai_events, post
from .nginx_lab import CONF as NGINX_CONF
from .recording_fixtures import Proxy, StartProxy
from .sse_server import Script, SSEServer, Write

APPS = ROOT / "tests" / "lab_apps"
EXPRESS = APPS / "express"
WORDS = 30
INTERVAL = 0.06
"""The upstream's answer: 30 words, one every 60 ms (a model's pace), so a held answer is ~2 s of silence."""
ANSWER = answer_of(WORDS)


@dataclass(frozen=True)
class Upstream:
    """What the upstream answers at `path`: `words` content chunks, one every `interval` s, and
    after the `pause_after`-th a silence of `pause` s (a model thinking, or calling a tool)."""

    path: str = CHAT_PATH
    words: int = WORDS
    interval: float = INTERVAL
    pause_after: int = 0
    pause: float = 0.0

    @property
    def answer(self) -> str:
        return answer_of(self.words)

    def script(self) -> Script:
        events = openai_events(self.words)
        delays = [0.0] + [self.interval] * (len(events) - 1)
        if self.pause:
            delays[self.pause_after + 1] = self.pause  # events[0] is the role chunk
        return Script([Write(e, delay=d) for e, d in zip(events, delays)])


STEADY = Upstream()
LONG = Upstream("/long" + CHAT_PATH, words=80)
"""4.8 s of tokens: longer than a 1 s total limit can let through."""
PAUSED = Upstream("/paused" + CHAT_PATH, words=10, pause_after=5, pause=2.5)
"""Five tokens, 2.5 s of silence, five more: longer than a 1 s idle limit."""


# -- processes ------------------------------------------------------------------------------


@dataclass
class Service:
    """One server process listening on 127.0.0.1:`port`, its output in `root`/`name`.log."""

    name: str
    argv: Sequence[str]
    port: int
    root: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / f"{self.name}.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, timeout: float = 20.0) -> Self:
        self.root.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self.argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        try:
            wait_listening(self.port, self.process, self.name, self.log, timeout)
        except AssertionError as exc:
            self.stop()
            raise RuntimeError(str(exc)) from None
        return self

    def stop(self) -> None:
        """SIGTERM to its process group (gunicorn's and Apache's workers too), SIGKILL when slow."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


PYTHON = sys.executable
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
APACHE = shutil.which("apache2") or "/usr/sbin/apache2"
APACHE_MODULES = Path("/usr/lib/apache2/modules")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"
NODE = shutil.which("node") or "/usr/bin/node"


def gunicorn(root: Path, app: str, llm_url: str, *options: str) -> Service:
    """gunicorn with its defaults (one sync worker, 30 s timeout) but `options`, serving the WSGI `app`."""
    port = free_port()
    argv = [GUNICORN, "-b", f"127.0.0.1:{port}", *options, app]
    return Service("gunicorn", argv, port, root, {"LLM_URL": llm_url})


def flask_dev(root: Path, llm_url: str) -> Service:
    """The tutorial app under Flask's dev server (Werkzeug, threaded)."""
    port = free_port()
    argv = [PYTHON, "-m", "tests.lab_apps.flask_proxy", str(port)]
    return Service("werkzeug", argv, port, root, {"LLM_URL": llm_url})


def express(root: Path, llm_url: str) -> Service:
    """The Express app (tests/lab_apps/express) with the `compression` middleware."""
    port = free_port()
    return Service("express", [NODE, "app.js", str(port)], port, root, {"LLM_URL": llm_url}, cwd=EXPRESS)


def django(root: Path, llm_url: str) -> Service:
    """The Django app under gunicorn: `GZipMiddleware` on, a `StreamingHttpResponse` per route."""
    service = gunicorn(root, "tests.lab_apps.django_app:application", llm_url)
    service.name = "django"
    return service


APACHE_CONF = """\
ServerRoot {root}
Listen 127.0.0.1:{port}
PidFile {root}/httpd.pid
ErrorLog {root}/error.log
LogLevel warn
DefaultRuntimeDir {root}
ServerName 127.0.0.1
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule proxy_module {modules}/mod_proxy.so
LoadModule proxy_http_module {modules}/mod_proxy_http.so
LoadModule filter_module {modules}/mod_filter.so
LoadModule deflate_module {modules}/mod_deflate.so
LoadModule env_module {modules}/mod_env.so
LoadModule setenvif_module {modules}/mod_setenvif.so
LoadModule headers_module {modules}/mod_headers.so
{user}
ProxyPass / http://127.0.0.1:{upstream}/
ProxyPassReverse / http://127.0.0.1:{upstream}/
{extra}
"""
APACHE_DEFLATE = "AddOutputFilterByType DEFLATE text/html text/plain text/xml text/css text/event-stream"
"""mod_deflate on, with text/event-stream among the types (Debian's deflate.conf lists text/html,
text/plain, text/xml, text/css, JavaScript and JSON, not event streams)."""
APACHE_DEFLATE_FIX = APACHE_DEFLATE + "\nSetEnvIf Request_URI . no-gzip=1"
"""The fix: `no-gzip` set, so mod_deflate leaves the response alone."""


def apache(root: Path, upstream: int, extra: str = "") -> Service:
    port = free_port()
    user = "User www-data\nGroup www-data" if os.geteuid() == 0 else ""
    conf = root / "httpd.conf"
    root.mkdir(parents=True, exist_ok=True)
    conf.write_text(APACHE_CONF.format(root=root, port=port, modules=APACHE_MODULES, user=user,
                                       upstream=upstream, extra=extra))  # fmt: skip
    return Service("apache", [APACHE, "-f", str(conf), "-DFOREGROUND"], port, root)


HAPROXY_CONF = """\
defaults
    mode http
    timeout connect 5s
    timeout client 50s
    timeout server {server_timeout}
frontend lab
    bind 127.0.0.1:{port}
    default_backend app
    {extra}
backend app
    server app 127.0.0.1:{upstream}
"""
"""The timeouts are those of Debian's /etc/haproxy/haproxy.cfg (`timeout server` 50 s unless cut short)."""
HAPROXY_COMPRESSION = "compression algo gzip\n    compression type text/html text/plain text/event-stream"


def haproxy(root: Path, upstream: int, extra: str = "", server_timeout: str = "50s") -> Service:
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "haproxy.cfg"
    conf.write_text(HAPROXY_CONF.format(port=port, upstream=upstream, extra=extra, server_timeout=server_timeout))
    return Service("haproxy", [HAPROXY, "-f", str(conf), "-db"], port, root)


CADDYFILE = """\
{{
    admin off
    auto_https off
}}
http://127.0.0.1:{port} {{
    {extra}
    reverse_proxy 127.0.0.1:{upstream}
}}
"""
CADDY_ENCODE = "encode gzip"
CADDY_ENCODE_FIX = """encode gzip {
        match {
            header Content-Type text/html*
            header Content-Type application/json*
        }
    }"""
"""The fix: `encode` limited to the types worth compressing, event streams left out."""


def caddy(root: Path, upstream: int, extra: str = "") -> Service:
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "Caddyfile"
    conf.write_text(CADDYFILE.format(port=port, upstream=upstream, extra=extra))
    env = {"HOME": str(root), "XDG_DATA_HOME": str(root / "data"), "XDG_CONFIG_HOME": str(root / "config")}
    return Service("caddy", [CADDY, "run", "--config", str(conf), "--adapter", "caddyfile"], port, root, env)


def nginx(root: Path, upstream: int, location: str = "") -> Service:
    """nginx with nginx_lab's config (defaults but its paths), `location` inside `location /`."""
    port = free_port()
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    user = "user root;" if os.geteuid() == 0 else ""
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, user=user, http="", port=port, upstream=upstream, location=location))
    return Service("nginx", [NGINX, "-p", str(root), "-c", str(conf), "-g", "daemon off;"], port, root)


# -- scenarios ------------------------------------------------------------------------------

App = Callable[[Path, str], Service]
Hop = Callable[[Path, int], Service]


@dataclass(frozen=True)
class Scenario:
    """One chain: `app` (an app server) serving `path`, behind `hop` or nothing, and what truly
    holds the stream, by construction."""

    name: str
    app: str
    """A key of APP_SERVERS: "gunicorn", "werkzeug", "express", "django"."""
    path: str
    hop: str = ""
    """A key of HOPS, or "" for none (the client talks to the app server)."""
    buffered_by: str = ""
    """What truly holds the stream ("application", a catalogue name, or both joined by "+"), "" when nothing does."""
    verdict: str = "OK"
    """The verdict word `check_capture` should give."""
    culprit: str | None = None
    """`report.culprit.hop` expected: None when nothing held the stream."""
    decided: bool = True
    """Whether the evidence decides the culprit (`report.culprit.decided`)."""
    candidates: tuple[str, ...] = ()
    """When it does not: the hops `report.culprit.candidates` must list."""
    what: str = ""
    """One line for INDEX.md and the README."""
    upstream: Upstream = STEADY
    cut_by: str = ""
    """What truly cut the stream short (a catalogue name), "" when it ended with `[DONE]`."""


APP_SERVERS: dict[str, App] = {
    "gunicorn": lambda root, url: gunicorn(root, "tests.lab_apps.flask_proxy:app", url),
    "gunicorn-timeout": lambda root, url: gunicorn(root, "tests.lab_apps.flask_proxy:app", url, "--timeout", "1"),
    "werkzeug": flask_dev,
    "express": express,
    "django": django,
}
HOPS: dict[str, Hop] = {
    "nginx": lambda root, up: nginx(root, up),
    "nginx-buffering-off": lambda root, up: nginx(root, up, location="proxy_buffering off;"),
    "apache": lambda root, up: apache(root, up),
    "apache-deflate": lambda root, up: apache(root, up, APACHE_DEFLATE),
    "apache-deflate-fix": lambda root, up: apache(root, up, APACHE_DEFLATE_FIX),
    "haproxy": lambda root, up: haproxy(root, up),
    "haproxy-compression": lambda root, up: haproxy(root, up, HAPROXY_COMPRESSION),
    "haproxy-no-delay": lambda root, up: haproxy(root, up, "option http-no-delay"),
    "haproxy-timeout": lambda root, up: haproxy(root, up, server_timeout="1s"),
    "caddy": lambda root, up: caddy(root, up),
    "caddy-encode": lambda root, up: caddy(root, up, CADDY_ENCODE),
    "caddy-encode-fix": lambda root, up: caddy(root, up, CADDY_ENCODE_FIX),
}


def _flask_scenarios() -> list[Scenario]:
    """The tutorial app's five routes under each server, alone and behind nginx's defaults.

    gunicorn's sync worker answers nginx's HTTP/1.0 request with a close-delimited body, which
    nginx's default `proxy_buffering on` holds to the end (tests/test_nginx.py); Werkzeug answers
    it chunked, which nginx passes on chunk by chunk. So behind nginx, gunicorn's good app is held
    by nginx, and its bugs are held twice: by the app, then by nginx.
    """
    out = []
    for server in ("gunicorn", "werkzeug"):
        for hop in ("", "nginx"):
            where = f"{server}-nginx" if hop else server
            nginx_holds = hop == "nginx" and server == "gunicorn"
            held_by = "application+nginx" if nginx_holds else "application"
            # Many events released in one flush behind nginx: the client's side cannot tell whether the
            # app or nginx held them (the same wire either way), so the culprit is not decided.
            decided = hop != "nginx"
            candidates = () if decided else ("application", "nginx")
            # A good app: held only when nginx holds it.
            for route, what in (("good", "the tutorial's fix: yield inside the loop"),
                                ("json-good", '`{"content": delta}` JSON events, yielded as they come')):
                name, path = f"flask-{route}-{where}", f"/chat/{route}"
                if nginx_holds:
                    held = ("nginx", "BUFFERED", "nginx", decided, candidates)
                    out.append(Scenario(name, server, path, hop, *held, what))
                else:
                    out.append(Scenario(name, server, path, hop, what=what))
            # The whole answer in one event: only an application merges events into one, even behind nginx.
            out.append(Scenario(f"flask-bug-string-{where}", server, "/chat/bug-string", hop, held_by, "BUFFERED",
                                "application", what="the classic bug: the answer collected in a string, "
                                "yielded once after the loop"))
            for route, what in (("bug-list", "the events collected in a list, yielded after the loop"),
                                ("json-bug-list", '`{"content": delta}` JSON events collected in a list, '
                                 "yielded after the loop")):
                out.append(Scenario(f"flask-{route}-{where}", server, f"/chat/{route}", hop, held_by, "BUFFERED",
                                    "application", decided, candidates, what))
    out.append(Scenario("flask-good-gunicorn-nginx-off", "gunicorn", "/chat/good", "nginx-buffering-off",
                        what="nginx's fix: `proxy_buffering off;`"))  # fmt: skip
    return out


def django_gzip_flushes() -> bool:
    """Whether the installed Django's GZipMiddleware flushes each chunk of a streaming response (6.1.3
    does; 5.2 holds the chunks in the compressor until it is closed): asked of `compress_sequence` itself,
    by whether it hands out the first chunk before it takes the second."""
    try:
        from django.utils.text import compress_sequence
    except ImportError:
        return False
    taken: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for chunk in (b"data: one\n\n", b"data: two\n\n"):
            taken.append(chunk)
            yield chunk

    compressed = compress_sequence(chunks())
    next(compressed)  # the gzip header
    next(compressed)  # the first chunk's bytes, or (held) the whole stream's at its end
    return len(taken) == 1


OTHER_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("apache", "gunicorn", "/chat/good", "apache", what="Apache httpd mod_proxy, defaults"),
    Scenario("apache-deflate", "gunicorn", "/chat/good", "apache-deflate",
             what="mod_deflate with text/event-stream among its types: gzip'd, flushed chunk by chunk"),
    Scenario("apache-deflate-fix", "gunicorn", "/chat/good", "apache-deflate-fix",
             what="mod_deflate's fix: `no-gzip` set for the stream"),
    # HAProxy merges small writes unless told not to: the events come 4 at a time, every ~240 ms. It names
    # itself in no header (the app's `Server: gunicorn` passes), so the culprit cannot be decided.
    Scenario("haproxy", "gunicorn", "/chat/good", "haproxy", "haproxy", "BUFFERED", "haproxy", False,
             ("haproxy", "application"), what="HAProxy, defaults, in front of the good app: a few events a packet"),
    Scenario("haproxy-no-delay", "gunicorn", "/chat/good", "haproxy-no-delay",
             what="HAProxy's fix: `option http-no-delay` (each segment pushed at once)"),
    Scenario("haproxy-compression", "gunicorn", "/chat/good", "haproxy-compression", "haproxy", "BUFFERED", "haproxy",
             False, ("haproxy", "application"),
             what="HAProxy `compression` with text/event-stream among its types: gzip'd, a few events a packet"),
    Scenario("caddy", "gunicorn", "/chat/good", "caddy", what="Caddy `reverse_proxy`, defaults"),
    Scenario("caddy-encode", "gunicorn", "/chat/good", "caddy-encode",
             what="Caddy 2.6 `encode gzip` in front of `reverse_proxy`: left uncompressed, flushed per event"),
    Scenario("caddy-encode-fix", "gunicorn", "/chat/good", "caddy-encode-fix",
             what="`encode` limited to HTML and JSON: event streams left out"),
    Scenario("express-write", "express", "/chat/write", "", "application", "BUFFERED", "application",
             what="Express, `compression` middleware, one `res.write` per delta"),
    Scenario("express-flush", "express", "/chat/flush", what="the middleware's fix: `res.flush()` after each write"),
    Scenario("django-gzip", "django", "/chat/stream", "", "application", "BUFFERED", "application",
             what="Django `StreamingHttpResponse` behind `GZipMiddleware`, under gunicorn")
    if not django_gzip_flushes() else
    Scenario("django-gzip", "django", "/chat/stream",
             what="Django `StreamingHttpResponse` behind `GZipMiddleware`, under gunicorn: this Django flushes "
                  "each chunk it compresses"),
    Scenario("django-identity", "django", "/chat/identity",
             what="the fix: `Content-Encoding: identity` on the response"),
    Scenario("gunicorn-timeout-cut", "gunicorn-timeout", "/chat/good", verdict="CUT", upstream=LONG, cut_by="gunicorn",
             what="gunicorn `--timeout 1` (30 s by default): the sync worker is killed mid-stream, 80 tokens flowing"),
    Scenario("haproxy-timeout-cut", "gunicorn", "/chat/good", "haproxy-timeout", verdict="CUT", upstream=PAUSED,
             cut_by="haproxy", what="HAProxy `timeout server 1s` (50 s in Debian's config): cut in a 2.5 s pause"),
)  # fmt: skip
"""The other hops, each in front of an app that streams (defaults, the setting that buffers, its fix)."""

SCENARIOS: tuple[Scenario, ...] = (*_flask_scenarios(), *OTHER_SCENARIOS)
BY_NAME = {s.name: s for s in SCENARIOS}


APP_SHOWS: dict[str, tuple[str, ...]] = {
    "gunicorn": ("gunicorn",),  # Server: gunicorn
    "werkzeug": ("werkzeug",),  # Server: Werkzeug/3.x Python/3.x
    "express": ("express",),  # X-Powered-By: Express (no Server header)
    "django": ("gunicorn",),  # Django adds no header that names it
    "gunicorn-timeout": ("gunicorn",),
}
"""The hops an app server's own headers show."""


def hops_seen(scenario: Scenario) -> tuple[str, ...]:
    """The catalogue names the client's response headers show, outermost first (as measured):
    nginx replaces the app's `Server` with its own, Apache's mod_proxy and HAProxy pass it on and add
    nothing (no `Via` by default), Caddy adds its own `Server` before the app's."""
    app = APP_SHOWS[scenario.app]
    hop = scenario.hop.split("-")[0]
    if hop == "nginx":
        return ("nginx",)
    if hop == "caddy":
        return ("caddy", *app)
    return app


def _python_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


REQUIRES: dict[str, Callable[[], str | None]] = {
    "gunicorn": lambda: None if Path(GUNICORN).exists() and _python_module("flask") else "gunicorn or flask missing",
    "gunicorn-timeout": lambda: REQUIRES["gunicorn"](),
    "werkzeug": lambda: None if _python_module("flask") else "flask missing",
    "express": lambda: None if (EXPRESS / "node_modules").is_dir() and shutil.which(NODE)
    else "node or tests/lab_apps/express/node_modules missing (`npm ci` there)",
    "django": lambda: None if Path(GUNICORN).exists() and _python_module("django") else "gunicorn or django missing",
    "nginx": nginx_available,
    "apache": lambda: None if os.path.exists(APACHE) else f"{APACHE} missing: Debian's apache2",
    "haproxy": lambda: None if os.path.exists(HAPROXY) else f"{HAPROXY} missing: Debian's haproxy",
    "caddy": lambda: None if os.path.exists(CADDY) else f"{CADDY} missing: Debian's caddy",
}
"""Per app server and hop: why it cannot run here, or None when it can (what the extra `test` and
.ci/run install)."""


def missing(scenario: Scenario) -> str | None:
    """Why `scenario` cannot run here, or None."""
    hop = scenario.hop.split("-")[0]
    return REQUIRES[scenario.app]() or (REQUIRES[hop]() if hop else None)


# -- recording ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    """One request through a scenario's chain."""

    scenario: Scenario
    received: bytes
    """The body as the client read it off the wire (still compressed when Content-Encoded)."""
    error: str | None
    client: Capture
    """What the client saw (the mitmdump in front of the chain)."""
    upstream: Capture
    """What the app read from the upstream (the mitmdump between them): the two-point pair."""


def _new_capture(proxy: Proxy, seen: set[Path], timeout: float = 15.0) -> Capture:
    """The one capture file `proxy` wrote that is not in `seen`, once it holds its end line."""
    deadline = time.monotonic() + timeout
    while True:
        new = [p for p in proxy.capture_files() if p not in seen]
        if len(new) == 1:
            capture = load_capture(new[0])
            if capture.end is not None:
                seen.add(new[0])
                return capture
        if len(new) > 1:
            raise AssertionError(f"{proxy.mode}: more than one new capture: {new}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{proxy.mode}: no finished capture after {timeout} s\n{proxy.log()}")
        time.sleep(0.02)


class Lab:
    """The shared part of every chain (upstream, both mitmdumps) and the app servers and hops,
    each started the first time a scenario needs it and stopped by `close()`."""

    def __init__(self, root: Path, start_proxy: StartProxy) -> None:
        self.root = root
        self.upstream = SSEServer({u.path: u.script() for u in (STEADY, LONG, PAUSED)})
        self.upstream_proxy = start_proxy(f"reverse:{self.upstream.url('')}", sse_capture_dir=str(root / "caps-up"))
        self.client_proxy = start_proxy("regular", sse_capture_dir=str(root / "caps-client"))
        self.services: dict[str, Service] = {}
        self._seen_client: set[Path] = set()
        self._seen_upstream: set[Path] = set()

    def service(self, key: str, make: Callable[[Path], Service]) -> Service:
        if key not in self.services:
            self.services[key] = make(self.root / key).start()
        return self.services[key]

    def app(self, name: str, upstream: Upstream) -> Service:
        """The app server `name`, reading `upstream` (one server per pair)."""
        key = name if upstream == STEADY else f"{name}{upstream.path.replace('/', '-')}"
        llm_url = self.upstream_proxy.url + upstream.path
        return self.service(key, lambda root: APP_SERVERS[name](root, llm_url))

    def front(self, scenario: Scenario) -> Service:
        """What the client talks to: the hop in front of the app server, or the app server."""
        app = self.app(scenario.app, scenario.upstream)
        if not scenario.hop:
            return app
        return self.service(f"{scenario.hop}-{app.root.name}", lambda root: HOPS[scenario.hop](root, app.port))

    def record(self, scenario: Scenario) -> Recorded:
        front = self.front(scenario)
        received, error = post(self.client_proxy, front.url + scenario.path)
        client = _new_capture(self.client_proxy, self._seen_client)
        upstream = _new_capture(self.upstream_proxy, self._seen_upstream)
        return Recorded(scenario, received, error, client, upstream)

    def close(self) -> None:
        for service in reversed(list(self.services.values())):
            service.stop()
        self.upstream.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def group(scenario: Scenario) -> str:
    """Which of the labs `record_all` runs side by side records `scenario`: about as many requests
    in each, and each app server in as few as can be."""
    if scenario.app in ("express", "django") or scenario.cut_by:
        return "others"
    if scenario.hop and not scenario.hop.startswith("nginx"):
        return f"{scenario.app}-behind-hops"
    return scenario.app


def record_all(scenarios: Sequence[Scenario], home: Path) -> dict[str, Recorded]:
    """Each scenario recorded once, by name: one lab per `group`, the labs side by side (each
    request takes the upstream's ~2 s of pacing, nearly all of it waiting)."""
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(group(scenario), []).append(scenario)

    def record_group(name: str, members: list[Scenario]) -> list[Recorded]:
        with mitmdumps(home / name / "mitmdumps") as start_proxy, Lab(home / name / "lab", start_proxy) as lab:
            return [lab.record(s) for s in members]

    with ThreadPoolExecutor(max_workers=len(groups) or 1) as pool:
        futures = [pool.submit(record_group, name, members) for name, members in groups.items()]
        return {r.scenario.name: r for future in futures for r in future.result()}


# -- the recordings as files ----------------------------------------------------------------


HOP_HEADERS = ("server", "via", "x-powered-by", "content-encoding", "content-length", "transfer-encoding", "vary")


def describe(recorded: Recorded) -> str:
    """What arrived at the client: headers that name hops, chunk count, first and last chunk times."""
    c = recorded.client
    headers = [f"{k}: {v}" for k, v in (c.response.headers if c.response else ()) if k.lower() in HOP_HEADERS]
    times = [chunk.t for chunk in c.chunks if chunk.t is not None]
    head_t = c.response.t if c.response else None
    span = f"headers at {head_t:.3f} s, " if head_t is not None else ""
    if times:
        span += f"{len(times)} chunks from {times[0]:.3f} s to {times[-1]:.3f} s, {len(c.body)} bytes"
    return f"{'; '.join(headers)}; {span}" + (f"; error: {recorded.error}" if recorded.error else "")


def truly_held(s: Scenario) -> str:
    return s.buffered_by or (f"cut by {s.cut_by} (a 1 s limit)" if s.cut_by else "nothing")


def expected_culprit(s: Scenario) -> str:
    if s.cut_by:
        return "not asserted"
    if s.culprit is None:
        return "none"
    return s.culprit if s.decided else f"not decided: one of {', '.join(s.candidates)}"


def chain(s: Scenario) -> str:
    hop = f"{s.hop} -> " if s.hop else ""
    return f"client -> {hop}{s.app} -> upstream"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m tests.hop_lab FOLDER [--bundled] [SCENARIO ...]", file=sys.stderr)
        return 2
    out = Path(argv[1])
    names = [a for a in argv[2:] if not a.startswith("--")]
    bundled = "--bundled" in argv
    scenarios = [BY_NAME[n] for n in names] if names else [s for s in SCENARIOS if s.name in BUNDLED or not bundled]
    for scenario in scenarios:
        if reason := missing(scenario):
            print(f"{scenario.name}: {reason}", file=sys.stderr)
            return 1
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        recorded = record_all(scenarios, Path(tmp))
        for scenario in scenarios:
            r = recorded[scenario.name]
            name = f"lab-{scenario.name}" if bundled else scenario.name
            assert r.client.path and r.upstream.path
            shutil.copyfile(r.client.path, out / f"{name}.jsonl")
            if not bundled or scenario.name in BUNDLED_PAIRS:
                shutil.copyfile(r.upstream.path, out / f"{name}.upstream.jsonl")
            lines.append(f"| `{name}` | {chain(scenario)} | {scenario.what} | {truly_held(scenario)} "
                         f"| {expected_culprit(scenario)} | {describe(r)} |")  # fmt: skip
            print(out / f"{name}.jsonl", describe(r), flush=True)
    if not bundled:
        head = ("| file | chain | app / config | truly held by | culprit expected | what arrived at the client |\n"
                "| --- | --- | --- | --- | --- | --- |\n")  # fmt: skip
        (out / "INDEX.md").write_text(INDEX_INTRO + head + "\n".join(lines) + "\n" + INDEX_NOTES)
    return 0


INDEX_INTRO = f"""\
# Hop lab recordings (tests/hop_lab.py)

Each `<scenario>.jsonl` was recorded at the client (mitmdump, regular mode); each
`<scenario>.upstream.jsonl` between the app and its upstream (mitmdump, reverse mode): a two-point pair.
The upstream (tests/sse_server.py) sends an OpenAI chat stream: a role chunk, {WORDS} content chunks
("w0 " ... "w{WORDS - 1} ") one every {int(INTERVAL * 1000)} ms, a finish chunk and `data: [DONE]`, chunked
(the cut scenarios read {LONG.words} tokens, or {PAUSED.pause_after} tokens, a {PAUSED.pause} s pause and
{PAUSED.words - PAUSED.pause_after} more).
The apps are in tests/lab_apps/; every app forwards `data: [DONE]`.

"""

INDEX_NOTES = """
Measured (Debian 12: nginx 1.22, Apache 2.4, HAProxy 2.6, Caddy 2.6; gunicorn 27, Flask 3.1 (Werkzeug 3.1),
Express 4.22 + compression 1.8, Django 5.2; Node 20), which the expectations above follow:

- "truly held by" is by construction: `application` where the app's code holds the answer (the
  Flask bugs) or its framework's compression middleware does (Express `compression` without
  `res.flush()`, Django `GZipMiddleware`); a hop's name where that hop holds it.
- gunicorn (sync worker) and Werkzeug send the response headers only with the first body bytes:
  behind the app bugs, the headers arrive with the answer, ~1.9 s late. Django under gunicorn too
  (its first request also loads Django: ~0.7 s).
- gunicorn answers nginx's HTTP/1.0 request with a close-delimited body, which nginx's default
  `proxy_buffering on` holds to the end (one chunk): the GOOD app behind nginx is held by nginx.
  Werkzeug answers it chunked, and nginx passes the chunks on: the good app streams behind nginx.
  The fix, `proxy_buffering off;`, streams the gunicorn app.
- nginx replaces the app's `Server` header; Apache's mod_proxy and HAProxy pass the app's `Server:
  gunicorn` on and add no `Via`: they are invisible. Caddy adds `Server: Caddy` before the app's.
- Apache mod_deflate with text/event-stream among its types gzips the stream but flushes it chunk
  by chunk (mod_proxy_http passes the backend's flushes on): not held. HAProxy's `compression`
  likewise. Caddy 2.6's `encode gzip` leaves this stream uncompressed (reverse_proxy flushes event
  streams at once, before `encode` has its 512-byte minimum): not held either.
- Express `compression` (defaults; the app calls `res.flushHeaders()` first): headers at once, the
  10-byte gzip header ~0.3 s later, every event at the end. `res.flush()` after each write streams.
- Django `GZipMiddleware` on a `StreamingHttpResponse`: the gzip header, then every event at the end.
  `Content-Encoding: identity` on the response makes the middleware leave it alone: streams.
- Cuts, at 1 s limits (the defaults, 30 s and 50 s, are too long for a test): gunicorn `--timeout 1`
  kills its sync worker ~1.3 s into a stream whose tokens are still flowing (a total limit: the
  worker does not report in while it streams); HAProxy `timeout server 1s` closes the stream in the
  upstream's 2.5 s pause. Both end the client's chunked body without its terminator, after a part
  of the answer and no `[DONE]`.
"""

BUNDLED: tuple[str, ...] = ("flask-good-gunicorn", "flask-bug-string-gunicorn", "flask-good-gunicorn-nginx",
                             "express-write")
"""Kept in captures/ as lab-<name>.jsonl; those in BUNDLED_PAIRS with their upstream side too (a two-point pair)."""
BUNDLED_PAIRS = ("flask-bug-string-gunicorn",)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
