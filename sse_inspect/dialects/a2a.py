"""Agent2Agent (A2A) streaming over JSON-RPC: the SSE answer to `message/stream` and `tasks/resubscribe`.

Each event's data is one JSON-RPC response to the request, `{"jsonrpc":"2.0","id":<the request's>,"result":{...}}`
(https://a2a-protocol.org/latest/specification/, `SendStreamingMessageResponse`), its result one of, by `kind`:

    task             a Task {id, contextId, status: {state, message?, timestamp?}, artifacts?, history?}
    message          a Message {role: "agent", parts: [{kind: "text", text} | file | data], messageId, ...}
    status-update    TaskStatusUpdateEvent {taskId, contextId, status: {state, message?}, final}
    artifact-update  TaskArtifactUpdateEvent {taskId, contextId, artifact: {artifactId, name?, parts},
                                              append?, lastChunk?}

or an error response `{"error": {"code", "message", "data"?}}` (-32001 TaskNotFoundError, -32603 internal, ...).
Task states: submitted, working, input-required, auth-required, completed, canceled, failed, rejected, unknown.
The stream ends with a Message (a reply with no task), a status-update with `final: true`, or a Task in a
terminal (completed, canceled, failed, rejected) or interrupted (input-required, auth-required) state, after
which the server closes it (a2a-sdk's `EventConsumer` stops there). An artifact-update with `append` adds its
parts to the artifact of that `artifactId`; without it, it replaces that artifact.

A2A 1.0 (the protocol buffers' JSON) wraps the same objects instead: `{"task"}`, `{"message"}`, `{"statusUpdate"}`,
`{"artifactUpdate"}`, its states `TASK_STATE_COMPLETED` and so on, and no `final`: read alike, a terminal or
interrupted state ending it. a2a-sdk's client reads every event to the end of the body.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import Event
from ._accumulate import as_dict, as_list, as_str
from ._answer import Answer, InbandError
from ._base import Dialect, Reader, event
from ._detect import STRONG, confidence, payloads, url_path
from ._jsonrpc import INTERNAL_ERROR, JsonRpcDialect, is_jsonrpc, is_response
from ._parts import OrderedParts

__all__ = ["A2A"]

_KINDS = {"task": "task", "message": "message", "status-update": "status-update",
          "artifact-update": "artifact-update"}  # fmt: skip
_WRAPPERS = {"task": "task", "message": "message", "statusUpdate": "status-update", "artifactUpdate": "artifact-update"}
"""A2A 1.0's member for each kind."""
TERMINAL = frozenset({"completed", "canceled", "failed", "rejected"})
INTERRUPTED = frozenset({"input-required", "auth-required"})
"""The states a task's stream ends in: done for good, or waiting for the client."""
_FAILED = "Internal error"


