"""Proxy buffering diagnosed end to end: a real nginx between a paced OpenAI-style upstream and a
real client, recorded by a real mitmdump running the addon, then `check`ed and `diff`ed.

    client -> mitmdump (regular: what the user's client saw) -> nginx -> [mitmdump (reverse)] -> upstream

Each test names the real-world setup it mirrors. The verdicts must follow the configuration:
buffered where nginx buffers (defaults with a close-delimited upstream, gzip on event streams),
clean where it does not (chunked upstream, `X-Accel-Buffering: no`, `proxy_buffering off`), cut
where nginx times out; and the client must get exactly what the upstream sent. The two-point tests
record both sides of nginx and prove the hold with `diff_timing`.

nginx is Debian's (nginx-light); without it these tests skip, except under CI (`CI` set), where a
missing or broken nginx fails them. Loopback only; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mitmproxy", reason="recording tests need mitmproxy (the [record] extra)")

import uvicorn  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.middleware.gzip import GZipMiddleware  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from sse_inspect import Capture, analyze, diff_timing  # noqa: E402
from sse_inspect.checks import Report, Severity, check_capture  # noqa: E402
from sse_inspect.cli import cli  # noqa: E402

from .helpers import free_port  # noqa: E402
from .nginx_lab import (  # noqa: E402
    BUFFERED,
    BUFFERED_LONG,
    BUFFERING_OFF,
    CHAT_PATH,
    CHUNKED,
    GZIPPED,
    READ_TIMEOUT,
    UNBUFFERED,
    Nginx,
    Run,
    Scenario,
    answer_of,
    nginx_available,
    openai_events,
    post,
    run,
)
from .recording_fixtures import StartProxy  # noqa: E402

Lab = Callable[..., Run]


@pytest.fixture(scope="session")
def nginx_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """nginx is installed and starts here: else skip, or fail under CI."""
    reason = nginx_available()
    if reason is None:
        try:
            Nginx(tmp_path_factory.mktemp("nginx-probe"), free_port()).start().stop()
        except RuntimeError as exc:
            reason = f"nginx cannot start here: {exc}"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set: these tests need nginx)", pytrace=False)
        pytest.skip(reason)


@pytest.fixture
def lab(nginx_runs: None, tmp_path: Path, start_proxy: StartProxy) -> Lab:  # noqa: F811
    """`lab(scenario, two_point=False) -> Run`: one chat request through nginx, recorded."""

    def go(scenario: Scenario, *, two_point: bool = False) -> Run:
        return run(scenario, tmp_path, start_proxy, two_point=two_point)

    return go


def check(capture: Capture) -> Report:
    return check_capture(capture)


def problems(report: Report) -> dict[str, str]:
    """Warning and error findings: code -> message."""
    return {f.code: f.message for f in report.findings if f.severity >= Severity.WARNING}


def answer_time(scenario: Scenario) -> float:
    """How long the upstream takes to send the whole answer."""
    return (len(scenario.events) - 1) * scenario.interval


def assert_delivered_intact(result: Run, scenario: Scenario) -> None:
    """The client got every byte the upstream sent, and the capture holds them, ending cleanly."""
    assert result.error is None, result.error
    assert result.received == scenario.body
    assert result.client.body == scenario.body
    assert result.client.end is not None and result.client.end.kind == "complete", result.client.end
    assert analyze(result.client).answer.text == answer_of(scenario.words)


# -- one point: what the client saw ---------------------------------------------------------


def test_defaults_hold_a_close_delimited_stream_to_the_end(lab: Lab) -> None:
    """nginx with its defaults (`proxy_buffering on`) in front of an upstream that ends its body by
    closing the connection (an HTTP/1.0-style response to nginx's HTTP/1.0 request): the user sees
    nothing, then the whole answer at once. `check` says single flush and burst, with the hold."""
    result = lab(BUFFERED)

    assert_delivered_intact(result, BUFFERED)
    report = check(result.client)
    found = problems(report)
    assert set(found) == {"single-flush", "buffering-burst"}, report.findings
    held = result.client.chunks[0].t  # nothing came before the release: held since the request
    assert held is not None and held >= 0.8 * answer_time(BUFFERED), held
    assert f"{BUFFERED.words} text events held {held:.3f} s" in found["buffering-burst"], found
    assert f"({len(BUFFERED.body)} of {len(BUFFERED.body)} bytes) arrived at once" in found["single-flush"], found
    assert report.verdict.startswith("BUFFERED: "), report.verdict


def test_defaults_release_a_long_stream_4_kib_at_a_time(lab: Lab) -> None:
    """The same nginx defaults and upstream, with a long answer (1,500 tokens, a fast model): nginx
    passes the stream on one full 4 KiB proxy buffer at a time, cut anywhere inside events."""
    result = lab(BUFFERED_LONG)

    assert_delivered_intact(result, BUFFERED_LONG)
    [flush] = [f for f in check(result.client).findings if f.code == "fixed-size-flush"]
    assert flush.severity == Severity.WARNING
    assert flush.evidence.size == 4096 and "exactly 4096 bytes" in flush.message, flush
    assert flush.evidence.chunks >= len(BUFFERED_LONG.body) // 4096 // 2, flush


@pytest.mark.parametrize("scenario", [UNBUFFERED, BUFFERING_OFF], ids=["x-accel-buffering-no", "proxy-buffering-off"])
def test_buffering_turned_off_streams_clean(lab: Lab, scenario: Scenario) -> None:
    """The two documented fixes for the case above: the upstream sends `X-Accel-Buffering: no`
    (what sse-starlette and many LLM servers do), or the nginx config says `proxy_buffering off;`.
    Each event reaches the user as the model writes it, and `check` finds nothing to warn about."""
    result = lab(scenario)

    assert_delivered_intact(result, scenario)
    report = check(result.client)
    assert problems(report) == {}, report.findings
    timing = analyze(result.client).timing
    assert timing.first_token is not None and timing.total is not None
    # spread over the generation as the model wrote it (0.76 s), not held and let go at once: a
    # lower bound on the spread, which a busy machine's late start (first token) leaves alone
    assert timing.total - timing.first_token >= 0.5 * (scenario.words - 1) * scenario.interval, timing
    assert report.verdict.startswith("OK: "), report.verdict


def test_defaults_with_a_chunked_upstream_stream_clean(lab: Lab) -> None:
    """nginx defaults in front of an upstream that answers chunked (most ASGI servers and LLM
    gateways): nginx passes each chunk on, so the tool must not cry wolf."""
    result = lab(CHUNKED)

    assert_delivered_intact(result, CHUNKED)
    report = check(result.client)
    assert problems(report) == {}, report.findings
    assert report.verdict.startswith("OK: "), report.verdict


def test_x_accel_buffering_no_is_not_asked_for_once_sent(lab: Lab) -> None:
    """An upstream that already sends `X-Accel-Buffering: no` behind nginx, streaming clean: nginx
    strips the header from the response, so the clean timing is what keeps check from asking for it."""
    result = lab(UNBUFFERED)

    assert result.client.response is not None and result.client.response.header("x-accel-buffering") is None
    codes = {f.code for f in check(result.client).findings}
    assert "x-accel-buffering" not in codes


def test_gzip_on_event_streams_holds_the_stream(lab: Lab) -> None:
    """`gzip on; gzip_types text/event-stream;` (a site-wide gzip config that lists the event stream
    type), chunked upstream, a client accepting gzip: nginx's compressor holds everything until the
    end. `check` says compressed stream, single flush and burst; the client decodes the exact bytes."""
    result = lab(GZIPPED)

    assert result.error is None, result.error
    assert gzip.decompress(result.received) == GZIPPED.body
    assert result.client.body == result.received  # stored as sent: compressed
    assert analyze(result.client).answer.text == answer_of(GZIPPED.words)
    report = check(result.client)
    found = problems(report)
    assert set(found) == {"compressed-stream", "single-flush", "buffering-burst"}, report.findings
    assert found["compressed-stream"].startswith("Content-Encoding: gzip"), found
    assert report.verdict.startswith("BUFFERED: "), report.verdict


def test_read_timeout_shorter_than_a_model_pause_cuts_the_stream(lab: Lab) -> None:
    """`proxy_read_timeout` shorter than a pause of the model (a reasoning model thinking for
    minutes behind nginx's 60 s default; 1 s and 2 s here): nginx cuts the stream after the first
    event. `check` says the end marker is missing, and the capture that the server disconnected."""
    result = lab(READ_TIMEOUT)

    assert result.error is not None
    assert result.received == READ_TIMEOUT.events[0]
    assert len(result.served.sent) == 1 and result.served.outcome == "client-gone"  # nginx hung up on it too
    assert result.client.body == result.received
    assert result.client.end is not None and result.client.end.kind == "server-disconnected", result.client.end
    report = check(result.client)
    assert set(problems(report)) == {"missing-end-marker"}, report.findings
    assert report.verdict.startswith("CUT: "), report.verdict


# -- two points: both sides of nginx --------------------------------------------------------


def diff_cli(result: Run, *options: str) -> int:
    assert result.upstream is not None and result.upstream.path and result.client.path
    outcome = CliRunner().invoke(cli, ["diff", "--by", "timing", *options, result.upstream.path, result.client.path])
    assert isinstance(outcome.exception, SystemExit | None), outcome.exception
    return outcome.exit_code


def test_two_point_capture_shows_what_nginx_held(lab: Lab) -> None:
    """The proof, not the suspicion: the buffered setup above recorded before nginx (a reverse
    mitmdump between nginx and the upstream) and after it. The upstream side streams clean; on
    the client side each event is late by what remained of the answer when it was sent, and all
    come out in one release at the end."""
    result = lab(BUFFERED, two_point=True)

    assert_delivered_intact(result, BUFFERED)
    assert result.upstream is not None and result.upstream.body == BUFFERED.body
    assert problems(check(result.upstream)) == {}
    timing = diff_timing(analyze(result.upstream), analyze(result.client))
    events = len(BUFFERED.events)
    assert len(timing.matched) == events
    assert len(timing.held) >= events * 3 // 4, timing.summary  # those sent in the last 100 ms are not "held"
    assert timing.max_hold.hold >= 0.8 * answer_time(BUFFERED), timing.summary
    [release] = timing.releases
    assert release.t >= 0.8 * answer_time(BUFFERED), timing.summary
    assert "between A and B" in timing.summary and "released in 1 burst" in timing.summary, timing.summary
    assert diff_cli(result) == 1


def test_two_point_capture_with_x_accel_buffering_no_shows_no_hold(lab: Lab) -> None:
    """The same two recorders with the upstream sending `X-Accel-Buffering: no`: every event
    crosses nginx in its latency floor, so both sides agree on the timing."""
    result = lab(UNBUFFERED, two_point=True)

    assert_delivered_intact(result, UNBUFFERED)
    assert result.upstream is not None and result.upstream.body == UNBUFFERED.body
    # A buffering nginx holds the first event for about the whole answer (0.76 s here), half of them over half
    # of it. Half the answer is the margin: a busy machine may delay an event by 100 ms, never by that.
    half = answer_time(UNBUFFERED) / 2
    timing = diff_timing(analyze(result.upstream), analyze(result.client), threshold=half)
    assert len(timing.matched) == len(UNBUFFERED.events)
    assert timing.identical, timing.summary
    assert "held no event" in timing.summary, timing.summary
    assert diff_cli(result, "--hold-ms", str(half * 1000)) == 0


# -- the framework cause: Starlette's GZipMiddleware ----------------------------------------

APP_WORDS = 20
APP_EVENTS = openai_events(APP_WORDS)


async def _chat(request: Request) -> StreamingResponse:
    """An OpenAI-compatible endpoint streaming a model's answer, one event per 40 ms."""

    async def tokens() -> AsyncIterator[bytes]:
        for i, event in enumerate(APP_EVENTS):
            if i:
                await asyncio.sleep(0.04)
            yield event

    return StreamingResponse(tokens(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@pytest.fixture
def gzip_app() -> Iterator[str]:
    """A Starlette app with `GZipMiddleware`, served by uvicorn on 127.0.0.1 in a thread: its URL."""
    app = Starlette(routes=[Route(CHAT_PATH, _chat, methods=["POST"])], middleware=[Middleware(GZipMiddleware)])
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=2)  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    for _ in range(200):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start within 10 s"
    try:
        yield f"http://127.0.0.1:{config.port}{CHAT_PATH}"
    finally:
        server.should_exit = True
        thread.join(10)
        assert not thread.is_alive(), "uvicorn did not stop within 10 s"


def test_starlette_gzip_middleware_holds_the_stream(start_proxy: StartProxy, gzip_app: str) -> None:  # noqa: F811
    """The classic framework cause: an app adds `GZipMiddleware` for its JSON routes, and Starlette
    before 0.46 also compresses `text/event-stream` into a buffer that fills only at the end (a
    `StreamingResponse` of an OpenAI-style answer, an SDK sending `Accept-Encoding: gzip`). No
    proxy in between but the recorder: `check` says compressed stream, and the flush it causes."""
    proxy = start_proxy("regular")
    received, error = post(proxy, gzip_app)

    assert error is None, error
    assert gzip.decompress(received) == b"".join(APP_EVENTS)
    [capture] = proxy.captures(1)
    assert capture.body == received
    assert capture.end is not None and capture.end.kind == "complete", capture.end
    assert analyze(capture).answer.text == answer_of(APP_WORDS)
    report = check(capture)
    found = problems(report)
    assert set(found) == {"compressed-stream", "single-flush", "buffering-burst"}, report.findings
    assert report.verdict.startswith("BUFFERED: "), report.verdict
