"""Google Gemini `:streamGenerateContent?alt=sse` streams.

Data-only events, each a whole `GenerateContentResponse` holding the next piece
of every candidate; no sentinel ends the stream (research/providers.md §4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import ChoiceState, as_dict, as_int, as_list, as_str, compact_json
from ._base import JSON, Dialect, Reader, json_body, phrase
from ._detect import STRONG, confidence, payloads, url_path

__all__ = ["Gemini"]

_KEYS = ("candidates", "usageMetadata", "promptFeedback")
_ERRORS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in "
                      "https://developers.generativeai.google/guide/troubleshooting"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}  # fmt: skip
"""The `status` (a google.rpc code name) and message of each HTTP status the Gemini API documents
(https://ai.google.dev/gemini-api/docs/troubleshooting); another 4xx is sent as FAILED_PRECONDITION with
its reason phrase, another 5xx as a 500's INTERNAL, but a 529 (an overload elsewhere) as a 503's."""


class _GeminiReader(Reader):
    stops_at_end = False

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        if as_str(as_dict(payload.get("promptFeedback")).get("blockReason")):
            return True
        return any(as_str(as_dict(candidate).get("finishReason")) for candidate in as_list(payload.get("candidates")))

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        self.identify(model=payload.get("modelVersion"), response_id=payload.get("responseId"))
        if isinstance(payload.get("usageMetadata"), dict):
            self.usage = payload["usageMetadata"]
        block_reason = as_str(as_dict(payload.get("promptFeedback")).get("blockReason"))
        if block_reason:
            self.extra["prompt_block_reason"] = block_reason
        for position, candidate in enumerate(as_list(payload.get("candidates"))):
            if isinstance(candidate, dict):
                index = as_int(candidate.get("index"))
                state = self.choice(position if index is None else index)
                for part in as_list(as_dict(candidate.get("content")).get("parts")):
                    part = as_dict(part)
                    self.add(state.reasoning if part.get("thought") is True else state.text, part.get("text"))
                    self._function_call(state, part.get("functionCall"))
                state.finish(candidate.get("finishReason"))

    def _function_call(self, state: ChoiceState, function_call: object) -> None:
        if not isinstance(function_call, dict):
            return
        args = function_call.get("args")
        arguments = compact_json(args if isinstance(args, dict) else {}) or ""  # "": too deep to write
        if state.tools.new().update(id=function_call.get("id"), name=function_call.get("name"), arguments=arguments):
            self.mark()


class Gemini(Dialect):
    """Rebuilds candidates by `index`; `thought: true` parts are reasoning.

    End markers are the events carrying a non-empty `finishReason` (the last event
    of a normal stream) or a `promptFeedback.blockReason` (a blocked prompt gets no
    candidates; the reason goes to `extra["prompt_block_reason"]`). Everything is
    read, also after a marker, since clients read to the end of the body.
    `functionCall.args` arrives parsed and is re-serialised compactly (absent: "{}"; nested too deeply
    to write back: "").
    """

    name = "gemini"
    title = "Google Gemini"
    end_marker = "finishReason"
    sends_done = False
    end_closes_stream = False
    sends_batches = True
    framings = ("sse", "json-array")
    reader = _GeminiReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        strong = any(key in payload for _, payload in payloads(events) for key in _KEYS)
        return confidence(STRONG if strong else 0, ":streamgeneratecontent" in url_path(url))

    def fault_error(self, events_sent: int) -> bytes:
        """Gemini's error object, written into the stream as the API writes it: no event at all, but the
        JSON error body as is (`error_body(503)`), indented over several lines, with no `data:` field
        and no blank line after it (https://github.com/vercel/ai/issues/5217 and
        https://github.com/diegosouzapw/OmniRoute/issues/4177 show it after a stream's events).
        google-genai reads it so: "When API returns an error message, it comes line by line", it
        joins lines until the braces balance and raises on the object
        (google/genai/_api_client.py, `_iter_response_stream`); an SSE parser sees only field lines
        it ignores and an unterminated event, and a client that reads events alone stops without an
        error (vercel/ai#5217). `check` reports `missing-end-marker` and `ignored-fields`, not
        `error-event`.

        Line ends: Gemini's events end in CRLF (the three corpus files), but no capture of this
        error keeps its bytes; the body is written as `error_body` writes it, with LF.
        """
        return self.error_body(503)[1]

    def fault_error_in(self, framing: str, events_sent: int) -> bytes:
        """In the streamed array (`streamGenerateContent` without `alt=sse`) the error object is the array's
        next element, and the array closes after it, as the API closes a body it ends: `[` first when no
        element came. (No recording of an error in that shape was at hand; this keeps the body one JSON
        array, as google-genai's array reader and `json.loads` of the whole body need it.)"""
        if framing != "json-array":
            return self.fault_error(events_sent)
        error = self.error_body(503)[1].rstrip(b"\n")
        return (b"[" if events_sent == 0 else b"\n,\r\n") + error + b"\n]"

    def error_body(self, status: int) -> tuple[str, bytes]:
        """`{"error": {"code", "message", "status"}}`, indented by two spaces, as the API sends it
        (https://github.com/google-gemini/gemini-cli/issues/5191, vercel/ai#5217): `code` is the HTTP
        status, `status` its google.rpc name (`_ERRORS`)."""
        if status in _ERRORS:
            name, message = _ERRORS[status]
        elif status >= 500:
            name, message = _ERRORS[503 if status == 529 else 500]  # 529: Anthropic's overload, Gemini's is 503
        else:
            name, message = "FAILED_PRECONDITION", phrase(status)
        return JSON, json_body({"error": {"code": status, "message": message, "status": name}}, indent=2)
