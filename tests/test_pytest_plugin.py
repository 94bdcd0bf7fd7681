"""The pytest plugin: fixtures as a user sees them (through pytester), and real clients against replays."""

from __future__ import annotations

import json
import textwrap

import httpx
import pytest

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, dump_capture, load_capture
from sse_inspect.pytest_plugin import FAULT_MATRIX, RECHUNK_MATRIX

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
    for name in ("sse_replay", "sse_transport", "sse_requests_adapter", "sse_rechunk", "sse_fault"):
        result.stdout.fnmatch_lines([f"{name}*"])


# -- faults -------------------------------------------------------------------------------------


def timed_capture() -> Capture:
    """An OpenAI-style stream, an event a chunk every 0.1 s (keep-alive comments go in its gaps)."""
    events = [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in ["Café ", "costs ", "3 €", " 😀"]]
    bodies = [b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]
    return Capture(
        chunks=tuple(Chunk(0.1 * (i + 1), b) for i, b in enumerate(bodies)),
        request=Request(method="POST", url="http://api.test/v1/chat/completions"),
        response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.05),
        end=End(kind="complete", t=0.1 * len(bodies) + 0.05),
    )


FAULT_CLIENTS = """
import json
import httpx
from sse_inspect import EventStreamParser, Event

WHOLE = "Café costs 3 € 😀"


class Incomplete(Exception):
    pass


def read(response):
    parser, text, done = EventStreamParser(), "", False
    for data in response.iter_raw():
        for item in parser.feed(data):
            if not isinstance(item, Event):
                continue
            if item.data == "[DONE]":
                done = True
                continue
            payload = json.loads(item.data)
            if item.event == "error" or "error" in payload:
                raise Incomplete(f"the provider's error: {payload}")
            for choice in payload.get("choices", []):
                text += choice["delta"].get("content") or ""
    return text, done


def loud_client(http, url):
    \"\"\"Says when it did not get the whole answer: an error status, a cut, an in-band error, no [DONE].\"\"\"
    with http.stream("POST", url, json={"stream": True}, timeout=5) as r:
        r.raise_for_status()
        text, done = read(r)
    if not done:
        raise Incomplete("the stream ended without [DONE]")
    return text


def swallowing_client(http, url):
    \"\"\"BUGGY: keeps what it got when the connection fails, reads any status, skips what is not a token.\"\"\"
    text = ""
    try:
        with http.stream("POST", url, json={"stream": True}, timeout=5) as r:
            parser = EventStreamParser()
            for data in r.iter_raw():
                for item in parser.feed(data):
                    if isinstance(item, Event) and item.data != "[DONE]":
                        for choice in json.loads(item.data).get("choices", []):
                            text += choice["delta"].get("content") or ""
    except httpx.HTTPError:
        pass
    return text
"""

FAULT_TESTS = """
import httpx
import requests
from clients import WHOLE, {client} as client


def check(http, url):
    try:
        text = client(http, url)
    except Exception:
        return  # it failed loudly: fine
    assert text == WHOLE  # else it must have the whole answer


def test_over_http(sse_replay, sse_fault):
    check(httpx, sse_replay("capture.jsonl", faults=sse_fault))


def test_in_process(sse_transport, sse_fault):
    with httpx.Client(transport=sse_transport("capture.jsonl", faults=[sse_fault])) as http:
        check(http, "http://api.test/v1/chat/completions")
"""


def write_fault_project(pytester: pytest.Pytester, client: str) -> None:
    (pytester.path / "capture.jsonl").write_text(dump_capture(timed_capture()))
    pytester.makepyfile(clients=FAULT_CLIENTS, test_user=FAULT_TESTS.replace("{client}", client))


def test_a_loud_client_passes_every_fault(pytester: pytest.Pytester) -> None:
    """`sse_fault` runs a test once per fault of FAULT_MATRIX, over HTTP and in process alike."""
    write_fault_project(pytester, "loud_client")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(FAULT_MATRIX))


def test_a_client_that_swallows_faults_fails_where_it_should(pytester: pytest.Pytester) -> None:
    write_fault_project(pytester, "swallowing_client")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-rf")
    out = result.stdout.str()
    for test in ("test_over_http", "test_in_process"):
        failed = {spec for spec in FAULT_MATRIX if f"FAILED test_user.py::{test}[{spec}]" in out}
        assert failed == {"cut:event=50%", "cut:event=50%,reset", "cut:byte=50%", "error:after-event=50%",
                          "status:429,retry-after=1", "status:500"}, out  # fmt: skip


def test_the_fixtures_take_faults(pytester: pytest.Pytester) -> None:
    """A spec, a list or a FaultSet, to each factory; the requests adapter too."""
    (pytester.path / "capture.jsonl").write_text(dump_capture(timed_capture()))
    pytester.makepyfile(
        test_user=textwrap.dedent("""
            import httpx
            import pytest
            import requests
            from sse_inspect._faults import FaultSet

            URL = "http://api.test/v1/chat/completions"

            def test_replay(sse_replay):
                url = sse_replay("capture.jsonl", faults=FaultSet.parse(["status:429,retry-after=2"]))
                r = httpx.post(url)
                assert (r.status_code, r.headers["retry-after"]) == (429, "2")

            def test_transport(sse_transport):
                got = b""
                with httpx.Client(transport=sse_transport("capture.jsonl", faults="cut:event=2")) as http:
                    with pytest.raises(httpx.RemoteProtocolError), http.stream("POST", URL) as r:
                        for data in r.iter_raw():
                            got += data
                assert got.count(b"data: ") == 2

            def test_requests(sse_requests_adapter):
                session = requests.Session()
                session.mount("http://api.test/", sse_requests_adapter("capture.jsonl", faults=["no-end-marker"]))
                body = session.post(URL).content
                assert body.count(b"data: ") == 4 and b"[DONE]" not in body
        """)
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_a_bad_fault_spec_fails_the_test_in_one_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "capture.jsonl").write_text(dump_capture(timed_capture()))
    pytester.makepyfile(
        test_user=textwrap.dedent("""
            def test_replay(sse_replay):
                sse_replay("capture.jsonl", faults="cut:event=many")

            def test_transport(sse_transport):
                sse_transport("capture.jsonl", faults=["stall:after-event=1"])
        """)
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "bad fault spec 'cut:event=many': event= takes a whole number or a share such as 50%" in out
    assert "bad fault spec 'stall:after-event=1': stall: needs for=" in out
    assert "Traceback" not in out and "FaultSpecError" not in out and "raise " not in out, out


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
