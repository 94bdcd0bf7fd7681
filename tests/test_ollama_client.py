"""The real client: the `ollama` Python library reads our replays of the Ollama fixtures at every cut.

Each fixture of tests/data/formats/ollama-*.jsonl is served in process (`CaptureTransport`, which
`ollama.Client` takes as an httpx keyword) re-cut every standard way (`RECHUNK_MATRIX`: whole, per
line, 1 and 7 bytes, inside every multi-byte character, random; and per item), and once over a socket by
the replay server. The library reads the NDJSON lines itself (`iter_lines`, `json.loads`, `ResponseError` on an
`error` member: ollama/_client.py); what it yields, joined, must be what the sidecar says and what the
`ollama` dialect rebuilds from the same bytes. The error fixture and the dialect's `fault_error` and
`error_body` make it raise `ResponseError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import Capture, End, Event, Response, capture_from_body, get_dialect, load_capture
from sse_inspect._ndjson import NDJSONParser
from sse_inspect._rechunk import RECHUNK_MATRIX

from tests.helpers import ROOT

ollama = pytest.importorskip("ollama")
CaptureTransport = pytest.importorskip("sse_inspect.httpx_transport", exc_type=ImportError).CaptureTransport

FORMATS = ROOT / "tests" / "data" / "formats"
FIXTURES = sorted(FORMATS.glob("ollama-*.jsonl"))
CUTS = (*RECHUNK_MATRIX, "item")
HOST = "http://ollama.test:11434"


def expect(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


class Shown:
    """What a program using the library shows: the pieces of each field joined, as the docs' examples do."""

    def __init__(self) -> None:
        self.text = self.reasoning = ""
        self.tool_calls: list[dict[str, str]] = []
        self.finish_reason: str | None = None
        self.done = False

    def take(self, part: Any) -> None:
        message = getattr(part, "message", None)
        if message is not None:  # ChatResponse
            self.text += message.content or ""
            self.reasoning += message.thinking or ""
            calls = message.tool_calls or []
        else:  # GenerateResponse
            self.text += part.response or ""
            self.reasoning += part.thinking or ""
            calls = getattr(part, "tool_calls", None) or []  # the server's; the library's model has none yet
        for call in calls:
            arguments = json.dumps(dict(call.function.arguments), separators=(",", ":"))
            self.tool_calls.append({"name": call.function.name, "arguments": arguments})
        if part.done:
            self.done = True
            self.finish_reason = part.done_reason


def ask(client: Any, capture: Capture, shown: Shown) -> None:
    """Make the capture's own request through the library (chat or generate, as its URL says), streaming."""
    assert capture.request is not None and capture.request.body is not None
    request = json.loads(capture.request.body)
    if capture.request.url.endswith("/api/chat"):
        parts = client.chat(model=request["model"], messages=request["messages"], tools=request.get("tools"),
                            think=request.get("think"), stream=True)  # fmt: skip
    else:
        parts = client.generate(model=request["model"], prompt=request["prompt"], stream=True)
    for part in parts:
        shown.take(part)


def rebuilt(capture: Capture) -> Any:
    """What the `ollama` dialect rebuilds from the same bytes (the NDJSON framer's lines)."""
    parser = NDJSONParser()
    items = [x for c in capture.chunks for x in parser.feed(c.data, c.t)] + parser.close()
    return get_dialect("ollama").rebuild([x for x in items if isinstance(x, Event)])


def client_for(capture: Capture, rechunk: str | None = None, **kwargs: Any) -> Any:
    return ollama.Client(host=HOST, transport=CaptureTransport(capture, rechunk=rechunk, **kwargs))


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_the_library_reads_our_replay(path: Path, cut: str) -> None:
    capture, want = load_capture(path), expect(path)
    shown = Shown()
    if want["errors"]:
        with pytest.raises(ollama.ResponseError) as raised:
            ask(client_for(capture, cut), capture, shown)
        assert [raised.value.error] == want["errors"] and raised.value.status_code == -1  # in-band: a 200
    else:
        ask(client_for(capture, cut), capture, shown)
    answer = rebuilt(capture)
    assert shown.text == want["text"] == answer.text
    assert shown.reasoning == want["reasoning"] == answer.reasoning
    calls = [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls]
    assert shown.tool_calls == want["tool_calls"] == calls
    assert shown.finish_reason == want["finish_reason"] == answer.finish_reason
    assert shown.done is bool(want["complete"]) is bool(answer.complete)


def test_the_library_reads_the_replay_server() -> None:
    """Over a socket too: the replay server's chunked body, each line in its own chunk, as recorded."""
    from sse_inspect.server import ReplayServerThread

    path = FORMATS / "ollama-chat-thinking.jsonl"
    capture, want = load_capture(path), expect(path)
    with ReplayServerThread([capture], speed=None) as server:
        shown = Shown()
        ask(ollama.Client(host=server.url), capture, shown)
    assert (shown.text, shown.reasoning, shown.finish_reason) == (want["text"], want["reasoning"], "stop")


@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_library_raises_on_the_in_band_fault(n: int) -> None:
    """`fault_error` after `n` lines of a whole stream: the library yields the `n` lines, then raises."""
    capture = load_capture(FORMATS / "ollama-generate-text.jsonl")
    body = b"".join(capture.body.splitlines(keepends=True)[:n]) + get_dialect("ollama").fault_error(n)
    faulty = capture_from_body(body, request=capture.request, response=capture.response, end=End(kind="complete"))
    shown = Shown()
    with pytest.raises(ollama.ResponseError) as raised:
        ask(client_for(faulty, "bytes:7"), faulty, shown)
    assert raised.value.error == json.loads(get_dialect("ollama").fault_error(n))["error"]
    assert shown.text == rebuilt(faulty).text and not shown.done


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
def test_the_library_raises_on_the_error_body(status: int) -> None:
    """`error_body`: the library raises `ResponseError` with the status and the message of the `error` member."""
    content_type, body = get_dialect("ollama").error_body(status)
    response = Response(status=status, headers=(("Content-Type", content_type),))
    capture = capture_from_body(body, response=response, end=End(kind="complete"))
    with pytest.raises(ollama.ResponseError) as raised:
        for _ in client_for(capture).chat(model="llama3.2", messages=[{"role": "user", "content": "Hi"}], stream=True):
            pass
    assert raised.value.status_code == status
    assert raised.value.error == json.loads(body)["error"]


@pytest.mark.parametrize("n", [0, 3])
def test_the_library_raises_on_the_replays_error_fault(n: int) -> None:
    """The replay's own `error:after-event=N` fault: N lines as recorded, then Ollama's error line."""
    capture = load_capture(FORMATS / "ollama-chat-thinking.jsonl")
    shown = Shown()
    with pytest.raises(ollama.ResponseError) as raised:
        ask(client_for(capture, "bytes:7", faults=f"error:after-event={n}", dialect="ollama"), capture, shown)
    assert raised.value.error == json.loads(get_dialect("ollama").fault_error(n))["error"]
    first = capture.body.splitlines(keepends=True)[:n]
    assert shown.reasoning == "".join(json.loads(line)["message"]["thinking"] for line in first)


def test_the_library_raises_on_the_status_fault() -> None:
    """The replay's own `status:` fault, in Ollama's shape when the dialect is named."""
    capture = load_capture(FORMATS / "ollama-chat-text.jsonl")
    with pytest.raises(ollama.ResponseError) as raised:
        ask(client_for(capture, faults="status:503", dialect="ollama"), capture, Shown())
    assert raised.value.status_code == 503
    assert raised.value.error == json.loads(get_dialect("ollama").error_body(503)[1])["error"]
