"""The requests adapter: in-process replay for apps that read streams with requests (issue 15, part 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from sse_inspect import (
    Capture,
    Chunk,
    End,
    EventStreamParser,
    Request,
    Response,
    analyze,
    load_capture,
    parse_rechunk_spec,
    rechunk,
)
from sse_inspect.pytest_plugin import RECHUNK_MATRIX

from .helpers import ROOT

requests = pytest.importorskip("requests")

from sse_inspect.requests_adapter import CaptureAdapter  # noqa: E402

CAPTURES = ROOT / "captures"
URL = "http://replay/v1/chat/completions"


def accented() -> Capture:
    """An OpenAI-style stream whose tokens hold multi-byte characters, with CRLF line ends."""
    events = [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in ["Café ", "costs ", "3 €", " 😀"]]
    body = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\r\n\r\n" for e in events)
    return Capture(chunks=(Chunk(0.1, body[:50]), Chunk(0.2, body[50:] + b"data: [DONE]\r\n\r\n")),
                   request=Request(method="POST", url=URL),
                   response=Response(status=200, headers=(("Content-Type", "text/event-stream; charset=utf-8"),)),
                   end=End(kind="complete", t=0.3))  # fmt: skip


CHAT = load_capture(CAPTURES / "openai-chat-text.jsonl")
CASES = {"openai-chat-text": CHAT, "accented-crlf": accented()}


def session(adapter: CaptureAdapter, prefix: str = "http://replay/") -> Any:
    s = requests.Session()
    s.mount(prefix, adapter)
    return s


def text_from_lines(lines: Any) -> str:
    """What a typical requests client does: data lines, JSON, the deltas."""
    text = ""
    for line in lines:
        line = line.decode() if isinstance(line, bytes) else line
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:])["choices"]:
                text += choice["delta"].get("content") or ""
    return text


def expected_chunks(capture: Capture, spec: str) -> list[bytes]:
    return [c.data for c in rechunk(capture.chunks, parse_rechunk_spec(spec)) if c.data]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_iter_content_none_yields_the_chunks_as_cut(sse_requests_adapter: Any, name: str, spec: str) -> None:
    capture = CASES[name]
    with session(sse_requests_adapter(capture, rechunk=spec)).post(URL, json={"stream": True}, stream=True) as r:
        got = list(r.iter_content(chunk_size=None))
    assert got == expected_chunks(capture, spec)
    assert b"".join(got) == capture.body


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_iter_content_n_never_joins_two_chunks(spec: str) -> None:
    """As urllib3 reads a chunked body: at most n bytes, each piece from one chunk."""
    capture = accented()
    with session(CaptureAdapter(capture, rechunk=spec)).get(URL, stream=True) as r:
        got = list(r.iter_content(chunk_size=7))
    want = [c[i : i + 7] for c in expected_chunks(capture, spec) for i in range(0, len(c), 7)]
    assert got == want


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_iter_lines_rebuilds_the_answer(sse_requests_adapter: Any, name: str, spec: str) -> None:
    capture = CASES[name]
    ours = analyze(capture).answer.text
    s = session(sse_requests_adapter(capture, rechunk=spec))
    with s.post(URL, stream=True) as r:
        assert text_from_lines(r.iter_lines()) == ours
    with s.post(URL, stream=True) as r:
        assert text_from_lines(r.iter_lines(chunk_size=None, decode_unicode=True)) == ours


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_a_spec_parser_over_iter_content_gets_every_event(spec: str) -> None:
    capture = accented()
    parser, events = EventStreamParser(), []
    with session(CaptureAdapter(capture, rechunk=spec)).post(URL, stream=True) as r:
        for piece in r.iter_content(chunk_size=None):
            events += [e.data for e in parser.feed(piece) if type(e).__name__ == "Event"]
    assert events == [e.data for e in analyze(capture).events]


def cut() -> Capture:
    body = CHAT.body
    return Capture(chunks=(Chunk(0.1, body[: len(body) // 2]),), request=CHAT.request, response=CHAT.response,
                   end=End(kind="server-disconnected", t=0.2))  # fmt: skip


@pytest.mark.parametrize("read", ["iter_lines", "iter_content", "content"])
def test_a_cut_capture_raises_chunked_encoding_error(read: str) -> None:
    s = session(CaptureAdapter(cut(), rechunk="line"))
    with pytest.raises(requests.exceptions.ChunkedEncodingError, match="ended abruptly"):
        if read == "content":
            s.post(URL)  # not streamed: requests reads the body in send()
        else:
            with s.post(URL, stream=True) as r:
                list(getattr(r, read)())


def test_lines_before_the_cut_still_arrive() -> None:
    seen: list[bytes] = []
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        with session(CaptureAdapter(cut(), rechunk="line")).post(URL, stream=True) as r:
            for line in r.iter_lines():
                seen.append(line)
    assert seen and all(CHAT.body.find(line) >= 0 for line in seen)


def test_gzip_encoded_capture_is_decoded_as_urllib3_does() -> None:
    capture = load_capture(CAPTURES / "nginx-gzip.jsonl")
    assert capture.content_encoding == "gzip"
    decoded = b"".join(c.data for c in analyze(capture).chunks)
    with session(CaptureAdapter(capture, rechunk="bytes:5")).get(URL, stream=True) as r:
        assert b"".join(r.iter_content(chunk_size=None)) == decoded
        assert r.headers["Content-Encoding"] == "gzip"
    assert session(CaptureAdapter(capture)).get(URL).content == decoded
    assert text_from_lines(session(CaptureAdapter(capture)).get(URL, stream=True).iter_lines()) == (
        analyze(capture).answer.text)  # fmt: skip


def test_status_headers_and_the_request_are_those_of_a_response() -> None:
    capture = Capture(chunks=(Chunk(0.1, b'{"error": {"message": "slow down"}}'),),
                      response=Response(status=429, headers=(("Content-Type", "application/json"),
                                                             ("Transfer-Encoding", "chunked"),
                                                             ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"))),
                      end=End(kind="complete"))  # fmt: skip
    adapter = CaptureAdapter(capture)
    r = session(adapter, "https://api.example/").post("https://api.example/v1/x", json={"q": 1})
    assert r.status_code == 429 and r.reason == "Too Many Requests"
    assert r.json() == {"error": {"message": "slow down"}}
    assert "Transfer-Encoding" not in r.headers and r.headers["set-cookie"] == "a=1, b=2"
    with pytest.raises(requests.exceptions.HTTPError):
        r.raise_for_status()
    (sent,) = adapter.requests
    assert sent.method == "POST" and sent.url == "https://api.example/v1/x" and json.loads(sent.body) == {"q": 1}
    assert r.request is sent and r.url == sent.url


def test_only_the_mounted_prefix_is_replayed() -> None:
    s = session(CaptureAdapter(CHAT), "http://replay/")
    with pytest.raises(requests.exceptions.ConnectionError):
        s.get("http://127.0.0.1:9/", timeout=2)  # port 9 (discard): refused on loopback, not replayed
    assert s.get("http://replay/anything").content == CHAT.body


def test_without_requests_the_import_says_what_to_install() -> None:
    code = "import sys; sys.modules['requests'] = None\nimport sse_inspect.requests_adapter"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: sse_inspect.requests_adapter needs requests: pip install requests")  # fmt: skip
