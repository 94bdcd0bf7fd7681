"""Build the Amazon Bedrock fixtures of tests/data/formats: `bedrock-converse-*` and `bedrock-invoke-*`.

No real Bedrock body is in the repository, so these are built from the published shapes: the member
names of botocore's service model (botocore/data/bedrock-runtime/2023-09-30/service-2.json:
`ConverseStreamOutput`, `ResponseStream`), the examples of the API reference and the user guide (each
fixture's `source` names its pages), and Bedrock's wire habits seen in public test data of gateways
that replay real Bedrock bodies: the three headers of each message in the order `:event-type`,
`:content-type`, `:message-type`, and a `"p"` member of random-length padding (letters and digits) in
every payload. Each message is one chunk, 20-60 ms after the last, the first after the model's think.

Run from the repository root: `python tests/data/formats/build_bedrock.py` (deterministic: the same
files every time).
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from sse_inspect import Capture, End, Request, Response  # noqa: E402
from sse_inspect._capture import capture_from_body, dump_capture  # noqa: E402
from sse_inspect._eventstream import encode_message  # noqa: E402

HERE = Path(__file__).resolve().parent
HOST = "https://bedrock-runtime.us-east-1.amazonaws.com"
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
THINKING_MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
EVENTSTREAM = "application/vnd.amazon.eventstream"
RECORDED_AT = "2026-12-02T22:00:00Z"

MODEL_SERVICE = "botocore/data/bedrock-runtime/2023-09-30/service-2.json (boto/botocore)"
CONVERSE_REF = "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html"
CONVERSE_OUTPUT = "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html"
TOOL_GUIDE = "https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html"
THINKING_GUIDE = "https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html"
INVOKE_REF = "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html"
CLAUDE_GUIDE = "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html"
STREAMING_GUIDE = "https://docs.anthropic.com/en/docs/build-with-claude/streaming"


def padding(rng: random.Random) -> str:
    """Bedrock's `p`: the first letters and digits of the alphabet, of a random length."""
    alphabet = string.ascii_lowercase + string.ascii_uppercase + string.digits
    return alphabet[: rng.randint(1, len(alphabet))]


def event(name: str, payload: dict[str, Any], rng: random.Random) -> bytes:
    body = json.dumps({**payload, "p": padding(rng)}, separators=(",", ":")).encode()
    return encode_message({":event-type": name, ":content-type": "application/json", ":message-type": "event"}, body)


def exception(name: str, payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {":exception-type": name, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, body)


def chunk(payload: dict[str, Any], rng: random.Random) -> bytes:
    """An InvokeModelWithResponseStream `chunk`: the model's event, base64 in `bytes`."""
    wrapped = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    return event("chunk", {"bytes": wrapped}, rng)


def write(name: str, messages: list[bytes], *, operation: str, model: str, request: dict[str, Any],
          expect: dict[str, Any], seed: int) -> None:  # fmt: skip
    rng = random.Random(seed)
    t = 0.30 + rng.randint(0, 200) / 1000  # the response's head, then the model's first token
    head_t = round(t, 3)
    timed: list[tuple[float | None, bytes]] = []
    t += 0.15 + rng.randint(0, 150) / 1000
    for message in messages:
        timed.append((round(t, 3), message))
        t += rng.randint(20, 60) / 1000
    model_path = model.replace(":", "%3A")  # botocore quotes the label's colon
    source = expect["source"]
    capture: Capture = capture_from_body(
        timed,
        request=Request(
            method="POST",
            url=f"{HOST}/model/{model_path}/{operation}",
            headers=(("Content-Type", "application/json"), ("Accept", "application/vnd.amazon.eventstream")),
            body=json.dumps(request, separators=(",", ":")),
        ),
        response=Response(
            status=200,
            reason="OK",
            headers=(
                ("Date", "Wed, 02 Dec 2026 22:00:00 GMT"),
                ("Content-Type", EVENTSTREAM),
                ("Transfer-Encoding", "chunked"),
                ("Connection", "keep-alive"),
                ("x-amzn-RequestId", str(uuid.UUID(int=rng.getrandbits(128), version=4))),
                # InvokeModelWithResponseStream's `contentType` member: the model's own format
                *((("X-Amzn-Bedrock-Content-Type", "application/json"),) if operation.startswith("invoke") else ()),
            ),
            t=head_t,
        ),
        end=End(kind="complete", t=round(t, 3)),
        recorder=f"built from {source} by tests/data/formats/build_bedrock.py",
    )
    (HERE / f"{name}.jsonl").write_text(dump_capture(capture, recorded_at=RECORDED_AT), encoding="utf-8")
    framing = {"framing": "eventstream"}
    (HERE / f"{name}.expect.json").write_text(json.dumps({"dialect": expect["dialect"], **framing, **{
        k: v for k, v in expect.items() if k != "dialect"}}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# -- ConverseStream -----------------------------------------------------------------------------------------


def converse_request(text: str, **more: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"text": text}]}], "inferenceConfig": {"maxTokens": 512}, **more}


