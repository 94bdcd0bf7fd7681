"""`sse-inspect record` (a recording proxy in one command) and `sse-inspect fetch` (like curl -N)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from .._live import STALL_S
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
@click.option("--json", "as_json", is_flag=True,
              help="Write one JSON object a line to stdout, per start, event, stall, burst and finished stream "
                   "(with its check), instead of the table.")  # fmt: skip
@click.option("--plain", is_flag=True, help="Plain lines even on a terminal (one per start, stall, burst, end).")
@click.option("--ui", is_flag=True, help="Also serve the live page on 127.0.0.1 (its URL is printed).")
@click.option("--ui-port", type=click.IntRange(0, 65535), default=0, show_default="a free port", metavar="PORT",
              help="The live page's port on 127.0.0.1 (implies --ui).")  # fmt: skip
@click.option("--stall", "stall_s", type=click.FloatRange(min=0, min_open=True), default=STALL_S, show_default=True,
              metavar="SECONDS", help="Show a stream as stalled once it has been silent this long.")  # fmt: skip
@input_errors
def record(
    listen: str, upstream: str | None, directory: Path, flow_filter: str | None, types: str | None, no_redact: bool,
    confdir: str | None, as_json: bool, plain: bool, ui: bool, ui_port: int, stall_s: float,
) -> None:  # fmt: skip
    """Run a recording proxy: every token stream through it (SSE, NDJSON, AWS event stream) becomes a capture,
    watched live as it is recorded.

    With --upstream it is a reverse proxy: point your SDK's base URL at it, no certificate
    needed (e.g. OPENAI_BASE_URL=http://127.0.0.1:8080/v1). Without, it is a regular HTTP(S)
    proxy: set HTTPS_PROXY and trust mitmproxy's CA. Ctrl-C stops it, closing every capture.

    On a terminal, a table shows the streams in flight (time, time to first byte and token, events,
    bytes, the current silence, tokens per second) and the one in focus (↑/↓) with its answer growing
    and its arrivals; a stall or a burst shows as it happens; each finished stream leaves one line with
    the verdict `sse-inspect show` gives its capture. Off a terminal (or with --plain), those lines
    alone; with --json, JSON lines; with --ui, a page in the browser as well.
    """
    _require("mitmproxy")
    from ..live import LiveSession
    from ..proxy import RecordingProxy, check_listen_address
    from ._live import JsonView, LinesView, TableView

    host, port = _listen(listen)
    if upstream is not None:
        _check_upstream(upstream)
    check_listen_address(host, port)
    ui = ui or bool(ui_port)
    if ui_port:
        check_listen_address("127.0.0.1", ui_port)
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
        loop = asyncio.get_running_loop()
        session.start(loop)
        if table is not None:
            table.start(loop)
        if page is not None:
            pending.add(loop.create_task(open_page()))

    pending: set[asyncio.Task[None]] = set()  # (a task must be held while it runs)

    open_at_stop = 0

    def on_capture(stage: Stage, rec: StreamRecorder) -> None:
        nonlocal open_at_stop
        if stage is Stage.ENDED:
            open_at_stop += proxy.stopping and rec.ended == "error"

    session = LiveSession(stall_s=stall_s, then=on_capture)
    table = None
    if as_json:
        session.views.append(JsonView(sys.stdout, on_closed=lambda: proxy.stop()))
    elif console.is_terminal and not plain:
        table = TableView(console, session)
        session.views.append(table)
    else:
        session.views.append(LinesView(console.print))
    page = None
    if ui:
        from ..live_page import LivePage

        page = LivePage(session)
        session.views.append(page)
    talk = table.live.console if table is not None else err

    async def open_page() -> None:
        assert page is not None
        try:
            url = await page.start(port=ui_port)
        except Exception as exc:  # noqa: BLE001 - the proxy records on without its page
            talk.print(_render.safe(f"  the live page could not start: {exc}", newlines=False, style="red"))
            return
        talk.print(f"  live page: [bold]{_render.safe(url).markup}[/] (this machine only)")

    async def stopped() -> None:
        await session.settle()
        if page is not None:
            await page.close()

    # no mitmproxy view shows the flows here: attaching their bodies would only cost memory
    options: dict[str, Any] = {"sse_redact": not no_redact, "sse_capture_attach_body": False}
    if types is not None:  # else the addon's default: every token stream type
        options["sse_capture_types"] = types
    if flow_filter:
        options["sse_capture_filter"] = flow_filter
    from mitmproxy.exceptions import OptionsError

    proxy = RecordingProxy(
        host=host, port=port, upstream=upstream, directory=directory, confdir=confdir, options=options,
        on_capture=session.on_capture, on_ready=ready, on_stopped=stopped,
    )  # fmt: skip
    try:
        proxy.run()
    except OptionsError as exc:  # a bad --filter, say
        raise InputError(str(exc)) from None
    except SystemExit as exc:  # mitmproxy exits when it logged an error while starting
        if exc.code:
            raise InputError("mitmproxy could not start (see its messages above)") from None
        raise
    finally:
        session.close()
        if table is not None:
            table.close()
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
