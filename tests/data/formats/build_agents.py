"""Build the `vercel-ui-*`, `mcp-*` and `a2a-*` fixtures of this folder: the SSE protocols agents and UIs speak.

    python tests/data/formats/build_agents.py     (deterministic: the same files every time)

No capture of a real server of these protocols is in the repository, so each stream is written as its SDK's
server writes it, from the shapes the specifications and the SDKs' source publish (each case's `sources`):

- Vercel AI SDK UI message stream: `data: <chunk JSON>` and a blank line per chunk (JsonToSseTransformStream),
  `data: [DONE]` last, the headers of `uiMessageStreamHeaders` (`x-vercel-ai-ui-message-stream: v1`); chunks
  as ui-message-chunks.ts types them, in the order `toUIMessageStream` sends them;
- MCP Streamable HTTP: the TypeScript SDK's `event: message`, `id:` (with an event store), `data:` and LF; the
  Python SDK's (sse-starlette's `EventSourceResponse`) `event: message`, `data:` and CRLF; JSON-RPC messages as
  schema.ts types them; a 2025-11-25 priming event (an id and empty data) first where the server can resume;
- A2A: a2a-sdk's server (sse-starlette, CRLF, data only), each event a `SendStreamingMessageResponse` as
  pydantic dumps it (`model_dump_json(exclude_none=True)`: compact, the generated types' alphabetical order).

Events 15-70 ms apart (seeded), one per chunk. The sidecar says what a client shows.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository, for a run as a script

from sse_inspect import End, Request, Response, capture_from_body, dump_capture

AI = "https://github.com/vercel/ai/blob/main/packages"
AI_PROTOCOL = "https://ai-sdk.dev/docs/ai-sdk-ui/stream-protocol"
AI_CHUNKS = f"{AI}/ai/src/ui-message-stream/ui-message-chunks.ts"
AI_HEADERS = f"{AI}/ai/src/ui-message-stream/ui-message-stream-headers.ts"
AI_CLIENT = f"{AI}/ai/src/ui/process-ui-message-stream.ts"
MCP_SPEC = "https://modelcontextprotocol.io/specification/2025-06-18/basic/transports (Streamable HTTP)"
MCP_SPEC_NEXT = "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports (priming event)"
MCP_SCHEMA = "https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/schema/2025-06-18/schema.ts"
MCP_TS = ("https://github.com/modelcontextprotocol/typescript-sdk/blob/main/src/server/streamableHttp.ts "
          "(writeSSEEvent)")  # fmt: skip
MCP_PY = ("https://github.com/modelcontextprotocol/python-sdk/blob/main/src/mcp/server/streamable_http.py "
          "(EventSourceResponse), src/mcp/server/fastmcp/server.py (tool errors)")  # fmt: skip
A2A_SPEC = "https://a2a-protocol.org/v0.3.0/specification/ (message/stream, SendStreamingMessageResponse)"
A2A_SDK = ("https://github.com/a2aproject/a2a-python/blob/main/src/a2a/server/apps/jsonrpc/jsonrpc_app.py "
           "(EventSourceResponse), src/a2a/server/tasks/task_updater.py")  # fmt: skip


class Stream:
    def __init__(self, name: str, *, start: float = 0.120) -> None:
        self.rng = random.Random(name)
        self.t = start
        self.events: list[tuple[float, bytes]] = []

    def raw(self, data: str) -> None:
        self.events.append((round(self.t, 6), data.encode()))
        self.t += self.rng.uniform(0.015, 0.070)


def compact(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def write(name: str, stream: Stream, *, request: Request, headers: list[tuple[str, str]], expect: dict[str, Any],
          sources: list[str]) -> None:  # fmt: skip
    source = "; ".join(sources)
    capture = capture_from_body(
        stream.events, request=request,
        response=Response(status=200, reason="OK", headers=tuple(headers), t=0.004),
        end=End(kind="complete", t=round(stream.events[-1][0] + 0.001, 6)),
        recorder=f"built from {source} (tests/data/formats/build_agents.py)",
    )  # fmt: skip
    (HERE / f"{name}.jsonl").write_text(dump_capture(capture), encoding="utf-8")
    full = {"dialect": "", "framing": "sse", "text": "", "reasoning": "", "tool_calls": [], "finish_reason": None,
            "complete": True, "errors": [], **expect, "source": source}  # fmt: skip
    (HERE / f"{name}.expect.json").write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --- Vercel AI SDK UI message stream ------------------------------------------------------------------------------

UI_URL = "http://localhost:3000/api/chat"
UI_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache"), ("connection", "keep-alive"),
              ("x-vercel-ai-ui-message-stream", "v1"), ("x-accel-buffering", "no"),
              ("transfer-encoding", "chunked")]  # fmt: skip


def ui_request(text: str) -> Request:
    body = {"id": "k2vVh0Qe9Gz8Ym1c", "messages": [{"id": "u8Hq2lTnR0bWcX3e", "role": "user",
            "parts": [{"type": "text", "text": text}]}], "trigger": "submit-message"}  # fmt: skip
    return Request(method="POST", url=UI_URL, headers=(("Host", "localhost:3000"), ("Content-Type", "application/json")),
                   body=json.dumps(body))  # fmt: skip


class UI(Stream):
    def chunk(self, payload: dict[str, Any]) -> None:
        self.raw(f"data: {compact(payload)}\n\n")

    def part(self, kind: str, part_id: str, pieces: list[str], *, end: bool = True) -> None:
        self.chunk({"type": f"{kind}-start", "id": part_id})
        for piece in pieces:
            self.chunk({"type": f"{kind}-delta", "id": part_id, "delta": piece})
        if end:
            self.chunk({"type": f"{kind}-end", "id": part_id})

    def done(self) -> None:
        self.raw("data: [DONE]\n\n")


def ui_text() -> None:
    """streamText's answer through `toUIMessageStreamResponse()`: one step, one text part, `finish` with no reason
    (AI SDK 5.0's `finish` carries none)."""
    s = UI("vercel-ui-text")
    pieces = ["Server", "-sent", " events", " keep", " one", " HTTP", " response", " open", " and", " push",
              " each", " chunk", " as", " it", " comes", "."]  # fmt: skip
    s.chunk({"type": "start", "messageId": "msg-5MZqTgk9rJtB2x"})
    s.chunk({"type": "start-step"})
    s.part("text", "0", pieces)
    s.chunk({"type": "finish-step"})
    s.chunk({"type": "finish"})
    s.done()
    write("vercel-ui-text", s, request=ui_request("What are server-sent events, in a sentence?"), headers=UI_HEADERS,
          expect={"dialect": "vercel-ui", "text": "".join(pieces)}, sources=[AI_PROTOCOL, AI_CHUNKS, AI_HEADERS])


def ui_tools() -> None:
    """Two steps: reasoning and a tool call streamed as input text, the tool's output; then the answer, `finish`
    with `finishReason` (the newer SDKs' field)."""
    s = UI("vercel-ui-tools")
    s.chunk({"type": "start", "messageId": "msg-aQ3v7Lr2Wc9XkP"})
    s.chunk({"type": "start-step"})
    thinking = ["The user wants", " the weather in", " Paris; call", " getWeather."]
    s.part("reasoning", "rs_1", thinking)
    call = "call_Xk2pQ9vB4nT7"
    s.chunk({"type": "tool-input-start", "toolCallId": call, "toolName": "getWeather"})
    arguments = ['{"ci', 'ty":"Pa', 'ris","unit"', ':"celsius"}']
    for piece in arguments:
        s.chunk({"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": piece})
    s.chunk({"type": "tool-input-available", "toolCallId": call, "toolName": "getWeather",
             "input": {"city": "Paris", "unit": "celsius"}})  # fmt: skip
    s.chunk({"type": "tool-output-available", "toolCallId": call,
             "output": {"city": "Paris", "temperature": 18, "condition": "cloudy"}})  # fmt: skip
    s.chunk({"type": "finish-step"})
    s.chunk({"type": "start-step"})
    answer = ["It", "'s", " 18", " °C", " and", " cloudy", " in", " Paris", "."]
    s.part("text", "txt_2", answer)
    s.chunk({"type": "finish-step"})
    s.chunk({"type": "finish", "finishReason": "stop"})
    s.done()
    write("vercel-ui-tools", s, request=ui_request("What's the weather in Paris?"), headers=UI_HEADERS,
          expect={"dialect": "vercel-ui", "text": "".join(answer), "reasoning": "".join(thinking),
                  "tool_calls": [{"name": "getWeather", "arguments": "".join(arguments)}], "finish_reason": "stop"},
          sources=[AI_PROTOCOL, AI_CHUNKS, AI_CLIENT])  # fmt: skip


def ui_error() -> None:
    """The model fails mid-answer: `toUIMessageStream` sends an `error` chunk (its default `onError` masks the
    message) and closes the chunk stream, so `[DONE]` still comes; `useChat` calls `onError`."""
    s = UI("vercel-ui-error")
    s.chunk({"type": "start", "messageId": "msg-Zr8TqY1mNb4Lc0"})
    s.chunk({"type": "start-step"})
    pieces = ["Rate", " limits", " are"]
    s.part("text", "0", pieces, end=False)
    s.chunk({"type": "error", "errorText": "An error occurred."})
    s.done()
    write("vercel-ui-error", s, request=ui_request("Explain rate limits."), headers=UI_HEADERS,
          expect={"dialect": "vercel-ui", "text": "".join(pieces), "complete": False,
                  "errors": ["An error occurred."]},
          sources=[AI_PROTOCOL, AI_CHUNKS, f"{AI}/ai/src/generate-text/stream-text.ts (toUIMessageStream, onError)"])


# --- MCP Streamable HTTP ------------------------------------------------------------------------------------------

MCP_URL = "http://127.0.0.1:3000/mcp"
SESSION = "3f1c9a52-8d7e-4b1a-9c0f-6e2d5b7a8c41"


def mcp_request(request_id: int, name: str, arguments: dict[str, Any], *, version: str, progress: bool) -> Request:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": request_id}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return Request(method="POST", url=MCP_URL, body=compact(body), headers=(
        ("Host", "127.0.0.1:3000"), ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"), ("Mcp-Session-Id", SESSION),
        ("MCP-Protocol-Version", version)))  # fmt: skip


