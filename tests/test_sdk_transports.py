"""The in-process transport under the real SDKs, streamed calls through their own HTTP clients.

The same tests run against whichever generation is installed: the [test] extra brings the last
httpx-based SDKs (openai<3, anthropic<1), the [sdk] extra the current ones on httpx2 (openai>=3,
anthropic>=2), which cannot share an environment with mitmproxy 11 (README, Development). The
client is always the SDK's own `DefaultHttpxClient`, so the transport meets the package the SDK
really uses. Each call runs at every cut of RECHUNK_MATRIX and must rebuild what `analyze` does.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

from sse_inspect import Capture, Chunk, End, analyze, load_capture
from sse_inspect.pytest_plugin import RECHUNK_MATRIX

from .helpers import ROOT, openai_chat_text

transport_module = pytest.importorskip("sse_inspect.httpx_transport", exc_type=ImportError)
CaptureTransport = transport_module.CaptureTransport

CAPTURES = ROOT / "captures"
CHAT = load_capture(CAPTURES / "openai-chat-text.jsonl")
RESPONSES = load_capture(CAPTURES / "openai-responses-functioncall.jsonl")
MESSAGES = load_capture(CAPTURES / "anthropic-text-then-tooluse.jsonl")


def cut(capture: Capture) -> Capture:
    """The capture's body cut in the middle, as a server that went away leaves it."""
    body = capture.body
    return Capture(chunks=(Chunk(0.1, body[: len(body) // 2]),), request=capture.request, response=capture.response,
                   end=End(kind="server-disconnected", t=0.2))  # fmt: skip


def raised_from_the_cut(info: pytest.ExceptionInfo[BaseException]) -> bool:
    """The SDK's error is the cut itself or wraps it (openai 3.x: APIConnectionError from RemoteProtocolError)."""
    error: BaseException | None = info.value
    while error is not None:
        if "the recorded stream ended abruptly (server-disconnected)" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def tool_calls(capture: Capture) -> list[tuple[str, Any]]:
    return [(t.name, json.loads(t.arguments)) for c in analyze(capture).answer.choices for t in c.tool_calls]


# -- openai --------------------------------------------------------------------------------

openai = pytest.importorskip("openai")


def openai_client(capture: Capture, rechunk: str | None = None) -> Any:
    http = openai.DefaultHttpxClient(transport=CaptureTransport(capture, rechunk=rechunk))
    return openai.OpenAI(api_key="sk-test", base_url="http://api.test/v1", http_client=http, max_retries=0)


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_openai_chat_completions_stream(spec: str) -> None:
    ours = analyze(CHAT).answer
    assert openai_chat_text(openai_client(CHAT, spec)) == (ours.text, ours.finish_reason) == (
        "The capital of the UK is London.", "stop")  # fmt: skip


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_openai_responses_stream(spec: str) -> None:
    client = openai_client(RESPONSES, spec)
    stream = client.responses.create(model="gpt-4.1", input="weather in Beijing?", stream=True)
    types, calls = [], []
    for event in stream:
        types.append(event.type)
        if event.type == "response.output_item.done" and event.item.type == "function_call":
            calls.append((event.item.name, json.loads(event.item.arguments)))
    assert calls == tool_calls(RESPONSES) == [("get_weather", {"city": "Beijing"})]
    assert types[-1] == "response.completed"


def test_openai_async_chat_stream() -> None:
    async def text() -> str:
        http = openai.DefaultAsyncHttpxClient(transport=CaptureTransport(CHAT, rechunk="bytes:3"))
        client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://api.test/v1", http_client=http, max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}],
                                                      stream=True)  # fmt: skip
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(text()) == "The capital of the UK is London."


def test_openai_meets_the_recorded_cut() -> None:
    client = openai_client(cut(CHAT))
    error = transport_module.PACKAGES[openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0]]
    with pytest.raises((error.RemoteProtocolError, openai.APIConnectionError)) as info:
        openai_chat_text(client)
    assert raised_from_the_cut(info)


def test_the_transport_records_the_sdk_request() -> None:
    transport = CaptureTransport(CHAT)
    client = openai.OpenAI(api_key="sk-test", base_url="http://api.test/v1", max_retries=0,
                           http_client=openai.DefaultHttpxClient(transport=transport))  # fmt: skip
    openai_chat_text(client)
    (request,) = transport.requests
    assert request.url.path == "/v1/chat/completions"
    assert json.loads(request.content)["stream"] is True
    assert request.headers["authorization"] == "Bearer sk-test"


# -- anthropic -----------------------------------------------------------------------------

anthropic = pytest.importorskip("anthropic")
ASK: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 256,
                       "messages": [{"role": "user", "content": "Paris?"}]}  # fmt: skip


