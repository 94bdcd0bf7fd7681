"""The Vercel AI SDK's UI message stream (AI SDK 5 and later: `toUIMessageStreamResponse`, read by `useChat`).

Data-only events, `data: <a UIMessageChunk as JSON>` and a blank line (the SDK's `JsonToSseTransformStream`),
with the response header `x-vercel-ai-ui-message-stream: v1`; the stream ends with `data: [DONE]`, written
when the chunk stream closes (https://ai-sdk.dev/docs/ai-sdk-ui/stream-protocol; the chunk schema is
packages/ai/src/ui-message-stream/ui-message-chunks.ts of github.com/vercel/ai). Chunks, by `type`:

    start {messageId?, messageMetadata?}          start-step / finish-step           (a step: one model call)
    text-start / text-delta {id, delta} / text-end {id}                              (a text part, by its id)
    reasoning-start / reasoning-delta {id, delta} / reasoning-end {id}
    tool-input-start {toolCallId, toolName} / tool-input-delta {toolCallId, inputTextDelta}
    tool-input-available {toolCallId, toolName, input} / tool-input-error {..., errorText}
    tool-output-available {toolCallId, output} / tool-output-error {toolCallId, errorText} / tool-output-denied
    source-url, source-document, file, data-* {id?, data, transient?}, message-metadata
    finish {finishReason?, messageMetadata?}     error {errorText}     abort {reason?}

The client (packages/ai/src/ui/process-ui-message-stream.ts) keeps each text and reasoning part by its id,
in the order the parts started, and calls `onError` on an `error` chunk; its reader
(provider-utils `parseJsonEventStream`) skips `[DONE]` and reads on to the end of the body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import DONE, as_dict, as_str, compact_json
from ._answer import Answer
from ._base import Dialect, Reader, event
from ._detect import STRONG, WEAK, confidence, payloads
from ._parts import OrderedParts

__all__ = ["VercelUI"]

_DELTAS = frozenset({"text-delta", "reasoning-delta"})
_OWN = frozenset({"start-step", "finish-step", "text-start", "text-end", "reasoning-start", "reasoning-end",
                  "tool-input-start", "tool-input-delta", "tool-input-available", "tool-output-available"})  # fmt: skip
"""Chunk types no other grammar here sends (each still checked for its id member, see `detect`)."""
_HINTS = frozenset({"start", "finish", "abort", "message-metadata"})
"""Chunk types other streams name so too: a hint."""
_ERROR = "An error occurred."
"""What the SDK sends as `errorText` unless the server's `onError` says more (`getErrorMessage`'s default
in `toUIMessageStream`: the SDK masks the provider's message)."""