MCP_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache"), ("connection", "keep-alive"),
               ("mcp-session-id", SESSION), ("transfer-encoding", "chunked")]  # fmt: skip


class MCPStream(Stream):
    def __init__(self, name: str, *, crlf: bool = False, ids: bool = False) -> None:
        super().__init__(name)
        self.eol = "\r\n" if crlf else "\n"
        self.ids = ids
        self.n = 0

    def _id(self) -> str:
        self.n += 1
        return f"{SESSION[:8]}_{1767225600000 + self.n * 37}_{self.rng.getrandbits(32):08x}"

    def prime(self) -> None:
        self.raw(f"id: {self._id()}{self.eol}data: {self.eol}{self.eol}")

    def message(self, payload: dict[str, Any]) -> None:
        head = f"event: message{self.eol}" + (f"id: {self._id()}{self.eol}" if self.ids else "")
        self.raw(f"{head}data: {compact(payload)}{self.eol}{self.eol}")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.message({"jsonrpc": "2.0", "method": method, "params": params})


def mcp_progress() -> None:
    """The TypeScript SDK with an event store: a tool reporting progress and logging, then its result with text
    content and `structuredContent` (its JSON also as text, as the spec asks of a tool with an output schema)."""
    s = MCPStream("mcp-tools-call-progress", ids=True)
    s.notify("notifications/message", {"level": "info", "logger": "weather", "data": "fetching forecast for Paris"})
    for n, message in enumerate(["geocoding", "fetching forecast", "summarising"], start=1):
        s.notify("notifications/progress", {"progressToken": 7, "progress": n, "total": 3, "message": message})
    forecast = {"city": "Paris", "days": [{"day": "Mon", "high": 19, "low": 11}, {"day": "Tue", "high": 21, "low": 12}]}
    text = "Paris: Mon 19/11 °C, Tue 21/12 °C."
    s.message({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text},
               {"type": "text", "text": compact(forecast)}], "structuredContent": forecast}})  # fmt: skip
    write("mcp-tools-call-progress", s,
          request=mcp_request(7, "get_forecast", {"city": "Paris", "days": 2}, version="2025-06-18", progress=True),
          headers=MCP_HEADERS, expect={"dialect": "mcp", "text": f"{text}\n{compact(forecast)}"},
          sources=[MCP_SPEC, MCP_SCHEMA, MCP_TS])  # fmt: skip


