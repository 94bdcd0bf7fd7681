"""Import and export: real files made by real tools (curl's traces of a loopback stream, `mitmdump -w`
flow files, mitmproxy's HAR export), round trips to the microsecond, and one-line errors for bad input.

Network tests use `tests/sse_server.py` on 127.0.0.1 only; curl runs with --max-time and every
subprocess with a timeout, and mitmdump is started and stopped by the `start_proxy` fixture.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, dump_capture, load_capture, parse_capture
from sse_inspect.cli import cli
from sse_inspect.interop import export, read_source

from .helpers import ROOT
from .recording_fixtures import StartProxy
from .sse_server import Script, SSEServer, Write

CURL = shutil.which("curl")


def needs_curl(test: Callable[..., None]) -> Callable[..., None]:
    """A test that runs curl: skipped without it, and a real process (e2e)."""
    return pytest.mark.e2e(pytest.mark.skipif(CURL is None, reason="curl is not installed")(test))


PATH = "/v1/chat/completions"
PROMPT = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]})
WRITES = [
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"lo \xe2\x82',  # a euro sign split across two writes
    b'\xac"}}]}\r\n\r\n',
    b"data: [DONE]\n\n",
]
GAP = 0.2
"""Long enough that curl, late on a busy machine, still reads each write on its own."""
OPENAI_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


def timed_writes() -> list[Write]:
    """`WRITES`, `GAP` seconds apart."""
    return [Write(w, delay=GAP if i else 0.0) for i, w in enumerate(WRITES)]


def run(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def curl_trace(server: SSEServer, path: str, out: Path, *, mode: str = "--trace", timed: bool = True) -> Path:
    """`curl -N <mode> out [--trace-time]` POSTing the prompt to `path`; curl's exit status is not checked
    (a cut stream exits 18 or 56)."""
    args = [CURL or "curl", "-sS", "-N", "--max-time", "10", mode, str(out), "-H", "Content-Type: application/json",
            "-H", f"Authorization: Bearer {OPENAI_KEY}", "-d", PROMPT, server.url(path)]  # fmt: skip
    if timed:
        args.insert(1, "--trace-time")
    subprocess.run(args, capture_output=True, timeout=20, check=False)
    return out


# -- curl --trace -----------------------------------------------------------------------------------


@needs_curl
@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_curl_trace_gives_exact_bytes_cuts_and_times(tmp_path: Path, server: SSEServer, framing: str) -> None:
    """--trace prints every byte in hex: the capture holds each write as one chunk, byte for byte (the
    chunked framing curl shows in "Recv data" taken out), timed from the request on the server's schedule."""
    server.routes[PATH] = Script(timed_writes(), framing=framing)  # type: ignore[arg-type]
    trace = curl_trace(server, PATH, tmp_path / "trace.txt")
    if framing == "chunked":  # what curl 7.88 shows: the HTTP chunk framing, as read from the socket
        assert re.search(r"^0000: 33 62 0d 0a 64 61 74 61 ", trace.read_text(), re.MULTILINE)

    capture = load_capture(trace)

    assert [c.data for c in capture.chunks] == WRITES
    assert capture.timed and capture.end == End(kind="complete", t=capture.end.t if capture.end else None)
    assert capture.recorder is not None and "chunk times from curl's --trace-time" in capture.recorder
    assert "lossy" not in capture.extra
    times = [c.t for c in capture.chunks]
    assert all(t is not None for t in times)
    sent = server.request(PATH).sent
    for (a, b), (sa, sb) in zip(pairwise(times), pairwise(sent), strict=True):
        assert a is not None and b is not None
        assert abs((b - a) - (sb - sa)) < GAP / 2, (times, sent)  # a margin for a busy machine, and still a gap
    assert capture.response is not None and capture.response.t is not None
    assert 0 <= capture.response.t <= times[0]  # type: ignore[operator]
    assert capture.request is not None
    assert (capture.request.method, capture.request.url, capture.request.body) == ("POST", server.url(PATH), PROMPT)
    assert capture.request.header("authorization") == "Bearer sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    assert (capture.response.status, capture.response.reason) == (200, "OK")
    assert capture.response.header("content-type") == "text/event-stream"
    assert analyze(capture).answer.text == "Hello €"


