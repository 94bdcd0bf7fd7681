"""The live page of `record --ui` (`sse_inspect.live_page`): its protocol over HTTP, then the page itself
in a real headless Chromium while streams are being recorded.

The session runs as `record` runs it, on an event loop (`tests/live_lab.py`), fed by real recorders
writing real capture files with the bytes of the captures in captures/. The protocol tests read the
event stream with httpx and the package's own parser; most turn the session's ticker off and tick by
hand, so that what is gathered and when it is sent is decided by the test, not by the clock. The
browser tests (`e2e`: they start Chromium) keep the ticker and look at the page over the DevTools
protocol while a stream is still open (`tests/cdp.py`). Times are never asserted, only orders: more
text now than before, a stall shown after a silence, a verdict after the end.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from sse_inspect import Comment, Event, EventStreamParser, SSEInspectError, load_capture
from sse_inspect import live_page as lp
from sse_inspect.live_page import LivePage, loopback_host
from sse_inspect.recorder import StreamRecorder

from .cdp import Browser, Tab
from .live_lab import CAPTURES, LiveLab, events_of, hostile_capture
from .test_report import chromium  # noqa: F401  (the fixture: the path of Debian's chromium, or a skip)

TIMEOUT = httpx.Timeout(20.0)


def recorded_cut() -> str:
    """How nginx-cut.jsonl's recording ended, in mitmproxy's words: "... incomplete chunked read"."""
    end = load_capture(CAPTURES / "nginx-cut.jsonl").end
    assert end is not None and end.error is not None
    return end.error


CUT_ERROR = recorded_cut()


def at(url: str, path: str) -> str:
    """The page's URL with another path, the token kept."""
    return url.replace("/?", f"{path}?", 1)


class Messages:
    """The page's event stream as the page reads it: its JSON messages (and comments), one at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.iter_raw()
        self._parser = EventStreamParser()
        self._items: deque[Event | Comment] = deque()

    def item(self) -> Event | Comment | None:
        """The next event or comment; None when the stream has ended."""
        while not self._items:
            chunk = next(self._chunks, None)
            if chunk is None:
                return None
            self._items.extend(x for x in self._parser.feed(chunk) if isinstance(x, Event | Comment))
        return self._items.popleft()

    def next(self) -> dict[str, Any]:
        """The next message (comments skipped)."""
        while True:
            item = self.item()
            assert item is not None, "the event stream ended"
            if isinstance(item, Event):
                message: dict[str, Any] = json.loads(item.data)
                return message

    def until(self, kind: str) -> list[dict[str, Any]]:
        """The messages up to and including the next one of type `kind`."""
        seen = [self.next()]
        while seen[-1]["type"] != kind:
            seen.append(self.next())
        return seen


@contextmanager
def events(lab: LiveLab) -> Iterator[Messages]:
    with httpx.stream("GET", at(lab.url, "/events"), timeout=TIMEOUT) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        yield Messages(response)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveLab]:
    """A session ticked by hand (`live.tick()`): updates are sent exactly when the test says."""
    with LiveLab(tmp_path / "captures", stall_s=0.05, tick=False) as live:
        yield live


def raw_request(url: str, request: bytes) -> bytes:
    """Send `request` as it is to the page's server; the whole answer."""
    port = httpx.URL(url).port
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(request)
        answer = b""
        while data := s.recv(65536):
            answer += data
    return answer


# -- where it listens, and who it answers --------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_loopback_hosts(host: str) -> None:
    assert loopback_host(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "10.0.0.1", "example.com", "localhost.example.com",
                                  "127.0.0.1.nip.io", ""])  # fmt: skip
def test_a_host_that_is_not_loopback_is_refused_at_start(host: str, tmp_path: Path) -> None:
    with LiveLab(tmp_path, tick=False) as live:
        page = LivePage(live.session)
        with pytest.raises(SSEInspectError, match="loopback") as caught:
            live.run(page.start(host))
    assert caught.value.hint and "127.0.0.1" in caught.value.hint


