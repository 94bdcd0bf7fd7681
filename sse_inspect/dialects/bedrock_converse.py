"""Amazon Bedrock `ConverseStream` streams (`POST /model/{modelId}/converse-stream`).

The body is an AWS event stream (`application/vnd.amazon.eventstream`, read by `_eventstream`): one
message per event, named by its `:event-type` header, its payload the event's JSON members. The grammar,
as the API reference (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html) and
botocore's service model (botocore/data/bedrock-runtime/2023-09-30/service-2.json, `ConverseStreamOutput`)
give it:

    messageStart       {"role": "assistant"}
    contentBlockStart  {"contentBlockIndex": i, "start": {"toolUse": {"toolUseId", "name"}}}
    contentBlockDelta  {"contentBlockIndex": i, "delta": {"text": ...}
                                                 | {"toolUse": {"input": <a piece of the JSON text>}}
                                                 | {"reasoningContent": {"text": ...} | {"signature": ...}
                                                                         | {"redactedContent": <base64>}}}
    contentBlockStop   {"contentBlockIndex": i}
    messageStop        {"stopReason": "end_turn" | "tool_use" | "max_tokens" | ..., "additionalModelResponseFields"}
    metadata           {"usage": {"inputTokens", "outputTokens", "totalTokens", ...}, "metrics": {"latencyMs"}, "trace"}

Bedrock's payloads carry a `"p"` member of random length (the alphabet's first letters and digits, as
public test data of gateways replaying real Bedrock bodies shows): padding, so that a message's size does
not tell its token's length. It is no member of the service model, and botocore drops it.

A modelled error is a message of its own (`:message-type` exception), named by its `:exception-type`
(`internalServerException`, `modelStreamErrorException`, `validationException`, `throttlingException`,
`serviceUnavailableException`), its payload `{"message": ...}`: botocore raises `EventStreamError` on it,
the AWS SDKs throw. The framer names the event after the exception type, so this reader records every
event named `...Exception` as an in-band error (and the base records an event stream `error` message).

The end: `messageStop` ends the model's message (it carries the stop reason), then `metadata` brings the
usage and the metrics, and the stream closes. The end marker is `messageStop`: the answer is whole there,
and nothing of it comes later (`metadata` is the service's bookkeeping, as the reference describes it).
`metadata` follows it by design, so an event after the marker is no fault (`end_closes_stream` False), and
the reader reads on to the body's end, as botocore does (`stops_at_end` False). A stream that ends after
`messageStop` without `metadata` lost only the usage: `extra["metadata"]` says so, rather than a missing
end marker; events after `metadata` are counted in `extra["after_metadata"]`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._events import Event
from .._eventstream import encode_message
from ._accumulate import as_dict, as_int, as_str, label
from ._answer import InbandError
from ._base import JSON, Dialect, Reader, json_body, phrase
from ._detect import STRONG, WEAK, confidence, payloads, url_path

__all__ = ["BedrockConverse", "exception_error", "exception_message", "is_exception", "status_error"]

_KINDS = frozenset({"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"})
"""The event types only ConverseStream sends (`metadata` is left out: LangGraph names an SSE event so too)."""

_EXCEPTIONS = {
    400: ("validationException", "Malformed input request, please reformat your input and try again."),
    403: ("accessDeniedException", "You don't have access to the model with the specified model ID."),
    404: ("resourceNotFoundException", "Could not resolve the foundation model from the model identifier."),
    408: ("modelTimeoutException", "Model has timed out in processing the request."),
    424: ("modelStreamErrorException", "The model encountered an error while streaming the response."),
    429: ("throttlingException", "Too many requests, please wait before trying again."),
    500: ("internalServerException", "The server encountered an internal error while processing the request."),
    503: ("serviceUnavailableException", "The service is currently unavailable. Please try again later."),
}
"""By HTTP status, the modelled error of botocore's service model (each exception shape's `httpStatusCode`):
its name in a stream (the event stream member) and a message in the service's words."""


def is_exception(kind: str) -> bool:
    """Whether an event of this name is a modelled exception: every one Bedrock models ends so."""
    return kind.endswith("Exception")