@needs_curl
@pytest.mark.parametrize(("ending", "kind", "error"), [
    ("reset", "server-disconnected", "Recv failure: Connection reset by peer"),
    ("truncate", "server-disconnected", "transfer closed with outstanding read data remaining"),
])  # fmt: skip
def test_curl_trace_says_how_the_stream_ended(
    tmp_path: Path, server: SSEServer, ending: str, kind: str, error: str
) -> None:
    server.routes[PATH] = Script(timed_writes()[:2], ending=ending)  # type: ignore[arg-type]
    capture = load_capture(curl_trace(server, PATH, tmp_path / "trace.txt"))
    assert [c.data for c in capture.chunks] == WRITES[:2]
    assert capture.end is not None and (capture.end.kind, capture.end.error) == (kind, error)
    assert capture.end.t is not None and capture.end.t >= capture.chunks[-1].t  # type: ignore[operator]


@needs_curl
def test_curl_trace_ascii_is_marked_lossy_and_its_line_ends_guessed(tmp_path: Path, server: SSEServer) -> None:
    """--trace-ascii prints LF, lone CR, DEL and non-ASCII bytes as '.': LFs are guessed back (so the
    events come out), every other such byte stays '.', and the capture says so."""
    server.routes[PATH] = Script(timed_writes())
    trace = curl_trace(server, PATH, tmp_path / "trace.txt", mode="--trace-ascii")
    text = trace.read_text()
    assert '0004: data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}..' in text  # LF LF printed as ..
    assert '"content":"lo ..' in text  # the euro sign's bytes

    capture = load_capture(trace)

    expected = [w.replace(b"\xe2\x82", b"..").replace(b"\xac", b".") for w in WRITES]
    assert [c.data for c in capture.chunks] == expected
    assert "lossy" in capture.extra and capture.recorder is not None and "lossy" in capture.recorder
    assert capture.timed
    assert [e.data for e in analyze(capture).events] == [
        '{"choices":[{"index":0,"delta":{"content":"Hel"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"lo ..."}}]}',
        "[DONE]",
    ]


@needs_curl
def test_curl_trace_of_http2_over_tls(tmp_path: Path) -> None:
    """HTTP/2 has no chunk framing in "Recv data"; the URL is https, as curl said it spoke TLS."""
    pytest.importorskip("mitmproxy")
    from mitmproxy.certs import CertStore

    from .h2_server import H2Server

    CertStore.from_store(tmp_path / "tls", "upstream", 2048)  # writes upstream-ca.pem: a key and its cert
    trace = tmp_path / "trace.txt"
    with H2Server(WRITES, tmp_path / "tls" / "upstream-ca.pem") as upstream:
        args = [CURL or "curl", "-sS", "-N", "-k", "--http2", "--max-time", "10", "--trace", str(trace), "--trace-time"]
        subprocess.run([*args, upstream.url(PATH)], capture_output=True, timeout=20, check=False)
        url = upstream.url(PATH)

    capture = load_capture(trace)

    assert capture.body == b"".join(WRITES) and capture.timed
    assert capture.request is not None and capture.response is not None
    assert (capture.request.url, capture.request.http_version) == (url, "HTTP/2")
    assert (capture.response.status, capture.response.http_version) == (200, "HTTP/2")
    assert capture.end is not None and capture.end.kind == "complete"


