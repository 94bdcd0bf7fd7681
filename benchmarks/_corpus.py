"""Deterministic `text/event-stream` bodies for the benchmarks: the same bytes on every run and machine.

Sizes are in MB of 10**6 bytes. A body holds whole events only and stops at the last event that
fits in its size (then the end marker, where the dialect has one), so it is a little under the
size asked for; the CRLF bodies are the LF bodies with every LF made CRLF, so a little over it.

    openai_chat(size)          data: {chat.completion.chunk} per token, then data: [DONE]
    anthropic_messages(size)   event: content_block_delta / data: {...} per token, framed by the
                               message_start ... message_stop events of a real stream
    multiline(size)            events of `event:`, `id:` and 2 to 6 `data:` lines of 64 KiB each
    stream(name, size)         the events of openai_chat or anthropic_messages one at a time (the
                               same bytes, never held whole: for captures of a GB)
    crlf(body)                 the same body with CRLF line ends
    chunked(body, n)           the body cut every n bytes (n=0: one chunk)

and for benchmarks/framers.py, bodies of the other framings (their events: what sse-inspect's framers give):

    ollama_chat(size)          Ollama /api/chat NDJSON: a JSON line per token, then the `done` line
    gemini_array(size)         Gemini's streamed JSON array (no alt=sse): indented objects, `\\n,\\r\\n` between
    bedrock_converse(size)     a Bedrock ConverseStream AWS event stream: a binary message per token

Each returns a `Body`: the bytes and the events a spec-exact client dispatches from them, as
(type, data, last event id) triples, known by construction rather than by parsing.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = [
    "MB", "Body", "anthropic_messages", "bedrock_converse", "chunked", "crlf", "gemini_array", "multiline",
    "ollama_chat", "openai_chat", "stream", "tokens",
]  # fmt: skip

MB = 1_000_000

# Token texts an LLM streams: short words, punctuation, some JSON escapes and multi-byte UTF-8
# (raw in the JSON, as most servers send it; a small cut may split such a character).
_WORDS = (
    "the",
    " model",
    " stream",
    "s",
    " token",
    ",",
    ".",
    " a",
    " of",
    " and",
    " to",
    " in",
    " is",
    " é",
    "té",
    " naïve",
    " 日本",
    "語",
    " 🙂",
    ' "quoted"',
    "\n",
    "\n\n",
    " `code`",
    " x\ty",
    " 42",
    " Server",
    "-Sent",
    " Events",
    " ",
    "  ",
    " über",
    " ñ",
    " λ",
    " —",
    " ok",
)


class Body(NamedTuple):
    data: bytes
    events: list[tuple[str, str, str]]
    """(type, data, id) of each event a spec-exact parser dispatches."""
    longest: int
    """Bytes of the longest event (with its blank line)."""


def tokens(seed: int = 0) -> Iterator[str]:
    """An endless, deterministic sequence of token texts."""
    rng = random.Random(seed)
    i = 0
    while True:
        word = rng.choice(_WORDS)
        yield word if rng.random() < 0.6 else f"{word} w{i % 1000}"
        i += 1


Item = tuple[bytes, tuple[str, str, str]]  # an event's bytes, what it dispatches


def _fill(size: int, head: list[Item], events: Iterable[Item], tail: list[Item]) -> Body:
    """The head events, as many events as fit in `size` bytes with the tail events, the tail events."""
    parts = list(_fitting(size, head, events, tail))
    return Body(b"".join(b for b, _ in parts), [e for _, e in parts], max(len(b) for b, _ in parts))


def _fitting(size: int, head: list[Item], events: Iterable[Item], tail: list[Item]) -> Iterator[Item]:
    """`_fill`'s events one at a time."""
    room = size - sum(len(b) for b, _ in head) - sum(len(b) for b, _ in tail)
    yield from head
    for item in events:
        room -= len(item[0])
        if room < 0:
            break
        yield item
    yield from tail


def _data(data: str) -> Item:
    return f"data: {data}\n\n".encode(), ("message", data, "")


def openai_chat(size: int, seed: int = 0) -> Body:
    """An OpenAI Chat Completions stream of `size` bytes or a little less."""
    return _fill(size, *_openai_parts(seed))


def _openai_parts(seed: int) -> tuple[list[Item], Iterator[Item], list[Item]]:
    prefix = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764471600,"model":"bench",'
    prefix += '"choices":[{"index":0,"delta":{"content":'
    suffix = '},"finish_reason":null}]}'
    events = (_data(prefix + json.dumps(t, ensure_ascii=False) + suffix) for t in tokens(seed))
    return [], events, [_data("[DONE]")]


def anthropic_messages(size: int, seed: int = 1) -> Body:
    """An Anthropic Messages stream of `size` bytes or a little less."""
    return _fill(size, *_anthropic_parts(seed))


def _anthropic_parts(seed: int) -> tuple[list[Item], Iterator[Item], list[Item]]:

    def event(kind: str, payload: dict) -> Item:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n".encode(), (kind, data, "")

    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    head = [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        event("ping", {"type": "ping"}),
    ]
    tail = [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1000},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    deltas = (
        event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        )
        for t in tokens(seed)
    )
    return head, deltas, tail


