"""A loopback HTTP/2 server over TLS whose DATA frames are scripted, for the recording tests that need
an HTTP/2 upstream (tests/sse_server.py speaks HTTP/1.x only).

It answers every request of the connections it accepts with one response: a 200 event-stream
HEADERS frame, one DATA frame per scripted write, then an empty DATA frame carrying END_STREAM,
the way many HTTP/2 servers end a streamed body (and the case where mitmproxy ≤ 11 calls a
stream function with b"" twice). Stdlib sockets and ssl plus the `h2` package (a mitmproxy
dependency); one thread; the TLS handshake bounded by `io_timeout`; `stop()` ends it within `_POLL` s.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import h2.config
import h2.connection
import h2.events

_POLL = 0.05
"""How often an open connection checks for `stop()` (seconds)."""


class H2Server:
    """Serves `writes` (as DATA frames) for any path on https://127.0.0.1:`port`, with the certificate
    and key of `cert_chain` (one PEM file holding both)."""

    def __init__(
        self, writes: Sequence[bytes], cert_chain: Path, *, io_timeout: float = 10.0, cut: bool = False
    ) -> None:
        self.writes = list(writes)
        self.cut = cut
        """Close the TCP connection after the writes instead of ending the stream: a server gone mid-answer."""
        self.io_timeout = io_timeout
        self.requests: list[dict[bytes, bytes]] = []
        """The headers (pseudo-headers included) of each request served, in order."""
        self.alpn: list[str | None] = []
        """The protocol negotiated on each accepted connection."""
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(cert_chain)
        self._tls.set_alpn_protocols(["h2"])
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="h2-server", daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.io_timeout)
        self._listener.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            raw.settimeout(self.io_timeout)
            try:
                with self._tls.wrap_socket(raw, server_side=True) as conn:
                    self.alpn.append(conn.selected_alpn_protocol())
                    conn.settimeout(_POLL)
                    self._connection(conn)
            except (OSError, ssl.SSLError):
                continue

    def _connection(self, conn: ssl.SSLSocket) -> None:
        h2conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
        h2conn.initiate_connection()
        conn.sendall(h2conn.data_to_send())
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return
            for event in h2conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    self.requests.append(dict(event.headers))
                    headers = [(b":status", b"200"), (b"content-type", b"text/event-stream")]
                    h2conn.send_headers(event.stream_id, headers)
                    for write in self.writes:
                        h2conn.send_data(event.stream_id, write)
                    if self.cut:
                        conn.sendall(h2conn.data_to_send())
                        self._close_gracefully(conn)
                        return
                    h2conn.send_data(event.stream_id, b"", end_stream=True)
            conn.sendall(h2conn.data_to_send())

    def _close_gracefully(self, conn: ssl.SSLSocket) -> None:
        """End the connection with a FIN, not a RST: closing a socket whose receive buffer still holds
        bytes (the client's SETTINGS ack, a WINDOW_UPDATE) sends a RST, and a RST makes the peer's kernel
        drop what it has not yet read, the response among it, when the peer is slow (a busy machine).
        So: no more writes, then read (and drop) until the peer closes, or the I/O timeout."""
        conn.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + self.io_timeout
        while time.monotonic() < deadline:
            try:
                if not conn.recv(65536):
                    return
            except TimeoutError:
                continue
            except (OSError, ssl.SSLError):
                return
