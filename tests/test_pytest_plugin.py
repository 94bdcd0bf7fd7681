"""The pytest plugin: fixtures as a user sees them (through pytester), and real clients against replays."""

from __future__ import annotations

import json
import textwrap

import httpx
import pytest

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, dump_capture, load_capture
from sse_inspect.pytest_plugin import RECHUNK_MATRIX

from .helpers import CORPUS, ROOT, openai_chat_text

OPENAI_CAPTURE = ROOT / "captures" / "openai-chat-text.jsonl"


def accented_capture() -> Capture:
    """An OpenAI-style stream whose tokens hold multi-byte characters (é, €, 😀) and CRLF line ends."""
    events = [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in ["Café ", "costs ", "3 €", " 😀"]]
    body = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\r\n\r\n" for e in events)
    return Capture(
        chunks=(Chunk(0.1, body + b"data: [DONE]\r\n\r\n"),),
        request=Request(method="POST", url="http://api.test/v1/chat/completions"),
        response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.05),
        end=End(kind="complete", t=0.2),
    )


CLIENTS = '''
import json
import httpx
from sse_inspect import EventStreamParser, Event


def correct_client(url):
    """Parses the byte stream with a spec parser, whatever the cuts."""
    parser, text = EventStreamParser(), ""
    with httpx.stream("POST", url, json={"stream": True}, timeout=5) as r:
        for data in r.iter_raw():
            for item in parser.feed(data):
                if isinstance(item, Event) and item.data != "[DONE]":
                    delta = json.loads(item.data)["choices"][0]["delta"]
                    text += delta.get("content") or ""
    return text


def chunk_is_event_client(url):
    """BUGGY: takes every network read as one whole event."""
    text = ""
    with httpx.stream("POST", url, timeout=5) as r:
        for data in r.iter_raw():
            payload = data.decode().strip().removeprefix("data: ")
            if payload and payload != "[DONE]":
                text += json.loads(payload)["choices"][0]["delta"].get("content") or ""
    return text


def decode_each_chunk_client(url):
    """BUGGY: decodes each read as UTF-8 on its own (a split character breaks it)."""
    buffer, text = "", ""
    with httpx.stream("POST", url, timeout=5) as r:
        for data in r.iter_raw():
            buffer += data.decode("utf-8", "replace")
            while "\\r\\n\\r\\n" in buffer or "\\n\\n" in buffer:
                sep = "\\r\\n\\r\\n" if "\\r\\n\\r\\n" in buffer else "\\n\\n"
                block, buffer = buffer.split(sep, 1)
                payload = block.removeprefix("data: ")
                if payload != "[DONE]":
                    text += json.loads(payload)["choices"][0]["delta"].get("content") or ""
    return text
'''


def write_user_project(pytester: pytest.Pytester) -> None:
    (pytester.path / "capture.jsonl").write_text(dump_capture(accented_capture()))
    pytester.makepyfile(clients=CLIENTS)


def test_correct_client_passes_every_cut(pytester: pytest.Pytester) -> None:
    write_user_project(pytester)
    pytester.makepyfile(
        test_user=textwrap.dedent('''
            from sse_inspect import load_capture
            from clients import correct_client

            def test_client_survives_any_cut(sse_replay, sse_rechunk):
                url = sse_replay("capture.jsonl", rechunk=sse_rechunk)
                assert correct_client(url) == load_capture("capture.jsonl").text == "Café costs 3 € 😀"
        ''')
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(RECHUNK_MATRIX))


@pytest.mark.parametrize(
    ("client", "breaks_on"),
    [("chunk_is_event_client", {"original", "whole", "bytes:1", "bytes:7", "utf8", "random:1", "random:2", "random:3"}),
     ("decode_each_chunk_client", {"bytes:1", "bytes:7", "utf8"})],
)  # fmt: skip
def test_buggy_clients_fail_where_they_should(pytester: pytest.Pytester, client: str, breaks_on: set[str]) -> None:
    write_user_project(pytester)
    pytester.makepyfile(
        test_user=textwrap.dedent(f'''
            from clients import {client} as client

            def test_client(sse_replay, sse_rechunk):
                url = sse_replay("capture.jsonl", rechunk=sse_rechunk)
                assert client(url) == "Café costs 3 € 😀"
        ''')
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-rf")
    failed = {spec for spec in RECHUNK_MATRIX if f"FAILED test_user.py::test_client[{spec}]" in result.stdout.str()}
    assert breaks_on <= failed, result.stdout.str()
    assert not failed - breaks_on - {"random:1", "random:2", "random:3"}, "random cuts may or may not hit the bug"
    assert "event" not in failed, "per-event cuts are the one case every client handles"


def test_fixtures_listed_and_config_free(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider")
    for name in ("sse_replay", "sse_transport", "sse_rechunk"):
        result.stdout.fnmatch_lines([f"{name}*"])


def test_replay_url_points_at_the_captured_path(sse_replay) -> None:  # type: ignore[no-untyped-def]
    url = sse_replay(accented_capture())
    assert url.endswith("/v1/chat/completions") and url.startswith(url.base_url)
    assert httpx.post(url, timeout=5).content == accented_capture().body


openai = pytest.importorskip("openai")


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_openai_sdk_over_http_matches_our_text(sse_replay, spec: str) -> None:  # type: ignore[no-untyped-def]
    """The official SDK, as a real HTTP client of the replay server, rebuilds what we rebuild."""
    url = sse_replay(OPENAI_CAPTURE, rechunk=spec)
    client = openai.OpenAI(api_key="sk-test", base_url=url.base_url + "/v1", max_retries=0)
    ours = analyze(load_capture(OPENAI_CAPTURE)).answer
    assert openai_chat_text(client) == (ours.text, ours.finish_reason)


@pytest.mark.parametrize("spec", RECHUNK_MATRIX)
def test_openai_sdk_in_process_transport(sse_transport, spec: str) -> None:  # type: ignore[no-untyped-def]
    capture = accented_capture()
    http = httpx.Client(transport=sse_transport(capture, rechunk=spec))
    client = openai.OpenAI(api_key="sk-test", base_url="http://api.test/v1", http_client=http, max_retries=0)
    assert openai_chat_text(client) == ("Café costs 3 € 😀", None)


def test_openai_sdk_meets_the_recorded_cut(sse_transport) -> None:  # type: ignore[no-untyped-def]
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes()
    cut = Capture(chunks=(Chunk(0.1, body[: len(body) // 2]),), end=End(kind="server-disconnected", t=0.2))
    client = openai.OpenAI(api_key="sk-test", base_url="http://api.test/v1",
                           http_client=httpx.Client(transport=sse_transport(cut)), max_retries=0)  # fmt: skip
    with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
        openai_chat_text(client)


async def _async_text(transport: object) -> str:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://api.test/v1",
                                http_client=httpx.AsyncClient(transport=transport), max_retries=0)  # type: ignore[arg-type]
    stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], stream=True)
    return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


def test_async_transport(sse_transport) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    assert asyncio.run(_async_text(sse_transport(accented_capture(), rechunk="bytes:3"))) == "Café costs 3 € 😀"
