"""Headless Chromium driven over the DevTools protocol, to look at a page while it changes.

`--dump-dom` shows a page once it has settled, which a page fed by a stream that is still open never
does. Chromium's `--remote-debugging-pipe` takes the protocol on two inherited pipes instead of a
websocket: it reads commands from its fd 3 and writes answers and events to its fd 4, each one JSON
message followed by a NUL byte. So no websocket library is needed, only a pipe each way:

    with Browser(chromium, tmp_path / "profile") as browser:
        tab = browser.open(url)
        tab.wait_for("document.querySelectorAll('#rows tr').length === 1")
        tab.evaluate("document.querySelector('#f-text').textContent")

A tab's `events` keep what Chromium reported meanwhile (console messages, exceptions, log entries),
for a test to assert that nothing complained.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from .test_report import FLAGS as REPORT_FLAGS

FLAGS = (*REPORT_FLAGS, "--disable-background-timer-throttling", "--disable-renderer-backgrounding")
"""The report tests' headless flags, and a page's timers kept running at full speed: the live page redraws on them."""
TIMEOUT = 60.0
"""Seconds a command may take, and the default for `wait_for`: generous, for a busy machine."""

# Chromium wants the protocol on fds 3 and 4; subprocess passes fds only at their own numbers, so a
# shell puts the two pipes there (our stdin and stdout to it) and points its own stdin and stdout elsewhere.
_ON_FDS_3_AND_4 = 'exec "$@" 3<&0 4>&1 </dev/null >/dev/null'


class ProtocolError(Exception):
    """Chromium answered a command with an error, or a page's script threw."""


class Browser:
    """One headless Chromium with a fresh profile; `open` a tab, `close` (or leave the `with`) to end it."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1200, height: int = 800) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.log_path = profile / "chromium.log"
        self._log = self.log_path.open("wb")
        cmd = ["/bin/sh", "-c", _ON_FDS_3_AND_4, "sh", executable, *FLAGS, "--remote-debugging-pipe",
               f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     start_new_session=True)  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._out = self.proc.stdin
        self._in = self.proc.stdout.fileno()
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        """Every event Chromium sent (each with its `sessionId`, for a tab's), in order."""

    # -- the protocol

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = TIMEOUT) -> dict[str, Any]:  # fmt: skip
        """Send one command and wait for its answer; the events that come meanwhile go to `events`."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        self._out.flush()
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise ProtocolError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self.events.append(answer)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"chromium did not answer in time (its log: {self.log_path})")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                data = os.read(self._in, 1 << 16)
                if not data:
                    raise ProtocolError(f"chromium closed the pipe (its log: {self.log_path})")
                self._buffer += data
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    # -- tabs

    def open(self, url: str, *, width: int = 1200, height: int = 800) -> Tab:
        """A new tab at `url`, `width` x `height` CSS pixels, with its console and log reported."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session)
        for domain in ("Page", "Runtime", "Log"):
            tab.send(f"{domain}.enable")
        tab.resize(width, height)
        tab.send("Page.navigate", {"url": url})
        return tab

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", timeout=10)
            except (ProtocolError, TimeoutError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # chromium's helper processes too
                self.proc.wait()
        self._out.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Tab:
    """One page in the browser: evaluate script in it, wait for it, resize it, take its picture."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        params: dict[str, Any] = {"expression": expression, "returnByValue": True}
        result = self.send("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = TIMEOUT) -> Any:
        """Evaluate `expression` until it is truthy (a page that throws meanwhile is still loading); its value."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(expression)
            except ProtocolError as exc:
                last = exc
            else:
                if last:
                    return last
            time.sleep(0.05)
        raise TimeoutError(f"waited {timeout} s for {expression!r}; last: {last!r}")

    def resize(self, width: int, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def frame(self, url_part: str, *, timeout: float = TIMEOUT) -> Tab:
        """The child frame whose URL holds `url_part`, as a tab of its own to evaluate script in. A sandboxed
        frame is a target of its own (Chromium isolates it in another process), attached to here; the
        page's own script cannot read it, the protocol can."""
        deadline = time.monotonic() + timeout
        while True:
            targets = self.browser.send("Target.getTargets")["targetInfos"]
            found = [t for t in targets if t["type"] == "iframe" and url_part in t.get("url", "")]
            if found:
                target = {"targetId": found[-1]["targetId"], "flatten": True}
                return Tab(self.browser, self.browser.send("Target.attachToTarget", target)["sessionId"])
            if time.monotonic() > deadline:
                raise TimeoutError(f"no frame at a URL with {url_part!r}: {[t.get('url') for t in targets]}")
            time.sleep(0.1)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [e for e in self.browser.events if e.get("sessionId") == self.session]

    def complaints(self) -> list[str]:
        """What the page reported as wrong: exceptions, console errors and warnings, error log entries
        (a Content-Security-Policy violation is one)."""
        found = []
        for e in self.events:
            params = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif e["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif e["method"] == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                found.append(f"log: {params['entry'].get('text')}")
        return found
