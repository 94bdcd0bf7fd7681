"""An "Server-Sent Events" content view for mitmproxy: events instead of raw bytes.

mitmproxy has no view for `text/event-stream` (its "auto" picks Raw) nor for AWS's binary
`application/vnd.amazon.eventstream` (Bedrock; shown as hex). This one shows each event's (each
message's) type, id and data, comments, and what the parser noticed. mitmproxy 12 takes
a `Contentview` (prettify + render_priority) into its registry; 10/11 take a `View` subclass.
"""

from __future__ import annotations

from typing import Any

from mitmproxy import contentviews

from ._events import Comment, Event
from ._framing import BodyFramer

__all__ = ["describe_event_stream", "register", "unregister"]

NAME = "Server-Sent Events"


def describe_event_stream(data: bytes, content_type: str | None = "text/event-stream") -> str:
    """The body as a readable list of events (an AWS event stream's messages too), comments and notices."""
    parser = BodyFramer(content_type)
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


_SHOWN = ("text/event-stream", "application/vnd.amazon.eventstream")
"""What the view is chosen for: an event stream, and AWS's binary one (mitmproxy shows its bytes as hex)."""


def _priority(content_type: str | None) -> float:
    return 2.0 if (content_type or "").split(";")[0].strip().lower() in _SHOWN else 0.0


if hasattr(contentviews, "Contentview"):  # mitmproxy >= 12: the Contentview API and its registry

    # The ignores are for type-checking against the other mitmproxy, which lacks these names.
    class _View(contentviews.Contentview):  # type: ignore[name-defined,misc]
        @property
        def name(self) -> str:
            return NAME

        @property
        def syntax_highlight(self) -> Any:
            return "none"

        def prettify(self, data: bytes, metadata: Any) -> str:
            return describe_event_stream(data, getattr(metadata, "content_type", None))

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return _priority(getattr(metadata, "content_type", None))

    _view: Any = _View()

    def register() -> None:
        """Add the view to mitmproxy's views (once: a script reload finds it there)."""
        if contentviews.registry.get(NAME.lower()) is not _view:  # type: ignore[attr-defined]
            contentviews.add(_view)

    def unregister() -> None:
        """Nothing to do: mitmproxy 12's registry has no public way to remove a view. It stays
        until the process ends, chosen only for text/event-stream bodies."""

else:  # mitmproxy 10/11: View subclasses in a list

    class _LegacyView(contentviews.View):
        name = NAME

        def __call__(self, data: bytes, **metadata: Any) -> Any:
            return NAME, contentviews.base.format_text(describe_event_stream(data, metadata.get("content_type")))

        def render_priority(self, data: bytes, **metadata: Any) -> float:
            return _priority(metadata.get("content_type"))

    _view = _LegacyView()

    def register() -> None:
        """Add the view (once) to mitmproxy's views."""
        if all(v.name != NAME for v in contentviews.views):  # type: ignore[attr-defined]
            contentviews.add(_view)

    def unregister() -> None:
        """Take the view out of mitmproxy's views again."""
        if _view in contentviews.views:  # type: ignore[attr-defined]
            contentviews.remove(_view)