def stream(name: str, size: int) -> Iterator[bytes]:
    """The bytes of each event of `openai_chat(size)` (name "openai") or `anthropic_messages(size)`
    ("anthropic"), in order, one at a time: the same body, never held whole."""
    parts = {"openai": _openai_parts, "anthropic": _anthropic_parts}[name]
    return (data for data, _ in _fitting(size, *parts(0 if name == "openai" else 1)))


def multiline(size: int, seed: int = 2, line: int = 64 * 1024) -> Body:
    """Big events: `event: blob`, `id: N`, then 2 to 6 `data:` lines of `line` bytes each."""
    rng = random.Random(seed)
    pool = base64.b64encode(rng.randbytes(line)).decode()  # ASCII, 4/3 * line characters

    def events() -> Iterator[Item]:
        n = 0
        while True:
            values = []
            for _ in range(rng.randint(2, 6)):
                start = rng.randrange(len(pool) - line + 1)
                values.append(pool[start : start + line])
            text = f"event: blob\nid: {n}\n" + "".join(f"data: {v}\n" for v in values) + "\n"
            yield text.encode(), ("blob", "\n".join(values), str(n))
            n += 1

    return _fill(size, [], events(), [])


def crlf(body: Body) -> Body:
    """The body with CRLF line ends (these bodies hold no CR of their own): the same events."""
    data = body.data.replace(b"\n", b"\r\n")
    return Body(data, body.events, body.longest * 2)  # a bound: each event grows by its line count


def chunked(body: bytes, n: int) -> list[bytes]:
    """The body cut every `n` bytes; n=0 (or n >= len) gives it as one chunk."""
    if n <= 0 or n >= len(body):
        return [body]
    return [body[i : i + n] for i in range(0, len(body), n)]


# ---------------------------------------------------------------------------------------------
# The other framings (benchmarks/framers.py): NDJSON, the streamed JSON array, the AWS event stream.
# Each returns a `Body` whose events are the items sse-inspect's framers give: ("message", the line or
# element text, "") for NDJSON and the array, (":event-type", the payload as text, "") for the event stream.


def ollama_chat(size: int, seed: int = 3) -> Body:
    """An Ollama `/api/chat` NDJSON stream (`application/x-ndjson`) of `size` bytes or a little less: a line
    per token, then the `done` line with its metrics, as Ollama's Go encoder writes them (LF, no spaces)."""

    def line(payload: dict) -> Item:
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        return (text + "\n").encode(), ("message", text, "")

    def at(i: int) -> str:
        return f"2025-06-01T12:00:{i // 1000 % 60:02d}.{i % 1000:03d}4817Z"

    lines = (line({"model": "llama3.2", "created_at": at(i), "message": {"role": "assistant", "content": t},
                   "done": False}) for i, t in enumerate(tokens(seed)))  # fmt: skip
    done = line({"model": "llama3.2", "created_at": at(0), "message": {"role": "assistant", "content": ""},
                 "done_reason": "stop", "done": True, "total_duration": 4883583458, "load_duration": 1334875,
                 "prompt_eval_count": 26, "prompt_eval_duration": 342546000, "eval_count": 282,
                 "eval_duration": 4535599000})  # fmt: skip
    return _fill(size, [], lines, [done])


def gemini_array(size: int, seed: int = 4) -> Body:
    """A Gemini `:streamGenerateContent` body without `alt=sse` of `size` bytes or a little less: one JSON
    array, each response object indented by two spaces, `\\n,\\r\\n` between them, as Gemini writes it."""
    rng = random.Random(seed)

    def response(text: str, last: bool = False) -> dict:
        candidate: dict = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": "gemini-2.0-flash"}  # fmt: skip

    def element(value: dict, first: bool) -> Item:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return (("[" if first else "\n,\r\n") + text).encode(), ("message", text, "")

    def texts() -> Iterator[str]:  # a few tokens a response, as Gemini groups them
        words = tokens(seed)
        while True:
            yield "".join(next(words) for _ in range(rng.randint(1, 6)))

    first = element(response("Sure"), True)
    rest = (element(response(t), False) for t in texts())
    last_bytes, last = element(response("", last=True), False)
    return _fill(size - 2, [first], rest, [(last_bytes + b"\n]", last)])


def bedrock_converse(size: int, seed: int = 5) -> Body:
    """A Bedrock `ConverseStream` body (`application/vnd.amazon.eventstream`) of `size` bytes or a little less:
    `messageStart`, a `contentBlockDelta` per token, `contentBlockStop`, `messageStop`, `metadata`, each message
    with Bedrock's three headers and its `"p"` padding (see tests/data/formats/build_bedrock.py)."""
    from sse_inspect._eventstream import encode_message  # (the repository root on sys.path, as for the scripts)

    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def event(name: str, payload: dict) -> Item:
        body = json.dumps({**payload, "p": alphabet[: rng.randint(1, len(alphabet))]}, separators=(",", ":"))
        headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
        return encode_message(headers, body.encode()), (name, body, "")

    head = [event("messageStart", {"role": "assistant"})]
    deltas = (event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}}) for t in tokens(seed))
    tail = [event("contentBlockStop", {"contentBlockIndex": 0}), event("messageStop", {"stopReason": "end_turn"}),
            event("metadata", {"usage": {"inputTokens": 12, "outputTokens": 1000, "totalTokens": 1012},
                               "metrics": {"latencyMs": 612}})]  # fmt: skip
    return _fill(size, head, deltas, tail)