def mcp_tool_error() -> None:
    """The Python SDK (FastMCP, no event store: no ids; sse-starlette's CRLF): a log line, then the tool's failure
    as a result with `isError: true`, its text FastMCP's `Error executing tool ...`."""
    s = MCPStream("mcp-tool-error", crlf=True)
    s.notify("notifications/message", {"level": "warning", "logger": "weather", "data": "upstream timed out"})
    message = "Error executing tool get_forecast: upstream weather service timed out after 10s"
    s.message({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": message}],
               "isError": True}})  # fmt: skip
    write("mcp-tool-error", s,
          request=mcp_request(3, "get_forecast", {"city": "Oslo"}, version="2025-06-18", progress=False),
          headers=MCP_HEADERS, expect={"dialect": "mcp", "text": message, "complete": False, "errors": [message]},
          sources=[MCP_SPEC, MCP_SCHEMA, MCP_PY])  # fmt: skip


def mcp_rpc_error() -> None:
    """The TypeScript SDK on protocol 2025-11-25 with an event store: the priming event (an id, empty data), then a
    JSON-RPC error for a tool it does not know (-32602, invalid params)."""
    s = MCPStream("mcp-jsonrpc-error", ids=True)
    s.prime()
    message = "MCP error -32602: Tool get_forcast not found"
    s.message({"jsonrpc": "2.0", "id": 12, "error": {"code": -32602, "message": message}})
    write("mcp-jsonrpc-error", s,
          request=mcp_request(12, "get_forcast", {"city": "Lima"}, version="2025-11-25", progress=False),
          headers=MCP_HEADERS, expect={"dialect": "mcp", "complete": False, "errors": [message]},
          sources=[MCP_SPEC_NEXT, MCP_SCHEMA, MCP_TS])  # fmt: skip


