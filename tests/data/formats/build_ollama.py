"""Build the `ollama-*` fixtures of this folder: Ollama's native NDJSON streams, from its documentation.

    python tests/data/formats/build_ollama.py     (deterministic: the same files every time)

No capture of a real Ollama server is in the repository, so each stream is written as the server
writes it, from the shapes its documentation and source publish (the `SOURCES` of each case):

- one JSON object a line, compact, in the field order of api/types.go (`ChatResponse`, `GenerateResponse`,
  `Message`, `ToolCall`, `Metrics`), as Go's `json.Marshal` writes it (non-ASCII as UTF-8), then an LF
  (server/routes.go `streamResponse`);
- `created_at` in Go's RFC 3339 with fractional seconds, trailing zeros dropped;
- the `done` line with `done_reason` and the counts (Go omits a zero count);
- a mid-stream error as `{"error": "..."}` and an LF, then the end of the body (no `done` line).

One line per chunk, 20-60 ms apart (seeded), the first after the prompt's evaluation. The sidecar
`<case>.expect.json` says what a client shows: the documented pieces joined, the tool calls with their
arguments as compact JSON text, the `done_reason`, whether the stream was whole, its errors.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository, for a run as a script

from sse_inspect import End, Request, Response, capture_from_body, dump_capture

DOCS = "https://github.com/ollama/ollama/blob/main/docs"
TYPES = "https://github.com/ollama/ollama/blob/main/api/types.go"
ROUTES = "https://github.com/ollama/ollama/blob/main/server/routes.go (streamResponse)"
CLIENT = "ollama-python 0.6.3"
REQUEST_HEADERS = (
    ("Host", "localhost:11434"),
    ("Content-Type", "application/json"),
    ("Accept", "application/json"),
    ("User-Agent", "ollama-python/0.6.3 (x86_64 linux) Python/3.11.7"),  # as ollama/_client.py writes it
)
RESPONSE_HEADERS = (
    ("Content-Type", "application/x-ndjson"),  # streamResponse's
    ("Date", "Sun, 26 Oct 2025 17:15:24 GMT"),
    ("Transfer-Encoding", "chunked"),  # gin's c.Stream: no length, flushed line by line
)
START = datetime(2025, 10, 26, 17, 15, 24, 97767, tzinfo=UTC)


def created_at(t: float) -> str:
    """Go's time.Time in JSON (RFC 3339 with nanoseconds, trailing zeros dropped), `t` seconds after START."""
    stamp = (START + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return stamp + "Z"


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it: UTF-8 as is, `<`, `>`, `&` escaped (HTML-safe by default)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def metrics(prompt_tokens: int, tokens: int, seconds: float) -> dict[str, int]:
    """The counts of the `done` line (api/types.go `Metrics`), in the order Go writes them."""
    eval_ns = int(seconds * 1e9)
    return {
        "total_duration": eval_ns + 174_560_334,
        "load_duration": 101_397_084,
        "prompt_eval_count": prompt_tokens,
        "prompt_eval_duration": 13_074_791,
        "eval_count": tokens,
        "eval_duration": eval_ns,
    }


class Stream:
    """The lines of one response, each with its arrival time, and what a client shows of them."""

    def __init__(self, name: str, model: str) -> None:
        self.model = model
        self.rng = random.Random(name)
        self.t = 0.25  # the prompt's evaluation before the first line
        self.lines: list[tuple[float, bytes]] = []
        self.text = ""
        self.reasoning = ""
        self.tool_calls: list[dict[str, str]] = []
        self.finish_reason: str | None = None
        self.errors: list[str] = []
        self.complete = False

    def _line(self, payload: dict[str, Any]) -> None:
        self.lines.append((round(self.t, 6), (go_json(payload) + "\n").encode()))
        self.t += self.rng.uniform(0.020, 0.060)

    def call_id(self) -> str:
        """server/routes.go `toolCallId`: "call_" and 8 of [a-z0-9]."""
        return "call_" + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))

    def chat(self, content: str = "", thinking: str = "", tool_calls: list[dict[str, Any]] | None = None,
             done_reason: str | None = None, counts: dict[str, int] | None = None) -> None:  # fmt: skip
        """A `/api/chat` line (`ChatResponse`; `Message`: role, content, thinking and tool_calls if any)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking:
            message["thinking"] = thinking
        if tool_calls:
            message["tool_calls"] = tool_calls
        line: dict[str, Any] = {"model": self.model, "created_at": created_at(self.t), "message": message}
        self._finish(line, content, thinking, tool_calls, done_reason, counts)

    def generate(self, response: str = "", thinking: str = "", done_reason: str | None = None,
                 counts: dict[str, int] | None = None, context: list[int] | None = None) -> None:  # fmt: skip
        """A `/api/generate` line (`GenerateResponse`: response, thinking, done, done_reason, context, counts)."""
        line: dict[str, Any] = {"model": self.model, "created_at": created_at(self.t), "response": response}
        if thinking:
            line["thinking"] = thinking
        self._finish(line, response, thinking, None, done_reason, counts, context)

    def _finish(self, line: dict[str, Any], text: str, thinking: str, tool_calls: list[dict[str, Any]] | None,
                done_reason: str | None, counts: dict[str, int] | None,
                context: list[int] | None = None) -> None:  # fmt: skip
        line["done"] = done_reason is not None
        if done_reason is not None:
            line["done_reason"] = done_reason
            self.finish_reason = done_reason
            self.complete = True
        if context:
            line["context"] = context
        line.update(counts or {})
        self.text += text
        self.reasoning += thinking
        for call in tool_calls or ():
            function = call["function"]
            self.tool_calls.append({"name": function["name"], "arguments": go_json(function["arguments"])})
        self._line(line)

    def error(self, message: str) -> None:
        """The mid-stream error line; the stream ends after it."""
        self.errors.append(message)
        self._line({"error": message})


def write(name: str, stream: Stream, url: str, request: dict[str, Any], sources: list[str]) -> None:
    source = "; ".join(sources)
    capture = capture_from_body(
        stream.lines,
        request=Request(
            method="POST",
            url=url,
            headers=REQUEST_HEADERS,
            body=json.dumps(request),
        ),
        response=Response(
            status=200,
            reason="OK",
            headers=RESPONSE_HEADERS,
            t=0.012,
        ),
        end=End(kind="complete", t=round(stream.lines[-1][0] + 0.001, 6)),
        recorder=f"built from {source} (tests/data/formats/build_ollama.py)",
    )
    (HERE / f"{name}.jsonl").write_text(dump_capture(capture), encoding="utf-8")
    expect = {
        "dialect": "ollama",
        "framing": "ndjson",
        "text": stream.text,
        "reasoning": stream.reasoning,
        "tool_calls": stream.tool_calls,
        "finish_reason": stream.finish_reason,
        "complete": stream.complete and not stream.errors,
        "errors": stream.errors,
        "source": source,
    }
    (HERE / f"{name}.expect.json").write_text(json.dumps(expect, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def generate_text() -> None:
    """docs/api/streaming.mdx: gemma4's "That's a fantastic question!", the last piece on the `done` line."""
    s = Stream("ollama-generate-text", "gemma4")
    *pieces, last = ["That", "'", "s", " a", " fantastic", " question", "!"]
    for piece in pieces:
        s.generate(piece)
    s.generate(last, done_reason="stop", counts=metrics(11, 7, s.t - 0.25), context=[105, 2364, 107, 3048, 506])
    write("ollama-generate-text", s, "http://localhost:11434/api/generate",
          {"model": "gemma4", "prompt": "Is this a good question?"},
          [f"{DOCS}/api/streaming.mdx", f"{DOCS}/api/usage.mdx", f"{DOCS}/api.md#generate-a-completion",
           TYPES, ROUTES])  # fmt: skip


