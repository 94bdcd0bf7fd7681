"""The recorder against hostile or oversized traffic, through a real mitmdump (issue 17): a huge
stream leaves the proxy flat, secrets in bodies and paths never reach the disk, and an HTTP/2 client
that closes its connection is recorded as the client's doing."""

from __future__ import annotations

import json
import threading
import socket
import ssl
from pathlib import Path

import pytest

pytest.importorskip("mitmproxy")

import h2.connection  # noqa: E402
import h2.events  # noqa: E402

from sse_inspect import check_capture  # noqa: E402

from .recording_fixtures import TIMEOUT, StartProxy, chat_events  # noqa: E402
from .h2_server import H2Server  # noqa: E402
from .sse_server import SSEServer, Script, Write  # noqa: E402

pytestmark = pytest.mark.e2e

KEY = "sk-proj-" + "Ab3dEf6hIj9lMn2pQr5tUv8x" * 2
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
KEY_IN_PATH = "sk-" + "Zy9xWv8uTs7rQp6oNm5lKj4i"


def _peak_rss_mb(pid: int) -> float:
    """The peak resident memory of process `pid` so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def test_a_long_stream_leaves_mitmdump_flat(start_proxy: StartProxy, server: SSEServer) -> None:
    """160 MiB through mitmdump with the default options: every byte reaches the client and the
    capture, and mitmdump's peak memory stays far below the stream's size (it used to keep the
    whole body to attach to the flow: 74 MB + the stream). The flow gets the head and a note."""
    event = b"data: " + b"0123456789abcdef" * 65535 + b"\n\n"  # about 1 MiB
    count = 160
    server.routes["/big"] = Script([Write(event)] * count)
    proxy = start_proxy()

    received = 0
    with proxy.client() as client, client.stream("GET", proxy.target(server.url("/big"))) as response:
        for data in response.iter_raw():
            received += len(data)
    assert received == len(event) * count

    [capture] = proxy.captures(1, timeout=60.0)
    assert capture.end is not None and capture.end.kind == "complete"
    assert sum(len(c.data) for c in capture.chunks) == len(event) * count
    peak = _peak_rss_mb(proxy.process.pid)
    print(f"mitmdump peak RSS {peak:.0f} MB for {received / 2**20:.0f} MiB")  # shown with -s, for the record
    assert peak < 150, f"mitmdump peaked at {peak:.0f} MB for a {received / 2**20:.0f} MiB stream"
    assert "body cut to its first 4,194,304 of" in proxy.log()


def test_secrets_in_bodies_headers_and_the_path_never_reach_the_disk(start_proxy: StartProxy, server: SSEServer) -> None:
    """A key in the URL path, credential headers and query parameters, a key, a JWT and an `api_key`
    field in the request body, and a key cut in two by the server's writes: the client gets every
    byte as sent, while the capture file (its name included) holds none of them, keeps one chunk
    per write, and `check` finds nothing left."""
    path = f"/secret/{KEY_IN_PATH}/x"
    writes = [
        f'data: {{"text": "your key is {KEY[:20]}'.encode(),
        f'{KEY[20:]} ok"}}\n\n'.encode(),
        f'data: {{"token": "{JWT}"}}\n\n'.encode(),
        b"data: [DONE]\n\n",
    ]
    server.routes[path] = Script([Write(w) for w in writes])
    proxy = start_proxy(f"reverse:{server.url('')}")
    body = json.dumps({"api_key": "plain-credential-value", "auth": f"Bearer {KEY}", "jwt": JWT}).encode()
    headers = {"Ocp-Apim-Subscription-Key": "azure-sub-key-1", "X-Auth-Token": "auth-token-2"}

    with proxy.client() as client:
        url = proxy.target(server.url(path)) + "?sig=sas-signature-3&api-key=azure-key-4&q=ok"
        with client.stream("POST", url, content=body, headers=headers) as response:
            assert b"".join(response.iter_raw()) == b"".join(writes)

    [capture] = proxy.captures(1)
    [file] = proxy.capture_files()
    text = file.read_text()
    secrets = [KEY, KEY[:20], KEY[20:], JWT, KEY_IN_PATH, "plain-credential-value", "azure-sub-key-1",
               "auth-token-2", "sas-signature-3", "azure-key-4"]  # fmt: skip
    assert [s for s in secrets if s in text] == []
    assert "sk-" not in file.name and "REDACTED" in file.name
    assert len(capture.chunks) == len(writes)
    assert capture.body == (
        b'data: {"text": "your key is [REDACTED] ok"}\n\ndata: {"token": "[REDACTED]"}\n\ndata: [DONE]\n\n'
    )
    assert capture.request is not None and "q=ok" in capture.request.url
    assert [f.code for f in check_capture(capture).findings if f.code == "secret-in-capture"] == []


def _h2_read_then_close(port: int, ca: Path, path: str, want: int | None) -> bytes:
    """GET `path` over HTTP/2 from 127.0.0.1:`port`, read `want` body bytes (None: until the stream
    ends or is reset), then close the TCP connection: no RST_STREAM, no GOAWAY, the way a killed
    client or a dropped laptop leaves."""
    tls = ssl.create_default_context(cafile=str(ca))
    tls.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT.read)
    with tls.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        assert sock.selected_alpn_protocol() == "h2"
        conn = h2.connection.H2Connection()
        conn.initiate_connection()
        request = [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", f"127.0.0.1:{port}")]
        conn.send_headers(1, request, end_stream=True)
        sock.sendall(conn.data_to_send())
        got, ended = b"", False
        while not ended and (want is None or len(got) < want):
            data = sock.recv(65536)
            assert data, f"the proxy closed after {got!r}"
            for event in conn.receive_data(data):
                ended = ended or isinstance(event, h2.events.StreamEnded | h2.events.StreamReset)
                if isinstance(event, h2.events.DataReceived):
                    got += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            sock.sendall(conn.data_to_send())
    return got


def test_an_http2_client_closing_its_connection_is_client_disconnected(
    start_proxy: StartProxy, server: SSEServer
) -> None:
    """mitmproxy words any closed HTTP/2 connection "peer closed connection"; when it is the
    client's, the capture must say so, or `check` blames the server (the hop that closed)."""
    events = chat_events("Hel", "lo")
    server.routes["/s"] = Script([Write(events[0]), Write(events[1], gate=threading.Event())])
    proxy = start_proxy(f"reverse:{server.url('')}")

    got = _h2_read_then_close(proxy.port, proxy.confdir / "mitmproxy-ca-cert.pem", "/s", len(events[0]))

    assert got == events[0]
    [capture] = proxy.captures(1)
    assert capture.end is not None and capture.end.kind == "client-disconnected", capture.end
    assert [c.data for c in capture.chunks] == [events[0]]


def test_an_http2_server_closing_its_connection_is_still_server_disconnected(
    start_proxy: StartProxy, tmp_path: Path
) -> None:
    """The other side of the same words: an HTTP/2 upstream that closes its connection mid-answer."""
    from mitmproxy.certs import CertStore

    events = chat_events("Hel", "lo")
    CertStore.from_store(tmp_path / "upstream", "upstream", 2048)
    with H2Server(events[:1], tmp_path / "upstream" / "upstream-ca.pem", cut=True) as upstream:
        proxy = start_proxy(f"reverse:{upstream.url('')}", ssl_insecure=True)
        got = _h2_read_then_close(proxy.port, proxy.confdir / "mitmproxy-ca-cert.pem", "/s", None)
        [capture] = proxy.captures(1)

    assert got == events[0]
    assert capture.end is not None and capture.end.kind == "server-disconnected", capture.end
    assert [c.data for c in capture.chunks] == [events[0]]