def curl8_trace(framing: str) -> str:
    """What curl 8.14 writes with `--trace --trace-time` for `WRITES` coming GAP seconds apart, by
    curl's format (tool_cb_dbg.c): a header line per block, then 16 bytes a dump line as hex and as
    text. A body's last "Recv data" block is empty, and curl 8.10+ ends a close-delimited connection
    with "shutting down connection #0"."""
    out: list[str] = []
    clock = [4 * 3600 * 10**6 + 16 * 60 * 10**6 + 13_918_992]  # 04:16:13.918992, microseconds

    def stamp(us: int) -> str:
        clock[0] += us
        t = clock[0]
        return f"{t // 3_600_000_000:02d}:{t // 60_000_000 % 60:02d}:{t // 1_000_000 % 60:02d}.{t % 1_000_000:06d} "

    def block(kind: str, data: bytes, after: int = 50) -> None:
        out.append(f"{stamp(after)}{kind}, {len(data)} bytes (0x{len(data):x})\n")
        for i in range(0, len(data), 16):
            row = data[i : i + 16]
            text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in row)
            out.append(f"{i:04x}: " + "".join(f"{b:02x} " for b in row).ljust(48) + text + "\n")

    def info(text: str, after: int = 50) -> None:
        out.append(f"{stamp(after)}== Info: {text}\n")

    info("  Trying 127.0.0.1:8080...", 0)
    info("Connected to 127.0.0.1 (127.0.0.1) port 8080")
    info("using HTTP/1.x")
    head = f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
    block("=> Send header", f"{head}Content-Length: {len(PROMPT)}\r\n\r\n".encode())
    block("=> Send data", PROMPT.encode(), 10)
    info("upload completely sent off: 103 bytes", 10)
    framed = ["Transfer-Encoding: chunked"] if framing == "chunked" else ["Connection: close"]
    for line in ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", *framed, ""]:
        block("<= Recv header", line.encode() + b"\r\n", 900)
    for i, write in enumerate(WRITES):
        block("<= Recv data", b"%x\r\n%s\r\n" % (len(write), write) if framing == "chunked" else write,
              int(GAP * 1e6) if i else 200)  # fmt: skip
    if framing == "chunked":
        block("<= Recv data", b"0\r\n\r\n", 300)
    block("<= Recv data", b"", 20)
    info("Connection #0 to host 127.0.0.1 left intact" if framing == "chunked" else "shutting down connection #0")
    return "".join(out)


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_curl8_trace_empty_data_record_is_no_chunk(tmp_path: Path, framing: str) -> None:
    """curl 8 ends a body with an empty "Recv data" block: no chunk (while an export's empty block,
    one of a capture's empty chunks, stays one: see the round trips below). The curl 8.10+ wording of
    a close-delimited end is a complete end."""
    text = curl8_trace(framing)
    assert re.search(r"^\d\d:\d\d:\d\d\.\d{6} <= Recv data, 0 bytes \(0x0\)\n\S+ == Info: ", text, re.MULTILINE)
    path = tmp_path / "trace.txt"
    path.write_text(text)

    capture = load_capture(path)

    assert [c.data for c in capture.chunks] == WRITES
    times = [c.t for c in capture.chunks]  # from the end of "Send header": 10 + 10 + 4 * 900 + 200 us
    assert times == pytest.approx([0.00382 + i * GAP for i in range(len(WRITES))], abs=1e-6)
    assert capture.end is not None and capture.end.kind == "complete"
    assert capture.end.t is not None and capture.end.t > times[-1]  # type: ignore[operator]
    assert "lossy" not in capture.extra and capture.timed
    assert analyze(capture).answer.text == "Hello €"


@needs_curl
def test_curl_trace_without_trace_time_is_untimed(tmp_path: Path, server: SSEServer) -> None:
    server.routes[PATH] = Script.events(*WRITES)
    capture = load_capture(curl_trace(server, PATH, tmp_path / "trace.txt", timed=False))
    assert not capture.timed and all(c.t is None for c in capture.chunks)
    assert capture.body == b"".join(WRITES)
    assert capture.recorder is not None and "untimed" in capture.recorder
    code, out, err = run("show", str(tmp_path / "trace.txt"))
    assert code == 0, err
    assert "untimed" in out


@needs_curl
def test_every_command_reads_a_curl_trace_and_import_redacts_it(tmp_path: Path, server: SSEServer) -> None:
    server.routes[PATH] = Script(timed_writes())
    trace = str(curl_trace(server, PATH, tmp_path / "trace.txt"))
    code, out, _ = run("text", trace)
    assert (code, out) == (0, "Hello €\n")
    code, out, _ = run("check", "--select", "secret-in-capture", trace)
    assert code == 1 and "secret-in-capture" in out and "sk-proj-abc" not in out

    code, _, err = run("import", trace, "-o", str(tmp_path / "c.jsonl"))

    assert code == 0, err
    assert f"#0 POST {server.url(PATH)} -> 200 (4 chunk(s), timed, 1 header value(s) redacted)" in err
    imported = load_capture(tmp_path / "c.jsonl")
    assert imported.request is not None and imported.request.header("authorization") == "[REDACTED]"
    assert [c.data for c in imported.chunks] == WRITES
    assert (tmp_path / "c.jsonl").stat().st_mode & 0o777 == 0o600
    assert run("check", "--select", "secret-in-capture", str(tmp_path / "c.jsonl"))[0] == 0