class _UIReader(Reader):
    stops_at_end = False  # parseJsonEventStream skips `[DONE]` and reads on to the end of the body

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._text: OrderedParts | None = None
        self._reasoning: OrderedParts | None = None

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return event.data == DONE

    def _parts(self) -> tuple[OrderedParts, OrderedParts]:
        if self._text is None or self._reasoning is None:
            state = self.choice()
            self._text, self._reasoning = OrderedParts(state.text), OrderedParts(state.reasoning)
        return self._text, self._reasoning

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if not payload:
            return
        kind = as_str(payload.get("type"))
        text, reasoning = self._parts()
        parts = text if kind.startswith("text-") else reasoning if kind.startswith("reasoning-") else None
        if parts is not None:
            key = payload.get("id")
            key = key if isinstance(key, str) else None
            if kind.endswith("-start"):
                parts.begin(key)
            elif kind.endswith("-delta"):
                delta = payload.get("delta")
                if isinstance(delta, str) and delta:
                    parts.piece(key, delta)
                    self.mark()
            elif kind.endswith("-end"):
                parts.close(key)
        elif kind.startswith("tool-"):
            self._tool(kind, payload)
        elif kind == "start":
            self.identify(response_id=payload.get("messageId"))
        elif kind == "finish-step":  # the client drops the step's open parts: they are whole
            text.flush(all_parts=True)
            reasoning.flush(all_parts=True)
        elif kind == "finish":
            self.choice().finish(payload.get("finishReason"))
            self.extra["finish"] = True
        elif kind == "abort":
            self.choice().finish("abort")
            reason = payload.get("reason")
            self.extra["abort"] = reason if isinstance(reason, str) else True
        elif kind == "error" and self.errors and self.errors[-1].event_index == event.index:
            # the base named it by the event's type; the message is `errorText`
            message = as_str(payload.get("errorText")) or self.errors[-1].message
            self.errors[-1] = dataclasses.replace(self.errors[-1], message=message)

    def _tool(self, kind: str, payload: dict[str, Any]) -> None:
        tools = self.choice().tools
        call_id = payload.get("toolCallId")
        key = ("id", call_id) if isinstance(call_id, str) else None
        if kind == "tool-input-start":
            if tools.get(key).update(id=call_id, name=payload.get("toolName")):
                self.mark()
        elif kind == "tool-input-delta":
            if tools.get(key).update(arguments=payload.get("inputTextDelta")):
                self.mark()
        elif kind in ("tool-input-available", "tool-input-error"):
            call = tools.get(key)
            named = call.update(id=call_id, name=payload.get("toolName"))
            whole = compact_json(payload["input"]) if "input" in payload else None
            if call.fallback(whole) or named:
                self.mark()
            if kind == "tool-input-error":
                self.extra["tool_errors"] = self.extra.get("tool_errors", 0) + 1
        elif kind == "tool-output-error":
            self.extra["tool_errors"] = self.extra.get("tool_errors", 0) + 1

    def answer(self, dialect: Dialect, text_events: tuple[int, ...] = ()) -> Answer:
        text, reasoning = self._parts()
        text.flush(all_parts=True)
        reasoning.flush(all_parts=True)
        return super().answer(dialect, text_events)


class VercelUI(Dialect):
    """Rebuilds the text and reasoning parts (each by its id, in the order the parts started), the tool
    calls (`toolName`; the arguments as the joined `inputTextDelta`s, else `input` as compact JSON), the
    finish reason (`finish`'s `finishReason`, sent by newer SDKs only, else none; "abort" after an `abort`
    chunk, whose reason is `extra["abort"]`), and `error` chunks as in-band errors with their `errorText`
    (`tool-input-error` and `tool-output-error` are a tool's failure, shown in its part: counted in
    `extra["tool_errors"]`, not errors of the stream). `[DONE]` is the end marker."""

    name = "vercel-ui"
    title = "Vercel AI SDK UI message stream"
    end_marker = "data: [DONE]"
    sends_done = True  # the sentinel is the protocol's own end
    end_closes_stream = True  # nothing follows it: the SDK writes it when the chunk stream closes
    reader = _UIReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure on a chunk only this grammar sends: a `text-delta` or `reasoning-delta` with string `id` and
        `delta`, a step or part boundary, a tool chunk with its `toolCallId`; `start`, `finish` or an
        `error` with an `errorText` are hints. The URL says nothing (apps choose their paths)."""
        content = 0
        for _, payload in payloads(events):
            kind = payload.get("type")
            if not isinstance(kind, str):
                continue
            if kind in _DELTAS and isinstance(payload.get("id"), str) and isinstance(payload.get("delta"), str):
                return STRONG
            if kind in _OWN and (isinstance(payload.get("id"), str) or isinstance(payload.get("toolCallId"), str)
                                 or kind.endswith("-step")):  # fmt: skip
                return STRONG
            if kind in _HINTS or (kind == "error" and isinstance(payload.get("errorText"), str)):
                content = WEAK
        return confidence(content, False)

    def fault_error(self, events_sent: int) -> bytes:
        """The SDK's `error` chunk, `data: {"type":"error","errorText":"An error occurred."}` (the message the
        SDK sends unless the server's `onError` says more), then `data: [DONE]`: the SDK turns the model's
        failure into that chunk and closes the chunk stream as usual, so the sentinel still comes. `useChat`
        calls its `onError` and shows the error."""
        return event({"type": "error", "errorText": _ERROR}) + f"data: {DONE}\n\n".encode()