# --- A2A ----------------------------------------------------------------------------------------------------------

A2A_URL = "http://localhost:10000/"
A2A_HEADERS = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-store"),
               ("connection", "keep-alive"), ("x-accel-buffering", "no"), ("transfer-encoding", "chunked")]  # fmt: skip
CONTEXT = "c0f3e1a2-5b6d-4e7f-8a9b-0c1d2e3f4a5b"


def a2a_request(request_id: str, text: str) -> Request:
    body = {"id": request_id, "jsonrpc": "2.0", "method": "message/stream", "params": {"message": {
        "kind": "message", "messageId": "9b2f4c1e-7a3d-4e5f-8b6a-1c2d3e4f5a6b", "parts": [{"kind": "text", "text": text}],
        "role": "user"}}}  # fmt: skip
    return Request(method="POST", url=A2A_URL, body=compact(body), headers=(
        ("Host", "localhost:10000"), ("Content-Type", "application/json"), ("Accept", "text/event-stream")))


class A2AStream(Stream):
    def __init__(self, name: str, request_id: str, task: str) -> None:
        super().__init__(name, start=0.045)
        self.request_id = request_id
        self.task = task
        self.clock = 0

    def result(self, result: dict[str, Any]) -> None:
        self.raw(f"data: {compact({'id': self.request_id, 'jsonrpc': '2.0', 'result': result})}\r\n\r\n")

    def _stamp(self) -> str:
        self.clock += 1
        return f"2026-01-05T10:15:{self.clock:02d}.{self.rng.randrange(1000000):06d}+00:00"

    def _status(self, state: str, text: str | None) -> dict[str, Any]:
        status: dict[str, Any] = {"state": state, "timestamp": self._stamp()}
        if text is not None:
            status = {"message": {"contextId": CONTEXT, "kind": "message", "messageId": f"m-{self.clock}",
                                  "parts": [{"kind": "text", "text": text}], "role": "agent", "taskId": self.task},
                      **status}  # fmt: skip
        return status

    def submitted(self, text: str) -> None:
        self.result({"contextId": CONTEXT, "history": [{"contextId": CONTEXT, "kind": "message",
                     "messageId": "9b2f4c1e-7a3d-4e5f-8b6a-1c2d3e4f5a6b", "parts": [{"kind": "text", "text": text}],
                     "role": "user", "taskId": self.task}], "id": self.task, "kind": "task",
                     "status": {"state": "submitted"}})  # fmt: skip

    def status(self, state: str, text: str | None = None, *, final: bool = False) -> None:
        self.result({"contextId": CONTEXT, "final": final, "kind": "status-update", "status": self._status(state, text),
                     "taskId": self.task})  # fmt: skip

    def artifact(self, pieces: list[str], *, append: bool, last: bool, name: str = "answer") -> None:
        self.result({"append": append, "artifact": {"artifactId": "a-7d1e", "name": name,
                     "parts": [{"kind": "text", "text": p} for p in pieces]}, "contextId": CONTEXT,
                     "kind": "artifact-update", "lastChunk": last, "taskId": self.task})  # fmt: skip


