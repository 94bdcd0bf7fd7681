"""OpenAI Chat Completions streams and every server that copies them (Azure, OpenRouter, Groq, Mistral, ...).

The most copied grammar: data-only `chat.completion.chunk` events ended by
`data: [DONE]`, with each server adding its own fields (see research/providers.md §1, §5-13).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import DONE, ChoiceState, PendingCall, ToolCalls, as_dict, as_int, as_list, as_str, inband_error
from ._base import JSON, Dialect, event, json_body, phrase
from ._detect import STRONG, confidence, payloads, url_path
from ._envelope import EnvelopeCache

__all__ = ["OpenAIChat", "openai_error_body"]

_PLAIN_DELTA = frozenset({"content", "role"})
"""A delta with these keys only carries text (what `_choice` would find the long way)."""
_DETAIL_TEXT = {"reasoning.text": "text", "reasoning.summary": "summary"}
"""OpenRouter `reasoning_details[]` entry types that hold readable text, and the field holding it."""


class _ChatReader(EnvelopeCache):
    """Learns the envelope of plain token chunks: one choice, a delta of `content` (and `role`), no
    finish reason and no usage."""

    padding = ("obfuscation",)  # random characters OpenAI adds so that sizes tell nothing

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return event.data == DONE

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if payload.get("object") == "error":  # older vLLM: the error fields at top level
            error = inband_error(payload, event.index)
            if error is not None:
                self.errors.append(error)
        if self.model is None or self.response_id is None:
            self.identify(model=payload.get("model"), response_id=payload.get("id"))
        usage = payload.get("usage")
        if not isinstance(usage, dict) and "x_groq" in payload:
            usage = as_dict(payload["x_groq"]).get("usage")  # older Groq: usage only under x_groq
        if isinstance(usage, dict):
            self.usage = usage
        if "provider" in payload:
            provider = payload["provider"]
            if isinstance(provider, str) and provider:
                self.extra.setdefault("provider", provider)
        choices = as_list(payload.get("choices"))
        alone = len(choices) == 1 and not isinstance(usage, dict)  # nothing else an envelope could repeat
        for position, entry in enumerate(choices):
            if isinstance(entry, dict):
                index = as_int(entry.get("index"))
                self._choice(self.choice(position if index is None else index), entry, alone)

    def _choice(self, state: ChoiceState, entry: dict[str, Any], alone: bool = False) -> None:
        delta = as_dict(entry.get("delta"))
        content = delta.get("content")
        if type(content) is str and delta.keys() <= _PLAIN_DELTA:  # a token, as nearly every chunk is
            reason = entry.get("finish_reason")
            if self.add(state.text, content) and alone and not (isinstance(reason, str) and reason):
                self.learn(content, state.text, _delta_content)
            state.finish(reason)
            return
        self._content(state, content)
        if "reasoning_content" in delta or "reasoning" in delta or "reasoning_details" in delta:
            self._reasoning(state, delta)
        if "refusal" in delta:
            self.add(state.refusal, delta["refusal"])
        for fragment in as_list(delta.get("tool_calls")):
            if isinstance(fragment, dict):
                function = as_dict(fragment.get("function"))
                call = _locate(state.tools, fragment, function)
                if call.update(id=fragment.get("id"), name=function.get("name"), arguments=function.get("arguments")):
                    self.mark()
        legacy = delta.get("function_call")  # the deprecated `functions` API: one call, no key
        if isinstance(legacy, dict):
            call = state.tools.get(("function_call",))
            if call.update(name=legacy.get("name"), arguments=legacy.get("arguments")):
                self.mark()
        state.finish(entry.get("finish_reason"))

    def _content(self, state: ChoiceState, content: object) -> None:
        """Plain text, or Mistral's typed parts (`text`, and `thinking` holding text parts)."""
        if not isinstance(content, list):
            self.add(state.text, content)
            return
        for part in content:
            part = as_dict(part)
            if part.get("type") == "text":
                self.add(state.text, part.get("text"))
            elif part.get("type") == "thinking":
                thinking = part.get("thinking")
                for piece in thinking if isinstance(thinking, list) else [{"text": thinking}]:
                    self.add(state.reasoning, as_dict(piece).get("text"))

    def _reasoning(self, state: ChoiceState, delta: dict[str, Any]) -> None:
        """The plain reasoning fields; `reasoning_details` text only when they carried none (same text twice)."""
        plain = as_str(delta.get("reasoning_content"))
        other = as_str(delta.get("reasoning"))
        if other != plain:  # vLLM may set both to the same piece
            plain += other
        if not plain:
            for detail in as_list(delta.get("reasoning_details")):
                detail = as_dict(detail)
                field = _DETAIL_TEXT.get(as_str(detail.get("type")))
                if field is not None:
                    plain += as_str(detail.get(field))
        self.add(state.reasoning, plain)


