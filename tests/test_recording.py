"""End to end: a real mitmdump running `addons/sse_capture.py`, between a real httpx client and a
loopback server whose every byte and pause is scripted (`tests/sse_server.py`).

Each test mirrors something that happens when an LLM stream is recorded for real, says which,
and checks both sides: the client must get exactly what the server sent, as soon as it was sent,
and the capture must hold the same bytes, in order, timed, with the right end.
Loopback only; every wait is bounded (client timeouts, server gates, proxy start and stop).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import ssl
import stat
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("mitmproxy", reason="recording tests need mitmproxy (the [record] extra)")

import httpx  # noqa: E402

from sse_inspect import Capture, analyze, load_capture  # noqa: E402

from .h2_server import H2Server  # noqa: E402
from .recording_fixtures import TIMEOUT, Proxy, StartProxy, chat_events  # noqa: E402
from .sse_server import SSE_HEADERS, Ending, Script, SSEServer, Write  # noqa: E402


def read_exactly(chunks: Iterator[bytes], expected: bytes, what: str) -> None:
    """Read from `chunks` until `len(expected)` bytes came; they must be `expected`."""
    got = b""
    try:
        while len(got) < len(expected):
            got += next(chunks)
    except httpx.ReadTimeout:
        pytest.fail(f"{what} not delivered in time (got {got!r}): the proxy holds bytes back")
    assert got == expected, what


def held(events: list[bytes]) -> tuple[Script, list[threading.Event]]:
    """A script that sends `events[k + 1]` (after the last one: its clean end) only once `gates[k]` is set."""
    gates = [threading.Event() for _ in events]
    writes = [Write(e, gate=gates[k - 1] if k else None) for k, e in enumerate(events)]
    return Script(writes, end_gate=gates[-1]), gates


def stream_held(
    proxy: Proxy,
    server: SSEServer,
    path: str,
    events: list[bytes],
    gates: list[threading.Event],
    on_event: Callable[[int], None] = lambda k: None,
    timeout: httpx.Timeout = TIMEOUT,
) -> None:
    """Read `path` (served by `held(events)`) through `proxy`: event k must reach the client while
    the server still holds event k + 1; then `on_event(k)` runs and event k + 1 is let go."""
    with proxy.client(timeout) as client:
        try:
            with client.stream("GET", proxy.target(server.url(path))) as r:
                chunks = r.iter_raw()
                served = server.request(path)
                for k, event in enumerate(events):
                    read_exactly(chunks, event, f"event {k}")
                    # event k + 1 is still held (the server notes a send just after it, so it may lag)
                    assert len(served.sent) <= k + 1
                    on_event(k)
                    gates[k].set()
                assert b"".join(chunks) == b""
        except httpx.ReadTimeout:
            pytest.fail(f"no response head within {timeout.read} s while the server held its 2nd event: the proxy buffers")


def stream(proxy: Proxy, url: str, method: str = "GET", **kwargs: object) -> bytes:
    """One whole streamed exchange through `proxy`: the raw body bytes the client received."""
    with proxy.client() as client, client.stream(method, proxy.target(url), **kwargs) as response:  # type: ignore[arg-type]
        return b"".join(response.iter_raw())


def stream_each(proxy: Proxy, server: SSEServer, paths: Iterable[str]) -> list[bytes]:
    """The body of each path in turn, over one client connection (kept alive, as an SDK does)."""
    with proxy.client() as client:
        return [client.get(proxy.target(server.url(path))).content for path in paths]


def written(proxy: Proxy, events: list[bytes], within: float = 10.0) -> None:
    """The one capture of `proxy` holds `events` as its chunks within `within` s (the addon writes
    the chunks of an event-loop iteration as it ends: microseconds, unless the machine is busy)."""
    deadline = time.monotonic() + within
    while True:
        files = proxy.capture_files()
        chunks = [c.data for c in load_capture(files[0]).chunks] if len(files) == 1 else None
        if chunks == events:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"capture files {files} hold {chunks}, not {events}, {within} s after they passed")
        time.sleep(0.005)


def chunk_times(capture: Capture) -> list[float]:
    times = [c.t for c in capture.chunks if c.t is not None]
    assert len(times) == len(capture.chunks), capture
    return times


# -- the harness itself -------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["clean", "reset", "truncate"])
def test_server_endings_as_a_direct_client_sees_them(server: SSEServer, ending: Ending) -> None:
    """Without a proxy, the scripted endings look to a client as they do from a real server:
    a clean chunked end, or an error after the bytes that were sent (a crash, a cut connection)."""
    events = chat_events("a", "b")
    server.routes["/s"] = Script.events(*events, ending=ending)
    got = b""
    with httpx.Client(trust_env=False, timeout=TIMEOUT) as client, client.stream("GET", server.url("/s")) as r:
        try:
            for chunk in r.iter_raw():
                got += chunk
        except httpx.TransportError:
            assert ending != "clean"
        else:
            assert ending == "clean"
    assert got == b"".join(events)
    assert server.request("/s").outcome == ending


def test_the_no_buffering_check_catches_plain_mitmdump(start_proxy: StartProxy, server: SSEServer) -> None:
    """mitmproxy without the addon buffers a whole event stream (mitmproxy#4469): the client gets
    nothing while the server holds its second event. `stream_held` must say so."""
    events = chat_events("Hel")
    server.routes["/s"], gates = held(events)
    proxy = start_proxy(addon=False)
    with pytest.raises(pytest.fail.Exception, match="the proxy buffers"):
        stream_held(proxy, server, "/s", events, gates, timeout=httpx.Timeout(5.0, read=0.5))
    assert len(server.request("/s").sent) == 1


# -- recording ----------------------------------------------------------------------------


def test_records_exact_bytes_request_and_response(start_proxy: StartProxy, server: SSEServer) -> None:
    """A chat completion POSTed through the proxy: the client and the capture both get the body
    byte for byte, chunk by chunk (here with a `€` split across two chunks, as TCP may cut it),
    and the capture names the request and response and says the stream completed."""
    writes = [b'data: {"delta": "Hel"}\n\n', b'data: {"delta": "lo \xe2\x82', b'\xac"}\n\n', b"data: [DONE]\n\n"]
    headers = [*SSE_HEADERS, ("X-Request-Id", "req-1")]
    server.routes["/v1/chat/completions"] = Script([Write(w, delay=0.01) for w in writes], headers=headers)
    proxy = start_proxy()
    prompt = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]})
    url = server.url("/v1/chat/completions")

    received = stream(proxy, url, "POST", content=prompt, headers={"Content-Type": "application/json"})

    assert received == b"".join(writes)
    assert server.request("/v1/chat/completions").body == prompt.encode()
    [capture] = proxy.captures(1)
    assert [c.data for c in capture.chunks] == writes
    assert capture.end is not None and capture.end.kind == "complete", capture.end
    assert capture.request is not None and capture.response is not None
    assert (capture.request.method, capture.request.url, capture.request.body) == ("POST", url, prompt)
    assert capture.request.header("content-type") == "application/json"
    assert (capture.response.status, capture.response.reason, capture.response.http_version) == (200, "OK", "HTTP/1.1")
    assert capture.response.header("content-type") == "text/event-stream"
    assert capture.response.header("x-request-id") == "req-1"
    path = Path(str(capture.path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z-127\.0\.0\.1-[A-Za-z0-9._-]*completions\.jsonl", path.name), path.name


def test_chunk_times_follow_the_servers_schedule(start_proxy: StartProxy, server: SSEServer) -> None:
    """Tokens generated 300 ms apart: each chunk's `t` is when it really passed, so the gaps in the
    capture match the gaps at which the server wrote (what "time between tokens" is computed from),
    within half a gap: room for a busy machine, none for times taken anywhere but as chunks pass."""
    events = chat_events("one", "two", "three", "four")
    server.routes["/s"] = Script.events(*events, interval=0.3)
    proxy = start_proxy()

    assert stream(proxy, server.url("/s")) == b"".join(events)

    [capture] = proxy.captures(1)
    assert [c.data for c in capture.chunks] == events
    times = chunk_times(capture)
    assert capture.response is not None and capture.response.t is not None
    assert 0 <= capture.response.t <= times[0]
    assert all(a < b for a, b in pairwise(times)), times
    sent = server.request("/s").sent
    for (t0, t1), (s0, s1) in zip(pairwise(times), pairwise(sent), strict=True):
        assert s1 - s0 >= 0.3, sent
        assert abs((t1 - t0) - (s1 - s0)) < 0.15, (times, sent)


def test_no_buffering_and_each_chunk_written_as_it_is_forwarded(start_proxy: StartProxy, server: SSEServer) -> None:
    """The symptom users bring: "the stream arrives all at once". With the server holding each next
    event until the test lets it go, the client must already have event k before event k+1 exists,
    and the capture file must hold it too, without waiting for anything more of the stream."""
    events = chat_events("Hel", "lo")
    server.routes["/s"], gates = held(events)
    proxy = start_proxy()

    stream_held(proxy, server, "/s", events, gates, lambda k: written(proxy, events[: k + 1]))

    [capture] = proxy.captures(1)
    assert [c.data for c in capture.chunks] == events
    assert capture.end is not None and capture.end.kind == "complete"


def test_client_disconnect_mid_stream(start_proxy: StartProxy, server: SSEServer) -> None:
    """The user presses Stop (the SDK closes the response) after two events: the capture ends
    "client-disconnected", keeps both events, and the proxy lets the server know (it closes upstream)."""
    events = chat_events("Hel", "lo")
    server.routes["/s"] = Script([Write(events[0]), Write(events[1]), Write(events[2], gate=threading.Event())])
    proxy = start_proxy()

    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/s"))) as r:
        read_exactly(r.iter_raw(), events[0] + events[1], "the first two events")
        # leaving the block closes the half-read response, as an SDK's `close()` does

    [capture] = proxy.captures(1)
    assert capture.end is not None and capture.end.kind == "client-disconnected", capture.end
    assert [c.data for c in capture.chunks] == events[:2]
    served = server.request("/s")
    served.wait()
    assert served.outcome == "client-gone"


@pytest.mark.parametrize("ending", ["reset", "truncate"])
def test_server_disconnect_mid_stream(start_proxy: StartProxy, server: SSEServer, ending: Ending) -> None:
    """The server dies (reset) or the connection is closed before the end of the chunked body (an
    idle timeout in a load balancer): the client sees a broken stream, never a clean end, and the
    capture ends "server-disconnected" with everything that came before."""
    events = chat_events("Hel", "lo")[:2]
    cut = threading.Event()
    server.routes["/s"] = Script([Write(e) for e in events], ending=ending, end_gate=cut)
    proxy = start_proxy()

    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/s"))) as r:
        chunks = r.iter_raw()
        read_exactly(chunks, b"".join(events), "both events")
        cut.set()
        with pytest.raises(httpx.TransportError):
            next(chunks)

    [capture] = proxy.captures(1)
    assert capture.end is not None and capture.end.kind == "server-disconnected", capture.end
    assert [c.data for c in capture.chunks] == events


def test_proxy_shutdown_mid_stream(start_proxy: StartProxy, server: SSEServer) -> None:
    """Ctrl-C on mitmdump while a stream is open: `done()` closes the capture with an "error" end,
    after the event that had passed."""
    events = chat_events("Hel")
    server.routes["/s"] = Script([Write(events[0]), Write(events[1], gate=threading.Event())])
    proxy = start_proxy()

    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/s"))) as r:
        chunks = r.iter_raw()  # kept: dropping a half-read iterator closes the connection
        read_exactly(chunks, events[0], "the first event")
        assert proxy.stop() == 0, proxy.log()

    [capture] = proxy.captures(1)
    assert capture.end is not None and capture.end.kind == "error", capture.end
    assert [c.data for c in capture.chunks] == events[:1]


def test_proxy_killed_mid_stream_keeps_every_chunk_it_passed_on(start_proxy: StartProxy, server: SSEServer) -> None:
    """mitmdump SIGKILLed (the OOM killer, `kill -9`) while the server holds its third event: no
    `done()`, no end line, yet the capture holds the two events that had passed, and loads. The
    test waits until the file holds them (the write follows the loop iteration that passed them
    on), so the kill cannot land inside that iteration: what it proves is that a kill after the
    write takes nothing back and leaves no broken line."""
    events = chat_events("Hel", "lo")
    server.routes["/s"] = Script([Write(events[0]), Write(events[1]), Write(events[2], gate=threading.Event())])
    proxy = start_proxy()

    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/s"))) as r:
        chunks = r.iter_raw()
        read_exactly(chunks, events[0] + events[1], "the first two events")
        written(proxy, events[:2])
        proxy.process.kill()
        assert proxy.process.wait(10) == -9

    [path] = proxy.capture_files()
    capture = load_capture(path)
    assert [c.data for c in capture.chunks] == events[:2]
    assert capture.end is None and capture.warnings == ()


def test_proxy_killed_in_a_burst_loses_at_most_one_loop_iteration(start_proxy: StartProxy, server: SSEServer) -> None:
    """SIGKILL while a fast stream pours through: what a `kill -9` can lose, and no more.

    The addon takes each chunk as mitmproxy passes it on and writes the chunks of an event-loop
    iteration together when the iteration ends, or as soon as FLUSH_CHUNKS of them are waiting
    (`_FlowRecorder`). A kill therefore loses at most the chunks taken since the last write:
    fewer than FLUSH_CHUNKS, and they may already be at the client. Everything written before is
    in the file (`os.write`, no buffer in the process), the last line at worst cut short.

    So: the server sends a first part and holds the rest behind a gate; the file must hold that
    first part while the stream is still open (chunks reach the disk as they pass, not at the
    end). Then the gate opens on 5000 events (1 MB) sent as fast as the server writes, and the
    client kills mitmdump once it has received 512 KiB, in the middle of the burst. The capture
    must load, start with the first part, be a prefix of what was sent with every chunk timed,
    and hold all that the client had received but for fewer than FLUSH_CHUNKS chunks (each HTTP
    chunk is one event here, and mitmproxy never merges two into one chunk).
    """
    from sse_inspect.recorder import FLUSH_CHUNKS

    first = chat_events("Hel", "lo")[:2]
    burst = [b'data: {"i": %d, "pad": "%s"}\n\n' % (k, b"x" * 200) for k in range(5000)]
    gate = threading.Event()
    writes = [Write(e) for e in first] + [Write(burst[0], gate=gate)] + [Write(e) for e in burst[1:]]
    server.routes["/s"] = Script(writes, end_gate=threading.Event())
    sent = b"".join(first + burst)
    proxy = start_proxy()

    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/s"))) as r:
        chunks = r.iter_raw()
        read_exactly(chunks, b"".join(first), "the first part")
        written(proxy, first)
        gate.set()
        received = len(b"".join(first))
        for chunk in chunks:
            received += len(chunk)
            if received >= 512 * 1024:
                proxy.process.kill()  # before leaving the loop, which closes the response
                break
        assert proxy.process.wait(10) == -9
    assert received < len(sent), "the burst ended before the kill"

    [path] = proxy.capture_files()
    capture = load_capture(path)
    assert capture.end is None
    assert len(capture.warnings) <= 1, capture.warnings  # the last line, if the kill cut a write short
    assert [c.data for c in capture.chunks[:2]] == first
    assert sent.startswith(capture.body)
    times = chunk_times(capture)
    assert all(a <= b for a, b in pairwise(times)), times
    lost = received - len(capture.body)
    assert lost < FLUSH_CHUNKS * max(map(len, burst)), (received, len(capture.body), len(capture.chunks))


def test_secrets_are_redacted(start_proxy: StartProxy, server: SSEServer) -> None:
    """A capture gets shared in a bug report: API keys (header or Gemini's `?key=`) and cookies,
    both ways, must not be in it, nor the names added with `sse_redact_extra` (a header, a query
    parameter). Names stay, values become "[REDACTED]", other headers are kept."""
    path = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    response_headers = [*SSE_HEADERS, ("Set-Cookie", "session=SETCOOKIE-SECRET; HttpOnly"), ("X-Served-By", "edge-7")]
    server.routes[path] = Script.events(b'data: {"candidates": []}\n\n', headers=response_headers)
    proxy = start_proxy(sse_redact_extra=["X-Org-Token", "sig"])
    secrets = {
        "Authorization": "Bearer sk-test-123",
        "x-api-key": "k-APIKEY-SECRET",
        "Cookie": "a=b-COOKIE-SECRET",
        "X-Org-Token": "ORG-SECRET",
    }
    query = "?key=AIzaSECRET&alt=sse&sig=SIG-SECRET"

    stream(proxy, server.url(path) + query, headers={**secrets, "X-Trace": "trace-42"})

    assert ("Authorization", "Bearer sk-test-123") in server.request(path).headers  # the traffic is untouched
    [capture] = proxy.captures(1)
    text = Path(str(capture.path)).read_text()
    for secret in ["sk-test-123", "APIKEY-SECRET", "COOKIE-SECRET", "ORG-SECRET", "AIzaSECRET", "SIG-SECRET", "SETCOOKIE-SECRET"]:
        assert secret not in text
    assert capture.request is not None and capture.response is not None
    for name in secrets:
        assert capture.request.header(name) == "[REDACTED]", name
    assert capture.response.header("set-cookie") == "[REDACTED]"
    assert capture.request.header("x-trace") == "trace-42"
    assert capture.response.header("x-served-by") == "edge-7"
    assert capture.response.header("content-type") == "text/event-stream"
    assert parse_qs(urlsplit(capture.request.url).query) == {"key": ["[REDACTED]"], "alt": ["sse"], "sig": ["[REDACTED]"]}


GEMINI_ARRAY = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"


def _routes_for_types(server: SSEServer) -> dict[str, bytes]:
    """A JSON answer, and the token streams an app may open: NDJSON (Ollama's native API), JSON Lines,
    an AWS event stream (Bedrock; one message's bytes, its CRCs left as zeros: the recorder keeps bytes,
    it does not read them), Gemini's JSON array (`application/json` on `:streamGenerateContent`) and an
    SSE stream: path -> body."""
    bodies = {
        "/json": b'{"choices": []}',
        "/ndjson": b'{"message": {"content": "Hi"}, "done": false}\n{"done": true}\n',
        "/jsonl": b'{"text": "Hi"}\n',
        "/eventstream": b"\x00\x00\x00\x10\x00\x00\x00\x00" + bytes(8),
        GEMINI_ARRAY: b'[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}\n]',
        "/sse": b"data: [DONE]\n\n",
    }
    types = {"/json": "application/json", "/ndjson": "application/x-ndjson", "/jsonl": "application/jsonl",
             "/eventstream": "application/vnd.amazon.eventstream", GEMINI_ARRAY: "application/json; charset=UTF-8",
             "/sse": "text/event-stream"}  # fmt: skip
    for path, body in bodies.items():
        server.routes[path] = Script([Write(body)], headers=[("Content-Type", types[path])])
    return bodies


def test_token_streams_are_recorded_by_default(start_proxy: StartProxy, server: SSEServer) -> None:
    """An app also makes plain JSON calls: by default every token stream is recorded (SSE, NDJSON, JSON
    Lines, AWS event stream, Gemini's JSON array), byte for byte, and the plain JSON passes untouched."""
    bodies = _routes_for_types(server)
    proxy = start_proxy()

    assert stream_each(proxy, server, bodies) == list(bodies.values())

    captures = {urlsplit(c.request.url).path: c for c in proxy.captures(5) if c.request is not None}
    assert set(captures) == set(bodies) - {"/json"}
    assert all(captures[path].body == bodies[path] for path in captures)


def test_capture_types_option_narrows_what_is_recorded(start_proxy: StartProxy, server: SSEServer) -> None:
    """`sse_capture_types=text/event-stream` records event streams only (and Gemini's JSON array, its other
    stream); the NDJSON stream still flows, unrecorded."""
    bodies = _routes_for_types(server)
    proxy = start_proxy(sse_capture_types="text/event-stream")

    assert stream_each(proxy, server, bodies) == list(bodies.values())

    captures = {urlsplit(c.request.url).path: c for c in proxy.captures(2) if c.request is not None}
    assert set(captures) == {GEMINI_ARRAY, "/sse"}


def test_capture_filter_option(start_proxy: StartProxy, server: SSEServer) -> None:
    """`sse_capture_filter` keeps recording to the API of interest, not every event stream an app
    opens (a dev server's live reload, a notifications feed)."""
    for path in ("/livereload", "/v1/chat/completions"):
        server.routes[path] = Script.events(b"data: x\n\n")
    proxy = start_proxy(sse_capture_filter="~u /v1/")

    for path in ("/livereload", "/v1/chat/completions"):
        assert stream(proxy, server.url(path)) == b"data: x\n\n"

    [capture] = proxy.captures(1)
    assert capture.request is not None and capture.request.url == server.url("/v1/chat/completions")


def test_request_body_can_be_left_out(start_proxy: StartProxy, server: SSEServer) -> None:
    """`sse_capture_request_body=false`: a capture that may travel must not carry the prompt."""
    server.routes["/v1/messages"] = Script.events(b"event: message_stop\ndata: {}\n\n")
    proxy = start_proxy(sse_capture_request_body=False)

    stream(proxy, server.url("/v1/messages"), "POST", content=b'{"prompt": "CONFIDENTIAL-PROMPT"}')

    [capture] = proxy.captures(1)
    assert capture.request is not None and capture.request.body is None
    assert "CONFIDENTIAL-PROMPT" not in Path(str(capture.path)).read_text()


def test_failing_disk_does_not_break_the_stream(start_proxy: StartProxy, server: SSEServer) -> None:
    """The capture folder is gone (deleted, a full disk, a path that became a file) while the proxy
    runs: recording fails, the traffic must not. The stream still passes whole and live (not
    buffered until its end), and the proxy keeps serving. (A file, not chmod: root writes through
    permissions.)"""
    events = chat_events("still", "here")
    server.routes["/first"], gates = held(events)
    server.routes["/second"] = Script.events(*events)
    server.routes["/before"] = Script.events(*events)
    proxy = start_proxy()
    # Break the folder only once the addon has taken its options (mitmproxy 12 may listen before the
    # script's configure has run, and a bad folder there is refused at once): one stream recorded first.
    assert stream(proxy, server.url("/before")) == b"".join(events)
    proxy.captures(1, timeout=20)
    shutil.rmtree(proxy.capture_dir, ignore_errors=True)
    proxy.capture_dir.write_text("a file where the capture folder was\n")

    stream_held(proxy, server, "/first", events, gates)
    assert stream(proxy, server.url("/second")) == b"".join(events)

    assert proxy.capture_dir.is_file()


def test_fifty_parallel_streams(start_proxy: StartProxy, server: SSEServer) -> None:
    """An agent fanning out 50 streamed calls through one proxy: 50 captures, none mixed up with
    another, each exact and complete."""
    bodies = {f"/stream/{i}": chat_events(f"s{i}-a", f"s{i}-b", f"s{i}-c") for i in range(50)}
    for path, events in bodies.items():
        server.routes[path] = Script.events(*events, interval=0.02)
    proxy = start_proxy()

    async def one(client: httpx.AsyncClient, path: str) -> bytes:
        async with client.stream("GET", proxy.target(server.url(path))) as r:
            return b"".join([chunk async for chunk in r.aiter_raw()])

    async def all_streams() -> list[bytes]:
        async with proxy.async_client(limits=httpx.Limits(max_connections=len(bodies))) as client:
            return await asyncio.wait_for(asyncio.gather(*(one(client, p) for p in bodies)), 30)

    received = asyncio.run(all_streams())

    assert received == [b"".join(events) for events in bodies.values()]
    captures = {urlsplit(c.request.url).path: c for c in proxy.captures(50, timeout=20) if c.request is not None}
    assert set(captures) == set(bodies)
    for path, events in bodies.items():
        assert [c.data for c in captures[path].chunks] == events, path
        end = captures[path].end
        assert end is not None and end.kind == "complete", (path, end)


def test_close_delimited_body(start_proxy: StartProxy, server: SSEServer) -> None:
    """An HTTP/1.0-style server (no length, no chunking: the body ends when the connection closes,
    as from a development server): the close is the clean end of the stream."""
    events = chat_events("Hel", "lo")
    server.routes["/s"] = Script.events(*events, interval=0.01, framing="close")
    proxy = start_proxy()

    assert stream(proxy, server.url("/s")) == b"".join(events)

    [capture] = proxy.captures(1)
    assert capture.body == b"".join(events)
    assert capture.end is not None and capture.end.kind == "complete", capture.end


def test_gzip_stream_stored_as_sent_and_decoded_on_analysis(start_proxy: StartProxy, server: SSEServer) -> None:
    """Compression middleware on an SSE endpoint, flushing after each event (Z_SYNC_FLUSH): the
    capture keeps the compressed wire bytes, and analysis decodes them into the right events."""
    events = chat_events("Hel", "lo")
    compressor = zlib.compressobj(wbits=31)
    wire = [compressor.compress(e) + compressor.flush(zlib.Z_SYNC_FLUSH) for e in events]
    wire[-1] += compressor.flush()
    headers = [*SSE_HEADERS, ("Content-Encoding", "gzip")]
    server.routes["/s"] = Script([Write(w, delay=0.01) for w in wire], headers=headers)
    proxy = start_proxy()

    assert stream(proxy, server.url("/s")) == b"".join(wire)

    [capture] = proxy.captures(1)
    assert capture.body == b"".join(wire)
    assert [e.data for e in analyze(capture).events] == [e[len(b"data: ") : -2].decode() for e in events]


def test_reverse_mode(start_proxy: StartProxy, server: SSEServer) -> None:
    """Reverse mode, how an SDK is pointed at the proxy with no certificates (`OPENAI_BASE_URL=
    http://127.0.0.1:PORT`): recorded the same, under the upstream's URL."""
    events = chat_events("Hel", "lo")
    server.routes["/v1/chat/completions"] = Script.events(*events)
    proxy = start_proxy(f"reverse:{server.url('')}")

    assert stream(proxy, server.url("/v1/chat/completions"), "POST", content=b"{}") == b"".join(events)

    [capture] = proxy.captures(1)
    assert capture.request is not None and capture.request.url == server.url("/v1/chat/completions")
    assert capture.body == b"".join(events)


class _OffersH2First(ssl.SSLContext):
    """A client TLS context whose ALPN offer puts h2 first, as curl, browsers and Go's net/http do.

    httpcore offers `http/1.1, h2` whatever the context says, and mitmproxy picks the first protocol
    of the client's offer that it speaks: with httpx's own order, `http2=True` through mitmdump
    still gets HTTP/1.1."""

    def set_alpn_protocols(self, alpn_protocols: Iterable[str]) -> None:
        super().set_alpn_protocols(sorted(alpn_protocols, key=lambda p: p != "h2"))


def test_http2_client_in_reverse_mode(start_proxy: StartProxy, server: SSEServer) -> None:
    """An SDK speaking HTTP/2 over TLS to the proxy (reverse mode detects TLS from the client and
    serves mitmproxy's certificate for 127.0.0.1), the upstream speaking HTTP/1.1: each event still
    reaches the client as DATA while the server holds the next, and the capture is exact, with no
    empty chunk and one "complete" end (mitmproxy ≤ 11 calls the stream function with b"" twice at
    the end of an HTTP/2 body)."""
    events = chat_events("Hel", "lo")
    server.routes["/v1/chat/completions"], gates = held(events)
    proxy = start_proxy(f"reverse:{server.url('')}")
    tls = _OffersH2First(ssl.PROTOCOL_TLS_CLIENT)
    tls.load_verify_locations(proxy.confdir / "mitmproxy-ca-cert.pem")
    url = f"https://127.0.0.1:{proxy.port}/v1/chat/completions"

    with httpx.Client(http2=True, verify=tls, trust_env=False, timeout=TIMEOUT) as client:
        with client.stream("POST", url, content=b"{}") as r:
            assert r.http_version == "HTTP/2"
            chunks = r.iter_raw()
            for k, event in enumerate(events):
                read_exactly(chunks, event, f"event {k}")
                gates[k].set()
            assert b"".join(chunks) == b""

    [capture] = proxy.captures(1)
    assert [c.data for c in capture.chunks] == events
    assert capture.end is not None and capture.end.kind == "complete", capture.end
    assert capture.request is not None and capture.response is not None
    assert (capture.request.http_version, capture.response.http_version) == ("HTTP/2.0", "HTTP/1.1")
    assert capture.request.url == server.url("/v1/chat/completions")
    lines = Path(str(capture.path)).read_text().splitlines()
    assert len(lines) == 1 + len(events) + 1, lines
    assert json.loads(lines[-1])["end"] == "complete"


def test_http2_on_both_sides_ending_with_an_empty_data_frame(start_proxy: StartProxy, tmp_path: Path) -> None:
    """HTTP/2 end to end, as with a client offering h2 to an HTTPS API that speaks it: the server ends
    the body with an empty DATA frame carrying END_STREAM, which mitmproxy ≤ 11 hands to the stream
    function as b"" before its own end-of-message b"". The client gets the exact bytes, and the
    capture has one chunk per DATA frame with data, no empty chunk, and one "complete" end."""
    from mitmproxy.certs import CertStore

    events = chat_events("Hel", "lo")
    CertStore.from_store(tmp_path / "upstream", "upstream", 2048)  # writes upstream-ca.pem: a key and its cert
    with H2Server(events, tmp_path / "upstream" / "upstream-ca.pem") as upstream:
        proxy = start_proxy(f"reverse:{upstream.url('')}", ssl_insecure=True)
        tls = _OffersH2First(ssl.PROTOCOL_TLS_CLIENT)
        tls.load_verify_locations(proxy.confdir / "mitmproxy-ca-cert.pem")

        with httpx.Client(http2=True, verify=tls, trust_env=False, timeout=TIMEOUT) as client:
            with client.stream("GET", f"https://127.0.0.1:{proxy.port}/v1/chat/completions") as r:
                assert r.http_version == "HTTP/2"
                assert b"".join(r.iter_raw()) == b"".join(events)

        assert upstream.alpn == ["h2"]
        [capture] = proxy.captures(1)
    assert [c.data for c in capture.chunks] == events
    assert capture.end is not None and capture.end.kind == "complete", capture.end
    assert capture.response is not None and capture.response.http_version == "HTTP/2.0"
    lines = Path(str(capture.path)).read_text().splitlines()
    assert len(lines) == 1 + len(events) + 1, lines
