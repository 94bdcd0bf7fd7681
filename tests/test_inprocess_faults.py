"""Faults in process: `CaptureTransport` (httpx and httpx2, sync and async) and `CaptureAdapter` (requests)
walk the same replay plan as the server. The client reads exactly the bytes the plan sends and meets, at the
end, what it meets over a socket from the replay server (the same exception, the same words); a stall longer
than the read timeout is the package's read timeout after that timeout; the SDKs raise their own errors on
each fault of FAULT_MATRIX, as they do over HTTP."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sse_inspect import Capture, analyze, load_capture
from sse_inspect._fault_plan import CLOSE, COMPLETE, End, ReplayPlan, Send
from sse_inspect._faults import FAULT_MATRIX, FaultSet
from sse_inspect._rechunk import parse_rechunk_spec
from sse_inspect.server import ReplayServerThread

from .helpers import ROOT

transport_module = pytest.importorskip("sse_inspect.httpx_transport", exc_type=ImportError)
CaptureTransport = transport_module.CaptureTransport
PACKAGES: dict[str, Any] = transport_module.PACKAGES

CAPTURES = ROOT / "captures"
CHAT = load_capture(CAPTURES / "openai-chat-text.jsonl")
MESSAGES = load_capture(CAPTURES / "anthropic-text-then-tooluse.jsonl")
TIMED = load_capture(CAPTURES / "nginx-unbuffered.jsonl")  # 23 chunks over 0.9 s: keep-alives go in its gaps
GZIP = load_capture(CAPTURES / "nginx-gzip.jsonl")  # faults at events serve it decoded
PATH = "/v1/chat/completions"
URL = "http://api.test" + PATH

Result = tuple[int, bytes, BaseException | None]
"""What a client got: the status, the body bytes it read, and what it raised at the end (None: a clean end)."""


def expected(capture: Capture, spec: str | None, rechunk: str | None = None) -> tuple[bytes, str]:
    """The bytes the plan sends, and how it ends (a plan made here, apart from the transport's)."""
    plan = ReplayPlan(capture, rechunk=parse_rechunk_spec(rechunk) if rechunk else None,
                      faults=FaultSet.parse([spec] if spec else []))  # fmt: skip
    steps = list(plan.steps(None))
    end = steps[-1]
    assert isinstance(end, End)
    return b"".join(s.data for s in steps if isinstance(s, Send)), end.how


# -- the clients: each reads the raw body to its end and keeps what it raised -------------------------------


def httpx_reader(name: str, mode: str) -> Callable[..., Result]:
    package = PACKAGES[name]

    def read(url: str, transport: Any = None, read_timeout: float | None = None) -> Result:
        timeout = package.Timeout(10.0, read=read_timeout)
        got = bytearray()
        if mode == "sync":
            with package.Client(transport=transport, timeout=timeout) as client, client.stream("POST", url) as r:
                try:
                    for data in r.iter_raw():
                        got += data
                except Exception as e:
                    return r.status_code, bytes(got), e
                return r.status_code, bytes(got), None

        async def main() -> Result:
            async with package.AsyncClient(transport=transport, timeout=timeout) as client:
                async with client.stream("POST", url) as r:
                    try:
                        async for data in r.aiter_raw():
                            got.extend(data)
                    except Exception as e:
                        return r.status_code, bytes(got), e
                    return r.status_code, bytes(got), None

        return asyncio.run(main())

    return read


def requests_reader() -> Callable[..., Result]:
    requests = pytest.importorskip("requests")
    from sse_inspect.requests_adapter import CaptureAdapter

    def read(url: str, adapter: Any = None, read_timeout: float | None = None) -> Result:
        session = requests.Session()
        if adapter is not None:
            session.mount("http://api.test/", adapter)
        got = bytearray()
        with session.post(url, stream=True, timeout=(10.0, read_timeout)) as r:
            try:
                for data in r.iter_content(None):
                    got += data
            except Exception as e:
                return r.status_code, bytes(got), e
            return r.status_code, bytes(got), None

    read.make = CaptureAdapter  # type: ignore[attr-defined]
    return read


CLIENTS = [(f"{name}-{mode}", name, mode) for name in sorted(PACKAGES) for mode in ("sync", "async")]
CLIENTS.append(("requests", "requests", ""))


def client(name: str, package: str, mode: str) -> tuple[Callable[..., Result], Callable[..., Any]]:
    """The reader, and what makes its in-process replay (a transport or an adapter)."""
    if package == "requests":
        read = requests_reader()
        return read, read.make  # type: ignore[attr-defined]
    return httpx_reader(package, mode), CaptureTransport


def end_of(error: BaseException | None) -> tuple[str, ...]:
    """What a client met at the end, as it sees it: the class of the error and of each error it carries
    (requests' ChunkedEncodingError carries urllib3's ProtocolError in its args), with their words (the
    host named as H); the wire's own layers (httpcore, h11, anyio, asyncio) only a socket goes through
    left out."""
    seen: list[str] = []
    while error is not None:
        module = type(error).__module__.partition(".")[0]
        if module not in ("httpcore", "httpcore2", "h11", "anyio", "asyncio", "builtins"):
            words = re.sub(r"host='[^']*', port=\d+", "host=H", re.sub(r"https?://[^/']+", "H", str(error)))
            seen.append(f"{module}.{type(error).__qualname__}: {words}")
        inner = error.args[0] if error.args and isinstance(error.args[0], BaseException) else None
        error = inner or error.__cause__ or error.__context__
    return tuple(seen)


# -- the bytes and the end, in process ---------------------------------------------------------------------

CASES = [
    *[(CHAT, spec, rechunk) for spec in FAULT_MATRIX if not spec.startswith("stall") for rechunk in (None, "bytes:7")],
    (CHAT, "cut:byte=100", "utf8"),
    (CHAT, "cut:event=0", None),
    (CHAT, "cut:byte=0,reset", None),
    (CHAT, "slow:bytes-per-s=40000", "line"),
    (CHAT, None, "bytes:5"),
    (MESSAGES, "error:after-event=3", "line"),
    (MESSAGES, "no-end-marker", "bytes:3"),
    (TIMED, "keepalive:every=10ms", None),
    (GZIP, "cut:event=50%", None),
]


@pytest.mark.parametrize(("name", "package", "mode"), CLIENTS, ids=[c[0] for c in CLIENTS])
@pytest.mark.parametrize(("capture", "spec", "rechunk"), CASES,
                         ids=[f"{Path(c[0].path or '').stem}-{c[1]}-{c[2]}" for c in CASES])  # fmt: skip
def test_the_client_reads_what_the_plan_sends(name: str, package: str, mode: str, capture: Capture,
                                              spec: str | None, rechunk: str | None) -> None:  # fmt: skip
    read, make = client(name, package, mode)
    replay = make(capture, rechunk=rechunk, faults=[spec] if spec else ())
    status, got, error = read(URL, replay)
    plan = replay.plan
    if plan.status is not None:
        code, headers, payload = plan.error_response()
        assert (status, got, error) == (code, payload, None)
        return
    body, how = expected(capture, spec, rechunk)
    assert got == body
    if how == COMPLETE:
        assert error is None
    elif package == "requests":
        expect = "Response ended prematurely" if how == CLOSE else "Connection broken: ConnectionResetError(104"
        assert type(error).__name__ == "ChunkedEncodingError" and expect in str(error), error
    else:
        expect = "RemoteProtocolError" if how == CLOSE else "ReadError"
        assert type(error) is getattr(PACKAGES[package], expect), error
    if capture is TIMED:
        assert body.count(b": keep-alive\n\n") > 10  # the fault did something here


def test_a_decoded_replay_drops_its_content_encoding() -> None:
    """Faults at events serve a compressed capture decoded: the client must not be told it is compressed."""
    recorded = {k.lower(): v for k, v in GZIP.response.headers} if GZIP.response else {}
    assert recorded.get("content-encoding") == "gzip"
    body, _ = expected(GZIP, "cut:event=50%")
    assert body.startswith(b"data: ")  # decoded
    for package in PACKAGES.values():
        with package.Client(transport=CaptureTransport(GZIP, faults="cut:event=50%")) as http:
            with http.stream("GET", URL) as r:
                assert "content-encoding" not in r.headers
                with pytest.raises(package.RemoteProtocolError):
                    r.read()  # decodes as the headers say
    requests = pytest.importorskip("requests")
    from sse_inspect.requests_adapter import CaptureAdapter

    session = requests.Session()
    session.mount("http://api.test/", CaptureAdapter(GZIP, faults="cut:event=50%"))
    with session.get(URL, stream=True) as r:
        assert "content-encoding" not in r.headers
        got = bytearray()
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for data in r.iter_content(None):
                got += data
        assert got == body


# -- the same as over a socket -----------------------------------------------------------------------------

SOCKET_FAULTS = [*[s for s in FAULT_MATRIX if not s.startswith("stall")], "stall:after-event=50%,for=1.5s"]


@pytest.mark.parametrize(("name", "package", "mode"), CLIENTS, ids=[c[0] for c in CLIENTS])
@pytest.mark.parametrize("spec", SOCKET_FAULTS)
def test_the_end_is_what_a_socket_gives(name: str, package: str, mode: str, spec: str) -> None:
    """The replay server over a real socket and the in-process replay end the same way for the client.
    (The words of an async reset and timeout differ over a socket, anyio's empty ones: only the classes.)"""
    read, make = client(name, package, mode)
    read_timeout = 0.5 if spec.startswith("stall") else None  # (the server's head comes well before it)
    with ReplayServerThread([CHAT], speed=None, faults=[spec]) as server:
        over_socket = read(server.url + PATH, None, read_timeout)
    in_process = read(URL, make(CHAT, faults=spec), read_timeout)
    assert in_process[0] == over_socket[0]
    ends = end_of(in_process[2]), end_of(over_socket[2])
    if mode == "async":
        ends = tuple(tuple(e.partition(":")[0] for e in end) for end in ends)  # type: ignore[assignment]
    assert ends[0] == ends[1]
    if not spec.startswith(("stall", "cut:event=50%,reset")):  # (a reset may drop what the socket had not read)
        assert in_process[1] == over_socket[1]


# -- stalls and the read timeout ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "package", "mode"), CLIENTS, ids=[c[0] for c in CLIENTS])
def test_a_stall_past_the_read_timeout_times_out_after_the_timeout(name: str, package: str, mode: str) -> None:
    read, make = client(name, package, mode)
    before, _ = expected(CHAT, "cut:event=2")  # what comes before the stall
    start = time.monotonic()
    status, got, error = read(URL, make(CHAT, faults="stall:after-event=2,for=30s"), 0.1)
    took = time.monotonic() - start
    assert (status, got) == (200, before)
    if package == "requests":
        assert type(error).__name__ == "ConnectionError" and "Read timed out." in str(error), error
    else:
        assert type(error) is PACKAGES[package].ReadTimeout
    assert 0.1 <= took < 10, "waits the read timeout, not the stall"


@pytest.mark.parametrize(("name", "package", "mode"), CLIENTS, ids=[c[0] for c in CLIENTS])
def test_a_stall_within_the_read_timeout_only_waits(name: str, package: str, mode: str) -> None:
    read, make = client(name, package, mode)
    start = time.monotonic()
    status, got, error = read(URL, make(CHAT, faults="stall:after-event=2,for=0.3s"), None)
    assert time.monotonic() - start >= 0.3
    assert (status, got, error) == (200, CHAT.body, None)


def test_keepalives_in_a_stall_keep_the_read_going() -> None:
    """Comments every 0.05 s through a 0.4 s stall: no read waits the 0.25 s timeout, as on a socket."""
    read, make = client("requests", "requests", "")
    faults = ["stall:after-event=2,for=0.4s", "keepalive:every=50ms"]
    status, got, error = read(URL, make(CHAT, faults=faults), 0.25)
    assert error is None and got.count(b": keep-alive\n\n") >= 5
    read, make = client("httpx", sorted(PACKAGES)[0], "async")
    assert read(URL, make(CHAT, faults=faults), 0.25)[1:] == (got, None)


def test_the_recorded_cut_keeps_its_words() -> None:
    """A capture that did not end cleanly, with a fault that is no cut: its own abrupt end, as before faults."""
    cut = load_capture(CAPTURES / "nginx-cut.jsonl")
    read, make = client("httpx-sync", sorted(PACKAGES)[0], "sync")
    _, _, error = read(URL, make(cut, faults="keepalive:every=1s"))
    assert "the recorded stream ended abruptly" in str(error)
    read, make = client("requests", "requests", "")
    _, _, error = read(URL, make(cut, faults="keepalive:every=1s"))
    assert "the recorded stream ended abruptly" in str(error)


def test_a_bad_fault_is_a_one_line_error() -> None:
    from sse_inspect._errors import FaultSpecError

    with pytest.raises(FaultSpecError, match="bad fault spec 'cut:event=x'") as info:
        CaptureTransport(CHAT, faults="cut:event=x")
    assert "\n" not in str(info.value)


# -- the SDKs ----------------------------------------------------------------------------------------------

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
OURS = {"openai": analyze(CHAT).answer.text, "anthropic": analyze(MESSAGES).answer.text}


def sdk_text(sdk: str, base_url: str, transport: Any = None, timeout: float = 10.0) -> str:
    """One streamed call with the SDK (max_retries=0): the answer's text as it rebuilt it."""
    if sdk == "openai":
        http = openai.DefaultHttpxClient(transport=transport) if transport else None
        client = openai.OpenAI(api_key="sk-test", base_url=base_url + "/v1", http_client=http, max_retries=0,
                               timeout=timeout)  # fmt: skip
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], stream=True)
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    http = anthropic.DefaultHttpxClient(transport=transport) if transport else None
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, http_client=http, max_retries=0,
                                 timeout=timeout)  # fmt: skip
    stream = client.messages.create(model="m", max_tokens=256, messages=[{"role": "user", "content": "Hi"}],
                                    stream=True)  # fmt: skip
    return "".join(e.delta.text for e in stream if e.type == "content_block_delta" and e.delta.type == "text_delta")