def test_the_url_carries_a_token_that_every_request_needs(live: LiveLab) -> None:
    token = httpx.URL(live.url).params["token"]
    assert len(token) >= 32 and live.url == f"http://127.0.0.1:{httpx.URL(live.url).port}/?token={token}"
    bare = live.url.split("?")[0]
    for path in ["", "events", "report/1", "nowhere"]:
        assert httpx.get(bare + path, timeout=TIMEOUT).status_code == 403
        assert httpx.get(f"{bare}{path}?token=x{token}", timeout=TIMEOUT).status_code == 403
        assert httpx.get(f"{bare}{path}?token={token[:-1]}", timeout=TIMEOUT).status_code == 403
    refused = httpx.get(bare, timeout=TIMEOUT)
    assert "token" in refused.text and refused.headers["content-type"].startswith("text/plain")
    assert httpx.get(live.url, timeout=TIMEOUT).status_code == 200
    assert httpx.get(at(live.url, "/nowhere"), timeout=TIMEOUT).status_code == 404


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example",
                                  "localhost.evil.example:1"])  # fmt: skip
def test_a_host_header_that_is_not_loopback_is_refused(live: LiveLab, host: str) -> None:
    """DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1 sends its own name."""
    r = httpx.get(live.url, headers={"Host": host}, timeout=TIMEOUT)
    assert r.status_code == 403 and "loopback" in r.text


@pytest.mark.parametrize("host", ["localhost", "localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}"])
def test_a_loopback_host_header_is_answered(live: LiveLab, host: str) -> None:
    port = httpx.URL(live.url).port
    assert httpx.get(live.url, headers={"Host": host.format(port=port)}, timeout=TIMEOUT).status_code == 200