def chat_text() -> None:
    """docs/api.md "Chat request (Streaming)": llama3.2 on why the sky is blue; the `done` line's content empty."""
    s = Stream("ollama-chat-text", "llama3.2")
    for piece in ["The", " sky", " appears", " blue", " because", " of", " a", " process", " called", " Rayleigh",
                  " scattering", ":", " air", " molecules", " scatter", " short", " blue", " wavelengths", " of",
                  " sunlight", " more", " than", " red", " ones", "."]:  # fmt: skip
        s.chat(piece)
    s.chat("", done_reason="stop", counts=metrics(26, 25, s.t - 0.25))
    write("ollama-chat-text", s, "http://localhost:11434/api/chat",
          {"model": "llama3.2", "messages": [{"role": "user", "content": "why is the sky blue?"}]},
          [f"{DOCS}/api.md#chat-request-streaming", TYPES, ROUTES])  # fmt: skip


def chat_thinking() -> None:
    """docs/capabilities/thinking.mdx "Stream the reasoning trace": qwen3 with `think`, the trace in
    `message.thinking` before the answer in `message.content`."""
    s = Stream("ollama-chat-thinking", "qwen3")
    for piece in ["Okay", ",", " the", " user", " wants", " 17", " ×", " 23", ".", " 17", " ×", " 20", " =", " 340",
                  ",", " and", " 17", " ×", " 3", " =", " 51", ".", " 340", " +", " 51", " =", " 391",
                  "."]:  # fmt: skip
        s.chat(thinking=piece)
    for piece in ["17", " ×", " 23", " =", " **", "391", "**", "\n\n", "(17", " ×", " 20", " +", " 17", " ×", " 3",
                  " =", " 340", " +", " 51", ")"]:  # fmt: skip
        s.chat(piece)
    s.chat("", done_reason="stop", counts=metrics(18, 48, s.t - 0.25))
    write("ollama-chat-thinking", s, "http://localhost:11434/api/chat",
          {"model": "qwen3", "messages": [{"role": "user", "content": "What is 17 × 23?"}], "think": True},
          [f"{DOCS}/capabilities/thinking.mdx", f"{DOCS}/api.md#generate-a-chat-completion", TYPES,
           ROUTES])  # fmt: skip


