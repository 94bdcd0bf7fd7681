"""JSON-RPC 2.0 (https://www.jsonrpc.org/specification) as the agent protocols stream it: one message an event.

What MCP's Streamable HTTP and A2A's streaming methods share: a message is a request (`method` and `id`), a
notification (`method`, no `id`), or a response (`id` with `result` or `error`: `{"code", "message",
"data"?}`); an error the server cannot tie to a request has `"id": null`. A replay's in-band error answers the
recorded request's `id` (`JsonRpcDialect.for_request`), as a server's does, so that the client matches it to
its call.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ._accumulate import as_dict
from ._base import JSON, Dialect, json_body, phrase

__all__ = ["INTERNAL_ERROR", "JsonRpcDialect", "is_jsonrpc", "id_of_request", "is_response"]

INTERNAL_ERROR = -32603
"""The JSON-RPC code of an internal error (the specification's reserved codes, -32768 to -32000)."""


def is_jsonrpc(payload: dict[str, Any]) -> bool:
    return payload.get("jsonrpc") == "2.0"


def is_response(payload: dict[str, Any]) -> bool:
    """A response: an `id` member (null for an error tied to no request) with `result` or `error`, no `method`."""
    return "id" in payload and ("result" in payload or "error" in payload) and "method" not in payload


def id_of_request(body: str | None) -> int | str | None:
    """The `id` of the JSON-RPC request in a request body (the first of a batch); None when there is none."""
    try:
        value = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if isinstance(value, list) and value:
        value = value[0]
    found = as_dict(value).get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


class JsonRpcDialect(Dialect):
    """A dialect whose in-band error is a JSON-RPC error response to the recorded request."""

    request_id: int | str | None = None
    """The recorded request's `id` (None: not known, and the error says `"id": null`)."""

    def for_request(self, body: str | None) -> Dialect:
        found = id_of_request(body)
        if found is None:
            return self
        bound = copy.copy(self)
        bound.request_id = found
        return bound

    def error_response(self, code: int, message: str) -> dict[str, Any]:
        """The JSON-RPC error response to the recorded request."""
        return {"jsonrpc": "2.0", "id": self.request_id, "error": {"code": code, "message": message}}

    def error_body(self, status: int) -> tuple[str, bytes]:
        """A JSON-RPC error with `"id": null` (the request was refused before it was read), compact, the
        status's reason phrase as its message: what the MCP and A2A SDKs' HTTP servers send with a 4xx or 5xx."""
        error = {"jsonrpc": "2.0", "error": {"code": -32000 if status < 500 else INTERNAL_ERROR,
                                             "message": phrase(status)}, "id": None}  # fmt: skip
        return JSON, json_body(error)