def anthropic_client(capture: Capture, rechunk: str | None = None) -> Any:
    http = anthropic.DefaultHttpxClient(transport=CaptureTransport(capture, rechunk=rechunk))
    return anthropic.Anthropic(api_key="sk-ant-test", base_url="http://api.test", http_client=http, max_retries=0)


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_anthropic_messages_stream_helper(spec: str) -> None:
    with anthropic_client(MESSAGES, spec).messages.stream(**ASK) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    ours = analyze(MESSAGES).answer
    assert text == ours.text == "I'll check the current weather in Paris for you."
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == tool_calls(MESSAGES)
    assert final.stop_reason == ours.finish_reason == "tool_use"


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_anthropic_create_stream_true(spec: str) -> None:
    text, partial_json = "", ""
    for event in anthropic_client(MESSAGES, spec).messages.create(**ASK, stream=True):
        if event.type == "content_block_delta":
            if event.delta.type == "text_delta":
                text += event.delta.text
            elif event.delta.type == "input_json_delta":
                partial_json += event.delta.partial_json
    assert text == analyze(MESSAGES).answer.text
    assert [json.loads(partial_json)] == [args for _, args in tool_calls(MESSAGES)]


def test_anthropic_async_stream() -> None:
    async def text() -> str:
        http = anthropic.DefaultAsyncHttpxClient(transport=CaptureTransport(MESSAGES, rechunk="utf8"))
        client = anthropic.AsyncAnthropic(api_key="k", base_url="http://api.test", http_client=http, max_retries=0)
        async with client.messages.stream(**ASK) as stream:
            return "".join([t async for t in stream.text_stream])

    assert asyncio.run(text()) == "I'll check the current weather in Paris for you."


def test_anthropic_meets_the_recorded_cut() -> None:
    package = transport_module.PACKAGES[anthropic.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0]]
    with pytest.raises((package.RemoteProtocolError, anthropic.APIConnectionError)) as info:
        with anthropic_client(cut(MESSAGES)).messages.stream(**ASK) as stream:
            "".join(stream.text_stream)
    assert raised_from_the_cut(info)


# -- either package, and neither -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(transport_module.PACKAGES))
def test_one_transport_serves_each_installed_package(name: str) -> None:
    package = transport_module.PACKAGES[name]
    transport = CaptureTransport(CHAT, rechunk="bytes:7")
    with package.Client(transport=transport) as client, client.stream("POST", "http://api.test/x") as response:
        assert isinstance(response, package.Response)
        assert b"".join(response.iter_raw()) == CHAT.body
    with package.Client(transport=CaptureTransport(cut(CHAT))) as client, client.stream("GET", "http://t/") as r:
        with pytest.raises(package.RemoteProtocolError):
            r.read()


def test_without_httpx_the_import_says_what_to_install() -> None:
    code = ("import sys; sys.modules['httpx'] = sys.modules['httpx2'] = None\n"
            "import sse_inspect.httpx_transport")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: sse_inspect.httpx_transport needs httpx or httpx2: pip install httpx")