@needs_curl
def test_curl_trace_export_writes_what_curl_writes(tmp_path: Path, server: SSEServer) -> None:
    """The exported trace's request head and chunk dumps are line for line the ones curl wrote."""
    server.routes[PATH] = Script(timed_writes())
    trace = curl_trace(server, PATH, tmp_path / "trace.txt")
    ours = export(load_capture(trace), "curl-trace").decode()

    def dumps(text: str, kind: str) -> list[list[str]]:
        blocks = re.findall(rf"^\S+ {re.escape(kind)}, .*\n((?:[0-9a-f]{{4}}: .*\n)*)", text, re.MULTILINE)
        return [b.splitlines() for b in blocks]

    assert dumps(ours, "=> Send header") == dumps(trace.read_text(), "=> Send header")
    assert dumps(ours, "=> Send data") == dumps(trace.read_text(), "=> Send data")
    assert dumps(ours, "<= Recv data")[:3] == dumps(trace.read_text(), "<= Recv data")[:3]


def test_curl_trace_with_several_requests_uses_the_first_stream(tmp_path: Path) -> None:
    capture = stream_capture()
    one = export(capture, "curl-trace").decode()
    other = one.replace("/v1/chat/completions", "/v1/other")
    path = tmp_path / "two.txt"
    path.write_text(one + other)
    loaded = load_capture(path)
    assert loaded.request is not None and "/v1/chat/completions?" in loaded.request.url
    assert any("holds 2 event streams" in w and "#0 POST" in w for w in loaded.warnings)


# -- mitmproxy: flow files and HAR export ------------------------------------------------------------


def through_mitmdump(start_proxy: StartProxy, server: SSEServer, extra_args: list[str]) -> bytes:
    """POST the prompt through a plain mitmdump (no addon) with `extra_args`, then stop it (SIGINT),
    so that its -w file and HAR are complete."""
    server.routes[PATH] = Script([Write(w, delay=0.01) for w in WRITES])
    proxy = start_proxy(addon=False, extra_args=extra_args)
    with proxy.client() as client:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {OPENAI_KEY}"}
        response = client.post(server.url(PATH), content=PROMPT, headers=headers)
        body = response.content
    assert proxy.stop() == 0, proxy.log()
    return body


def test_mitmdump_flow_file(tmp_path: Path, start_proxy: StartProxy, server: SSEServer) -> None:  # noqa: F811
    pytest.importorskip("mitmproxy")
    flows = tmp_path / "flows.mitm"
    assert through_mitmdump(start_proxy, server, ["-w", str(flows)]) == b"".join(WRITES)

    capture = load_capture(flows)

    assert capture.body == b"".join(WRITES)
    assert not capture.timed and all(c.t is None for c in capture.chunks)
    assert capture.recorder is not None and "untimed" in capture.recorder
    assert capture.request is not None and capture.response is not None
    assert (capture.request.method, capture.request.url, capture.request.body) == ("POST", server.url(PATH), PROMPT)
    assert capture.response.header("content-type") == "text/event-stream"
    assert capture.end is not None and capture.end.kind == "complete"
    assert capture.response.t is not None and capture.end.t is not None and capture.end.t >= capture.response.t
    code, out, err = run("check", str(flows))
    assert code == 1 and "secret-in-capture" in out, err
    assert "skipped buffering-burst" in out and "untimed" in out
    code, _, err = run("import", str(flows), "-o", str(tmp_path / "c.jsonl"))
    assert code == 0, err
    imported = load_capture(tmp_path / "c.jsonl").request
    assert imported is not None and imported.header("authorization") == "[REDACTED]"


def test_mitmproxy_har_export(tmp_path: Path, start_proxy: StartProxy, server: SSEServer) -> None:  # noqa: F811
    har = tmp_path / "dump.har"
    through_mitmdump(start_proxy, server, ["--set", f"hardump={har}"])

    capture = load_capture(har)

    assert capture.body == b"".join(WRITES)
    assert not capture.timed and capture.recorder is not None and "HAR import (mitmproxy" in capture.recorder
    assert capture.request is not None and capture.request.body == PROMPT
    assert capture.response is not None and capture.response.header("content-type") == "text/event-stream"
    assert set(capture.extra["har"]) == {"startedDateTime", "time", "timings"}
    assert {"send", "wait", "receive"} <= set(capture.extra["har"]["timings"])
    assert analyze(capture).answer.text == "Hello €"