def chat_tools() -> None:
    """docs/capabilities/tool-calling.mdx "Parallel tool calling" streamed ("Tool calling with streaming"):
    qwen3 thinks, then sends four calls whole, two a line, each with its `id` and `function.index`."""
    s = Stream("ollama-chat-tools", "qwen3")
    for piece in ["The", " user", " asks", " for", " the", " weather", " in", " New", " York", " and", " London", ".",
                  " I", " will", " call", " both", " tools", " for", " each", " city", "."]:  # fmt: skip
        s.chat(thinking=piece)
    calls = [("get_temperature", "New York"), ("get_conditions", "New York"),
             ("get_temperature", "London"), ("get_conditions", "London")]  # fmt: skip
    for first in (0, 2):
        s.chat(tool_calls=[
            {"id": s.call_id(), "function": {"index": i, "name": name, "arguments": {"city": city}}}
            for i, (name, city) in enumerate(calls[first : first + 2], start=first)
        ])  # fmt: skip
    s.chat("", done_reason="stop", counts=metrics(213, 87, s.t - 0.25))
    function = {"type": "object", "required": ["city"],
                "properties": {"city": {"type": "string", "description": "The name of the city"}}}  # fmt: skip
    tools = [{"type": "function",
              "function": {"name": name, "description": f"{name} for a city", "parameters": function}}
             for name in ("get_temperature", "get_conditions")]  # fmt: skip
    question = "What are the current weather conditions and temperature in New York and London?"
    write("ollama-chat-tools", s, "http://localhost:11434/api/chat",
          {"model": "qwen3", "messages": [{"role": "user", "content": question}], "tools": tools, "think": True},
          [f"{DOCS}/capabilities/tool-calling.mdx", f"{DOCS}/api.md#chat-request-streaming-with-tools",
           f"{TYPES} (ToolCall, ToolCallFunction)", ROUTES + " and toolCallId"])  # fmt: skip


def generate_error() -> None:
    """docs/api/errors.mdx "Errors that occur while streaming": four pieces, then the error line."""
    s = Stream("ollama-generate-error", "gemma4")
    for piece in [" Yes", ".", "I", "can"]:
        s.generate(piece)
    s.error("an error was encountered while running the model")
    write("ollama-generate-error", s, "http://localhost:11434/api/generate",
          {"model": "gemma4", "prompt": "Can you help me?"},
          [f"{DOCS}/api/errors.mdx", ROUTES,
           f"{CLIENT} ollama/_client.py (raises ResponseError on `error`)"])  # fmt: skip


CASES = (generate_text, chat_text, chat_thinking, chat_tools, generate_error)

if __name__ == "__main__":
    for case in CASES:
        case()
