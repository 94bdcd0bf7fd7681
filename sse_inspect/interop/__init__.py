"""Other tools' files in and out: HAR 1.2, curl `--trace` / `--trace-ascii`, mitmproxy flow files.

Reading: `read_source` finds every exchange of such a file, detected from its content; `choose`
keeps the ones asked for (the event streams by default); `sniff` is the hook through which
`parse_capture`, and so every command, reads these files directly: the first event stream, with a
warning when there are more. Writing: `export` turns a capture into a HAR, its raw body or a curl
trace; HAR and curl trace read back exactly.
"""

from __future__ import annotations

import dataclasses
import fnmatch

from .._capture import Capture
from .._errors import CaptureError
from ._common import Found
from ._curl import looks_like_curl_trace, read_curl_trace, write_curl_trace
from ._flows import looks_like_flows, read_flows
from ._har import looks_like_har, read_har, require_body, write_har

__all__ = ["EXPORTS", "Found", "choose", "export", "read_source", "require_body", "sniff"]

EXPORTS = ("har", "raw", "curl-trace")
_NAMES = {"har": "HAR file", "curl-trace": "curl trace", "mitmproxy-flows": "mitmproxy flow file"}


def read_source(data: bytes, path: str | None = None) -> tuple[str, list[Found]] | None:
    """(format, every exchange as a capture) for a HAR, curl trace or flow file; None for anything else."""
    har = looks_like_har(data)
    if har is not None:
        return "har", read_har(har, path)
    if looks_like_curl_trace(data):
        return "curl-trace", read_curl_trace(data, path)
    if looks_like_flows(data):
        return "mitmproxy-flows", read_flows(data, path)
    return None


def choose(
    found: list[Found], *, entry: int | None = None, url: str | None = None, path: str | None = None
) -> list[Found]:
    """The exchanges asked for: #`entry`, else those whose URL holds `url` (a glob when it has * ? [),
    and of those the event streams; all of them when none is one and `url` was given or there is one."""
    if entry is not None:
        match = [f for f in found if f.index == entry]
        if not match:
            raise CaptureError(f"no exchange #{entry} to import; there are: {_labels(found)}", path=path)
        return match
    candidates = found
    if url is not None:
        glob = any(c in url for c in "*?[")
        candidates = [f for f in found if f.capture.request is not None and (
            fnmatch.fnmatchcase(f.capture.request.url, url) if glob else url in f.capture.request.url)]  # fmt: skip
        if not candidates:
            raise CaptureError(f"no exchange's URL matches {url!r}; there are: {_labels(found)}", path=path)
    streamed = [f for f in candidates if f.streamed]
    if streamed:
        return streamed
    if url is not None or len(candidates) == 1:
        return candidates
    raise CaptureError(
        f"no text/event-stream response among its {len(candidates)} exchanges: {_labels(candidates)}",
        path=path,
        hint="pick one with `sse-inspect import --entry N`",
    )


def _labels(found: list[Found], most: int = 8) -> str:
    shown = "; ".join(f.label() for f in found[:most])
    return shown + (f"; and {len(found) - most} more" if len(found) > most else "")


def sniff(data: bytes, path: str | None) -> Capture | None:
    """The first event stream of a HAR, curl trace or flow file (a warning says when there are more);
    None when `data` is none of these."""
    source = read_source(data, path)
    if source is None:
        return None
    kind, found = source
    chosen = choose(found, path=path)
    first = chosen[0]
    require_body(first, path)
    warnings = first.capture.warnings
    if len(chosen) > 1:
        warnings += (
            (
                f"this {_NAMES[kind]} holds {len(chosen)} event streams; this is the first, {first.label()} "
                "(`sse-inspect import --entry N` takes another)"
            ),
        )
    return dataclasses.replace(first.capture, path=path, warnings=warnings)


def export(capture: Capture, to: str) -> bytes:
    """`capture` as a file of format `to`: "har", "raw" (the body's exact bytes) or "curl-trace"."""
    if to == "har":
        return write_har(capture).encode("utf-8")
    if to == "curl-trace":
        return write_curl_trace(capture).encode("utf-8")
    if to == "raw":
        return capture.body
    raise ValueError(f"export format must be one of {', '.join(EXPORTS)}, not {to!r}")
