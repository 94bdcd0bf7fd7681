"""`sse-inspect record` (a recording proxy in one command) and `sse-inspect fetch` (like curl -N)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from .._redact import Redactor
from ..recorder import Stage, StreamRecorder, capture_dir_warning
from . import _render
from ._check import show
from ._params import InputError, Interrupted, input_errors

INSTALL_HINT = "recording needs mitmproxy and httpx: pip install 'sse-inspect[record]'"
FETCH_INSTALL_HINT = ("fetch needs httpx: pip install httpx (or pip install 'sse-inspect[record]', "
                      "which adds mitmproxy for `record` as well)")  # fmt: skip


def _require(module: str, hint: str = INSTALL_HINT) -> None:
    try:
        __import__(module)
    except ImportError:
        raise InputError(hint) from None


class TimedOut(click.ClickException):
    """fetch's own --timeout fired: one line on stderr, exit code 124 (as `timeout(1)`)."""

    exit_code = 124


def _check_upstream(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"--upstream {url!r} is not an http:// or https:// URL (e.g. https://api.openai.com)")


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise click.BadParameter(f"{value!r} is not HOST:PORT (e.g. 127.0.0.1:8080)")
    return host.strip("[]"), int(port)


@click.command()
@click.option("--listen", "listen", default="127.0.0.1:8080", show_default=True, help="Where the proxy listens.")
@click.option("--upstream", metavar="URL", help="Reverse-proxy to this base URL (e.g. https://api.openai.com).")
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=Path("captures"), show_default=True, help="Folder for the capture files.")  # fmt: skip
@click.option("--filter", "flow_filter", metavar="EXPR", help="Record only flows matching a mitmproxy filter.")
@click.option("--types", default=None, metavar="TYPES",
              help="Content types to record, comma-separated (default: the token streams: text/event-stream, "
                   "application/x-ndjson, JSON Lines, application/vnd.amazon.eventstream).")  # fmt: skip
@click.option("--no-redact", is_flag=True, help="Write credentials as they are (never share such captures).")
@click.option("--confdir", type=click.Path(file_okay=False), help="mitmproxy's folder for its CA (default ~/.mitmproxy).")
@input_errors
def record(
    listen: str, upstream: str | None, directory: Path, flow_filter: str | None, types: str | None, no_redact: bool,
    confdir: str | None,
) -> None:  # fmt: skip
    """Run a recording proxy: every token stream through it (SSE, NDJSON, AWS event stream) becomes a capture.

    With --upstream it is a reverse proxy: point your SDK's base URL at it, no certificate
    needed (e.g. OPENAI_BASE_URL=http://127.0.0.1:8080/v1). Without, it is a regular HTTP(S)
    proxy: set HTTPS_PROXY and trust mitmproxy's CA. Ctrl-C stops it, closing every capture.
    """
    _require("mitmproxy")
    from ..proxy import RecordingProxy, check_listen_address

    host, port = _listen(listen)
    if upstream is not None:
        _check_upstream(upstream)
    check_listen_address(host, port)
    console = _render.console()
    err = _render.console(stderr=True)

    def ready(real_host: str, real_port: int) -> None:
        base = f"http://{real_host}:{real_port}"
        if upstream:
            err.print(f"recording proxy at [bold]{base}[/] → {_render.safe(upstream).markup}")
            err.print(f"  point your client's base URL at {base} (e.g. OPENAI_BASE_URL={base}/v1)")
        else:
            ca = Path(confdir or "~/.mitmproxy").expanduser() / "mitmproxy-ca-cert.pem"
            err.print(f"recording HTTP(S) proxy at [bold]{base}[/]")
            err.print(f"  export HTTPS_PROXY={base} HTTP_PROXY={base}; for HTTPS, trust {ca}")
            err.print(f"  (e.g. SSL_CERT_FILE={ca} or REQUESTS_CA_BUNDLE={ca} for Python clients)")
        err.print(f"  captures go to {directory}/ · Ctrl-C to stop")
        if (warning := capture_dir_warning(directory)) is not None:
            err.print(_render.safe(f"  warning: {warning}", newlines=False, style="yellow"))

    open_at_stop = 0

    def on_capture(stage: Stage, rec: StreamRecorder) -> None:
        nonlocal open_at_stop
        if stage is Stage.STARTED:
            console.print(_render.safe(f"● {rec.url} → {rec.path}", newlines=False, style="cyan"))
        else:
            style = "green" if rec.ended == "complete" else "red"
            stopped = proxy.stopping and rec.ended == "error"
            open_at_stop += stopped
            how = "recording stopped mid-stream (end: error)" if stopped else rec.ended
            line = f"  {how}: {rec.chunks} chunks, {rec.bytes} bytes in {rec.now():.2f} s · {rec.path}"
            console.print(_render.safe(line, newlines=False, style=style))

    # no mitmproxy view shows the flows here: attaching their bodies would only cost memory
    options: dict[str, Any] = {"sse_redact": not no_redact, "sse_capture_attach_body": False}
    if types is not None:  # else the addon's default: every token stream type
        options["sse_capture_types"] = types
    if flow_filter:
        options["sse_capture_filter"] = flow_filter
    from mitmproxy.exceptions import OptionsError

    proxy = RecordingProxy(
        host=host, port=port, upstream=upstream, directory=directory, confdir=confdir, options=options,
        on_capture=on_capture, on_ready=ready,
    )  # fmt: skip
    try:
        proxy.run()
    except OptionsError as exc:  # a bad --filter, say
        raise InputError(str(exc)) from None
    except SystemExit as exc:  # mitmproxy exits when it logged an error while starting
        if exc.code:
            raise InputError("mitmproxy could not start (see its messages above)") from None
        raise
    if open_at_stop:
        err.print(f"stopped; every capture is closed, {open_at_stop} of them mid-stream: their end line is "
                  "`error`, \"proxy shut down while the stream was open\"")  # fmt: skip
    else:
        err.print("stopped; every capture is closed")