def converse_text() -> None:
    rng = random.Random(1)
    pieces = ["Hello", "! Amazon", " Bedrock", " streams", " this", " answer", " in", " pieces", "."]
    messages = [event("messageStart", {"role": "assistant"}, rng)]
    messages += [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}, rng) for p in pieces]
    messages += [
        event("contentBlockStop", {"contentBlockIndex": 0}, rng),
        event("messageStop", {"stopReason": "end_turn"}, rng),
        event("metadata", {"usage": {"inputTokens": 12, "outputTokens": 10, "totalTokens": 22},
                           "metrics": {"latencyMs": 612}}, rng),  # fmt: skip
    ]
    write("bedrock-converse-text", messages, operation="converse-stream", model=MODEL,
          request=converse_request("Say hello in a few words."), seed=11, expect={
              "dialect": "bedrock-converse", "text": "".join(pieces), "reasoning": "", "tool_calls": [],
              "finish_reason": "end_turn", "complete": True, "errors": [],
              "source": f"{CONVERSE_REF}; {CONVERSE_OUTPUT}; {MODEL_SERVICE}"})  # fmt: skip


def converse_tool_use() -> None:
    """The user guide's `top_song` tool (its example asks for the most popular song on WZPZ), called
    twice in one turn, as Claude calls tools in parallel: each call a `toolUse` block of its own."""
    rng = random.Random(2)
    text = ["I'll", " look up", " the top", " songs on", " both stations."]
    first = ['{"sign', '": "WZ', 'PZ"}']
    second = ['{"sign": ', '"WKRP"}']
    messages = [event("messageStart", {"role": "assistant"}, rng)]
    messages += [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}, rng) for p in text]
    messages.append(event("contentBlockStop", {"contentBlockIndex": 0}, rng))
    for index, (tool_id, pieces) in enumerate((("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", first),
                                               ("tooluse_1X2aW9c4TEmQ1vD3Ff7BgA", second)), start=1):  # fmt: skip
        start = {"toolUse": {"toolUseId": tool_id, "name": "top_song"}}
        messages.append(event("contentBlockStart", {"contentBlockIndex": index, "start": start}, rng))
        messages += [event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": p}}}, rng)
                     for p in pieces]  # fmt: skip
        messages.append(event("contentBlockStop", {"contentBlockIndex": index}, rng))
    messages += [
        event("messageStop", {"stopReason": "tool_use"}, rng),
        event("metadata", {"usage": {"inputTokens": 416, "outputTokens": 98, "totalTokens": 514},
                           "metrics": {"latencyMs": 1745}}, rng),  # fmt: skip
    ]
    tool = {"toolSpec": {"name": "top_song", "description": "Get the most popular song played on a radio station.",
                         "inputSchema": {"json": {"type": "object", "properties": {"sign": {"type": "string"}},
                                                  "required": ["sign"]}}}}  # fmt: skip
    write("bedrock-converse-tool-use", messages, operation="converse-stream", model=MODEL,
          request=converse_request("What are the most popular songs on WZPZ and WKRP?", toolConfig={"tools": [tool]}),
          seed=12, expect={
              "dialect": "bedrock-converse", "text": "".join(text), "reasoning": "",
              "tool_calls": [{"name": "top_song", "arguments": "".join(first)},
                             {"name": "top_song", "arguments": "".join(second)}],
              "finish_reason": "tool_use", "complete": True, "errors": [],
              "source": f"{TOOL_GUIDE}; {CONVERSE_OUTPUT}; {MODEL_SERVICE}"})  # fmt: skip


