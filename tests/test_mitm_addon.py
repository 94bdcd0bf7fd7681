"""The addon's hooks driven with mitmproxy's own test helpers: no sockets, exact control."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mitmproxy")

from mitmproxy import exceptions  # noqa: E402
from mitmproxy.connection import ConnectionState  # noqa: E402
from mitmproxy.flow import Error  # noqa: E402
from mitmproxy.test import taddons, tflow, tutils  # noqa: E402

from sse_inspect import load_capture  # noqa: E402
from sse_inspect.mitm_addon import SSECapture, end_kind, flow_error  # noqa: E402
from sse_inspect.recorder import FLUSH_CHUNKS  # noqa: E402

from .helpers import ROOT  # noqa: E402


def run(test: Callable[[SSECapture, Any], Awaitable[None] | None], tmp_path: Path, **options: Any) -> None:
    """Run `test(addon, tctx)` inside a mitmproxy test context (which wants a running loop).

    A coroutine function may `await asyncio.sleep(0)` to let the loop end its iteration, as
    mitmproxy's loop does between two socket reads."""

    async def main() -> None:
        addon = SSECapture()
        with taddons.context(addon) as tctx:
            tctx.configure(addon, sse_capture_dir=str(tmp_path / "caps"), **options)
            result = test(addon, tctx)
            if inspect.isawaitable(result):
                await result

    asyncio.run(main())


def sse_flow(content_type: str = "text/event-stream") -> Any:
    flow = tflow.tflow(req=tutils.treq(path="/v1/chat/completions?key=SECRET"))
    flow.request.headers["Authorization"] = "Bearer sk-SECRET"
    flow.response = tutils.tresp(content=None)
    flow.response.headers["content-type"] = content_type
    return flow


def captures(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "caps").glob("*.jsonl"))


