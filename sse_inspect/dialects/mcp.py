"""Model Context Protocol (MCP) Streamable HTTP: the SSE stream a server answers a client's POST with.

The client POSTs one JSON-RPC request (`tools/call`, ...) to the MCP endpoint with `Accept: application/json,
text/event-stream`; the server may answer with `Content-Type: text/event-stream`, one JSON-RPC message an
event (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports, "Streamable HTTP"):

    event: message                      (the SDKs name every event so; the name may be left out)
    id: <event id>                      (when the server can resume: unique in the session)
    data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken",...,"progress","total"}}

requests and notifications about that request first (`notifications/progress`, `notifications/message` logs,
server requests such as `sampling/createMessage` or `elicitation/create`), then the JSON-RPC response to it,
`{"jsonrpc":"2.0","id":<the request's>,"result":{...}}` or `{..., "error":{"code","message"}}`, after which the
server SHOULD close the stream. A tool's result (schema.ts `CallToolResult`) is `content`, a list of blocks
(`{"type":"text","text"}`, image, audio, resource links, embedded resources), an optional `structuredContent`
and `isError` (the tool failed: its content says how). Since 2025-11-25 a server that can resume may begin the
stream with a priming event, an `id` and empty data. A dropped stream is resumed by the client (a GET with
`Last-Event-ID`): its own affair, not this stream's; the last id is kept for a look.

The TypeScript SDK's client reads the stream to its end; the Python SDK's stops at the response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import as_dict, as_list, as_str, compact_json
from ._answer import InbandError
from ._base import Reader, event
from ._detect import STRONG, WEAK, confidence, payloads, url_path
from ._jsonrpc import INTERNAL_ERROR, JsonRpcDialect, is_jsonrpc, is_response

__all__ = ["MCP"]

_SERVER_REQUESTS = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
"""The requests a server sends a client (schema.ts `ServerRequest`, `ping` aside: any JSON-RPC peer pings)."""
_RESULT_KEYS = frozenset({"content", "structuredContent", "isError", "protocolVersion", "tools", "resources",
                          "resourceTemplates", "contents", "prompts", "completion"})  # fmt: skip
"""Members of the results of MCP's methods (schema.ts `ServerResult`: tools/call, initialize, the lists,
resources/read, completion/complete)."""
_KEPT_REQUESTS = 20
"""Server requests listed in `extra["server_requests"]` (the count goes on)."""
_FAILED = "Internal error"


class _MCPReader(Reader):
    stops_at_end = False  # the TypeScript SDK's client reads to the end of the body (see the module's doc)

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return is_response(payload)

    def _load(self, event: Event) -> dict[str, Any]:
        return {} if event.data == "" else super()._load(event)  # a priming event: an id, empty data

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        if event.id:
            self.extra["last_event_id"] = event.id
        method = payload.get("method")
        if isinstance(method, str):
            if "id" in payload:  # a request of the server's (sampling, elicitation, roots)
                self.extra["server_requests"] = self.extra.get("server_requests", 0) + 1
                methods = self.extra.setdefault("server_request_methods", [])
                if len(methods) < _KEPT_REQUESTS:
                    methods.append(method)
            else:
                counts = self.extra.setdefault("notifications", {})
                counts[method] = counts.get(method, 0) + 1
                params = as_dict(payload.get("params"))
                if method == "notifications/progress":
                    self.extra["progress"] = {k: params[k] for k in ("progress", "total", "message") if k in params}
            return
        if not is_response(payload):
            return
        response_id = payload.get("id")
        self.identify(response_id=str(response_id) if isinstance(response_id, int | str) else None)
        result = payload.get("result")
        if isinstance(result, dict):
            self._result(event, result)

    def _result(self, event: Event, result: dict[str, Any]) -> None:
        """The text of the result's content blocks (`content`; a resource's `contents`), each block's text
        after a line end; `structuredContent` as compact JSON when no block has text; `isError` an error."""
        state = self.choice()
        texts = [as_str(block.get("text")) for block in map(as_dict, as_list(result.get("content")))]
        texts += [as_str(item.get("text")) for item in map(as_dict, as_list(result.get("contents")))]
        texts = [text for text in texts if text]
        types = [as_str(as_dict(block).get("type")) for block in as_list(result.get("content"))]
        if types:
            self.extra["content_types"] = types
        structured = result.get("structuredContent")
        if structured is not None:
            self.extra["structured_content"] = True
            if not texts:
                texts = [compact_json(structured) or ""]
        for n, text in enumerate(texts):
            self.add(state.text, ("\n" if n else "") + text)
        if result.get("isError") is True:
            message = "\n".join(texts) or "the tool reported an error (isError) without text"
            self.errors.append(InbandError(message=message, event_index=event.index, type="isError"))


class MCP(JsonRpcDialect):
    """Rebuilds what the response to the POST's request holds: the text of a result's content blocks,
    one line end between two (`structuredContent`, as compact JSON, when none has text; the content types in
    `extra["content_types"]`); a JSON-RPC `error` and a result with `isError: true` are in-band errors. The
    messages before it are counted in `extra` (`notifications` by method, the last `progress`,
    `server_requests`), and so is the last event id (`last_event_id`, what a client resumes from). The
    response is the end marker; MCP has no finish reason."""

    name = "mcp"
    title = "MCP Streamable HTTP"
    end_marker = "the JSON-RPC response"
    sends_done = False  # JSON-RPC messages only: a `[DONE]` was added on the way
    end_closes_stream = True  # the server closes the stream after the response
    reader = _MCPReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure on a JSON-RPC 2.0 message of MCP's own: a `notifications/...` or a server request
        (`sampling/createMessage`, ...), or a result with an MCP member (`content`, `isError`,
        `structuredContent`, `protocolVersion`, `tools`, ...); any other JSON-RPC 2.0 message is a hint.
        A path ending in `/mcp` (the SDKs' examples) adds a little."""
        content = 0
        for _, payload in payloads(events):
            if not is_jsonrpc(payload):
                continue
            method = payload.get("method")
            result = payload.get("result")
            if isinstance(method, str) and (method.startswith("notifications/") or method in _SERVER_REQUESTS):
                content = STRONG
                break
            if isinstance(result, dict) and "kind" not in result and _RESULT_KEYS & result.keys():
                content = STRONG
                break
            content = WEAK
        return confidence(content, url_path(url).endswith("/mcp"))

    def fault_error(self, events_sent: int) -> bytes:
        """The JSON-RPC error response to the recorded request (`-32603`, "Internal error": what the SDKs'
        servers answer when a handler throws), as `event: message`; the server then closes the stream. The
        client's pending call raises (the Python SDK's `McpError`)."""
        return event(self.error_response(INTERNAL_ERROR, _FAILED), name="message")
