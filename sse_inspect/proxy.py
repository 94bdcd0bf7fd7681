"""Run mitmproxy in-process with the recording addon: the engine of `sse-inspect record`."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._errors import SSEInspectError
from .recorder import OnCapture

__all__ = ["RecordingProxy", "check_listen_address"]


def check_listen_address(host: str, port: int) -> None:
    """Fail early, in one line, when the address cannot be listened on (mitmproxy would exit 1)."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        raise SSEInspectError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


class RecordingProxy:
    """A mitmproxy DumpMaster with the SSECapture addon; `run()` until Ctrl-C or `stop()`."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        directory: Path,
        upstream: str | None = None,
        confdir: str | None = None,
        options: dict[str, Any] | None = None,
        on_capture: OnCapture | None = None,
        on_ready: Callable[[str, int], None] | None = None,
        on_stopped: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.host, self.port, self.upstream = host, port, upstream
        self.directory = directory
        self.confdir = confdir
        self.options = options or {}
        self.on_capture = on_capture
        self.on_ready = on_ready
        self.on_stopped = on_stopped
        """Awaited on the proxy's loop once it has stopped (every capture closed), before the loop ends."""
        self._master: Any = None
        self.stopping = False
        """True once `stop()` (or Ctrl-C, SIGTERM) asked the proxy to stop."""

    def run(self) -> None:
        asyncio.run(self._run())

    def stop(self) -> None:
        self.stopping = True
        if self._master is not None:
            self._master.shutdown()

    def _stop_signal(self) -> None:
        self.stop()

    async def _run(self) -> None:
        from mitmproxy.options import Options
        from mitmproxy.tools.dump import DumpMaster

        from .mitm_addon import SSECapture

        opts = Options(listen_host=self.host, listen_port=self.port)
        if self.confdir:
            opts.update(confdir=self.confdir)
        opts.update(mode=[f"reverse:{self.upstream}"] if self.upstream else ["regular"])
        master = DumpMaster(opts, with_termlog=False, with_dumper=False)
        master.addons.add(SSECapture(on_capture=self.on_capture), _Ready(self))
        opts.update(sse_capture_dir=str(self.directory), **self.options)
        self._master = master
        loop = asyncio.get_running_loop()
        # mitmproxy installs its own handler while it runs; this one is in place for the shutdown
        # after it, when asyncio cancels the connections still open.
        loop.set_exception_handler(_quiet_cancelled)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop_signal)
        try:
            await master.run()
            if self.on_stopped is not None:
                await self.on_stopped()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


def _quiet_cancelled(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: a connection cancelled at shutdown is how a proxy stops, not an
    error, though Python 3.11's asyncio logs it with a traceback (`task.exception()` raising
    CancelledError in the done callback set by `StreamReaderProtocol.connection_made`); anything
    else goes to the default handler."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


class _Ready:
    """Tells the caller the real listening address once mitmproxy's servers are up."""

    def __init__(self, proxy: RecordingProxy) -> None:
        self.proxy = proxy

    def running(self) -> None:
        if self.proxy.on_ready is None:
            return
        addrs = self.proxy._master.addons.get("proxyserver").listen_addrs()
        host, port = addrs[0][:2] if addrs else (self.proxy.host, self.proxy.port)
        self.proxy.on_ready(host, port)
