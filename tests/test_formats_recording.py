"""Every fixture of `tests/data/formats/` recorded for real: a scripted loopback server speaks it (the fixture's
bytes, chunk by chunk, with its Content-Type), a real client reads it through a real mitmdump running the
addon, and the capture the addon writes is rebuilt, judged and replayed as the fixture is.

One proxy and one server for all the fixtures (each on a path of its own that keeps the provider's path at its
end, so that the dialect's URL hints still apply), to keep the run short.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

pytest.importorskip("mitmproxy", reason="recording tests need mitmproxy (the [record] extra)")

from sse_inspect import analyze, load_capture  # noqa: E402
from sse_inspect.checks import check_capture  # noqa: E402
from sse_inspect.httpx_transport import CaptureTransport  # noqa: E402

from .recording_fixtures import StartProxy  # noqa: E402
from .sse_server import Script, SSEServer, Write  # noqa: E402
from .test_formats import FIXTURES, expected, summary  # noqa: E402

GAP = 0.02
"""Seconds between the server's writes: the fixture's order and chunks, not its (longer) pauses."""


def route(stem: str, url: str) -> str:
    return f"/fixture/{stem}{urlsplit(url).path}"


def test_each_fixture_recorded_through_mitmdump_is_rebuilt_judged_and_replayed(
    start_proxy: StartProxy, server: SSEServer
) -> None:
    fixtures = {path.stem: load_capture(path) for path in FIXTURES}
    paths = {}
    for stem, capture in fixtures.items():
        assert capture.request is not None and capture.response is not None
        paths[stem] = route(stem, capture.request.url)
        content_type = capture.response.header("content-type")
        assert content_type is not None
        writes = [Write(chunk.data, delay=GAP) for chunk in capture.chunks]
        server.routes[paths[stem]] = Script(writes, headers=[("Content-Type", content_type)])
    proxy = start_proxy()

    with proxy.client() as client:
        for stem, capture in fixtures.items():
            assert capture.request is not None
            body = (capture.request.body or "").encode()
            response = client.post(proxy.target(server.url(paths[stem])), content=body)
            assert response.content == capture.body, f"{stem}: the client got other bytes through the proxy"

    recorded = {urlsplit(c.request.url).path: c for c in proxy.captures(len(fixtures)) if c.request is not None}
    for stem, fixture in fixtures.items():
        capture = recorded[paths[stem]]
        expect = expected(Path(fixture.path or stem))
        assert capture.body == fixture.body, stem
        # chunk by chunk, as they came (a busy machine may merge two writes 20 ms apart: not all of them)
        assert len(capture.chunks) > 1 or len(fixture.chunks) == 1, f"{stem}: recorded as one chunk"
        assert all(c.t is not None for c in capture.chunks), stem
        analysis = analyze(capture)
        assert analysis.framing == expect["framing"], stem
        assert summary(analysis.answer) == {k: expect[k] for k in summary(analysis.answer)}, stem
        assert check_capture(capture).verdict.split(":")[0] == check_capture(fixture).verdict.split(":")[0], stem
        with httpx.Client(transport=CaptureTransport(capture, rechunk="bytes:3")) as replay:
            assert replay.post(capture.request.url).content == fixture.body, f"{stem}: replayed otherwise"


def test_fixture_sidecars_are_json() -> None:
    for path in FIXTURES:
        json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))
