"""Ollama's native API: `/api/chat` and `/api/generate`, streamed as NDJSON (`application/x-ndjson`).

One JSON object a line (https://github.com/ollama/ollama/blob/main/docs/api.md, docs/api/streaming.mdx):

- `/api/chat`: `{"model", "created_at", "message": {"role", "content", "thinking"?, "tool_calls"?}, "done": false}`;
- `/api/generate`: `{"model", "created_at", "response", "thinking"?, "tool_calls"?, "done": false}`.

The last line has `"done": true`, a `done_reason` ("stop", "length", "load", "unload") and the counts
(docs/api/usage.mdx: `total_duration`, `load_duration`, `prompt_eval_count`, `prompt_eval_duration`,
`eval_count`, `eval_duration`, in nanoseconds and tokens). It may still carry text (the streaming
page's last line is `"response":"!","done":true`). Tool calls arrive whole, one list a line, each
`{"id": "call_...", "function": {"index", "name", "arguments": {...}}}` (api/types.go `ToolCall`);
the arguments are an object, given here as compact JSON text.

An error once the stream has started is a line of its own, `{"error": "..."}`, and the stream ends
there without a `done` line (docs/api/errors.mdx; server/routes.go `streamResponse` encodes it with
Go's `json.Encoder`, LF-terminated). Before any line, the error is the response itself: an HTTP
status and `{"error": "..."}` as `application/json`.

The ollama Python library reads every line to the end of the body (`for line in r.iter_lines()` in
ollama/_client.py, raising `ResponseError` on an `error` member); it does not stop at `done`. The
server, though, closes the stream after the `done` line, so anything after it was added on the way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import ChoiceState, as_dict, as_list, compact_json
from ._base import JSON, Dialect, Reader, json_body, phrase
from ._detect import STRONG, confidence, payloads, url_path

__all__ = ["Ollama"]

USAGE_KEYS = ("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
              "eval_duration")  # fmt: skip
"""The counts of the last line (api/types.go `Metrics`): Go omits each when it is zero."""
_PATHS = ("/api/chat", "/api/generate")
_STREAM_ERROR = "an error was encountered while running the model"
"""The mid-stream error of docs/api/errors.mdx."""
_MESSAGES = {
    400: "missing request body",
    401: "unauthorized",
    404: "model 'llama3.2' not found",
    429: "rate limit exceeded",
    500: _STREAM_ERROR,
    503: "server busy, please try again.  maximum pending requests exceeded",
}
"""Ollama's own messages for the statuses it sends (server/routes.go, server/sched.go `ErrMaxQueue`, the
429 of its cloud models in server/routes_generate_test.go); another status gets its reason phrase."""


class _OllamaReader(Reader):
    stops_at_end = False  # the ollama library reads every line to the end of the body (see the module's doc)

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return payload.get("done") is True

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        self.identify(model=payload.get("model"))
        state = self.choice()
        message = payload.get("message")
        if isinstance(message, dict):  # /api/chat
            self.add(state.text, message.get("content"))
            self.add(state.reasoning, message.get("thinking"))
            self._tool_calls(state, message.get("tool_calls"))
        else:  # /api/generate
            self.add(state.text, payload.get("response"))
            self.add(state.reasoning, payload.get("thinking"))
            self._tool_calls(state, payload.get("tool_calls"))
        if payload.get("done") is True:
            state.finish(payload.get("done_reason"))
        usage = {key: payload[key] for key in USAGE_KEYS if key in payload}
        if usage:
            self.usage = usage

    def _tool_calls(self, state: ChoiceState, calls: object) -> None:
        """Each call whole: a new call per item (they come once each, across one line or several)."""
        for call in as_list(calls):
            function = as_dict(as_dict(call).get("function"))
            arguments = function.get("arguments")
            text = compact_json(arguments if isinstance(arguments, dict) else {}) or ""  # "": too deep to write
            if state.tools.new().update(id=as_dict(call).get("id"), name=function.get("name"), arguments=text):
                self.mark()


class Ollama(Dialect):
    """Rebuilds the text (`message.content` or `response`), the reasoning (`thinking`) and the tool calls
    of either endpoint; the finish reason is the `done` line's `done_reason`, the usage its counts."""

    name = "ollama"
    title = "Ollama"
    end_marker = '"done": true'
    sends_done = False  # NDJSON: no SSE sentinel
    framings = ("ndjson",)  # `fault_error` writes an NDJSON line
    end_closes_stream = True  # the server returns after the `done` line
    reader = _OllamaReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure when a line is Ollama's own: a boolean `done` beside a `created_at` string and a `message`
        object or a `response` string (the `text` dialect claims `response` lines too, with fewer points)."""
        content = 0
        for _, payload in payloads(events):
            if (isinstance(payload.get("done"), bool) and isinstance(payload.get("created_at"), str)
                    and (isinstance(payload.get("message"), dict) or isinstance(payload.get("response"), str))):
                content = STRONG
                break
        return confidence(content, url_path(url).endswith(_PATHS))

    def fault_error(self, events_sent: int) -> bytes:
        """The line Ollama writes when the model fails mid-stream: `{"error": "..."}` and an LF (the stream
        then ends without its `done` line); the ollama library raises `ResponseError` on it."""
        return json_body({"error": _STREAM_ERROR}) + b"\n"

    def error_body(self, status: int) -> tuple[str, bytes]:
        """`{"error": "..."}`, compact, as gin's `c.JSON` writes it: Ollama's message for the status
        (`_MESSAGES`), else the reason phrase. The ollama library raises `ResponseError(message, status)`."""
        return JSON, json_body({"error": _MESSAGES.get(status) or phrase(status).lower()})