def a2a_artifacts() -> None:
    """`message/stream` to an agent that streams its answer as one artifact in chunks (`append`, `lastChunk`),
    after a `working` status with a progress message; then `completed` with `final: true`."""
    question = "How much is 100 USD in EUR?"
    s = A2AStream("a2a-stream-artifacts", "3e8f1b2c-4d5a-4b6c-9d7e-8f9a0b1c2d3e", "t-51c0b7e2")
    s.submitted(question)
    s.status("working", "Looking up the exchange rates...")
    chunks = [["100 USD"], [" is about"], [" 92.4", " EUR"], [" at today's rate (0.924)."]]
    for n, pieces in enumerate(chunks):
        s.artifact(pieces, append=n > 0, last=n == len(chunks) - 1, name="conversion_result")
    s.status("completed", final=True)
    write("a2a-stream-artifacts", s, request=a2a_request(s.request_id, question), headers=A2A_HEADERS,
          expect={"dialect": "a2a", "text": "".join(p for c in chunks for p in c), "finish_reason": "completed"},
          sources=[A2A_SPEC, A2A_SDK])  # fmt: skip


def a2a_failed() -> None:
    """The agent fails after a partial artifact: a `failed` status with `final: true` and the agent's message."""
    question = "Summarise the attached report."
    s = A2AStream("a2a-stream-failed", "b71c2d3e-9f0a-4b1c-8d2e-3f4a5b6c7d8e", "t-9a4e33d1")
    s.submitted(question)
    s.status("working", "Reading the report...")
    s.artifact(["The report covers"], append=False, last=False, name="summary")
    message = "The model provider returned 503 Service Unavailable; the task was abandoned."
    s.status("failed", message, final=True)
    write("a2a-stream-failed", s, request=a2a_request(s.request_id, question), headers=A2A_HEADERS,
          expect={"dialect": "a2a", "text": "The report covers", "finish_reason": "failed", "complete": False,
                  "errors": [message]}, sources=[A2A_SPEC, A2A_SDK])  # fmt: skip


def a2a_input_required() -> None:
    """The agent needs more from the user: `input-required` with its question, `final: true` (the stream ends, the
    task waits)."""
    question = "Book me a table for tonight."
    s = A2AStream("a2a-input-required", "0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a", "t-2c7f90aa")
    s.submitted(question)
    s.status("working", "Checking availability...")
    ask = "For how many people, and at what time?"
    s.status("input-required", ask, final=True)
    write("a2a-input-required", s, request=a2a_request(s.request_id, question), headers=A2A_HEADERS,
          expect={"dialect": "a2a", "text": ask, "finish_reason": "input-required"}, sources=[A2A_SPEC, A2A_SDK])


CASES = (ui_text, ui_tools, ui_error, mcp_progress, mcp_tool_error, mcp_rpc_error, a2a_artifacts, a2a_failed,
         a2a_input_required)  # fmt: skip

if __name__ == "__main__":
    for case in CASES:
        case()
