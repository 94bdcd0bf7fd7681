"""OpenAI Responses API streams (`/v1/responses`), also served by Azure.

Named events (`response.*`) with a `sequence_number` each and no `[DONE]`; the
final status and usage live only in the terminal event (research/providers.md §2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import PendingCall, as_dict, as_int, as_str, event_kind, inband_error
from ._base import Dialect, Reader, event
from ._detect import STRONG, confidence, payloads, url_path
from .openai_chat import openai_error_body

__all__ = ["OpenAIResponses"]

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}
"""Output item types that are tool calls, and the field holding their whole arguments."""
_ARGUMENT_DELTAS = {
    "response.function_call_arguments.delta": "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta": "response.custom_tool_call_input.done",
}
_CHANNELS = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "refusal",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
}


class _ResponsesReader(Reader):
    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._next_sequence = 0

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return kind in _TERMINAL

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        self._sequence(payload.get("sequence_number"))
        state = self.choice()
        if kind in _CHANNELS:
            self.add(getattr(state, _CHANNELS[kind]), payload.get("delta"))
        elif kind in _ARGUMENT_DELTAS:
            if self._call(payload).update(arguments=payload.get("delta")):
                self.mark()
        elif kind in _ARGUMENT_DELTAS.values():
            if self._call(payload).fallback(payload.get("arguments", payload.get("input"))):
                self.mark()
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(payload)
        elif kind.startswith("response."):
            self._response(event, kind, as_dict(payload.get("response")))

    def _call(self, payload: dict[str, Any], item_id: object = None) -> PendingCall:
        """The call an event addresses, by item id, else by output index."""
        item_id = as_str(item_id or payload.get("item_id"))
        output_index = as_int(payload.get("output_index"))
        return self.choice().tools.get(
            ("item", item_id) if item_id else None,
            ("output", output_index) if output_index is not None else None,
        )

    def _item(self, payload: dict[str, Any]) -> None:
        item = as_dict(payload.get("item"))
        field = _CALL_ITEMS.get(as_str(item.get("type")))
        if field is None:
            return
        call = self._call(payload, item.get("id"))
        named = call.update(id=item.get("call_id") or item.get("id"), name=item.get("name"))
        if call.fallback(item.get(field)) or named:
            self.mark()

    def _response(self, event: Event, kind: str, response: dict[str, Any]) -> None:
        self.identify(model=response.get("model"), response_id=response.get("id"))
        status = as_str(response.get("status"))
        if kind in _TERMINAL:
            status = status or kind.removeprefix("response.")
            self.choice().finish(status)
        if status:
            self.extra["status"] = status
        reason = as_dict(response.get("incomplete_details")).get("reason")
        if isinstance(reason, str) and reason:
            self.extra["incomplete_reason"] = reason
        if isinstance(response.get("usage"), dict):
            self.usage = response["usage"]
        error = inband_error(response.get("error"), event.index)
        if error is not None and not self.errors:
            self.errors.append(error)

    def _sequence(self, number: object) -> None:
        number = as_int(number)
        if number is None:
            return
        if number > self._next_sequence:
            self.extra.setdefault("sequence_gap", self._next_sequence)
        self._next_sequence = max(self._next_sequence, number + 1)


class OpenAIResponses(Dialect):
    """Rebuilds one choice whose finish reason is the final response status.

    `extra`: `status` (the last one seen), `incomplete_reason`, and `sequence_gap`,
    the first missing `sequence_number` (numbers start at 0 and go up by 1).
    An `error` event is an in-band error; `response.failed` adds its
    `response.error` only when no `error` event already reported one.
    """

    name = "openai-responses"
    title = "OpenAI Responses"
    end_marker = "event: response.completed/incomplete/failed"
    sends_done = False
    end_closes_stream = True
    reader = _ResponsesReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        strong = any(event_kind(event, payload).startswith("response.") for event, payload in payloads(events))
        return confidence(STRONG if strong else 0, url_path(url).endswith("/responses"))

    def fault_error(self, events_sent: int) -> bytes:
        """An `error` event, then `response.failed` whose `response.error` repeats the code: the pair
        the API sends when a response fails after the 200 (the corpus file
        openai-responses-error-insufficient-quota.sse, recorded from the API; an overload with this
        code and type in https://github.com/Wei-Shaw/sub2api/issues/6631 and
        https://github.com/tontinton/maki/pull/897). `sequence_number` goes on from `events_sent`:
        the stream numbers its events from 0.

        The error's fields are in an `error` object, as both recordings have them. The API reference's
        `ResponseErrorEvent` puts `code`, `message` and `param` at the top level instead; clients meet
        the recorded shape, and openai-python raises `APIError` on it (an `error` member), where it
        would hand the documented one to the caller as an event.
        """
        code, message = "server_is_overloaded", "Our servers are currently overloaded. Please try again later."
        error = {"type": "service_unavailable_error", "code": code, "message": message, "param": None}
        failed: dict[str, Any] = {
            "id": "resp_fault",
            "object": "response",
            "status": "failed",
            "error": {"code": code, "message": message},
            "incomplete_details": None,
            "output": [],
            "usage": None,
        }
        return event({"type": "error", "sequence_number": events_sent, "error": error}, name="error") + event(
            {"type": "response.failed", "sequence_number": events_sent + 1, "response": failed},
            name="response.failed",
        )

    def error_body(self, status: int) -> tuple[str, bytes]:
        return openai_error_body(status)
