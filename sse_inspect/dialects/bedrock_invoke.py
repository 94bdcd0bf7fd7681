"""Amazon Bedrock `InvokeModelWithResponseStream` streams of Anthropic models
(`POST /model/{modelId}/invoke-with-response-stream`).

The body is an AWS event stream (`application/vnd.amazon.eventstream`, read by `_eventstream`), as the API
reference (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ResponseStream.html) and botocore's
service model (botocore/data/bedrock-runtime/2023-09-30/service-2.json, `ResponseStream`) give it: every
event is a `chunk` (`PayloadPart`), its payload `{"bytes": "<base64>", "p": "<random padding>"}`, the bytes
the model's own stream event as JSON. For Anthropic's models that is a Messages stream event
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html):
`message_start`, `content_block_start`, `content_block_delta`, ..., `message_delta`, `message_stop`, the
last carrying Bedrock's `amazon-bedrock-invocationMetrics` (`inputTokenCount`, `outputTokenCount`,
`invocationLatency`, `firstByteLatency`).

So this reader is the Anthropic reader (`anthropic.py`, whose grammar it reuses whole) fed the decoded
chunks: it ends where Anthropic's stream ends (`message_stop`, the last event Bedrock sends). What it adds
is the wrapping: a chunk whose bytes are not base64 of JSON is an invalid payload; a modelled exception
(`throttlingException`, `modelStreamErrorException`, `modelTimeoutException`, ..., a message of its own, as
in ConverseStream) is an in-band error, even after `message_stop`, where the Anthropic reader stops
(botocore raises on an exception wherever it comes); the invocation metrics go to
`extra["invocation_metrics"]`. An event that is not a chunk is read as it is (a gateway that forwards the
decoded events).

Other model families (Titan's `outputText`, Llama's `generation`, Mistral's `outputs`, Cohere's) are not
read: their chunks rebuild no text.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from typing import Any

from .._events import Event
from .._fastjson import loads
from ._accumulate import as_dict
from ._base import KEPT, Dialect, EventFlags
from ._detect import STRONG, WEAK, confidence, payloads, url_path
from .anthropic import _MessagesReader
from .bedrock_converse import exception_error, exception_message, is_exception, status_error

__all__ = ["BedrockInvoke"]


def _json(data: str) -> object:
    try:
        return loads(data)
    except (ValueError, RecursionError):
        return None


def unwrap(event: Event) -> str | None:
    """The model's event inside a `chunk`: its `bytes` decoded (base64, then UTF-8); None when it holds none."""
    encoded = as_dict(_json(event.data)).get("bytes")
    if not isinstance(encoded, str):
        return None
    try:
        # binascii, not base64: the base64 module costs every command's start-up (tests/test_startup.py)
        return binascii.a2b_base64(encoded, strict_mode=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not base64 (or not ASCII), or not UTF-8 (UnicodeDecodeError is a ValueError)
        return None


def opened(event: Event) -> Event:
    """A `chunk` as the model's event it wraps, at the chunk's place in the stream (unnamed, as the
    model's JSON carries its `type`); any other event, or a chunk that wraps none, as it is."""
    if event.type == "chunk":
        inner = unwrap(event)
        if inner is not None:
            return event._replace(type="message", data=inner)
    return event


class _InvokeReader(_MessagesReader):
    """The Anthropic reader, fed what each chunk wraps; exceptions and bad chunks on top."""

    def feed(self, event: Event) -> EventFlags:
        if self.end_markers and is_exception(event.type):
            # After `message_stop` the Anthropic grammar reads nothing more, but an exception is the event
            # stream's own: botocore raises on it wherever it comes, so it is an error of the answer.
            self.errors.append(exception_error(event, event.type, as_dict(_json(event.data))))
            return EventFlags.ERROR
        return super().feed(opened(event))

    def feed_many(self, events: list[Event]) -> list[EventFlags]:
        if self.end_markers or any(is_exception(event.type) for event in events):
            return list(map(self.feed, events))  # (rare: an exception ends a stream)
        return super().feed_many(list(map(opened, events)))

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if kind == "chunk":  # a chunk `unwrap` could not open (one whose data is not JSON is counted already)
            if payload:
                self.invalid_payloads += 1
                if len(self.invalid_json) < KEPT:
                    self.invalid_json.append(event.index)
            return
        if is_exception(kind):
            self.errors.append(exception_error(event, kind, payload))
            return
        if kind == "message_stop":
            metrics = payload.get("amazon-bedrock-invocationMetrics")
            if isinstance(metrics, dict):
                self.extra["invocation_metrics"] = metrics
        super().step(event, kind, payload)


class BedrockInvoke(Dialect):
    """Rebuilds what an Anthropic model streams through InvokeModelWithResponseStream: text, thinking,
    tool calls, the stop reason and usage (Anthropic's), Bedrock's invocation metrics and exceptions."""

    name = "bedrock-invoke"
    title = "Amazon Bedrock InvokeModelWithResponseStream"
    end_marker = "message_stop"
    reader = _InvokeReader
    sends_done = False  # an event stream has no `[DONE]`
    end_closes_stream = True  # `message_stop`, with the metrics, is the last event Bedrock sends
    framings = ("eventstream",)  # its fault is an exception message of the event stream

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure on a `chunk` event whose payload holds `bytes`; a hint from a modelled exception alone."""
        content = 0
        for event, payload in payloads(events):
            if event.type == "chunk" and isinstance(payload.get("bytes"), str):
                content = STRONG
                break
            if is_exception(event.type) and "message" in payload:
                content = WEAK
        return confidence(content, url_path(url).endswith("/invoke-with-response-stream"))

    def fault_error(self, events_sent: int) -> bytes:
        """A `modelStreamErrorException` message, as in ConverseStream (botocore raises `EventStreamError`)."""
        return exception_message("modelStreamErrorException", originalStatusCode=500)

    def error_body(self, status: int) -> tuple[str, bytes]:
        return status_error(status)