def test_flow_file_without_mitmproxy_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mitmproxy")
    from mitmproxy import io as mio
    from mitmproxy.test import tflow

    path = tmp_path / "flows.mitm"
    with path.open("wb") as f:
        mio.FlowWriter(f).add(tflow.tflow(resp=True))
    monkeypatch.setitem(sys.modules, "mitmproxy.io", None)  # import fails as if mitmproxy were not installed
    code, _, err = run("show", str(path))
    assert "pip install 'sse-inspect[record]'" in one_line_error(code, err)


# -- HAR ---------------------------------------------------------------------------------------------


def har_entry(url: str, ctype: str, text: str, **response: object) -> dict[str, object]:
    return {
        "startedDateTime": "2026-01-02T03:04:05.678Z",
        "time": 120.5,
        "request": {"method": "POST", "url": url, "httpVersion": "HTTP/1.1", "headers": [], "postData": {"text": "{}"}},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Content-Type", "value": ctype}],
                     "content": {"mimeType": ctype, "text": text}, **response},
        "timings": {"blocked": -1, "send": 0.5, "wait": 100, "receive": 20},
    }  # fmt: skip


def har(*entries: dict[str, object]) -> bytes:
    return json.dumps({"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "128.0"},
                               "entries": list(entries)}}).encode()  # fmt: skip


SSE = "text/event-stream"
A = "data: a\n\n"
B = "data: b\n\n"


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """A HAR with two event streams (#1, #2) around a page (#0)."""
    path = tmp_path / "browser.har"
    path.write_bytes(har(har_entry("https://app.example/", "text/html", "<html>"),
                         har_entry("https://api.example/v1/a", SSE, A),
                         har_entry("https://api.example/v1/b", SSE, B)))  # fmt: skip
    return path


def test_har_with_several_streams(tmp_path: Path, three: Path) -> None:
    loaded = load_capture(three)
    assert loaded.body == A.encode() and any("holds 2 event streams" in w for w in loaded.warnings)
    assert loaded.response is not None and loaded.response.t == pytest.approx(0.1005)
    assert (
        loaded.recorded_at == "2026-01-02T03:04:05.678Z"
        and loaded.recorder is not None
        and "Firefox 128.0" in loaded.recorder
    )

    code, _, err = run("import", str(three), "-o", str(tmp_path / "x.jsonl"))
    err = one_line_error(code, err)
    assert "2 event streams: #1 POST https://api.example/v1/a -> 200; #2 POST https://api.example/v1/b -> 200" in err
    assert "--entry N" in err and "-o DIR/" in err

    for args, body in (
        (["--entry", "2"], B),
        (["--url", "/v1/b"], B),
        (["--url", "*/a"], A),
        (["--entry", "0"], "<html>"),
    ):
        code, out, err = run("import", str(three), *args, "-o", "-")
        assert code == 0, err
        assert parse_capture(out.encode()).body == body.encode()

    code, _, err = run("import", str(three), "-o", str(tmp_path / "out") + "/")
    assert code == 0, err
    written = sorted((tmp_path / "out").glob("*.jsonl"))
    assert [load_capture(p).body for p in written] == [A.encode(), B.encode()]
    assert all(re.fullmatch(r"20260102T030405\.678000Z-api\.example-v1_[ab](-2)?\.jsonl", p.name) for p in written), (
        written
    )

    code, out, _ = run("import", str(three), "--list")
    assert (code, out.splitlines()) == (0, [
        "#0 POST https://app.example/ -> 200",
        "#1 POST https://api.example/v1/a -> 200  (event stream)",
        "#2 POST https://api.example/v1/b -> 200  (event stream)",
    ])  # fmt: skip