@click.command()
@click.argument("url")
@click.option("-X", "--request", "method", default=None, help="HTTP method (default GET, POST with -d).")
@click.option("-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="A request header (repeatable).")
@click.option("-d", "--data", "data", metavar="BODY", help="Request body; @FILE reads a file, @- stdin.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Capture file to write.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("captures"),
              show_default=True, help="Folder for the capture when -o is not given.")  # fmt: skip
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              metavar="SECONDS",
              help="Seconds to wait for the connection, the response and each read of the body; when it fires, "
                   "fetch gives up (exit code 124).")  # fmt: skip
@click.option("--no-redact", is_flag=True, help="Write credentials as they are (never share such captures).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the capture's path.")
@input_errors
def fetch(
    url: str, method: str | None, headers: tuple[str, ...], data: str | None, output: Path | None, directory: Path,
    timeout: float, no_redact: bool, quiet: bool,
) -> None:  # fmt: skip
    """Record one stream straight from its server (like curl -N), then show it.

    Exit codes: 0 recorded, however the server ended the stream (a cut is what fetch is there to
    catch), 124 fetch's own --timeout fired (the capture so far is kept and shown), 130 Ctrl-C (the
    capture so far is kept, its path printed).

    Example: sse-inspect fetch https://api.openai.com/v1/chat/completions
    -H "Authorization: Bearer $OPENAI_API_KEY" -H "Content-Type: application/json"
    -d '{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "Hi"}]}'
    """
    _require("httpx", FETCH_INSTALL_HINT)
    from ..fetch import FetchInterrupted, FetchTimeout
    from ..fetch import fetch as fetch_capture

    pairs = []
    for h in headers:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"{h!r} is not 'NAME: VALUE'", param_hint="-H")
        pairs.append((name.strip(), value.strip()))
    body = _body(data)
    err = _render.console(stderr=True)

    live = not quiet and sys.stderr.isatty()
    received = chunks = 0

    def progress(t: float, chunk: bytes) -> None:
        nonlocal received, chunks
        received += len(chunk)
        chunks += 1
        if live:  # one line, rewritten in place; nothing at all in a log
            sys.stderr.write(f"\r{t:8.3f} s  {received} bytes")
            sys.stderr.flush()

    def clear() -> None:
        if live:
            sys.stderr.write("\r\x1b[K")

    timed_out = None
    try:
        path = fetch_capture(
            url, directory=directory, path=output, method=method or ("POST" if body is not None else "GET"),
            headers=pairs, body=body, timeout=timeout, redactor=Redactor(enabled=not no_redact), on_chunk=progress,
        )  # fmt: skip
    except FetchInterrupted as exc:  # Ctrl-C: the capture so far, and where it is
        clear()
        if exc.path is None:
            raise Interrupted("interrupted before the response came; no capture written") from None
        if quiet:
            click.echo(str(exc.path))
        so_far = f"{chunks} chunk{'' if chunks == 1 else 's'}, {received} bytes"
        raise Interrupted(f"interrupted; the capture so far ({so_far}) is in {exc.path}") from None
    except FetchTimeout as exc:
        clear()
        if exc.path is None:
            raise TimedOut(exc.message) from None
        path, timed_out = exc.path, exc.message
    else:
        clear()
    if quiet:
        click.echo(str(path))
    else:
        try:
            show(str(path))
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted; capture written to {path}") from None
        err.print(f"capture written to {path}")
    if timed_out is not None:
        raise TimedOut(f"{timed_out} (a longer --timeout waits longer)")


def _body(data: str | None) -> bytes | None:
    if data is None:
        return None
    if data == "@-":
        return sys.stdin.buffer.read()
    if data.startswith("@"):
        try:
            return Path(data[1:]).read_bytes()
        except OSError as exc:
            raise InputError(f"{data[1:]}: {exc.strerror or exc}") from None
    return data.encode("utf-8")