def sdk_error(sdk: str, base_url: str, transport: Any = None, timeout: float = 10.0) -> BaseException | None:
    try:
        assert sdk_text(sdk, base_url, transport, timeout) == OURS[sdk]
    except Exception as e:
        return e
    return None


def in_chain(error: BaseException | None, kind: type) -> bool:
    while error is not None:
        if isinstance(error, kind):
            return True
        error = error.__cause__ or error.__context__
    return False


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
@pytest.mark.parametrize("spec", FAULT_MATRIX)
def test_the_sdks_fail_loudly_or_give_the_whole_answer(sdk: str, spec: str) -> None:
    """Each fault of the matrix through the SDK in process: the error class it raises over HTTP too."""
    module = openai if sdk == "openai" else anthropic
    capture = CHAT if sdk == "openai" else MESSAGES
    transport = CaptureTransport(capture, faults=spec)
    stall = spec.startswith("stall")
    error = sdk_error(sdk, "http://api.test", transport, timeout=0.1 if stall else 10.0)
    package = PACKAGES[type(transport.requests[0]).__module__.partition(".")[0]]
    if spec.startswith("cut"):
        assert isinstance(error, module.APIConnectionError | package.TransportError), error
        assert in_chain(error, package.RemoteProtocolError if "reset" not in spec else package.ReadError)
    elif stall:
        assert isinstance(error, module.APITimeoutError | package.ReadTimeout) and in_chain(error, package.ReadTimeout)
    elif spec.startswith("status:429"):
        assert isinstance(error, module.RateLimitError)
        assert error.response.headers["retry-after"] == "1"
    elif spec.startswith("status:500"):
        assert isinstance(error, module.InternalServerError)
    elif spec.startswith("error"):
        assert isinstance(error, module.APIError)
    else:  # no end marker, keep-alive comments: the whole answer
        assert error is None
    if not stall:  # the same over HTTP (the stall's SDK error is checked at the package above, in 0.1 s)
        with ReplayServerThread([capture], speed=None, faults=[spec]) as server:
            over_http = sdk_error(sdk, server.url, None)
        assert end_of(error) == end_of(over_http)


def test_the_async_sdk_meets_the_faults() -> None:
    def text(spec: str, timeout: float = 10.0) -> tuple[str | BaseException, Any]:
        """The text, or the error, of one async streamed call; and the httpx package it went through."""
        transport = CaptureTransport(CHAT, faults=spec)

        async def main() -> str:
            http = openai.DefaultAsyncHttpxClient(transport=transport)
            client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://api.test/v1", http_client=http,
                                        max_retries=0, timeout=timeout)  # fmt: skip
            stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}],
                                                          stream=True)  # fmt: skip
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

        try:
            got: str | BaseException = asyncio.run(main())
        except Exception as e:
            got = e
        return got, PACKAGES[type(transport.requests[0]).__module__.partition(".")[0]]

    assert text("keepalive:every=50ms")[0] == OURS["openai"]
    assert isinstance(text("status:429,retry-after=1")[0], openai.RateLimitError)
    error, package = text("cut:event=50%")
    assert isinstance(error, openai.APIConnectionError | package.TransportError)
    assert in_chain(error, package.RemoteProtocolError)
    error, package = text("stall:after-event=50%,for=30s", timeout=0.1)
    assert isinstance(error, openai.APITimeoutError | package.ReadTimeout) and in_chain(error, package.ReadTimeout)