def test_labels_never_show_secrets(tmp_path: Path) -> None:
    path = tmp_path / "keys.har"
    path.write_bytes(har(har_entry("https://g.example/v1?key=k123&alt=sse", SSE, A),
                         har_entry(f"https://o.example/v1/{OPENAI_KEY}", SSE, B)))  # fmt: skip
    code, _, err = run("import", str(path), "-o", str(tmp_path / "x.jsonl"))
    assert "#0 POST https://g.example/v1?key=[REDACTED]&alt=sse -> 200" in one_line_error(code, err)
    assert "#1 POST https://o.example/v1/[REDACTED] -> 200" in err
    assert "k123" not in err and OPENAI_KEY not in err


def test_har_body_is_stored_decoded_so_its_content_encoding_is_left_out(tmp_path: Path) -> None:
    entry = har_entry("https://api.example/v1", SSE, A)
    entry["response"]["headers"].append({"name": "Content-Encoding", "value": "gzip"})  # type: ignore[index]
    path = tmp_path / "gz.har"
    path.write_bytes(har(entry))
    capture = load_capture(path)
    assert capture.content_encoding is None and capture.extra["decoded"] == "gzip"
    assert [e.data for e in analyze(capture).events] == ["a"]


def test_har_base64_body_and_error(tmp_path: Path) -> None:
    body = "data: caf\u00e9\n\n".encode()
    entry = har_entry("https://api.example/v1", SSE, "", _error="Connection killed.")
    content = {"mimeType": SSE, "text": base64.b64encode(body).decode(), "encoding": "base64"}
    entry["response"]["content"] = content  # type: ignore[index]
    path = tmp_path / "b64.har"
    path.write_bytes(har(entry))
    capture = load_capture(path)
    assert capture.body == body
    assert capture.end == End(kind="error", t=0.1205, error="Connection killed.")


def test_every_view_says_which_of_a_hars_streams_it_read(three: Path) -> None:
    """`show` was the only view to say "this HAR holds 2 event streams; this is the first": `text`
    says it on stderr (stdout stays the answer alone), `check` in its report and in its --json."""
    said = "holds 2 event streams; this is the first, #1 POST https://api.example/v1/a"

    code, out, err = run("text", str(three))
    assert (code, out) == (0, "a\n")
    [line] = err.splitlines()
    assert said in line and "--entry N" in line

    code, out, err = run("check", str(three))
    assert code == 0, err
    assert f"! {three}: this HAR file {said}" in out.splitlines()[0]

    code, out, _ = run("check", "--json", str(three))
    [warning] = json.loads(out)["captures"][0]["warnings"]
    assert said in warning

    code, out, _ = run("check", "--json", str(three.parent / "missing.har"), str(three))
    assert [r.get("warnings") for r in json.loads(out)["captures"]] == [None, [warning]]


def no_body(entry: dict[str, object], **content: object) -> dict[str, object]:
    """`entry` as a HAR saved without response bodies: `content` without `text`."""
    response: dict[str, dict[str, object]] = entry["response"]  # type: ignore[assignment]
    response["content"] = {"mimeType": response["content"]["mimeType"], **content}
    return entry


def test_har_without_the_stream_body_says_so(tmp_path: Path) -> None:
    """A HAR saved without content (or a stream DevTools kept no body for) read as a complete, empty
    stream: every command now says that this entry has no body in the HAR, in one line (exit 2),
    naming the entry and how to save one with bodies. The other entries still import."""
    path = tmp_path / "nobody.har"
    path.write_bytes(har(no_body(har_entry("https://api.example/v1/a", SSE, A), size=0),
                         har_entry("https://api.example/v1/b", SSE, B),
                         no_body(har_entry("https://app.example/204", "text/plain", ""), size=0)))  # fmt: skip

    for command in ("show", "text", "check", "events", "replay"):
        code, out, err = run(command, str(path))
        line = one_line_error(code, err)
        assert "HAR entry #0 POST https://api.example/v1/a -> 200 has no body" in line, command
        assert "Save all as HAR with content" in line, command
        assert command == "check" or out == "", command  # check's summary table lists it as unreadable
    code, out, err = run("import", str(path), "--url", "/v1/a", "-o", "-")
    assert "#0 POST https://api.example/v1/a -> 200 has no body" in one_line_error(code, err)

    code, out, _ = run("import", str(path), "--list")
    assert code == 0
    assert out.splitlines()[0] == "#0 POST https://api.example/v1/a -> 200  (event stream)  (no body in the HAR)"
    for entry, body in (("1", B.encode()), ("2", b"")):  # an empty body that is not a stream is just empty
        code, out, err = run("import", str(path), "--entry", entry, "-o", "-")
        assert code == 0, err
        assert parse_capture(out.encode()).body == body


