"""Write the deep-nesting captures of tests/data/hostile/ (issue 17, item 6): one per dialect, a tool
call whose arguments are valid JSON nested `DEPTH` deep (40 KB), deeper than Python's JSON parser
nests. Run from the repository root: `python tests/data/hostile/make_deep.py`."""

from __future__ import annotations

import json
from pathlib import Path

from sse_inspect._capture import Request, Response, chunk_line, end_line, header_line

DEPTH = 20_000
HERE = Path(__file__).parent
ARGUMENTS = "[" * DEPTH + "1" + "]" * DEPTH
"""Valid JSON (40 KB) that `json.loads` cannot nest on any supported Python: it stops at about 1,000
levels on 3.11, at a few thousand on 3.13."""


def _sse(*events: tuple[str | None, object]) -> list[bytes]:
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
        out.append((f"event: {name}\n" if name else "").encode() + f"data: {data}\n\n".encode())
    return out


def _openai_chat() -> list[bytes]:
    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"id": "chatcmpl-deep", "object": "chat.completion.chunk", "created": 1, "model": "gpt-deep",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    call = {"index": 0, "id": "call_deep", "type": "function", "function": {"name": "deep", "arguments": ""}}
    half = len(ARGUMENTS) // 2
    return _sse(
        (None, chunk({"role": "assistant", "tool_calls": [call]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[:half]}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[half:]}}]})),
        (None, chunk({}, "tool_calls")),
        (None, "[DONE]"),
    )


def _anthropic() -> list[bytes]:
    return _sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_deep", "type": "message",
                           "role": "assistant", "model": "claude-deep", "content": [], "usage": {"input_tokens": 1}}}),  # fmt: skip
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": "toolu_deep", "name": "deep", "input": {}}}),  # fmt: skip
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": ARGUMENTS}}),  # fmt: skip
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    )


def _openai_responses() -> list[bytes]:
    item = {"type": "function_call", "id": "fc_deep", "call_id": "call_deep", "name": "deep", "arguments": ""}
    done = dict(item, arguments=ARGUMENTS)
    response = {"id": "resp_deep", "object": "response", "model": "gpt-deep", "status": "completed", "output": []}
    return _sse(
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": dict(response, status="in_progress")}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}),
        ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "sequence_number": 2,
                                                    "item_id": "fc_deep", "output_index": 0, "delta": ARGUMENTS}),  # fmt: skip
        ("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "sequence_number": 3,
                                                   "item_id": "fc_deep", "output_index": 0, "arguments": ARGUMENTS}),  # fmt: skip
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": done}),
        ("response.completed", {"type": "response.completed", "sequence_number": 5, "response": response}),
    )


def _cohere() -> list[bytes]:
    return _sse(
        ("message-start", {"type": "message-start", "id": "cohere-deep", "delta": {"message": {"role": "assistant"}}}),
        ("tool-call-start", {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
            "id": "deep_1", "type": "function", "function": {"name": "deep", "arguments": ""}}}}}),  # fmt: skip
        ("tool-call-delta", {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
            "function": {"arguments": ARGUMENTS}}}}}),  # fmt: skip
        ("tool-call-end", {"type": "tool-call-end", "index": 0}),
        ("message-end", {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
    )


def _gemini() -> list[bytes]:
    """Gemini sends the arguments parsed: the payload itself is nested (less deep, so that it still parses)."""
    args = "{" + '"a":{' * 400 + '"b":1' + "}" * 401
    data = ('{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"deep","args":' + args
            + '}}]},"finishReason":"STOP","index":0}],"modelVersion":"gemini-deep","responseId":"deep"}')  # fmt: skip
    return _sse((None, data))


CAPTURES = {
    "openai-chat": ("https://api.openai.com/v1/chat/completions", _openai_chat),
    "anthropic": ("https://api.anthropic.com/v1/messages", _anthropic),
    "openai-responses": ("https://api.openai.com/v1/responses", _openai_responses),
    "cohere": ("https://api.cohere.com/v2/chat", _cohere),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse", _gemini),
}


def write(name: str, url: str, chunks: list[bytes]) -> None:
    request = Request(method="POST", url=url, headers=(("Content-Type", "application/json"),))
    response = Response(headers=(("Content-Type", "text/event-stream"),), t=0.1)
    lines = [header_line(request=request, response=response, recorded_at=None, recorder="tests/data/hostile/make_deep.py")]
    lines += [chunk_line(0.2 + i / 100, data) for i, data in enumerate(chunks)]
    lines.append(end_line("complete", 0.2 + len(chunks) / 100))
    (HERE / f"deep-{name}.jsonl").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    for dialect, (url, make) in CAPTURES.items():
        write(dialect, url, make())
