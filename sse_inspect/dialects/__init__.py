"""The known stream grammars: the registry, lookup by name, and detection from the first events.

A dialect is a `Dialect` subclass and its `Reader` (docs/dialects.md shows how to write one), which
says of each event what it was as `EventFlags`; `DONE` is the `[DONE]` sentinel's data, and `KEPT`
how many indices of end markers and of invalid payloads a reader keeps.
`PLAIN_PAYLOADS` is what `Answer.extra["payloads"]` says of a text stream whose data was plain text.
`_answer` holds the values a reader gives (and how their text is held: `Holding`, `Passage`),
`_accumulate` the state it keeps, `_detect` the detection scores, and `_envelope` the accelerator
the OpenAI Chat and Anthropic readers opt into.

Content beats the URL (OpenRouter, Azure and local servers speak OpenAI Chat on
other paths), and the URL decides when the content says nothing (no events yet).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import DialectError
from .._events import Event
from ._accumulate import DONE
from ._answer import GLIMPSED, Answer, Choice, Holding, InbandError, Passage, TextNotKept, ToolCall
from ._base import KEPT, Dialect, EventFlags, Reader
from .a2a import A2A
from .anthropic import Anthropic
from .bedrock_converse import BedrockConverse
from .bedrock_invoke import BedrockInvoke
from .cohere import Cohere
from .gemini import Gemini
from .generic import Generic
from .mcp import MCP
from .ollama import Ollama
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses
from .text import PLAIN_PAYLOADS, Text
from .tgi import TGI
from .vercel_ui import VercelUI

__all__ = [
    "DIALECTS",
    "DONE",
    "GLIMPSED",
    "KEPT",
    "PLAIN_PAYLOADS",
    "Answer",
    "Choice",
    "Dialect",
    "EventFlags",
    "Holding",
    "InbandError",
    "Passage",
    "Reader",
    "TextNotKept",
    "ToolCall",
    "detect_dialect",
    "get_dialect",
]

DIALECTS: dict[str, type[Dialect]] = {
    cls.name: cls
    for cls in (
        OpenAIChat, OpenAIResponses, Anthropic, Gemini, Cohere, Ollama, TGI, BedrockConverse, BedrockInvoke, VercelUI,
        MCP, A2A, Text, Generic,
    )  # fmt: skip
}
"""Every dialect by its command-line name; on equal detection scores the earlier one wins."""


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; raises DialectError for an unknown name."""
    cls = DIALECTS.get(name)
    if cls is None:
        raise DialectError(f"unknown dialect {name!r}", hint=f"choose one of: {', '.join(DIALECTS)}")
    return cls()


def detect_dialect(events: Sequence[Event], url: str | None) -> Dialect:
    """The dialect that scores best on the first events (about 50 are enough) and the URL; generic as a fallback."""
    best = max(DIALECTS.values(), key=lambda cls: cls.detect(events, url))
    return best()