def test_records_chunks_passes_them_through_and_attaches_the_body(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        stream = flow.response.stream
        assert callable(stream)
        assert stream(b"data: a\n\n") == b"data: a\n\n"
        assert stream(b"data: b\n\n") == b"data: b\n\n"
        assert list(stream(b"")) == [], "never hand b'' back: mid-stream it would end a chunked body"
        addon.response(flow)
        assert flow.response.raw_content == b"data: a\n\ndata: b\n\n"

    run(test, tmp_path)
    (path,) = captures(tmp_path)
    capture = load_capture(path)
    assert capture.body == b"data: a\n\ndata: b\n\n"
    assert [c.data for c in capture.chunks] == [b"data: a\n\n", b"data: b\n\n"]
    assert capture.end is not None and capture.end.kind == "complete"
    assert "SECRET" not in path.read_text()
    assert capture.request is not None and capture.request.url.endswith("?key=%5BREDACTED%5D") is False


def test_chunks_are_written_as_the_loop_iteration_ends_with_their_arrival_times(tmp_path: Path) -> None:
    """The callable hands each chunk back at once and writes the chunks of one loop iteration
    (one socket read of mitmproxy's) together as it ends, with the time the first of them was
    taken: they arrived together, whatever the proxy's work on them took."""

    async def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        stream = flow.response.stream
        (path,) = captures(tmp_path)
        assert stream(b"data: a\n\n") == b"data: a\n\n"
        time.sleep(0.05)  # noqa: ASYNC251 - on purpose: the same loop iteration, 50 ms later
        assert stream(b"data: b\n\n") == b"data: b\n\n"
        assert not load_capture(path).chunks, "handed on first, written when the iteration ends"
        await asyncio.sleep(0)
        first, second = load_capture(path).chunks
        assert (first.data, second.data) == (b"data: a\n\n", b"data: b\n\n")
        assert first.t is not None and first.t == second.t, "one iteration's chunks: the time of the first"
        assert stream(b"data: c\n\n") == b"data: c\n\n"
        time.sleep(0.05)  # noqa: ASYNC251 - taken, then written 50 ms later
        await asyncio.sleep(0)
        assert len(load_capture(path).chunks) == 3, "a slow stream: each chunk on disk before the next one comes"
        addon.response(flow)

    run(test, tmp_path)
    capture = load_capture(captures(tmp_path)[0])
    assert capture.body == b"data: a\n\ndata: b\n\ndata: c\n\n" and capture.end is not None
    first, _, third = capture.chunks
    assert first.t is not None and third.t is not None and capture.end.t is not None
    assert third.t - first.t >= 0.05, "the next iteration's chunk has its own time"
    assert capture.end.t - third.t >= 0.05, "times of arrival, not of writing"


def test_a_long_burst_is_written_every_flush_chunks(tmp_path: Path) -> None:
    """More than FLUSH_CHUNKS chunks in one iteration (a read full of tiny HTTP chunks): those
    are written at once, so no more than FLUSH_CHUNKS chunks ever wait."""

    async def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        events = [b"data: %d\n\n" % k for k in range(FLUSH_CHUNKS + 3)]
        assert [flow.response.stream(e) for e in events] == events
        (path,) = captures(tmp_path)
        assert [c.data for c in load_capture(path).chunks] == events[:FLUSH_CHUNKS]
        await asyncio.sleep(0)
        assert [c.data for c in load_capture(path).chunks] == events
        addon.response(flow)

    run(test, tmp_path)


def test_other_content_types_are_left_alone(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow("application/json")
        addon.responseheaders(flow)
        assert flow.response.stream is False

    run(test, tmp_path)
    assert captures(tmp_path) == []


def test_more_types_and_a_filter(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow("application/x-ndjson")
        addon.responseheaders(flow)
        assert callable(flow.response.stream)
        other = sse_flow()
        other.request.path = "/elsewhere"
        addon.responseheaders(other)
        assert other.response.stream is True, "not recorded (the filter wants /v1/ paths), but streamed"

    run(test, tmp_path, sse_capture_types="text/event-stream, application/x-ndjson", sse_capture_filter="~u /v1/")


def test_wraps_a_stream_callable_set_by_another_addon(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        flow.response.stream = lambda data: data.upper()
        addon.responseheaders(flow)
        assert flow.response.stream(b"data: a\n\n") == b"DATA: A\n\n"
        addon.response(flow)

    run(test, tmp_path)
    assert load_capture(captures(tmp_path)[0]).body == b"data: a\n\n", "the wire bytes, before the other addon"


def test_a_failing_disk_stops_the_recording_not_the_traffic(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        stream = flow.response.stream
        assert stream(b"data: a\n\n") == b"data: a\n\n"
        await asyncio.sleep(0)
        writer = addon.active[flow.id].writer
        os.close(writer._fd)
        writer._fd = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC, a full disk
        with caplog.at_level(logging.WARNING):
            assert stream(b"data: b\n\n") == b"data: b\n\n"
            assert stream(b"data: c\n\n") == b"data: c\n\n"
            await asyncio.sleep(0)
            assert stream(b"data: d\n\n") == b"data: d\n\n"
            await asyncio.sleep(0)
        addon.response(flow)
        assert flow.response.raw_content == b"data: a\n\ndata: b\n\ndata: c\n\ndata: d\n\n", "still attached"

    run(test, tmp_path)
    warnings = [r.getMessage() for r in caplog.records if "stopped recording" in r.getMessage()]
    assert len(warnings) == 1 and "No space left" in warnings[0] and "traffic is unaffected" in warnings[0]
    capture = load_capture(captures(tmp_path)[0])
    assert capture.body == b"data: a\n\n" and capture.end is None, "what was written stays readable"


def not_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, meanwhile: Callable[[], object] = lambda: None
) -> list[str]:
    """Open an event stream that the addon cannot record: it must still be streamed. The warnings.

    `meanwhile` runs once the options are set, before the stream comes (what went wrong since)."""

    def test(addon: SSECapture, tctx: Any) -> None:
        meanwhile()
        flow = sse_flow()
        with caplog.at_level(logging.WARNING):
            addon.responseheaders(flow)
        assert flow.response.stream is True, "not recorded, but streamed: never held back"

    run(test, tmp_path)
    return [r.getMessage() for r in caplog.records if "not recording" in r.getMessage()]


def test_unwritable_folder_records_nothing_and_proxies_on(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The folder turned into a file while the proxy runs (a bad folder is refused when set: below)."""
    blocker = tmp_path / "caps"
    assert not_recorded(tmp_path, caplog, lambda: blocker.write_text("a file where the folder should be"))


@pytest.mark.parametrize(
    ("make", "said"),
    [("file", "caps is a file, not a folder"), ("file-parent", "cannot be made: "), ("empty", "is empty")],
)
def test_a_bad_capture_dir_is_refused_when_set(tmp_path: Path, make: str, said: str) -> None:
    """`--set sse_capture_dir=...` that can never hold captures: one OptionsError line at once,
    not a warning per stream later; a folder that does not exist yet is fine (made with the first capture)."""
    blocker = tmp_path / "caps"
    blocker.write_text("a file where the folder should be")
    where = {"file": blocker, "file-parent": blocker / "deeper", "empty": ""}[make]
    addon = SSECapture()
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError) as raised:
            tctx.configure(addon, sse_capture_dir=str(where))
        message = str(raised.value)
        assert message.startswith("sse_capture_dir: ") and said in message and "\n" not in message
        tctx.configure(addon, sse_capture_dir=str(tmp_path / "new" / "caps"))  # not there yet: fine
        assert not (tmp_path / "new").exists(), "made with the first capture, not when set"


@pytest.mark.e2e
def test_mitmdump_exits_at_once_on_a_bad_capture_dir(tmp_path: Path) -> None:
    """The real command line: mitmdump refuses the option with its one-line message and exits non-zero
    (`-nr` an empty flow file, no proxy server: with a good folder the same command exits 0 at once)."""
    mitmdump = Path(sys.executable).with_name("mitmdump")
    if not mitmdump.exists():
        pytest.skip(f"no mitmdump next to {sys.executable}")
    blocker = tmp_path / "caps"
    blocker.write_text("not a folder")
    no_flows = tmp_path / "none.mitm"
    no_flows.write_bytes(b"")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def mitmdump_with(folder: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(mitmdump), "-nr", str(no_flows), "--set", f"confdir={tmp_path / 'conf'}",
             "-s", str(ROOT / "addons" / "sse_capture.py"), "--set", f"sse_capture_dir={folder}"],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip

    bad = mitmdump_with(blocker)
    assert bad.returncode != 0
    # mitmproxy logs any error of a `-s` script with its traceback; the message is one line of its own
    said = f"OptionsError: sse_capture_dir: {blocker} is a file, not a folder"
    assert any(line.endswith(said) for line in (bad.stdout + bad.stderr).splitlines()), bad.stdout + bad.stderr
    good = mitmdump_with(tmp_path / "captures")
    assert good.returncode == 0, good.stdout + good.stderr


def test_permission_denied_records_nothing_and_proxies_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EACCES on the capture file (root writes through chmod, so the file system layer is faked)."""
    import sse_inspect.recorder

    def denied(path: str, flags: int, mode: int = 0o777) -> int:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(sse_inspect.recorder.os, "open", denied)
    [warning] = not_recorded(tmp_path, caplog)
    assert "Permission denied" in warning


@pytest.mark.parametrize(
    ("message", "kind"),
    [("Client disconnected.", "client-disconnected"), ("stream reset by client (CANCEL)", "client-disconnected"),
     ("HTTP/1 protocol error: peer closed connection without sending complete message body (incomplete chunked read)",
      "server-disconnected"), ("stream reset by client (INTERNAL_ERROR)", "server-disconnected"),
     ("HTTP/2 connection closed: ...", "server-disconnected"), ("TLS handshake failed", "error")],
)  # fmt: skip
def test_end_kinds(message: str, kind: str) -> None:
    assert end_kind(message) == kind


def test_error_hook_writes_the_end_line(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        flow.response.stream(b"data: a\n\n")
        flow.error = tflow.terr("Client disconnected.")
        addon.error(flow)

    run(test, tmp_path)
    capture = load_capture(captures(tmp_path)[0])
    assert capture.body == b"data: a\n\n", "the chunk of the last loop iteration is written before the end line"
    assert capture.end is not None
    assert (capture.end.kind, capture.end.error) == ("client-disconnected", "Client disconnected.")


def test_done_closes_open_captures(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        addon.responseheaders(flow)
        flow.response.stream(b"data: a\n\n")
        addon.done()

    run(test, tmp_path)
    capture = load_capture(captures(tmp_path)[0])
    assert capture.body == b"data: a\n\n", "the chunk of the last loop iteration is written before the end line"
    assert capture.end is not None and capture.end.kind == "error" and "shut down" in (capture.end.error or "")


def test_bad_filter_is_refused_at_configure(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        with pytest.raises(exceptions.OptionsError, match="sse_capture_filter"):
            tctx.configure(addon, sse_capture_filter="~q ((")

    run(test, tmp_path)


def test_redaction_can_be_extended_and_turned_off(tmp_path: Path) -> None:
    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        flow.request.headers["X-Tenant"] = "tenant-SECRET"
        addon.responseheaders(flow)
        addon.response(flow)

    run(test, tmp_path, sse_redact_extra=["x-tenant"])
    assert "SECRET" not in captures(tmp_path)[0].read_text()
    run(test, tmp_path / "plain", sse_redact=False)
    assert "sk-SECRET" in captures(tmp_path / "plain")[0].read_text()


def _rendered(flow: Any) -> tuple[str | None, str]:
    """The view mitmproxy picks ("auto") for the flow's response body, and its text, through the
    public API of the installed mitmproxy: `prettify_message` (12) or `get_message_content_view` (10/11)."""
    from mitmproxy import contentviews

    if hasattr(contentviews, "prettify_message"):
        result = contentviews.prettify_message(flow.response, flow)
        return result.view_name, result.text
    description, lines, error = contentviews.get_message_content_view("auto", flow.response, flow)
    assert error is None
    return description, "\n".join("".join(text for _, text in line) for line in lines)


def test_content_view_shows_events(tmp_path: Path) -> None:
    """The addon's load registers the view; mitmproxy's "auto" then picks it for an event stream,
    and only for one, on the mitmproxy installed (11 and 12 have different contentview APIs)."""
    from sse_inspect.mitm_view import NAME

    body = b": keep-alive\n\nid: 7\nevent: delta\ndata: a\ndata: b\n\ndata: tail"

    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow("text/event-stream; charset=utf-8")
        flow.response.content = body
        view, text = _rendered(flow)
        assert view == NAME
        assert text.startswith(": keep-alive\n#0 delta id=7 @14\n    a\n    b\n! unterminated-event: "), text
        flow = sse_flow("application/json")
        flow.response.content = b'{"data": "a"}'
        view, text = _rendered(flow)
        assert view != NAME and "#0" not in text

    run(test, tmp_path)


def test_content_view_shows_an_aws_event_stream_as_its_messages(tmp_path: Path) -> None:
    """Bedrock's binary event stream, which mitmproxy shows as hex, reads as its messages, and a bad CRC shows."""
    from sse_inspect._eventstream import encode_message
    from sse_inspect.mitm_view import NAME

    headers = {":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event"}
    good = encode_message(headers, b'{"delta":{"text":"Hi"}}')
    bad = good[:-1] + bytes([good[-1] ^ 0xFF])

    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow("application/vnd.amazon.eventstream")
        flow.response.content = good + bad
        view, text = _rendered(flow)
        assert view == NAME
        assert text.startswith('#0 contentBlockDelta @0\n    {"delta":{"text":"Hi"}}\n'), text
        assert "! bad-message-crc: " in text and f"#1 contentBlockDelta @{len(good)}" in text

    run(test, tmp_path)


def test_a_flow_read_from_a_file_keeps_its_body_and_is_not_recorded(tmp_path: Path) -> None:
    """`mitmdump -r flows` runs the hooks on flows whose body is already there: nothing streams, so
    there is nothing to record, and the body the views show must stay (not the empty stream's)."""
    body = b"data: a\n\n"

    def test(addon: SSECapture, tctx: Any) -> None:
        flow = sse_flow()
        flow.response.content = body
        addon.responseheaders(flow)
        assert not flow.response.stream
        addon.response(flow)
        assert flow.response.raw_content == body

    run(test, tmp_path)
    assert captures(tmp_path) == []


@pytest.mark.e2e
def test_mitmdump_shows_a_saved_event_stream_with_the_view(tmp_path: Path) -> None:
    """As a user opens a saved flow: `mitmdump -nr flows --flow-detail 4 -s addons/sse_capture.py`
    prints the response body through the view mitmproxy picks, ours, on the mitmproxy installed."""
    from mitmproxy import io

    mitmdump = Path(sys.executable).with_name("mitmdump")
    if not mitmdump.exists():
        pytest.skip(f"no mitmdump next to {sys.executable}")
    flow = sse_flow()
    flow.response.content = b": ping\n\nid: 1\nevent: delta\ndata: hel\ndata: lo\n\ndata: [DONE]\n\n"
    flows = tmp_path / "flows.mitm"
    with flows.open("wb") as f:
        io.FlowWriter(f).add(flow)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [str(mitmdump), "-nr", str(flows), "--flow-detail", "4", "--set", f"confdir={tmp_path / 'conf'}",
         "-s", str(ROOT / "addons" / "sse_capture.py"), "--set", f"sse_capture_dir={tmp_path / 'caps'}"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = "    : ping\n    #0 delta id=1 @8\n        hel\n        lo\n    #1 message id=1 @47\n"
    assert shown in done.stdout, done.stdout
    assert captures(tmp_path) == []


def test_content_view_is_registered_once_and_survives_a_reload(tmp_path: Path) -> None:
    """A script reload runs `load` again: the view must not be added twice (11 raises on a
    duplicate name) nor be lost."""
    from mitmproxy import contentviews

    from sse_inspect import mitm_view

    def names() -> list[str]:
        if hasattr(contentviews, "registry"):
            return [view.name for view in contentviews.registry.values()]
        return [view.name for view in contentviews.views]

    def test(addon: SSECapture, tctx: Any) -> None:
        mitm_view.register()
        mitm_view.register()
        assert names().count(mitm_view.NAME) == 1

    run(test, tmp_path)


# -- the addon: its options and its reading of mitmproxy's errors ---------------------------------------



def _errored_flow(message: str, *, client: ConnectionState, server: ConnectionState) -> Any:
    flow = tflow.tflow(resp=True)
    flow.error = Error(message)
    flow.client_conn.state = client
    flow.server_conn.state = server
    return flow


def test_an_http2_connection_closed_by_the_client_is_the_client_s_doing() -> None:
    """Item 9: mitmproxy says "peer closed connection" for either side of an HTTP/2 connection."""
    gone, both = ConnectionState.CLOSED, ConnectionState.CAN_READ | ConnectionState.CAN_WRITE
    client = flow_error(_errored_flow("peer closed connection", client=gone, server=gone))
    assert end_kind(client) == "client-disconnected" and "peer closed connection" in client
    server = flow_error(_errored_flow("peer closed connection", client=both, server=gone))
    assert (server, end_kind(server)) == ("peer closed connection", "server-disconnected")
    other = flow_error(_errored_flow("Connection reset by peer", client=gone, server=gone))
    assert other == "Connection reset by peer"


def test_the_attach_limit_option(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    addon = SSECapture()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, sse_capture_dir=str(tmp_path))
        assert addon._attach_limit() == 4 << 20, "4 MiB by default"
        tctx.configure(addon, sse_capture_attach_limit="512k")
        assert addon._attach_limit() == 512 << 10
        tctx.configure(addon, sse_capture_attach_body=False)
        assert addon._attach_limit() == 0
        with pytest.raises(exceptions.OptionsError, match="sse_capture_attach_limit"):
            tctx.configure(addon, sse_capture_attach_limit="lots")


def test_a_cut_body_is_said_so_in_the_flow(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """mitmweb shows the head of a long stream and a comment saying where the whole of it is."""
    addon = SSECapture()

    async def main() -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, sse_capture_dir=str(tmp_path), sse_capture_attach_limit="10")
            flow = tflow.tflow(resp=True)
            flow.response.headers["content-type"] = "text/event-stream"
            flow.response.raw_content = None
            addon.responseheaders(flow)
            for k in range(3):
                flow.response.stream(f"data: {k}\n\n".encode())
            await asyncio.sleep(0)
            with caplog.at_level(logging.INFO):
                addon.response(flow)
            assert flow.response.raw_content == b"data: 0\n\nd"
            assert "body cut to its first 10 of 27 bytes" in flow.comment
            assert str(tmp_path) in flow.comment
            assert any("body cut" in r.getMessage() for r in caplog.records)

    asyncio.run(main())


def test_the_folder_warning_reaches_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    addon = SSECapture()
    with caplog.at_level(logging.WARNING), taddons.context(addon) as tctx:
        tctx.configure(addon, sse_capture_dir=str(shared))
    assert any("readable by other users" in r.getMessage() for r in caplog.records)
