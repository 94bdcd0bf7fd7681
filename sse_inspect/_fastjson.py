"""JSON for the hot paths: `loads` (`json.loads` of a str without its per-call overhead), `scan`
and `encode_string`.

A big capture holds millions of small JSON documents (a chunk line, an event's payload);
calling the C scanner directly takes about half the time of `json.loads` on each, and the C
string encoder writes a line many times faster than `json.dumps` of a dict.
"""

from __future__ import annotations

import json
from json.scanner import make_scanner  # the C scanner when there is one
from typing import Any

__all__ = ["encode_string", "loads", "scan"]

scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed types it as its own class
"""`scan(text, i)`: the JSON value starting at `text[i]` and where it ends; StopIteration when none does."""
encode_string = json.encoder.encode_basestring  # type: ignore[attr-defined]  # C: a JSON string, non-ASCII kept


def loads(text: str) -> Any:
    """The value of the JSON document `text`: the same values and errors as `json.loads`."""
    try:
        value, end = scan(text, 0)
    except StopIteration:  # leading whitespace, or no JSON at all: json.loads tells which
        return json.loads(text)
    if end != len(text) and text[end:].strip(" \t\n\r"):  # junk after the document
        return json.loads(text)
    return value