def test_strict_http(live: LiveLab) -> None:
    """GET only, one Host, no body, a small head; each refusal a status and one line."""
    token = httpx.URL(live.url).params["token"]
    post = httpx.post(live.url, content=b"x", timeout=TIMEOUT)
    assert post.status_code == 405 and post.headers["allow"] == "GET"
    two_hosts = raw_request(live.url, f"GET /?token={token} HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil\r\n\r\n".encode())
    assert two_hosts.startswith(b"HTTP/1.1 400 ")
    no_host = raw_request(live.url, f"GET /?token={token} HTTP/1.0\r\n\r\n".encode())
    assert no_host.startswith(b"HTTP/1.1 400 ")
    body = raw_request(live.url, f"GET /?token={token} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc"
                       .encode())  # fmt: skip
    assert body.startswith(b"HTTP/1.1 400 ") and b"no body" in body
    garbage = raw_request(live.url, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")  # TLS to a plain port
    assert garbage.startswith(b"HTTP/1.1 400 ")
    huge = raw_request(live.url, b"GET / HTTP/1.1\r\nHost: localhost\r\nX: " + b"a" * 2 * lp.MAX_HEAD_BYTES
                       + b"\r\n\r\n")  # fmt: skip
    assert huge.startswith(b"HTTP/1.1 431 ")
    assert httpx.get(live.url, timeout=TIMEOUT).status_code == 200  # and it still serves


# -- the page -----------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script = self.style = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.script += data
        elif self._in == "style":
            self.style += data


def test_the_page_runs_only_its_own_script_and_loads_nothing_from_elsewhere(live: LiveLab) -> None:
    r = httpx.get(live.url, timeout=TIMEOUT)
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    policy = dict(d.strip().split(" ", 1) for d in r.headers["content-security-policy"].split(";"))
    page = _Tags()
    page.feed(r.text)

    def sha(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert policy["script-src"] == sha(page.script) and policy["style-src"] == sha(page.style)
    assert policy["connect-src"] == "'self'" and policy["frame-src"] == "'self'"
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
    for tag, attrs in page.tags:  # no external load, no inline handler, no other script
        assert not (tag == "script" and "src" in attrs)
        assert all(not name.startswith("on") for name in attrs)
        for name in ("src", "href"):
            assert attrs.get(name) in (None, "data:,"), (tag, attrs)  # the icon: none, not a request
    assert "innerHTML" not in page.script and "insertAdjacentHTML" not in page.script
    assert "document.write" not in page.script and "eval(" not in page.script


# -- the event stream ----------------------------------------------------------------------------


def test_a_snapshot_then_the_updates_gathered_until_the_redraw(live: LiveLab) -> None:
    chunks = events_of("nginx-unbuffered.jsonl")  # 23 events: a role, 20 words, the finish, [DONE]
    with events(live) as page:
        first = page.next()
        assert first["type"] == "snapshot" and first["streams"] == [] and first["stall_s"] == 0.05
        rec = live.open("nginx-unbuffered.jsonl")
        start = page.next()
        assert start["type"] == "start" and start["id"] == 1
        assert start["stream"]["url"] == rec.url and start["stream"]["method"] == "POST"
        assert start["stream"]["stats"]["status"] == 200 and start["stream"]["ended"] is None
        live.feed(rec, *chunks[:8])  # eight chunks, each in a loop iteration of its own ...
        live.tick()
        update = page.next()  # ... one message
        assert update["type"] == "update" and update["id"] == 1
        assert [b for _, b in update["points"]] == [sum(map(len, chunks[: k + 1])) for k in range(8)]
        assert update["text"] == "w0 w1 w2 w3 w4 w5 w6 " and update["restarted"] is False
        assert update["stats"]["events"] == 8 and update["stats"]["dialect"] == "openai-chat"
        live.feed(rec, *chunks[8:])
        live.finish(rec, "complete")
        rest = page.until("judged")
        assert [m["type"] for m in rest] == ["update", "end", "judged"]  # what it gained, then the end: in order
        update, end, judged = rest
        assert update["text"] == "w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 "
        assert end["outcome"] == {"words": "COMPLETE", "ok": True, "state": "complete"}
        assert end["ended"]["kind"] == "complete" and end["stats"]["events"] == 23
        assert judged["verdict"].startswith("OK: 23 events") and judged["tone"] == "ok" and judged["report"] is True

    with events(live) as later:  # a page opened now sees the same, from its snapshot alone
        (stream,) = later.next()["streams"]
        assert stream["text"] == "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 "
        assert stream["points"][-1][1] == sum(map(len, chunks)) and len(stream["points"]) == 23
        assert stream["verdict"] == judged["verdict"] and stream["outcome"]["ok"] and stream["report"]


def test_the_report_of_a_finished_stream(live: LiveLab) -> None:
    rec = live.open("nginx-unbuffered.jsonl")
    assert httpx.get(at(live.url, "/report/1"), timeout=TIMEOUT).status_code == 404  # still open
    live.feed(rec, *events_of("nginx-unbuffered.jsonl")[:5])
    live.finish(rec, "server-disconnected", CUT_ERROR)
    r = httpx.get(at(live.url, "/report/1"), timeout=TIMEOUT)
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    policy = r.headers["content-security-policy"]
    assert "script-src" not in policy and "default-src 'none'" in policy
    assert "sandbox" in policy and "frame-ancestors 'self'" in policy
    assert "stream 1" in r.text and "CUT: no data: [DONE] after 5 events" in r.text
    assert "missing-end-marker" in r.text and "incomplete chunked read" in r.text
    assert httpx.get(at(live.url, "/report/1"), timeout=TIMEOUT).text == r.text  # kept
    for path in ["/report/2", "/report/0", "/report/01", "/report/x", "/report/1/x", "/report/99999999999"]:
        assert httpx.get(at(live.url, path), timeout=TIMEOUT).status_code == 404, path


def test_a_stall_goes_at_once_and_its_end_with_the_next_update(live: LiveLab) -> None:
    chunks = events_of("nginx-unbuffered.jsonl")
    with events(live) as page:
        page.next()
        rec = live.open("nginx-unbuffered.jsonl")
        live.feed(rec, *chunks[:3])
        live.tick()
        time.sleep(0.2)  # > stall_s (0.05 s)
        live.tick()
        got = page.until("stall")
        assert [m["type"] for m in got] == ["start", "update", "stall"]
        stall = got[-1]
        assert stall["id"] == 1 and stall["first_byte"] is False and stall["since"] == got[1]["points"][-1][0]
        live.feed(rec, chunks[3])
        live.tick()
        resumed = page.next()
        assert resumed["type"] == "update" and resumed["resumed"][0] == stall["since"]
        assert resumed["resumed"][1] == resumed["points"][0][0]  # it lasted until the next byte
        time.sleep(0.2)
        live.tick()  # stalled again, then cut while silent: that stall lasts to the end
        assert page.next()["type"] == "stall"
        live.finish(rec, "server-disconnected", CUT_ERROR)
        end = page.until("end")[-1]
        assert len(end["stalls"]) == 2 and end["stalls"][0] == resumed["resumed"]
        assert end["stalls"][1][1] == end["ended"]["t"]
        assert end["outcome"] == {"words": "NO END MARKER", "ok": False, "state": "no-end-marker"}


def test_a_burst_goes_with_the_update(live: LiveLab) -> None:
    chunks = events_of("nginx-unbuffered.jsonl")
    with events(live) as page:
        page.next()
        rec = live.open("nginx-unbuffered.jsonl")
        live.feed(rec, *chunks[:3])
        time.sleep(0.6)  # then six words in one read: held, then released at once
        live.feed_at_once(rec, *chunks[3:9])
        live.tick()
        update = page.until("update")[-1]
        (burst,) = update["bursts"]
        assert burst[0] == update["points"][-1][0] and burst[1] == 6 and burst[2] >= 0.6
        assert update["text"] == "w0 w1 w2 w3 w4 w5 w6 w7 "


def test_a_slow_page_is_sent_a_snapshot_instead_of_a_backlog(live: LiveLab, monkeypatch: pytest.MonkeyPatch) -> None:
    """What waits for a page is bounded: past BACKLOG_BYTES it is dropped, and the page is sent a
    snapshot of now, which holds what the dropped messages said."""
    monkeypatch.setattr(lp, "BACKLOG_BYTES", 100)
    listener = lp._Listener()
    listener.put(b"x" * 60)
    assert not listener.behind and listener.wake.is_set()
    listener.put(b"y" * 60)
    assert listener.behind and listener.take() == b""
    listener.put(b"z")
    assert listener.take() == b""  # nothing is queued until the snapshot is sent

    monkeypatch.setattr(lp, "BACKLOG_BYTES", 1 << 20)
    chunks = events_of("nginx-unbuffered.jsonl")
    with events(live) as page:
        page.next()
        rec = live.open("nginx-unbuffered.jsonl")
        page.next()

        def fall_behind() -> None:  # as `put` does when the page is too slow, with an update lost on the way
            (listener,) = live.page._listeners
            live.page._flush_all()
            listener.queue.clear()
            listener.behind = True
            listener.wake.set()

        live.feed(rec, *chunks[:4])
        live.call(fall_behind)
        snapshot = page.next()
        assert snapshot["type"] == "snapshot"
        assert snapshot["streams"][0]["text"] == "w0 w1 w2 " and len(snapshot["streams"][0]["points"]) == 4
        live.feed(rec, chunks[4])
        live.tick()
        assert page.next()["text"] == "w3 "  # and on from there


def test_heartbeat(live: LiveLab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lp, "HEARTBEAT_S", 0.05)
    with events(live) as page:
        assert isinstance(page.item(), Event)
        assert isinstance(page.item(), Comment)


def test_too_many_pages_are_told_so(live: LiveLab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lp, "MAX_LISTENERS", 1)
    with events(live) as page:
        page.next()
        r = httpx.get(at(live.url, "/events"), timeout=TIMEOUT)
        assert r.status_code == 503 and "close one" in r.text


def test_close_says_goodbye_and_ends_the_streams(live: LiveLab) -> None:
    with events(live) as page:
        page.next()
        rec = live.open("nginx-unbuffered.jsonl")
        live.feed(rec, *events_of("nginx-unbuffered.jsonl")[:3])
        live.run(live.page.close())
        assert [m["type"] for m in page.until("bye")] == ["start", "update", "bye"]  # what was gathered, then bye
        assert page.item() is None  # the stream ended cleanly (the chunked body's last chunk)
    with pytest.raises(httpx.ConnectError):
        httpx.get(live.url, timeout=TIMEOUT)
    live.run(live.page.close())  # twice is once


def test_a_stream_the_session_forgets_is_forgotten(live: LiveLab) -> None:
    live.session.finished = deque(maxlen=1)
    with events(live) as page:
        page.next()
        for _ in range(2):
            rec = live.open("openai-chat-text.jsonl")
            live.feed(rec, *events_of("openai-chat-text.jsonl"))
            live.finish(rec)
        forget = page.until("forget")[-1]
        assert forget["id"] == 1
    assert httpx.get(at(live.url, "/report/1"), timeout=TIMEOUT).status_code == 404
    assert httpx.get(at(live.url, "/report/2"), timeout=TIMEOUT).status_code == 200


def test_captured_text_cannot_break_the_event_stream(live: LiveLab) -> None:
    """Line ends, a blank line and `data:` inside the answer, U+2028: each message is one JSON line, so
    the page gets the answer exactly and no message more."""
    nasty = 'one\r\n\r\ndata: {"type":"bye"}\n\nevent: x\rtwo\u2028three\x00four'
    body = json.dumps({"choices": [{"index": 0, "delta": {"content": nasty}}]}).encode()
    with events(live) as page:
        page.next()
        rec = live.open("openai-chat-text.jsonl")
        live.feed(rec, b"data: " + body + b"\n\n", b"data: [DONE]\n\n")
        live.tick()
        got = page.until("update")
        assert [m["type"] for m in got] == ["start", "update"] and got[-1]["text"] == nasty


def test_points_are_thinned_to_a_bound() -> None:
    points: list[list[float | int | None]] = []
    for k in range(10 * lp.MAX_POINTS):
        points.append([k / 100, k])
        lp._thin(points)
        assert len(points) <= lp.MAX_POINTS
    assert points[0] == [0.0, 0] and points[-1] == [(10 * lp.MAX_POINTS - 1) / 100, 10 * lp.MAX_POINTS - 1]
    times = [float(t or 0) for t, _ in points]
    assert times == sorted(set(times))  # in order, none twice


# -- in a real browser ---------------------------------------------------------------------------


def text_of(tab: Tab, selector: str) -> str:
    value: str = tab.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")
    return value


def wait_text(tab: Tab, selector: str, pattern: str) -> str:
    """Wait until the element's text matches `pattern` (a regular expression); its text."""
    found: str = tab.wait_for(
        f"((document.querySelector({json.dumps(selector)}) || {{}}).textContent || '').match({json.dumps(pattern)})"
        f" && document.querySelector({json.dumps(selector)}).textContent"
    )
    return found


@contextmanager
def browsing(chromium: str, tmp_path: Path, lab: LiveLab) -> Iterator[Tab]:
    with Browser(chromium, tmp_path / "profile") as browser:
        tab = browser.open(lab.url)
        wait_text(tab, "#conn", "^live$")
        yield tab
        assert tab.complaints() == []


@pytest.mark.e2e
def test_in_chromium_a_stream_appears_and_grows_while_it_is_open(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    chunks = events_of("nginx-unbuffered.jsonl")
    with LiveLab(tmp_path / "captures", stall_s=30) as lab, browsing(chromium, tmp_path, lab) as tab:
        assert tab.evaluate("document.querySelectorAll('#rows tr').length") == 0
        assert not tab.evaluate("document.getElementById('empty').hidden")
        rec = lab.open("nginx-unbuffered.jsonl")
        wait_text(tab, "#rows tr td.url", re.escape(rec.url))
        wait_text(tab, "#f-title", "^#1 POST$")
        lab.feed(rec, *chunks[:3])
        before = wait_text(tab, "#f-text", r"w\d")
        steps = "document.querySelector('#plot path.arrivals').getAttribute('d').split('V').length"
        steps_before = tab.evaluate(steps)
        elapsed_before = text_of(tab, "#rows tr td:nth-child(6)")
        lab.feed(rec, *chunks[3:12])
        after = tab.wait_for(f"document.getElementById('f-text').textContent.length > {len(before)} "
                             "&& document.getElementById('f-text').textContent")  # fmt: skip
        assert after.startswith(before) and "w9" in after  # it grew: the same text and more
        assert tab.evaluate(steps) > steps_before
        assert text_of(tab, "#rows tr td.state") == "open" and text_of(tab, "#f-state") == "open"
        assert text_of(tab, "#f-outcome") == "open: receiving"
        tab.wait_for(f"document.querySelector('#rows tr td:nth-child(6)').textContent !== {json.dumps(elapsed_before)}")
        assert tab.evaluate("document.querySelectorAll('#rows tr').length") == 1
        assert tab.evaluate("document.getElementById('f-report-box').hidden")

        lab.feed(rec, *chunks[12:])
        lab.finish(rec, "complete")
        # OK, or BUFFERED when the machine was slow enough between the feeds above (the check is right:
        # nine events came at once after a silence); the row shows the verdict's word either way
        verdict = wait_text(tab, "#f-verdict", "^(OK|BUFFERED): ")
        assert text_of(tab, "#rows tr td.state") == verdict.split(":")[0]
        assert text_of(tab, "#f-text").startswith(after) and "w19" in text_of(tab, "#f-text")
        assert text_of(tab, "#plot text.end-ok") == "✔ complete"
        assert text_of(tab, "#f-outcome").startswith("✔ COMPLETE")
        tab.wait_for("!document.getElementById('f-report-box').hidden")
        assert tab.evaluate("document.getElementById('f-report').getAttribute('sandbox')") == ""
        report = tab.frame("/report/1")
        assert report.wait_for("document.querySelector('h1') && document.querySelector('h1').textContent") == (
            "sse-inspect live · stream 1"
        )
        assert verdict in report.evaluate("document.body.textContent")


@pytest.mark.e2e
def test_in_chromium_a_stall_a_burst_a_cut_and_an_error_show(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    chunks = events_of("nginx-unbuffered.jsonl")
    with LiveLab(tmp_path / "captures", stall_s=0.3) as lab, browsing(chromium, tmp_path, lab) as tab:
        slow = lab.open("nginx-unbuffered.jsonl")
        lab.feed(slow, *chunks[:3])
        wait_text(tab, "#rows tr td.state", "^stalled$")  # nothing more for > 0.3 s
        wait_text(tab, "#f-outcome", "^stalled: nothing for")
        wait_text(tab, "#plot text.stall-label", "^stalled ")
        assert tab.evaluate("document.querySelectorAll('#plot rect.stall').length") == 1
        assert tab.evaluate("document.querySelector('#rows tr td.silence').classList.contains('long')")
        time.sleep(0.6)  # silent for over 0.5 s: what comes at once now is a burst (check's buffering-burst)
        lab.feed_at_once(slow, *chunks[3:9])
        feeding = threading.Thread(target=feed_slowly, args=(lab, slow, chunks[9:]))
        feeding.start()  # then a chunk every 50 ms: no stall while it lasts (about a second)
        try:
            wait_text(tab, "#rows tr td.state", "^open$")  # resumed; the stall stays on the plot, now with an end
            assert tab.evaluate("document.querySelectorAll('#plot rect.stall').length") >= 1
            wait_text(tab, "#plot text.burst-label", r"^▲ \d+ held \d")
            assert tab.evaluate("document.querySelectorAll('#plot path.burst').length") == 1
        finally:
            feeding.join()
        lab.finish(slow)
        wait_text(tab, "#f-verdict", ".")

        cut = lab.open("nginx-unbuffered.jsonl")
        lab.feed(cut, *chunks[:12])  # at once, with no silence before: no burst, so the verdict is the cut's
        lab.finish(cut, "server-disconnected", CUT_ERROR)
        wait_text(tab, "#f-title", "^#2 POST$")  # followed: the newest stream takes the focus
        verdict = wait_text(tab, "#f-verdict", "^CUT: ")
        assert "no data: [DONE] after 12 events: the connection was cut mid-stream" in verdict
        assert tab.evaluate("document.getElementById('f-verdict').className") == "tone-error"
        assert text_of(tab, "#rows tr[data-id='2'] td.state") == "CUT"
        assert text_of(tab, "#plot text.end-bad") == "✘ cut"
        assert text_of(tab, "#f-outcome").startswith("✘ NO END MARKER") and CUT_ERROR in text_of(tab, "#f-outcome")
        report = tab.frame("/report/2")
        report.wait_for("document.body && document.body.textContent.includes('missing-end-marker')")

        errored = lab.open("openrouter-midstream-error.jsonl")  # an error event in a 200 stream
        lab.feed(errored, *events_of("openrouter-midstream-error.jsonl"))
        lab.finish(errored)
        wait_text(tab, "#f-title", "^#3 POST$")
        wait_text(tab, "#f-verdict", "^ERRORED: ")
        assert text_of(tab, "#plot text.end-bad") == "✘ errored"
        assert text_of(tab, "#f-outcome").startswith("✘ ERRORED")

        tab.evaluate("document.querySelector('#rows tr[data-id=\"1\"]').click()")  # back to the one that stalled
        wait_text(tab, "#f-title", "^#1 POST$")
        assert not tab.evaluate("document.getElementById('follow').checked")
        assert tab.evaluate("document.querySelectorAll('#plot rect.stall').length") >= 1
        assert text_of(tab, "#plot text.end-ok") == "✔ complete"
        tab.wait_for("document.getElementById('f-report').getAttribute('src').startsWith('/report/1?')")


@pytest.mark.e2e
def test_in_chromium_hostile_captured_text_stays_inert(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    capture = hostile_capture()
    assert capture.request is not None
    with LiveLab(tmp_path / "captures", stall_s=30) as lab, browsing(chromium, tmp_path, lab) as tab:
        rec = lab.open(capture)
        lab.feed(rec, *[c.data for c in capture.chunks[:-1]])
        wait_text(tab, "#f-text", "evil")  # shown while open ...
        inert(tab)
        lab.feed(rec, capture.chunks[-1].data)
        lab.finish(rec, "error", '<img src=x onerror="window.__pwned=7"><script>window.__pwned=8</script>')
        wait_text(tab, "#f-verdict", ".")  # ... and once finished, with the report
        inert(tab)
        shown = text_of(tab, "#f-text")
        assert '<img src=x onerror="window.__pwned=1">' in shown
        assert "</script><script>window.__pwned=2</script>" in shown
        assert "<a href=javascript:window.__pwned=4>click</a>" in shown and "&amp; &lt;b&gt;" in shown
        assert text_of(tab, "#rows tr td.url") == rec.url and text_of(tab, "#f-url") == rec.url
        assert "<script>window.__pwned=8</script>" in text_of(tab, "#f-outcome")
        report = tab.frame("/report/1")
        report.wait_for("document.body && document.body.textContent.includes('evil')")
        assert report.evaluate("typeof window.__pwned") == "undefined"
        assert report.evaluate("document.querySelectorAll('img, script, svg image, iframe, object, embed').length") == 0
        assert "<img src=x onerror=" in report.evaluate("document.body.textContent")

        tab.resize(360, 740)  # a phone: the page narrows, the table scrolls inside its box
        tab.wait_for("window.innerWidth === 360")
        tab.wait_for("getComputedStyle(document.querySelector('#rows td.wide')).display === 'none'")
        assert tab.evaluate("document.documentElement.scrollWidth") <= 360
        assert tab.evaluate("document.getElementById('plot').getBoundingClientRect().width") <= 360


def feed_slowly(lab: LiveLab, rec: StreamRecorder, chunks: list[bytes], every: float = 0.05) -> None:
    for chunk in chunks:
        lab.feed(rec, chunk)
        time.sleep(every)


def inert(tab: Tab) -> None:
    """Nothing the capture said ran or became an element: the page's own script and elements only."""
    assert tab.evaluate("typeof window.__pwned") == "undefined"
    assert tab.evaluate("document.scripts.length") == 1
    assert tab.evaluate("document.querySelectorAll('img, object, embed, svg svg, #plot image, #plot a').length") == 0
    assert tab.evaluate("[...document.querySelectorAll('a')].map(a => a.id).join()") == "f-report-link"
    assert tab.evaluate("[...document.querySelectorAll('iframe')].map(f => f.id).join()") == "f-report"
    handlers = "[...document.querySelectorAll('*')].some(e => [...e.attributes].some(a => a.name.startsWith('on')))"
    assert tab.evaluate(handlers) is False