def _unwrap(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The result's kind and object: `kind` as 0.3 names it, or the member 1.0 wraps it in ("" and {}: neither)."""
    kind = _KINDS.get(as_str(result.get("kind")))
    if kind is not None:
        return kind, result
    for member, wrapped in _WRAPPERS.items():
        if isinstance(result.get(member), dict):
            return wrapped, result[member]
    return "", {}


def _state(status: object) -> str:
    """A status's state, 1.0's spelling (`TASK_STATE_INPUT_REQUIRED`) read as 0.3's (`input-required`)."""
    state = as_str(as_dict(status).get("state"))
    return state.lower().removeprefix("task_state_").replace("_", "-")


def _texts(parts: object) -> list[str]:
    """The texts of a list of parts (`{"kind": "text", "text"}`; 1.0's parts carry `text` without a kind)."""
    found = []
    for part in map(as_dict, as_list(parts)):
        text = part.get("text")
        if isinstance(text, str) and text and part.get("kind", "text") == "text":
            found.append(text)
    return found


def _ends(kind: str, obj: dict[str, Any]) -> bool:
    if kind == "message":
        return True
    if kind == "status-update":
        final = obj.get("final")
        return final is True if isinstance(final, bool) else _state(obj.get("status")) in TERMINAL | INTERRUPTED
    return kind == "task" and _state(obj.get("status")) in TERMINAL | INTERRUPTED


class _A2AReader(Reader):
    stops_at_end = False  # a2a-sdk's client reads every event to the end of the body

    def __init__(self, *, accelerate: bool = True) -> None:
        super().__init__(accelerate=accelerate)
        self._artifacts: OrderedParts | None = None

    def _parts(self) -> OrderedParts:
        if self._artifacts is None:
            self._artifacts = OrderedParts(self.choice().text, direct=False)  # an artifact may be replaced
        return self._artifacts

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        if not is_response(payload):
            return False
        if "error" in payload:
            return True
        kind, obj = _unwrap(as_dict(payload.get("result")))
        return _ends(kind, obj)

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        kind, obj = _unwrap(as_dict(payload.get("result")))
        if not kind:
            return
        state = self.choice()
        if kind == "message":
            self.identify(response_id=obj.get("messageId"))
            if obj.get("role") in ("agent", "ROLE_AGENT"):
                for text in _texts(obj.get("parts")):
                    self.add(state.text, text)
            return
        self.identify(response_id=obj.get("id") if kind == "task" else obj.get("taskId"))
        if kind == "artifact-update":
            self._artifact(obj.get("artifact"), append=obj.get("append") is True, last=obj.get("lastChunk") is True)
        elif kind == "task":
            for artifact in as_list(obj.get("artifacts")):
                self._artifact(artifact, append=False, last=True)
        if kind in ("task", "status-update"):
            self._status(event, obj.get("status"), ending=_ends(kind, obj))

    def _artifact(self, artifact: object, *, append: bool, last: bool) -> None:
        artifact = as_dict(artifact)
        key = artifact.get("artifactId")
        key = key if isinstance(key, str) else None
        parts = self._parts()
        if not append:
            parts.replace(key)
        parts.begin(key)
        for text in _texts(artifact.get("parts")):
            parts.piece(key, text)
            self.mark()
        if last:
            parts.close(key)

    def _status(self, event: Event, status: object, *, ending: bool) -> None:
        """A status: its state (the finish reason once it ends the stream), its message's text: the answer's
        when it ends the stream (an input-required question, a completed task's last word), the error's
        when the task failed, else the agent's word on its progress (the `plan` channel)."""
        state = _state(status)
        if not state:
            return
        self.extra["state"] = state
        texts = _texts(as_dict(as_dict(status).get("message")).get("parts"))
        choice = self.choice()
        if ending:
            choice.finish(state)
        if state == "failed":
            message = "\n".join(texts) or "the task failed"
            self.errors.append(InbandError(message=message, event_index=event.index, type="failed"))
        elif ending:
            self._parts().flush(all_parts=True)
            for text in texts:
                self.add(choice.text, text)
        else:
            for text in texts:
                self.add(choice.plan, text)

    def answer(self, dialect: Dialect, text_events: tuple[int, ...] = ()) -> Answer:
        parts = self._parts()
        parts.flush(all_parts=True)
        if parts.replaced:
            self.extra["artifacts_replaced"] = parts.replaced
        return super().answer(dialect, text_events)


class A2A(JsonRpcDialect):
    """Rebuilds the text of the artifacts (their text parts, each artifact whole in the order they began,
    `append` adding to it, an update without it replacing it), of an agent Message result, and of the message
    of a status that ends the stream; the messages of the other statuses (`working`: the agent on its
    progress) go to the `plan`. The finish reason is the state the stream ended in (completed, failed,
    canceled, rejected, input-required, auth-required); the last state is also `extra["state"]`. A JSON-RPC
    error and a `failed` state (with its message's text) are in-band errors. The end marker is the event that
    ends the stream (see the module's doc); the stream may end with a JSON-RPC error instead."""

    name = "a2a"
    title = "A2A (Agent2Agent) stream"
    end_marker = "final: true (a terminal state)"
    sends_done = False  # JSON-RPC responses only: a `[DONE]` was added on the way
    end_closes_stream = True  # the server closes the stream after its final event
    reader = _A2AReader

    @classmethod
    def detect(cls, events: Sequence[Event], url: str | None) -> int:
        """Sure on a JSON-RPC 2.0 response whose result is an A2A object: a `kind` of task, message,
        status-update or artifact-update (0.3), or a `task`, `message`, `statusUpdate` or `artifactUpdate`
        member holding one with its `taskId`, `contextId` or `messageId` (1.0). A path ending in `/a2a` adds
        a little. A JSON-RPC error alone is MCP's as much as A2A's: `mcp`, earlier in the registry, takes it."""
        content = 0
        for _, payload in payloads(events):
            if not is_jsonrpc(payload):
                continue
            result = as_dict(payload.get("result"))
            if as_str(result.get("kind")) in _KINDS:
                content = STRONG
                break
            kind, obj = _unwrap(result)
            if kind and any(isinstance(obj.get(key), str) for key in ("taskId", "contextId", "messageId")):
                content = STRONG
                break
        return confidence(content, url_path(url).endswith("/a2a"))

    def fault_error(self, events_sent: int) -> bytes:
        """The JSON-RPC error response to the recorded request (`-32603`, "Internal error": what a2a-sdk's
        server sends when the agent raises), a data-only event with CRLF line ends (sse-starlette's, under
        a2a-sdk's server); the server then closes the stream. a2a-sdk's client raises `A2AClientJSONRPCError`."""
        return event(self.error_response(INTERNAL_ERROR, _FAILED)).replace(b"\n", b"\r\n")

