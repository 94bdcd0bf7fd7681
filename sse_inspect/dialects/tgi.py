"""Hugging Face text-generation-inference (TGI): the native `/generate_stream` (SSE).

Data-only events, written by axum with no space after `data:` (router/src/server.rs `generate_stream`,
the `StreamResponse` of router/src/lib.rs; the curl example of
https://huggingface.co/docs/text-generation-inference/basic_tutorials/visual_language_models):

    data:{"index":1,"token":{"id":1724,"text":" Deep","logprob":-0.28,"special":false},"generated_text":null,"details":null}

one per generated token (`top_tokens` beside it when asked for). The last event also carries the whole
`generated_text` and, when the request asked for `details`, `details` (`finish_reason`: "length",
"eos_token" or "stop_sequence"; `generated_tokens`, `seed`, `input_length`); then the server ends the
stream: no `[DONE]`. Special tokens (`"special": true`, as the `</s>` that ends a generation) are not
part of the text. A failure is an event of its own, `data:{"error": "...", "error_type": "..."}`
(`ErrorResponse`; `error_type` "generation", "overloaded", "validation", "incomplete_generation"), sent
in the 200 stream even when it comes before any token. TGI has no reasoning or tool calls here: its
`/v1/chat/completions` speaks OpenAI Chat (the `openai-chat` dialect).

TGI's clients (text_generation's `Client.generate_stream`, huggingface_hub's `text_generation`) read
every line to the end of the body; the server stops after the last event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import as_int, label
from ._base import JSON, Dialect, Reader, event, json_body, phrase
from ._detect import STRONG, WEAK, confidence, payloads, url_path

__all__ = ["TGI"]

_USAGE_KEYS = ("generated_tokens", "input_length")
"""The counts of the last event's `details` (`StreamDetails`): tokens generated and in the prompt."""
_ERRORS = {
    422: ("Input validation error: `inputs` must have less than 4096 tokens. Given: 4127", "validation"),
    424: ("Request failed during generation: Server error: CUDA out of memory.", "generation"),
    429: ("Model is overloaded", "overloaded"),
    500: ("Incomplete generation", "incomplete_generation"),
}
"""The message and `error_type` of each status TGI documents for `/generate_stream` (router/src/server.rs:
`InferError`'s messages and `error_type()`, and the statuses of `From<InferError>`)."""


class _TGIReader(Reader):
    stops_at_end = False  # its clients read to the end of the body (see the module's doc)

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return isinstance(payload.get("generated_text"), str)

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        token = payload.get("token")
        if isinstance(token, dict) and token.get("special") is not True:
            self.add(self.choice().text, token.get("text"))
        details = payload.get("details")
        if isinstance(details, dict):
            self.choice().finish(details.get("finish_reason"))
            usage = {key: details[key] for key in _USAGE_KEYS if as_int(details.get(key)) is not None}
            if usage:
                self.usage = usage
        error_type = label(payload.get("error_type"))
        if error_type and self.errors and self.errors[-1].event_index == event.index:
            # the base read the `error` string; TGI names its kind beside it
            self.errors[-1] = dataclasses.replace(self.errors[-1], type=error_type)


class TGI(Dialect):
    """Joins the token texts, special tokens left out; the event with `generated_text` is the end. The
    finish reason and the usage (`generated_tokens`, `input_length`) come from its `details`, when the
    request asked for them."""

    name = "tgi"
    title = "Hugging Face TGI"
    end_marker = "generated_text"
    sends_done = False  # `/generate_stream` ends with the `generated_text` event, never a `[DONE]`
    end_closes_stream = True  # the server stops after that event
    reader = _TGIReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure when an event holds a `token` object with its `special` flag beside a `generated_text`
        member (null until the last); an `error` string with an `error_type` beside it is a hint."""
        content = 0
        for _, payload in payloads(events):
            token = payload.get("token")
            if isinstance(token, dict) and "special" in token and "generated_text" in payload:
                content = STRONG
                break
            if isinstance(payload.get("error"), str) and isinstance(payload.get("error_type"), str):
                content = WEAK
        return confidence(content, url_path(url).endswith("/generate_stream"))

    def fault_error(self, events_sent: int) -> bytes:
        """TGI's own error event, `data:{"error", "error_type"}` (a failure during generation, as the
        router sends it in the stream), with no space after `data:` as axum writes it. Then the stream ends
        without its `generated_text` event; TGI's clients raise on the `error` member."""
        message, error_type = _ERRORS[424]
        return event({"error": message, "error_type": error_type}).replace(b"data: ", b"data:", 1)

    def error_body(self, status: int) -> tuple[str, bytes]:
        """`{"error", "error_type"}`, compact (axum's `Json`): TGI's message and type for the statuses it
        sends (`_ERRORS`), else the reason phrase."""
        message, error_type = _ERRORS.get(status) or (phrase(status), phrase(status).lower().replace(" ", "_"))
        return JSON, json_body({"error": message, "error_type": error_type})