def converse_reasoning() -> None:
    """Claude 3.7's extended thinking through Converse: `reasoningContent` deltas of text, then the
    block's signature, then the answer in a block of its own."""
    rng = random.Random(3)
    thinking = ["The user", " asks for", " 27 * 453.", " 27 * 453 = 27 * 400 + 27 * 53", " = 10800 + 1431 = 12231."]
    text = ["27", " × 453", " = 12", ",231."]
    messages = [event("messageStart", {"role": "assistant"}, rng)]
    messages += [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": p}}}, rng)
                 for p in thinking]  # fmt: skip
    signature = "EqoBCkgIARABGAIiQL" + "Q" * 40
    messages += [
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": signature}}},
              rng),  # fmt: skip
        event("contentBlockStop", {"contentBlockIndex": 0}, rng),
    ]
    messages += [event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": p}}, rng) for p in text]
    messages += [
        event("contentBlockStop", {"contentBlockIndex": 1}, rng),
        event("messageStop", {"stopReason": "end_turn"}, rng),
        event("metadata", {"usage": {"inputTokens": 47, "outputTokens": 112, "totalTokens": 159},
                           "metrics": {"latencyMs": 3120}}, rng),  # fmt: skip
    ]
    write("bedrock-converse-reasoning", messages, operation="converse-stream", model=THINKING_MODEL,
          request=converse_request("What is 27 * 453?", additionalModelRequestFields={
              "thinking": {"type": "enabled", "budget_tokens": 1024}}), seed=13, expect={
              "dialect": "bedrock-converse", "text": "".join(text), "reasoning": "".join(thinking), "tool_calls": [],
              "finish_reason": "end_turn", "complete": True, "errors": [],
              "source": f"{THINKING_GUIDE}; {CONVERSE_OUTPUT}; {MODEL_SERVICE}"})  # fmt: skip


def converse_error() -> None:
    """The model fails mid-answer: a `modelStreamErrorException` message (its members `message`,
    `originalStatusCode`, `originalMessage` in the service model), then the stream ends, no messageStop."""
    rng = random.Random(4)
    pieces = ["Once", " upon", " a time", ","]
    messages = [event("messageStart", {"role": "assistant"}, rng)]
    messages += [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}, rng) for p in pieces]
    message = "The model encountered an error while streaming the response."
    messages.append(exception("modelStreamErrorException", {"message": message, "originalStatusCode": 500,
                                                            "originalMessage": "Internal server error"}))  # fmt: skip
    write("bedrock-converse-error", messages, operation="converse-stream", model=MODEL,
          request=converse_request("Tell me a story."), seed=14, expect={
              "dialect": "bedrock-converse", "text": "".join(pieces), "reasoning": "", "tool_calls": [],
              "finish_reason": None, "complete": False, "errors": [message],
              "source": f"{CONVERSE_OUTPUT} (ModelStreamErrorException); {MODEL_SERVICE}"})  # fmt: skip


# -- InvokeModelWithResponseStream (Anthropic Claude) ---------------------------------------------------------


def invoke_request(text: str, **more: Any) -> dict[str, Any]:
    return {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 512,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}], **more}  # fmt: skip


def message_start(message_id: str, model: str, input_tokens: int) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}


def text_block(index: int, pieces: list[str]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}} for p in pieces),
        {"type": "content_block_stop", "index": index},
    ]


