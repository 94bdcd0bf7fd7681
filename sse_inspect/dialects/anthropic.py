"""Anthropic Messages streams (`/v1/messages`), also served by Vertex AI.

Named events whose JSON `type` repeats the name; content arrives in indexed
blocks and the stream ends with `message_stop` (research/providers.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import Channel, as_dict, as_int, as_str, compact_json, event_kind
from ._base import JSON, Dialect, event, json_body
from ._detect import STRONG, WEAK, confidence, payloads, url_path
from ._envelope import EnvelopeCache

__all__ = ["Anthropic"]

_KINDS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)

_DELTA_PLACES = {key: lambda payload, key=key: (payload["delta"], key) for key in ("text", "thinking", "partial_json")}
"""Where a `content_block_delta` payload holds its piece, by the piece's key."""
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""The error `type` of each HTTP status the API documents (https://docs.anthropic.com/en/api/errors);
another 4xx is sent as `invalid_request_error`, another 5xx as `api_error`."""
_MESSAGES = {  # as the API words them: see docs/faults.md, `status`
    "authentication_error": "invalid x-api-key",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


class _MessagesReader(EnvelopeCache):
    """Learns the envelope of `content_block_delta` events: each block's text, thinking or tool-input pieces."""

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return kind == "message_stop"

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        state = self.choice()
        if kind == "message_start":
            message = as_dict(payload.get("message"))
            self.identify(model=message.get("model"), response_id=message.get("id"))
            self._usage(message.get("usage"))
        elif kind == "content_block_start":
            block = as_dict(payload.get("content_block"))
            if as_str(block.get("type")).endswith("tool_use"):
                call = state.tools.get(("block", as_int(payload.get("index"))))
                named = call.update(id=block.get("id"), name=block.get("name"))
                start = block.get("input")
                if (isinstance(start, dict) and call.fallback(compact_json(start))) or named:
                    self.mark()
            self.add(state.text, block.get("text"))
            self.add(state.reasoning, block.get("thinking"))
        elif kind == "content_block_delta":
            delta = as_dict(payload.get("delta"))
            delta_type = delta.get("type")
            if delta_type == "text_delta":
                self._delta(delta, "text", state.text)
            elif delta_type == "thinking_delta":
                self._delta(delta, "thinking", state.reasoning)
            elif delta_type == "input_json_delta":  # a block's call is found by its index, always the same one
                self._delta(delta, "partial_json", state.tools.get(("block", as_int(payload.get("index")))).parts)
        elif kind == "message_delta":
            state.finish(as_dict(payload.get("delta")).get("stop_reason"))
            self._usage(payload.get("usage"))

    def _delta(self, delta: dict[str, Any], key: str, channel: Channel) -> None:
        piece = as_str(delta.get(key))
        if self.add(channel, piece):
            self.learn(piece, channel, _DELTA_PLACES[key])

    def _usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            self.usage = {**(self.usage or {}), **usage}


class Anthropic(Dialect):
    """Rebuilds text and thinking blocks, and `*tool_use` blocks as tool calls.

    Usage is `message_start`'s usage updated with each `message_delta`'s (cumulative
    counts, which older streams sent without the input side). A `tool_use` block
    that streamed no `input_json_delta` text gets its start `input`, re-serialised compactly.
    """

    name = "anthropic"
    title = "Anthropic Messages"
    end_marker = "event: message_stop"
    sends_done = False
    end_closes_stream = True
    reader = _MessagesReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        content = 0
        for event, payload in payloads(events):
            kind = event_kind(event, payload)
            if kind in _KINDS:
                content = STRONG
                break
            if kind == "ping":
                content = WEAK
        return confidence(content, url_path(url).endswith("/messages"))

    def fault_error(self, events_sent: int) -> bytes:
        """`event: error` with an `overloaded_error`, as the API sends one after the 200 (the payload of
        https://github.com/anthropics/anthropic-sdk-typescript/issues/346, research/providers.md §3);
        the connection then closes without `message_stop`. The SDKs raise on the event's name."""
        error = {"details": None, "type": "overloaded_error", "message": "Overloaded"}
        return event({"type": "error", "error": error}, name="error")

    def error_body(self, status: int) -> tuple[str, bytes]:
        """`{"type": "error", "error": {"type", "message"}}`, compact, the type by the status (`_ERROR_TYPES`):
        529 `overloaded_error` with the message "Overloaded", as in the in-band error."""
        error_type = _ERROR_TYPES.get(status) or ("invalid_request_error" if status < 500 else "api_error")
        message = _MESSAGES.get(error_type) or error_type.replace("_", " ").capitalize()
        return JSON, json_body({"type": "error", "error": {"type": error_type, "message": message}})
