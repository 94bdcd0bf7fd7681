"""Cohere v2 Chat streams (`/v2/chat`).

Named kebab-case events whose JSON `type` repeats the name, ended by
`message-end` (research/providers.md §6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import as_dict, as_int, as_str, event_kind
from ._answer import InbandError
from ._base import JSON, Dialect, Reader, event, json_body, phrase
from ._detect import STRONG, confidence, payloads, url_path

__all__ = ["Cohere"]

_KINDS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)


class _CohereReader(Reader):
    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return kind == "message-end"

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        state = self.choice()
        delta = as_dict(payload.get("delta"))
        message = as_dict(delta.get("message"))
        if kind == "message-start":
            self.identify(response_id=payload.get("id"))
        elif kind in ("content-start", "content-delta"):
            content = as_dict(message.get("content"))
            self.add(state.text, content.get("text"))
            self.add(state.reasoning, content.get("thinking"))
        elif kind == "tool-plan-delta":
            self.add(state.plan, message.get("tool_plan"))
        elif kind in ("tool-call-start", "tool-call-delta"):
            index = as_int(payload.get("index"))
            tools = state.tools
            if index is not None:
                call = tools.get(("index", index))
            else:
                call = tools.new() if kind == "tool-call-start" or tools.last is None else tools.last
            fragment = as_dict(message.get("tool_calls"))
            function = as_dict(fragment.get("function"))
            if call.update(id=fragment.get("id"), name=function.get("name"), arguments=function.get("arguments")):
                self.mark()
        elif kind == "message-end":
            reason = as_str(delta.get("finish_reason"))
            state.finish(reason)
            if isinstance(delta.get("usage"), dict):
                self.usage = delta["usage"]
            message_text = as_str(delta.get("error"))
            if message_text or reason.startswith("ERROR"):
                self.errors.append(
                    InbandError(
                        message=message_text or f"finish_reason {reason}", event_index=event.index, code=reason or None
                    )
                )


class Cohere(Dialect):
    """Rebuilds text and thinking content, the `tool_plan` (into `Choice.plan`) and tool calls by `index`.

    A `message-end` whose `finish_reason` starts with ERROR, or that carries an
    `error` string, is an in-band error.
    """

    name = "cohere"
    title = "Cohere Chat v2"
    end_marker = "event: message-end"
    sends_done = False
    end_closes_stream = True
    reader = _CohereReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        strong = any(event_kind(event, payload) in _KINDS for event, payload in payloads(events))
        return confidence(STRONG if strong else 0, url_path(url).endswith("/v2/chat"))

    def fault_error(self, events_sent: int) -> bytes:
        """A `message-end` whose delta carries an `error` string and `finish_reason` ERROR: the place
        Cohere's own schema gives a failed stream (the SDK's `ChatMessageEndEventDelta` has `error`,
        `finish_reason` and `usage`; ERROR is one of its finish reasons, and vercel/ai maps it to
        "error"). No capture of one was found (research/providers.md §6), so this is the schema's
        shape, not a recorded one. It is the end marker too: the stream ends as a whole one does,
        its answer marked by the error (`check` reports `error-event`), not cut."""
        delta = {"error": "internal server error", "finish_reason": "ERROR"}
        return event({"type": "message-end", "delta": delta}, name="message-end")

    def error_body(self, status: int) -> tuple[str, bytes]:
        """Cohere's error response: a JSON object whose `message` says what went wrong (the v2 API's
        errors have `id` and `message`; the SDK raises its status's error class with the body)."""
        return JSON, json_body({"message": phrase(status).lower()})