def test_har_body_left_out_of_a_non_empty_response_is_missing(tmp_path: Path) -> None:
    """Not only streams: a response whose `content.size` says it had bytes, with no text, has no body in the HAR."""
    path = tmp_path / "sized.har"
    path.write_bytes(har(no_body(har_entry("https://app.example/", "text/html", ""), size=512)))
    code, _, err = run("import", str(path), "--entry", "0", "-o", "-")
    assert "HAR entry #0 POST https://app.example/ -> 200 has no body" in one_line_error(code, err)


# -- export and round trips --------------------------------------------------------------------------


def stream_capture(**changes: object) -> Capture:
    """A timed capture with a split UTF-8 character (a b64 chunk), CRLFs and an odd header value."""
    capture = Capture(
        chunks=tuple(Chunk(0.1 + i * 0.012345, w) for i, w in enumerate(WRITES)),
        request=Request(
            method="POST",
            url="https://api.example/v1/chat/completions?alt=sse&x=%20y",
            headers=(("Host", "api.example"), ("Content-Type", "application/json"), ("X-Note", "naïve ✓")),
            body=PROMPT,
        ),
        response=Response(
            status=200, reason="OK", headers=(("Content-Type", SSE), ("Transfer-Encoding", "chunked")), t=0.098765
        ),
        end=End(kind="server-disconnected", t=0.2, error="peer closed connection"),
        recorded_at="2026-11-30T23:59:59.950000Z",  # the trace's clock passes midnight
        recorder="test",
        extra={"future_key": [1, 2]},
    )
    return dataclasses.replace(capture, **changes)  # type: ignore[arg-type]


def gzip_capture() -> Capture:
    body = gzip.compress(b"".join(WRITES))
    return stream_capture(
        chunks=(Chunk(0.2, body[:10]), Chunk(0.3, body[10:])),
        response=Response(status=200, http_version="HTTP/2.0", t=0.1,
                          headers=(("content-type", SSE), ("content-encoding", "gzip"))),
        end=End(kind="complete", t=0.31),
    )  # fmt: skip


ROUND_TRIP = {
    "timed-cut-past-midnight": stream_capture,
    "no-end-line": lambda: stream_capture(end=None),
    "client-left-no-error": lambda: stream_capture(end=End(kind="client-disconnected", t=0.3)),
    "no-request-body-no-reason": lambda: stream_capture(
        request=Request(url="http://h/x"),
        response=Response(status=503, headers=(("Content-Type", "text/plain"),), t=0.5),
    ),
    "untimed": lambda: stream_capture(chunks=(Chunk(None, b"".join(WRITES)),), timed=False, end=End(kind="complete")),
    "gzip-http2": gzip_capture,
    "empty-chunk": lambda: stream_capture(chunks=(Chunk(0.1, b"data: a"), Chunk(0.2, b""), Chunk(0.3, b"\n\n"))),
    **{p.name: lambda p=p: load_capture(p) for p in sorted((ROOT / "captures").glob("*.jsonl"))},
    "v1-sample": lambda: load_capture(ROOT / "tests" / "data" / "v1-sample.jsonl"),
}  # fmt: skip


@pytest.mark.parametrize("to", ["har", "curl-trace"])
@pytest.mark.parametrize("name", list(ROUND_TRIP))
def test_export_then_import_is_exact(name: str, to: str) -> None:
    """Chunks, times to the microsecond, request, status, headers, end and unknown keys all come back."""
    capture = ROUND_TRIP[name]()
    back = parse_capture(export(capture, to), path="x")
    assert dump_capture(back) == dump_capture(capture)
    assert not back.warnings


def test_export_raw_is_the_exact_body(tmp_path: Path) -> None:
    source = ROOT / "captures" / "nginx-gzip.jsonl"
    code, _, err = run("export", str(source), "--to", "raw", "-o", str(tmp_path / "body"))
    assert code == 0, err
    assert (tmp_path / "body").read_bytes() == load_capture(source).body


