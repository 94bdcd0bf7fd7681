"""Every bound a capture meets when it is read: what a capture, which may come from anyone, can cost the
machine that opens it.

Each is generous for real streams and named once here; the modules that hold to them import them.
The edges keep their own: the replay server's `server.Limits` (timeouts, connections), the HTML
report's caps (`report.py`), the recorder's attach limit (`sse_capture_attach_limit`).
"""

from __future__ import annotations

__all__ = [
    "ARGUMENTS_CHECKED",
    "BOMB_FLOOR",
    "BOMB_RATIO",
    "CAPTURE_LINE_LIMIT",
    "MAX_HEADERS",
    "MAX_VALUES",
    "PIECE",
    "SSE_LINE_LIMIT",
    "VALUES_COUNTED_FROM",
]

PIECE = 1 << 20
"""Bytes handled at a time wherever the whole could be huge: a raw body is read, a compressed body
decodes, a HAR body is cut into chunks, an over-long capture line is skipped, and a command writes its
output in pieces of at most this size (1 MiB)."""

CAPTURE_LINE_LIMIT = 64 << 20
"""The longest line a capture file may have, in bytes with its newline (64 MiB). The recorder writes
chunks as the proxy reads them (KiBs) and imports cut bodies into PIECE chunks; only a header line with
a big request body (a prompt with images: tens of MB) is long. A longer chunk line is skipped with a
warning, without being held; a longer header line is a CaptureError."""

MAX_HEADERS = 1000
"""Request or response headers kept from a capture (HTTP servers refuse a request with more than about
100); the rest are dropped with a warning."""

MAX_VALUES = 100_000
"""JSON values a capture line may hold. A real line holds a few (a header line a few for each header);
a hostile one of millions of `[]`, `""` or `1.5` would take gigabytes as Python objects, many times its
size. Counted (by the commas and colons outside strings, stopping past the limit) before the line is
parsed, only in a line longer than VALUES_COUNTED_FROM: below that there cannot be enough to matter."""

VALUES_COUNTED_FROM = 1 << 20

BOMB_RATIO = 200
"""A body that decodes to more than this many times its wire size (past BOMB_FLOOR) is a decompression
bomb: real LLM streams compress 3-20x, deflate's ceiling is about 1030x."""

BOMB_FLOOR = 32 << 20
"""Decoded bytes below which no ratio stops the decoding."""

SSE_LINE_LIMIT = 16 << 20
"""The event-stream parser's default `line_limit` (16 MiB): a longer line, or an event whose data would
be longer, is dropped with a notice. The one departure from the WHATWG algorithm, which sets no limit."""

ARGUMENTS_CHECKED = 16 << 20
"""Tool-call arguments longer than this (in characters) are not parsed to tell whether they are JSON:
a hostile stream's 200 MB argument would take gigabytes as Python objects."""
