"""An "Server-Sent Events" content view for mitmproxy: events instead of raw bytes.

mitmproxy has no view for `text/event-stream` (its "auto" picks Raw). This one shows
each event's type, id and data, comments, and what the parser noticed. mitmproxy 10/11
take a `View` subclass; 12 takes a `Contentview` (prettify + render_priority).
"""

from __future__ import annotations

from typing import Any

from mitmproxy import contentviews

from ._events import Comment, Event
from ._parser import EventStreamParser

__all__ = ["describe_event_stream", "register", "unregister"]

NAME = "Server-Sent Events"


def describe_event_stream(data: bytes) -> str:
    """The body as a readable list of events, comments and notices."""
    parser = EventStreamParser()
    lines = []
    for item in [*parser.feed_iter(data), *parser.close()]:
        if isinstance(item, Event):
            head = f"#{item.index} {item.type}" + (f" id={item.id}" if item.id else "") + f" @{item.start}"
            lines.append(head)
            lines += ["    " + line for line in item.data.split("\n")]
        elif isinstance(item, Comment):
            lines.append(f": {item.text.strip()}")
        else:
            lines.append(f"! {item.kind}: {item.message}")
    return "\n".join(lines)


def _priority(content_type: str | None) -> float:
    return 2.0 if (content_type or "").split(";")[0].strip().lower() == "text/event-stream" else 0.0


if hasattr(contentviews, "Contentview"):  # mitmproxy >= 12

    class _View:
        name = NAME
        syntax_highlight = "none"

        def prettify(self, data: bytes, metadata: Any) -> str:
            return describe_event_stream(data)

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return _priority(getattr(metadata, "content_type", None))

else:

    class _View(contentviews.View):  # type: ignore[no-redef]
        name = NAME

        def __call__(self, data: bytes, **metadata: Any) -> Any:
            return NAME, contentviews.base.format_text(describe_event_stream(data))

        def render_priority(self, data: bytes, **metadata: Any) -> float:
            return _priority(metadata.get("content_type"))


_view = _View()


def register() -> None:
    """Add the view (once) to mitmproxy's views."""
    if all(getattr(v, "name", None) != NAME for v in getattr(contentviews, "views", [])):
        contentviews.add(_view)  # type: ignore[arg-type]  # the API this mitmproxy has


def unregister() -> None:
    if hasattr(contentviews, "remove") and _view in getattr(contentviews, "views", []):
        contentviews.remove(_view)  # type: ignore[arg-type]