def test_exported_har_opens_in_mitmproxy(tmp_path: Path) -> None:
    """Another tool reads the exported HAR as a plain one: mitmproxy's own HAR import."""
    pytest.importorskip("mitmproxy")
    from mitmproxy.io import read_flows_from_paths

    capture = gzip_capture()
    (tmp_path / "x.har").write_bytes(export(capture, "har"))
    [flow] = read_flows_from_paths([tmp_path / "x.har"])
    assert flow.response is not None and flow.response.status_code == 200
    assert flow.response.get_content() == b"".join(WRITES) or flow.response.text == b"".join(WRITES).decode()
    assert flow.request.url == capture.request.url  # type: ignore[union-attr]


def test_export_cli_writes_files_and_reads_any_source(tmp_path: Path, three: Path) -> None:
    code, _, err = run("export", str(three), "--to", "curl-trace", "-o", str(tmp_path / "t.txt"))
    assert code == 0 and "holds 2 event streams" in err, err
    back = load_capture(tmp_path / "t.txt")
    assert back.body == A.encode() and not back.timed


# -- bad input: one line, exit 2 ---------------------------------------------------------------------


BAD = {
    "har-entries-not-a-list": (b'{"log": {"entries": {}}}', "HAR log.entries is not a list"),
    "har-no-response": (b'{"log": {"entries": [{"request": {}}]}}', "HAR entry #0: no response object"),
    "har-bad-headers": (har({**har_entry("https://x/", SSE, A), "request": {"headers": [1]}}),
                        "HAR entry #0: headers must be"),
    "har-bad-base64": (har(har_entry("https://x/", SSE, "", content={"text": "***", "encoding": "base64"})),
                       "response.content.text is not valid base64"),
    "har-only-pages": (har(har_entry("https://x/a", "text/html", ""), har_entry("https://x/b", "text/css", "")),
                       "no text/event-stream response among its 2 exchanges"),
    "curl-dump-does-not-add-up": (b"=> Send header, 9 bytes (0x9)\n0000: GET\n", "does not add up to 9 bytes"),
    "curl-unknown-line": (b"== Info: hi\nsomething else\n", "not a curl --trace line"),
    "curl-no-response": (b"== Info: Could not resolve host: x\n", "a curl trace without any response"),
    "curl-bad-meta": (b"== Info: [sse-inspect] [1]\n", "does not hold a JSON object"),
    "flow-garbage": (b"5:hello}", "not a readable mitmproxy flow file"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line(tmp_path: Path, name: str) -> None:
    if name.startswith("flow"):
        pytest.importorskip("mitmproxy")
    data, message = BAD[name]
    path = tmp_path / "bad"
    path.write_bytes(data)
    for command in (["import", str(path), "-o", str(tmp_path / "out.jsonl")], ["show", str(path)]):
        code, _, err = run(*command)
        assert message in one_line_error(code, err)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["import", "{dir}"], "missing option -o"),
    (["import", "{dir}", "-o", "x.jsonl"], "is a directory"),
    (["import", "{dir}/nope", "-o", "x.jsonl"], "no such file"),
    (["import", "{three}", "--entry", "7", "-o", "x.jsonl"], "no exchange #7 to import; there are: #0 POST"),
    (["import", "{three}", "--url", "nowhere", "-o", "x.jsonl"], "no exchange's URL matches 'nowhere'"),
    (["export", "{raw}", "--to", "har", "-o", "x"], "a raw body has no request or response to write as a HAR entry"),
    (["export", "{raw}", "--to", "curl-trace", "-o", "x"], "a raw body has no request or response"),
])  # fmt: skip
def test_bad_usage_is_one_line(tmp_path: Path, three: Path, args: list[str], message: str) -> None:
    (tmp_path / "raw.sse").write_bytes(A.encode())
    names = {"dir": str(tmp_path), "three": str(three), "raw": str(tmp_path / "raw.sse")}
    code, _, err = run(*(a.format(**names) for a in args))
    assert message in one_line_error(code, err)


def test_read_source_leaves_other_files_alone() -> None:
    assert read_source(A.encode()) is None
    assert read_source((ROOT / "tests" / "data" / "v1-sample.jsonl").read_bytes()) is None
    assert load_capture(ROOT / "tests" / "data" / "corpus" / "openai-chat-text-usage.sse").raw
