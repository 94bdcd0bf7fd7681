"""The live views through the real thing: a real `mitmdump` with the addon (`sse_live`, `sse_live_json`) and
`sse-inspect record` (`--json`, and its table in a pseudo-terminal), between a scripted loopback server
and real clients (the openai and anthropic SDKs, httpx). What a finished stream's line says is held to
what `show` says of its capture file afterwards."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from sse_inspect import check_capture, load_capture

from .cdp import Browser
from .helpers import free_port, openai_chat_text
from .recording_fixtures import StartProxy, chat_events
from .sse_server import Script, SSEServer, Write
from .test_live_page import text_of, wait_text
from .test_record_cli import StartRecord, record_command, start_record  # noqa: F401  (a fixture)
from .test_report import chromium  # noqa: F401  (a fixture: Debian's chromium, or a skip)

pytestmark = pytest.mark.e2e

PATH = "/v1/chat/completions"
ANTHROPIC = [
    b'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": '
    b'"assistant", "model": "claude-x", "content": [], "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}\n\n',
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bon"}}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "jour"}}\n\n',
    b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n',
    b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}\n\n',
    b'event: message_stop\ndata: {"type": "message_stop"}\n\n',
]  # fmt: skip


def stalled_chat(stall: float) -> Script:
    """Two words, a silence of `stall` seconds, two more, [DONE]."""
    events = chat_events("Hel", "lo", ", wor", "ld")
    return Script([Write(events[0]), Write(events[1], delay=0.05), Write(events[2], delay=stall),
                   Write(events[3], delay=0.05), Write(events[4], delay=0.05)])  # fmt: skip


def cut_chat() -> Script:
    """Two words, then the connection closes before the chunked body's end: no [DONE]."""
    return Script([Write(e, delay=0.05) for e in chat_events("Hel", "lo")[:2]], ending="truncate")


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for(predicate: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.05)


def assert_ends_say_what_show_says(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each `end` record's verdict is the one `check_capture` (what `show` prints) makes of its file."""
    ends = {r["stream"]: r for r in records if r["kind"] == "end"}
    for end in ends.values():
        capture = load_capture(end["path"])
        assert end["check"]["verdict"] == check_capture(capture).verdict
        assert end["live"]["events"] == end["check"]["stats"]["events"]
        assert end["live"]["bytes"] == end["check"]["stats"]["bytes"]
    return ends


def test_mitmdump_with_the_addon_shows_the_streams_live(start_proxy: StartProxy, server: SSEServer, tmp_path: Path) -> None:
    """mitmdump -s addons/sse_capture.py --set sse_live=true --set sse_live_json=FILE --set sse_live_ui=true: the
    openai SDK's stream that stalls 1 s, then an httpx stream cut before [DONE]. The log says each start, the
    stall and each end with its verdict; the JSON file has every event, the stall while it lasted, and each
    end's verdict is the one its capture gets from `show`; the live page (its URL in the log) has both."""
    openai = pytest.importorskip("openai")
    server.routes[PATH] = stalled_chat(1.0)
    server.routes["/v1/cut"] = cut_chat()
    live_json = tmp_path / "live.jsonl"
    proxy = start_proxy(f"reverse:{server.url('')}", sse_live=True, sse_live_json=str(live_json), sse_live_stall=0.4,
                        sse_live_ui=True)  # fmt: skip

    client = openai.OpenAI(api_key="sk-test", base_url=proxy.target(server.url("/v1")), max_retries=0)
    assert openai_chat_text(client) == ("Hello, world", None)
    with pytest.raises(httpx.HTTPError), httpx.stream("POST", proxy.target(server.url("/v1/cut")), content=b"{}") as r:
        for _ in r.iter_raw():
            pass
    wait_for(lambda: live_json.exists() and sum(r["kind"] == "end" for r in records_of(live_json)) == 2, "two ends")
    [page] = re.findall(r"sse-inspect: live page at (http://127\.0\.0\.1:\d+)/\?token=(\S+)", proxy.log())
    with httpx.stream("GET", f"{page[0]}/events", params={"token": page[1]}, timeout=10) as events:
        snapshot = json.loads(next(line for line in events.iter_lines() if line.startswith("data: "))[6:])
    assert [s["verdict"].split(":")[0] for s in snapshot["streams"]] == ["OK", "CUT"], snapshot
    assert proxy.stop() == 0

    records = records_of(live_json)
    first = [r["kind"] for r in records if r["stream"] == 1]
    assert first[0] == "start" and first[-1] == "end"
    assert first.index("stall") < first.index("resume") and first.count("event") == 5
    assert first.index("stall") == 3  # after the two words that came, before the two after the silence
    ends = assert_ends_say_what_show_says(records)
    assert ends[1]["check"]["verdict"].startswith("OK") and ends[2]["check"]["verdict"].startswith("CUT")
    assert ends[1]["live"]["stalls"] == 1 and ends[1]["live"]["dialect"] == "openai-chat"
    log = proxy.log()
    assert re.search(r"sse-inspect: #1 stalled: silent since \d+ ms", log), log
    # (the SDK stops reading at [DONE] and may close before the body's last bytes: either end is right)
    assert re.search(r"sse-inspect: #1 (complete|client-disconnected): 5 chunks, \d+ bytes in [\d.]+ s · OK: ", log), log
    assert re.search(r"sse-inspect: #2 \S+: 2 chunks, \d+ bytes in [\d.]+ s · CUT: ", log), log


def test_record_json_with_the_sdks(start_record: StartRecord, server: SSEServer) -> None:
    """`sse-inspect record --json --upstream URL`, the openai and the anthropic SDKs pointed at it: stdout is
    JSON lines only, every event of both streams as it came, and each stream's end with `show`'s verdict."""
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    server.routes[PATH] = Script.events(*chat_events("Hel", "lo"), interval=0.02)
    server.routes["/v1/messages"] = Script.events(*ANTHROPIC, interval=0.02)
    recorder = start_record("--json", upstream=server.url(""))

    assert openai_chat_text(openai.OpenAI(api_key="sk-test", base_url=recorder.target(server.url("/v1")),
                                          max_retries=0)) == ("Hello", None)  # fmt: skip
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=recorder.target(server.url("")), max_retries=0)
    with client.messages.stream(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]) as s:
        assert "".join(s.text_stream) == "Bonjour"
    wait_for(lambda: recorder.out().count('"kind": "end"') == 2, "two ends")
    assert recorder.stop() == 0, recorder.log()

    records = [json.loads(line) for line in recorder.out().splitlines()]
    ends = assert_ends_say_what_show_says(records)
    assert [ends[n]["live"]["dialect"] for n in (1, 2)] == ["openai-chat", "anthropic"]
    events = {n: [r["event"]["data"] for r in records if r["kind"] == "event" and r["stream"] == n] for n in (1, 2)}
    assert len(events[1]) == 3 and events[1][-1] == "[DONE]"
    assert len(events[2]) == len(ANTHROPIC)
    assert all(ends[n]["check"]["verdict"].startswith("OK") for n in (1, 2))