def exception_error(event: Event, kind: str, payload: dict[str, Any]) -> InbandError:
    """The in-band error of an exception message: its `message`, its type, and (for
    `modelStreamErrorException`) the model's own status as the code."""
    return InbandError(
        message=as_str(payload.get("message")) or event.data or kind,
        event_index=event.index,
        code=label(payload.get("originalStatusCode")),
        type=kind,
    )


def exception_message(kind: str = "modelStreamErrorException", message: str | None = None, **members: object) -> bytes:
    """One exception message as Bedrock sends it into a stream: headers `:exception-type`, `:content-type`,
    `:message-type` exception, its payload the JSON error (`{"message": ...}`)."""
    text = message or next((m for k, m in _EXCEPTIONS.values() if k == kind), "The server had an error.")
    headers = {":exception-type": kind, ":content-type": JSON, ":message-type": "exception"}
    return encode_message(headers, json.dumps({"message": text, **members}, separators=(",", ":")).encode())


def status_error(status: int) -> tuple[str, bytes]:
    """Bedrock's error answer to HTTP `status`: `{"message": ...}` (the error's name travels in the
    `x-amzn-ErrorType` header, which a body cannot carry), in the words of the status's exception."""
    known = _EXCEPTIONS.get(status)
    return JSON, json_body({"message": known[1] if known else phrase(status)})


class _ConverseReader(Reader):
    """Text and reasoning by content block, tool calls by block index, the stop reason, usage and metrics."""

    stops_at_end = False  # `metadata` follows `messageStop`: botocore reads the body to its end

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._metadata = 0  # `metadata` events seen
        self._after_metadata = 0

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return kind == "messageStop"

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if self._metadata:
            self._after_metadata += 1
            self.extra["after_metadata"] = self._after_metadata
        state = self.choice()
        block = ("block", as_int(payload.get("contentBlockIndex")))
        if is_exception(kind):
            self.errors.append(exception_error(event, kind, payload))
        elif kind == "contentBlockStart":
            tool = as_dict(as_dict(payload.get("start")).get("toolUse"))
            if tool and state.tools.get(block).update(id=tool.get("toolUseId"), name=tool.get("name")):
                self.mark()
        elif kind == "contentBlockDelta":
            delta = as_dict(payload.get("delta"))
            self.add(state.text, delta.get("text"))
            self.add(state.reasoning, as_dict(delta.get("reasoningContent")).get("text"))
            tool_input = as_dict(delta.get("toolUse")).get("input")
            if isinstance(tool_input, str) and tool_input:  # the JSON text, in pieces, as the model wrote it
                self.add(state.tools.get(block).parts, tool_input)
        elif kind == "messageStop":
            state.finish(payload.get("stopReason"))
            self.extra.setdefault("metadata", "none after messageStop (no usage or metrics)")
        elif kind == "metadata":
            self._metadata += 1
            self.extra.pop("metadata", None)
            usage = payload.get("usage")
            if isinstance(usage, dict):
                self.usage = usage
            latency = as_int(as_dict(payload.get("metrics")).get("latencyMs"))
            if latency is not None:
                self.extra["latency_ms"] = latency


class BedrockConverse(Dialect):
    """Rebuilds Bedrock ConverseStream answers: text, reasoning (`reasoningContent`), tool calls
    (`toolUse` blocks, their input as streamed), the stop reason, usage and latency, and exceptions."""

    name = "bedrock-converse"
    title = "Amazon Bedrock ConverseStream"
    end_marker = "messageStop"
    reader = _ConverseReader
    sends_done = False  # an event stream has no `[DONE]`
    end_closes_stream = False  # `metadata` follows the marker by design
    framings = ("eventstream",)  # its fault is an exception message of the event stream

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure on an event only ConverseStream names so; a hint from a modelled exception alone."""
        content = 0
        for event, payload in payloads(events):
            if event.type in _KINDS:
                content = STRONG
                break
            if is_exception(event.type) and "message" in payload:
                content = WEAK
        return confidence(content, url_path(url).endswith("/converse-stream"))

    def fault_error(self, events_sent: int) -> bytes:
        """A `modelStreamErrorException` message, as Bedrock sends one when the model fails mid-stream
        (botocore raises `EventStreamError` on it); the stream then ends."""
        return exception_message("modelStreamErrorException", originalStatusCode=500)

    def error_body(self, status: int) -> tuple[str, bytes]:
        return status_error(status)
