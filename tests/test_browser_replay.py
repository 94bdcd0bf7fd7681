"""A browser page as a client of the replay server (`sse-inspect serve`, the `sse_replay` fixture).

A page under test is served from its own origin; the replay from another. Without CORS a browser
lets the page open the stream but not read it, so `serve` answers preflights and sends
`Access-Control-Allow-Origin: *` to requests that carry an `Origin` (and, with `cors=False`, the
recorded headers only). The protocol is checked with httpx; the whole path with a real headless
Chromium reading the replay through `EventSource` and through `fetch()` with a JSON POST, whose
preflight the server must answer.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, load_capture
from sse_inspect.server import ReplayServerThread

from .helpers import ROOT

CAPTURE = ROOT / "captures" / "openai-chat-text.jsonl"
TIMEOUT = httpx.Timeout(10.0)


def recorded_with_cors_headers() -> Capture:
    """A capture whose server sent CORS headers of its own (as some APIs do)."""
    events = [b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n', b"data: [DONE]\n\n"]
    return Capture(
        chunks=tuple(Chunk(0.01 * (i + 1), e) for i, e in enumerate(events)),
        request=Request(method="POST", url="https://api.example/v1/chat/completions"),
        response=Response(status=200, reason="OK", t=0.005, headers=(
            ("Content-Type", "text/event-stream"),
            ("Access-Control-Allow-Origin", "https://app.example"),
            ("Access-Control-Allow-Credentials", "true"),
            ("X-Request-Id", "req_1"),
        )),  # fmt: skip
        end=End(kind="complete", t=0.05),
    )


def test_a_request_without_origin_gets_the_recorded_headers() -> None:
    with ReplayServerThread([recorded_with_cors_headers()], speed=None) as server:
        r = httpx.post(server.url + "/v1/chat/completions", timeout=TIMEOUT)
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert r.headers["access-control-allow-credentials"] == "true"
    assert r.text.endswith("data: [DONE]\n\n")


def test_a_request_from_a_page_may_be_read_from_any_origin() -> None:
    with ReplayServerThread([recorded_with_cors_headers()], speed=None) as server:
        r = httpx.post(server.url + "/v1/chat/completions", headers={"Origin": "http://127.0.0.1:9"}, timeout=TIMEOUT)
    assert r.headers.get_list("access-control-allow-origin") == ["*"]
    assert "access-control-allow-credentials" not in r.headers  # `*` with credentials is refused by browsers
    assert r.headers["x-request-id"] == "req_1"  # the other recorded headers stay
    assert r.text.endswith("data: [DONE]\n\n")


def test_a_preflight_is_answered_without_replaying() -> None:
    """The preflight gets 204 with the method and headers it asked for; it is not a replay, so it
    does not take a turn of the round-robin: the request after it still gets the first capture."""
    first, second = recorded_with_cors_headers(), load_capture(CAPTURE)
    with ReplayServerThread([first, second], speed=None) as server, httpx.Client(timeout=TIMEOUT) as client:
        pre = client.options(server.url + "/elsewhere", headers={
            "Origin": "http://127.0.0.1:9", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,authorization",
        })  # fmt: skip
        served_after_preflight = server.server.served
        real = client.post(server.url + "/elsewhere", headers={"Origin": "http://127.0.0.1:9"})
    assert pre.status_code == 204 and pre.content == b""
    assert pre.headers["access-control-allow-origin"] == "*"
    assert pre.headers["access-control-allow-methods"] == "POST"
    assert pre.headers["access-control-allow-headers"] == "content-type,authorization"
    assert served_after_preflight == 0
    assert real.text == first.body.decode()


def test_without_cors_an_options_request_is_a_replay_like_any_other() -> None:
    with ReplayServerThread([recorded_with_cors_headers()], speed=None, cors=False) as server:
        pre = httpx.options(server.url + "/x", headers={"Origin": "http://a", "Access-Control-Request-Method": "POST"},
                            timeout=TIMEOUT)  # fmt: skip
    assert pre.status_code == 200 and pre.text.endswith("data: [DONE]\n\n")
    assert pre.headers["access-control-allow-origin"] == "https://app.example"  # as recorded


# -- in a real browser ---------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>replay client</title></head><body>
<pre id="es"></pre><pre id="fetch"></pre><script>
const replay = "REPLAY";
const show = (id, value) => { document.getElementById(id).textContent = JSON.stringify(value); };
const delta = data => { const c = JSON.parse(data).choices; return c.length ? (c[0].delta.content || "") : ""; };
let esText = "";
const es = new EventSource(replay + "/v1/chat/completions");
es.onmessage = e => {
  if (e.data === "[DONE]") { es.close(); show("es", {ok: true, text: esText}); } else { esText += delta(e.data); }
};
es.onerror = () => { es.close(); show("es", {ok: false, text: esText}); };
fetch(replay + "/v1/chat/completions", {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: JSON.stringify({stream: true})})
  .then(r => r.text())
  .then(body => {
    const data = body.split("\\n").filter(l => l.startsWith("data: ")).map(l => l.slice(6));
    show("fetch", {ok: true, text: data.filter(d => d !== "[DONE]").map(delta).join("")});
  })
  .catch(e => show("fetch", {ok: false, error: String(e)}));
</script></body></html>"""

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update")  # fmt: skip
BROWSER_TIMEOUT = 90


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI is set: the browser tests must run (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); with CI set this fails instead")
    return path


@pytest.fixture
def page_origin(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static file server on its own loopback port: the page's origin, not the replay's."""
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(tmp_path)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", tmp_path
    finally:
        httpd.shutdown()
        httpd.server_close()


def open_page(chromium: str, url: str, profile: Path) -> str:
    """The page's DOM once it has settled (virtual time lets the streams finish first)."""
    cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--dump-dom", url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BROWSER_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"chromium did not finish within {BROWSER_TIMEOUT} s")
    assert proc.returncode == 0, err[-2000:]
    return out


def results(dom: str) -> dict[str, dict[str, object]]:
    found = {}
    for name in ("es", "fetch"):
        start = dom.index(f'<pre id="{name}">') + len(f'<pre id="{name}">')
        text = dom[start : dom.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&")
        found[name] = json.loads(text) if text else {}
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("cors", [True, False])
def test_a_page_reads_the_replay_with_eventsource_and_fetch(
    chromium: str, page_origin: tuple[str, Path], tmp_path: Path, cors: bool
) -> None:
    """With CORS (the default) both clients get the whole answer, `fetch()` after its preflight;
    without it the browser refuses the page both (the control that proves the test can fail)."""
    origin, folder = page_origin
    capture = load_capture(CAPTURE)
    answer = analyze(capture).answer.text
    with ReplayServerThread([capture], speed=None, rechunk_spec=None, cors=cors) as server:
        (folder / "index.html").write_text(PAGE.replace("REPLAY", server.url), encoding="utf-8")
        got = results(open_page(chromium, origin + "/index.html", tmp_path / "profile"))
    if cors:
        assert got == {"es": {"ok": True, "text": answer}, "fetch": {"ok": True, "text": answer}}
    else:
        assert got["es"] == {"ok": False, "text": ""} and got["fetch"]["ok"] is False
