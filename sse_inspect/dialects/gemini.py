"""Google Gemini `:streamGenerateContent?alt=sse` streams.

Data-only events, each a whole `GenerateContentResponse` holding the next piece
of every candidate; no sentinel ends the stream (research/providers.md §4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import ChoiceState, as_dict, as_int, as_list, as_str, compact_json
from ._base import Dialect, Reader
from ._detect import STRONG, confidence, payloads, url_path

__all__ = ["Gemini"]

_KEYS = ("candidates", "usageMetadata", "promptFeedback")


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
    reader = _GeminiReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        strong = any(key in payload for _, payload in payloads(events) for key in _KEYS)
        return confidence(STRONG if strong else 0, ":streamgeneratecontent" in url_path(url))