def message_end(stop_reason: str, input_tokens: int, output_tokens: int, latency: int) -> list[dict[str, Any]]:
    metrics = {"inputTokenCount": input_tokens, "outputTokenCount": output_tokens,
               "invocationLatency": latency, "firstByteLatency": latency // 3}  # fmt: skip
    return [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
         "usage": {"output_tokens": output_tokens}},  # fmt: skip
        {"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics},
    ]


def invoke_text() -> None:
    rng = random.Random(5)
    pieces = ["Hi", "!", " \U0001f44b How", " are you", " doing today?"]
    events = [message_start("msg_bdrk_01GqKmV7Lh3a2Yc5e8TfXb9N", "claude-3-5-sonnet-20240620", 10),
              *text_block(0, pieces), *message_end("end_turn", 10, 15, 1798)]  # fmt: skip
    write("bedrock-invoke-text", [chunk(e, rng) for e in events], operation="invoke-with-response-stream",
          model=MODEL, request=invoke_request("Hello"), seed=21, expect={
              "dialect": "bedrock-invoke", "text": "".join(pieces), "reasoning": "", "tool_calls": [],
              "finish_reason": "end_turn", "complete": True, "errors": [],
              "source": f"{INVOKE_REF}; {CLAUDE_GUIDE}; {STREAMING_GUIDE}; {MODEL_SERVICE}"})  # fmt: skip


def invoke_tool_use() -> None:
    """Anthropic's streaming example of a `get_weather` call (input_json_delta pieces), through Bedrock."""
    rng = random.Random(6)
    text = ["Okay,", " let's check", " the weather", " for San Francisco, CA:"]
    arguments = ["", '{"location":', ' "San Fra', 'ncisco, CA"', ', "unit": "fah', 'renheit"}']
    events = [message_start("msg_bdrk_014p7gG3wDgGV9EUtLvnow3U", "claude-3-5-sonnet-20240620", 472),
              *text_block(0, text),
              {"type": "content_block_start", "index": 1, "content_block": {
                  "type": "tool_use", "id": "toolu_bdrk_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}},
              *({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}}
                for p in arguments),
              {"type": "content_block_stop", "index": 1},
              *message_end("tool_use", 472, 89, 2210)]  # fmt: skip
    tool = {"name": "get_weather", "description": "Get the current weather in a given location",
            "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                             "required": ["location"]}}  # fmt: skip
    write("bedrock-invoke-tool-use", [chunk(e, rng) for e in events], operation="invoke-with-response-stream",
          model=MODEL, request=invoke_request("What is the weather like in San Francisco?", tools=[tool]),
          seed=22, expect={
              "dialect": "bedrock-invoke", "text": "".join(text), "reasoning": "",
              "tool_calls": [{"name": "get_weather", "arguments": "".join(arguments)}],
              "finish_reason": "tool_use", "complete": True, "errors": [],
              "source": f"{INVOKE_REF}; {STREAMING_GUIDE} (the get_weather example); {MODEL_SERVICE}"})  # fmt: skip


def invoke_error() -> None:
    """Throttled mid-answer: a `throttlingException` message (ResponseStream's member), the stream ends."""
    rng = random.Random(7)
    pieces = ["The", " capital", " of France"]
    events = [message_start("msg_bdrk_01Xw5RkP2nB8cM4tY6vQa1Ze", "claude-3-5-sonnet-20240620", 14),
              *text_block(0, pieces)[:-1]]  # the block is never stopped
    message = "Too many requests, please wait before trying again."
    messages = [chunk(e, rng) for e in events] + [exception("throttlingException", {"message": message})]
    write("bedrock-invoke-error", messages, operation="invoke-with-response-stream", model=MODEL,
          request=invoke_request("What is the capital of France?"), seed=23, expect={
              "dialect": "bedrock-invoke", "text": "".join(pieces), "reasoning": "", "tool_calls": [],
              "finish_reason": None, "complete": False, "errors": [message],
              "source": f"{INVOKE_REF} (ThrottlingException); {MODEL_SERVICE}"})  # fmt: skip


BUILDERS = [converse_text, converse_tool_use, converse_reasoning, converse_error, invoke_text, invoke_tool_use,
            invoke_error]  # fmt: skip

if __name__ == "__main__":
    for build in BUILDERS:
        build()