def read_pty(fd: int, seconds: float, into: bytearray) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                into.extend(os.read(fd, 65536))
            except OSError:
                return


def screen_text(raw: bytes) -> str:
    """The output with the terminal's control sequences taken out (what was drawn, frame after frame): a
    cursor move or a line cleared ends a line, the styles go."""
    text = re.sub(r"\x1b\[[0-9]*[ABK]", "\n", raw.decode("utf-8", "replace"))
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\r", "", text)


def test_record_on_a_terminal_draws_the_table_and_the_focus(tmp_path: Path, server: SSEServer) -> None:
    """`sse-inspect record` in a 60-column pseudo-terminal while the openai SDK streams through it with a
    silence: the table shows the stream stalled, the focus its answer so far and its arrival strip, and a
    key moves the focus; after the stream, its line with the verdict; Ctrl-C stops it (exit 0) and leaves
    the terminal in the mode it found it (the keys are read in cbreak mode)."""
    pytest.importorskip("mitmproxy", reason="record needs mitmproxy (the [record] extra)")
    openai = pytest.importorskip("openai")
    gate = threading.Event()
    events = chat_events("Hel", "lo", ", world")
    server.routes[PATH] = Script([Write(events[0]), Write(events[1], delay=0.05), Write(events[2], gate=gate),
                                  Write(events[3], delay=0.05)])  # fmt: skip
    port = free_port()
    argv = record_command(tmp_path, port, "--upstream", server.url(""), "--stall", "0.5")
    # a pseudo-terminal of 60 columns as the command's stdin, stdout and stderr (no fork here: the test's
    # server threads make forking this process unsafe)
    fd, tty_fd = os.openpty()
    fcntl.ioctl(tty_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 60, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR")}
    process = subprocess.Popen(argv, stdin=tty_fd, stdout=tty_fd, stderr=tty_fd, cwd=tmp_path, start_new_session=True,
                               env={**env, **_ENV_FOR_PTY})  # fmt: skip
    modes = termios.tcgetattr(tty_fd)[3]
    raw = bytearray()
    try:
        deadline = time.monotonic() + 30
        while b"Ctrl-C to stop" not in raw and time.monotonic() < deadline:
            read_pty(fd, 0.2, raw)
        result: dict[str, Any] = {}

        def client() -> None:
            c = openai.OpenAI(api_key="sk-test", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
            result["text"] = openai_chat_text(c)

        thread = threading.Thread(target=client)
        thread.start()
        stalled_at = len(raw)
        deadline = time.monotonic() + 20
        while b"stalled" not in raw[stalled_at:] and time.monotonic() < deadline:
            read_pty(fd, 0.2, raw)
        during = screen_text(bytes(raw[stalled_at:]))
        os.write(fd, b"k")  # a key: the focus stays on the one stream, the table redraws
        read_pty(fd, 0.5, raw)
        gate.set()
        thread.join(20)
        deadline = time.monotonic() + 20
        while b": 4 chunks" not in raw and time.monotonic() < deadline:
            read_pty(fd, 0.2, raw)
        process.send_signal(signal.SIGINT)
        read_pty(fd, 3.0, raw)
    finally:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        after_modes = termios.tcgetattr(tty_fd)[3]  # the keys were read in cbreak mode: the terminal is as it was
        os.close(tty_fd)
        os.close(fd)
    assert result["text"] == ("Hello, world", None)
    assert process.returncode == 0, screen_text(bytes(raw))
    assert after_modes & (termios.ICANON | termios.ECHO) == modes & (termios.ICANON | termios.ECHO) != 0
    assert "stalled" in during and "Hello" in during and "⏸" in during, during
    assert "POST /v1/chat" in during, during
    assert all(len(line) <= 60 for line in during.splitlines()), during
    after = screen_text(bytes(raw))
    [path] = sorted((tmp_path / "caps").glob("*.jsonl"))
    verdict = check_capture(load_capture(path)).verdict
    flat = re.sub(r"\s+", " ", after)
    # (the SDK stops reading at [DONE] and may close before the body's last bytes: either end is right)
    assert re.search(r"#1 (complete|client-disconnected): 4 chunks, \d+ bytes in [\d.]+ s · " + re.escape(verdict.split(",")[0]),
                     flat), flat  # fmt: skip


_ENV_FOR_PTY = {
    "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH")])),
    "TERM": "xterm-256color",
}