class OpenAIChat(Dialect):
    """Rebuilds choices by `index`; reasoning from `reasoning_content`, `reasoning` or `reasoning_details`.

    Tool-call fragments are keyed by `index`, else by `id`, else continue the last
    call (a fragment with a name and neither key starts a new one): Mistral sends
    whole calls with an `id` and no `index`.
    """

    name = "openai-chat"
    title = "OpenAI Chat Completions"
    end_marker = "data: [DONE]"
    sends_done = True
    end_closes_stream = True
    reader = _ChatReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure when a payload looks like a chat chunk; `[DONE]` says nothing (apps forward it after
        text of their own, and other grammars send it), and a URL ending in /chat/completions a little."""
        strong = any(
            payload.get("object") == "chat.completion.chunk" or isinstance(payload.get("choices"), list)
            for _, payload in payloads(events)
        )
        return confidence(STRONG if strong else 0, url_path(url).endswith("/chat/completions"))

    def fault_error(self, events_sent: int) -> bytes:
        """A data-only event whose payload is an `error` object, as OpenAI and the OpenAI-compatible
        servers send one after the 200 (research/providers.md §1, §9: OpenRouter's, in the corpus
        file openrouter-chat-midstream-error.sse, has this shape); openai-python raises `APIError`
        on a payload with an `error` member (src/openai/_streaming.py). The fields are those of
        OpenAI's error object, with its 500 message (https://github.com/openai/codex/issues/48)."""
        return event({"error": _error("The server had an error while processing your request. Sorry about that!")})

    def error_body(self, status: int) -> tuple[str, bytes]:
        return openai_error_body(status)


def openai_error_body(status: int) -> tuple[str, bytes]:
    """OpenAI's error response (Chat Completions and Responses alike): `{"error": {"message", "type",
    "param", "code"}}`, indented by two spaces as the API sends it (a 500 in
    https://github.com/Zero6992/chatGPT-discord-bot/issues/182, a 503 in
    https://github.com/ikechan8370/chatgpt-plugin/issues/125); a 429 has the code
    `rate_limit_exceeded` and a type naming the limit (`requests` or `tokens`,
    https://github.com/mmz-001/knowledge_gpt/issues/5)."""
    if status == 429:
        error = _error("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded")
    elif status == 401:
        error = _error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
    elif status == 503:
        error = _error("That model is currently overloaded with other requests. You can retry your request, or "
                       "contact us through our help center at help.openai.com if the error persists.")  # fmt: skip
    elif status >= 500:
        error = _error("The server had an error while processing your request. Sorry about that!")
    else:
        error = _error(phrase(status), "invalid_request_error")
    return JSON, json_body({"error": error}, indent=2)


def _error(message: str, error_type: str = "server_error", code: str | None = None) -> dict[str, Any]:
    return {"message": message, "type": error_type, "param": None, "code": code}


def _delta_content(payload: Any) -> tuple[dict[str, Any], str]:
    return payload["choices"][0]["delta"], "content"


def _locate(tools: ToolCalls, fragment: dict[str, Any], function: dict[str, Any]) -> PendingCall:
    """The call a fragment belongs to: by `id`, else by `index`, else a new one when named, else the last one."""
    call_id = as_str(fragment.get("id"))
    by_id = ("id", call_id) if call_id else None
    index = as_int(fragment.get("index"))
    by_index = ("index", index) if index is not None else None
    call = tools.find(by_id) if by_id else None
    if call is None and by_index is not None:
        call = tools.find(by_index)
        if call is not None and call_id and call.id and call.id != call_id:  # a server reusing one index
            call = None
    if call is None:
        last = tools.last
        call = last if last is not None and not (by_id or by_index or function.get("name")) else tools.new()
    tools.bind(call, by_index, by_id)
    return call
