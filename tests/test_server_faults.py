"""Every fault over a real socket: `ReplayServer(faults=...)` and `sse-inspect serve --fault`.

A raw client (h11 over a socket) sees what any client would: the body's bytes, then a proper end of the
chunked message, an EOF before it (a FIN: the clean close of a cut) or ECONNRESET (a reset). Timing
faults are checked by lower bounds (a sleep never ends early) and orderings, never by upper bounds.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

import h11
import httpx
import pytest

from sse_inspect import check_capture, load_capture
from sse_inspect._fault_plan import CLOSE, COMPLETE, RESET, ReplayPlan, Send
from sse_inspect._faults import FaultSet
from sse_inspect.dialects import get_dialect
from sse_inspect.server import ReplayServerThread

OPENAI = "captures/openai-chat-text.jsonl"
LAB = "captures/lab-flask-good-gunicorn.jsonl"  # timed: 30 events over ~2 s


def fetch(url: str, timeout: float = 20) -> tuple[int, dict[str, str], bytes, str]:
    """GET `url`: the status, headers, body bytes and how it ended: COMPLETE, CLOSE (EOF mid-body) or RESET."""
    host, _, rest = url.removeprefix("http://").partition("/")
    name, _, port = host.rpartition(":")
    conn = h11.Connection(h11.CLIENT)
    body, status = b"", 0
    headers: dict[str, str] = {}
    with socket.create_connection((name, int(port)), timeout=timeout) as sock:
        request = conn.send(h11.Request(method="GET", target="/" + rest, headers=[("Host", host)])) or b""
        sock.sendall(request + (conn.send(h11.EndOfMessage()) or b""))
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = sock.recv(65536)
                except ConnectionResetError:
                    return status, headers, body, RESET
                if not data:
                    return status, headers, body, CLOSE
                conn.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return status, headers, body, COMPLETE


def planned(path: str, faults: Sequence[str], rechunk: str | None = None) -> tuple[bytes, str]:
    """What the plan says a replay sends and how it ends (speed None)."""
    from sse_inspect._rechunk import parse_rechunk_spec

    plan = ReplayPlan(load_capture(path), rechunk=parse_rechunk_spec(rechunk) if rechunk else None,
                      faults=FaultSet.parse(faults))  # fmt: skip
    steps = list(plan.steps(None))
    return b"".join(s.data for s in steps if isinstance(s, Send)), steps[-1].how  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("path", "faults", "how"),
    [
        (OPENAI, ["cut:event=50%"], CLOSE),
        (OPENAI, ["cut:event=50%,reset"], RESET),
        (OPENAI, ["cut:byte=777"], CLOSE),
        (OPENAI, ["cut:event=0,reset"], RESET),
        (OPENAI, ["no-end-marker"], COMPLETE),
        (OPENAI, ["error:after-event=3"], COMPLETE),
        ("captures/anthropic-text-then-tooluse.jsonl", ["error:after-event=50%", "keepalive:every=1s"], COMPLETE),
        (LAB, ["keepalive:every=20ms"], COMPLETE),
        ("captures/nginx-cut.jsonl", [], RESET),  # a recording that was cut plays as cut, as before faults
        ("captures/nginx-cut.jsonl", ["no-end-marker"], COMPLETE),
    ],
)
@pytest.mark.parametrize("rechunk", [None, "bytes:5", "crlf"])
def test_every_fault_reaches_a_real_client_as_planned(path: str, faults: list[str], how: str, rechunk: str | None) -> None:
    from sse_inspect._rechunk import parse_rechunk_spec

    expected, planned_how = planned(path, faults, rechunk)
    assert planned_how == how
    with ReplayServerThread([load_capture(path)], speed=None, faults=faults,
                            rechunk_spec=parse_rechunk_spec(rechunk) if rechunk else None) as server:  # fmt: skip
        status, headers, body, ended = fetch(server.url + "/")
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert body == expected and ended == how


def test_the_faults_change_the_stream_as_each_says() -> None:
    whole, _ = planned(OPENAI, [])
    assert b"data: [DONE]" in whole
    assert planned(OPENAI, ["no-end-marker"])[0] == whole.replace(b"data: [DONE]\n\n", b"")
    errored, _ = planned(OPENAI, ["error:after-event=3"])
    assert errored.endswith(get_dialect("openai-chat").fault_error(3)) and errored.count(b"data: ") == 4
    kept, _ = planned(LAB, ["keepalive:every=20ms"])
    assert kept.count(b": keep-alive\n\n") > 10 and kept.replace(b": keep-alive\n\n", b"") == planned(LAB, [])[0]


def test_a_status_fault_answers_the_providers_error_with_retry_after() -> None:
    with ReplayServerThread([load_capture("captures/anthropic-text-then-tooluse.jsonl")], speed=None,
                            faults=["status:529,retry-after=2"]) as server:  # fmt: skip
        status, headers, body, ended = fetch(server.url + "/v1/messages")
        response = httpx.post(server.url + "/v1/messages", headers={"Origin": "http://page.test"})
    assert (status, ended, headers["retry-after"]) == (529, COMPLETE, "2")
    assert json.loads(body)["error"] and headers["content-type"] == "application/json"
    assert response.status_code == 529 and response.headers["access-control-allow-origin"] == "*"
    assert response.reason_phrase == "Overloaded"


def test_a_stall_is_silence_a_read_timeout_sees() -> None:
    with ReplayServerThread([load_capture(LAB)], speed=None, faults=["stall:after-event=3,for=1.5s"]) as server:
        with httpx.stream("GET", server.url + "/", timeout=httpx.Timeout(10, read=0.3)) as response:
            got = b""
            with pytest.raises(httpx.ReadTimeout):
                for piece in response.iter_bytes():
                    got += piece
        assert got.count(b"data:") == 3  # the events before the stall came, then nothing
        start = time.monotonic()
        status, _, body, ended = fetch(server.url + "/")
        took = time.monotonic() - start
    assert (status, ended, body) == (200, COMPLETE, planned(LAB, [])[0]) and took >= 1.5


def test_a_slow_link_takes_the_time_its_rate_says() -> None:
    capture = load_capture(LAB)
    size = sum(len(c.data) for c in capture.chunks)
    with ReplayServerThread([capture], speed=None, faults=["slow:bytes-per-s=1000"]) as server:
        start = time.monotonic()
        _, _, body, ended = fetch(server.url + "/")
        took = time.monotonic() - start
    assert body == planned(LAB, [])[0] and ended == COMPLETE
    assert took >= size / 1000  # never faster than the link


def test_a_compressed_capture_with_faults_at_events_is_served_decoded() -> None:
    with ReplayServerThread([load_capture("captures/nginx-gzip.jsonl")], speed=None, faults=["cut:event=3"],
                            log=lambda line: logged.append(line)) as server:  # fmt: skip
        status, headers, body, ended = fetch(server.url + "/")
    assert "content-encoding" not in headers and body.count(b"data:") == 3 and ended == CLOSE
    assert any("served decoded" in line for line in logged)


logged: list[str] = []


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--fault", "cut:event=x"], "event= takes a whole number or a share such as 50%"),
        (["--fault", "status:429", "--fault", "cut:event=1"], "replaces the whole stream"),
        (["--fault", "explode"], "unknown fault 'explode'"),
    ],
)
def test_serve_says_what_is_wrong_with_a_fault_in_one_line(args: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "sse_inspect", "serve", OPENAI, "--port", "0", *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode == 2 and len(errors) == 1 and says in errors[0]  # under click's usage lines
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("faults", "text", "says"),
    [
        (["cut:event=4"], "The capital of", "the server, or a hop on the way, closed the connection before its end"),
        (["error:after-event=4"], "The capital of", "the stream ended with the provider's in-band error"),
        (["no-end-marker"], "The capital of the UK is London.", "ended cleanly without its end marker"),
        (["status:429"], "", "the server answered 429 instead of the stream"),
        (["keepalive:every=1s", "stall:after-event=2,for=0.2s"], "The capital of the UK is London.", None),
    ],
)
def test_replay_in_the_terminal_plays_the_stream_a_client_meets_under_the_faults(
    faults: list[str], text: str, says: str | None
) -> None:
    from click.testing import CliRunner

    from sse_inspect.cli import cli

    args = ["replay", OPENAI, "--instant"] + [a for f in faults for a in ("--fault", f)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0  # replay plays, check judges
    assert result.stdout.strip() == text
    assert f"with faults: {' '.join(faults)}" in result.stderr
    assert (says in result.stderr) if says else len(result.stderr.strip().splitlines()) == 1


def test_a_plan_as_recorded_is_what_check_reads() -> None:
    plan = ReplayPlan(load_capture(LAB), faults=FaultSet.parse(["cut:event=5,reset", "stall:after-event=2,for=40s"]))
    played = plan.as_recorded()
    assert played.end is not None and played.end.kind == "server-disconnected"
    assert played.end.error == "cut:event=5,reset (reset)" and played.end.t is not None and played.end.t > 40
    codes = {f.code for f in check_capture(played).findings}
    assert {"long-silence", "connection-cut"} <= codes  # a text stream, whose `[DONE]` is optional: a cut, not a missing marker