def test_record_ui_in_chromium_with_the_openai_sdk(start_record: StartRecord, server: SSEServer, chromium: str,  # noqa: F811
                                                   tmp_path: Path) -> None:  # fmt: skip
    """`sse-inspect record --ui`: its printed URL opened in headless Chromium while the openai SDK streams
    through the proxy. The stream appears and its answer grows while it is open, its stall shows while it
    lasts, and once it ends the page shows the verdict `show` gives its capture, with the HTML report."""
    openai = pytest.importorskip("openai")
    gate = threading.Event()
    events = chat_events("Hel", "lo", ", world")
    server.routes[PATH] = Script([Write(events[0]), Write(events[1], delay=0.05), Write(events[2], gate=gate),
                                  Write(events[3], delay=0.05)])  # fmt: skip
    recorder = start_record("--ui", "--stall", "0.5", upstream=server.url(""))
    wait_for(lambda: "live page: " in recorder.log(), "the live page's URL")
    [url] = re.findall(r"live page: (http://127\.0\.0\.1:\d+/\?token=\S+)", recorder.log())
    result: dict[str, Any] = {}

    def client() -> None:
        c = openai.OpenAI(api_key="sk-test", base_url=recorder.target(server.url("/v1")), max_retries=0)
        result["text"] = openai_chat_text(c)

    with Browser(chromium, tmp_path / "profile") as browser:
        tab = browser.open(url)
        wait_text(tab, "#conn", "^live$")
        thread = threading.Thread(target=client)
        thread.start()
        try:
            wait_text(tab, "#rows tr td.url", re.escape(server.url(PATH)))
            wait_text(tab, "#f-text", "^Hello$")  # the answer so far, while the stream is open
            wait_text(tab, "#rows tr td.state", "^stalled$")
        finally:
            gate.set()
            thread.join(20)
        verdict = wait_text(tab, "#f-verdict", "^OK: ")
        assert text_of(tab, "#f-text") == "Hello, world"
        report = tab.frame("/report/1")
        report.wait_for("document.body && document.body.textContent.includes('Hello, world')")
        assert tab.complaints() == []
    assert result["text"] == ("Hello, world", None)
    assert recorder.stop() == 0, recorder.log()
    [path] = recorder.capture_files()
    assert verdict == check_capture(load_capture(path)).verdict
