"""Detection helpers: scores for what a stream's first events and its URL say of its grammar."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._events import Event
from .._fastjson import loads
from ._accumulate import as_dict

__all__ = ["SHAPE", "STRONG", "WEAK", "confidence", "payloads", "url_path"]

STRONG = 80
"""Detection points for content only this dialect sends."""
WEAK = 30
"""Detection points for content this dialect is likely, not certain, to send."""
SHAPE = 50
"""Detection points for events whose shape fits a grammar of no one provider (a stream of plain
text): more than a hint plus a URL, less than any provider's own content."""
_URL_POINTS = 15
"""Detection points for a matching URL: less than any content hint plus a URL elsewhere."""


def payloads(events: Sequence[Event]) -> Iterable[tuple[Event, dict[str, Any]]]:
    """Each event with its data as a JSON object ({} when it is not one), for detection."""
    for event in events:
        try:
            value = loads(event.data)
        except (ValueError, RecursionError):
            value = None
        yield event, as_dict(value)


def url_path(url: str | None) -> str:
    """The lower-cased path of `url` without a trailing slash ("" when there is no URL)."""
    if not url:
        return ""
    # urlsplit(url).path, read here for the plain http(s) URL of almost every capture: urllib.parse (and
    # the ipaddress it imports) take 2 ms to load, at every start of `text`. Anything else (another
    # scheme, brackets, controls, non-ASCII: what urlsplit strips, checks or rejects) goes to urlsplit.
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("http", "https") and url.isascii() and url.isprintable():
        host_end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
        if "[" not in rest[:host_end] and "]" not in rest[:host_end]:
            return rest[host_end:].partition("#")[0].partition("?")[0].lower().rstrip("/")
    from urllib.parse import urlsplit

    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    return path.lower().rstrip("/")


def confidence(content: int, url_matches: bool) -> int:
    """A detection score: content points, plus a few when the URL fits."""
    return min(100, content + (_URL_POINTS if url_matches else 0))
