"""`--json` encoders: plain dicts with stable keys, written straight to stdout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from .._analysis import Analysis, Observer
from .._capture import Chunk
from .._events import Comment, Event
from .._fastjson import encode_string
from .._format import json_visible
from .._limits import PIECE
from ..dialects import Answer, Choice, EventFlags, Passage, ToolCall


def dumps(obj: Any) -> str:
    """`obj` as JSON, non-ASCII text kept but for what a terminal acts on (C1 controls, bidi and
    invisible format characters: written as \\u escapes)."""
    return json_visible(json.dumps(obj, ensure_ascii=False))




def write_out(out: TextIO, text: str) -> None:
    """Write `text` whole to `out`, in pieces of at most PIECE characters, each retried from where a
    short write stopped; a stream that takes nothing raises OSError (never a silent loss)."""
    write = out.write
    pos = 0
    while pos < len(text):
        piece = text if pos == 0 and len(text) <= PIECE else text[pos : pos + PIECE]  # (no copy of a short text)
        done = write(piece)
        if done is None:  # (some streams return nothing: they took it all)
            done = len(piece)
        if done <= 0:
            raise OSError("the output took no more bytes")
        pos += done


_ENCODER = json.JSONEncoder(ensure_ascii=False)
_BATCH = 65536
"""`write_doc` gathers the small pieces of a document into writes of about this many characters."""


def write_doc(out: TextIO, doc: Any) -> None:
    """A `--json` document and a newline: `dumps(doc)`, written as it is encoded. The document is never one
    string: a huge value in it (a tool call's arguments, a 200 MB answer) is encoded alone and written in
    pieces, the small ones around it gathered into bigger writes; a `Passage` in it is written as the
    JSON string of its text, read piece by piece (a spooled answer is never held whole)."""
    batch: list[str] = []
    size = 0
    for piece in _iterencode(doc):  # (json_visible escapes single characters: piece by piece is the same)
        batch.append(json_visible(piece))
        size += len(piece)
        if size >= _BATCH:
            write_out(out, batch[0] if len(batch) == 1 else "".join(batch))
            batch.clear()
            size = 0
    batch.append("\n")
    write_out(out, "".join(batch))


def _iterencode(value: Any) -> Iterator[str]:
    """`value` as `_ENCODER` encodes it in pieces, a `Passage` in it as the JSON string of its text
    (a dict or list holding one is encoded here, as `_ENCODER` would with its default separators)."""
    if isinstance(value, Passage):
        yield '"'
        for piece in value.pieces():
            yield encode_string(piece)[1:-1]
        yield '"'
    elif isinstance(value, dict | list) and _holds_passage(value):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        yield "{" if isinstance(value, dict) else "["
        for i, (key, item) in enumerate(items):
            yield ", " if i else ""
            if isinstance(value, dict):
                yield f"{_ENCODER.encode(str(key))}: "
            yield from _iterencode(item)
        yield "}" if isinstance(value, dict) else "]"
    else:
        yield from _ENCODER.iterencode(value)


def _holds_passage(value: Any) -> bool:
    if isinstance(value, Passage):
        return True
    if isinstance(value, dict):
        return any(_holds_passage(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_passage(v) for v in value)
    return False


def event_json(e: Event) -> dict[str, Any]:
    return {
        "index": e.index,
        "type": e.type,
        "data": e.data,
        "id": e.id,
        "retry": e.retry,
        "t": e.t,
        "t_first": e.t_first,
        "offset": e.start,
        "end": e.end,
        "chunk": e.chunk,
    }


_TYPES: dict[str, str] = {}
"""Event types as JSON strings (a stream has a few): at most `_TYPES_KEPT`."""
_TYPES_KEPT = 256


def event_line(e: Event) -> str:
    """`dumps(event_json(e))` and a newline, made in a third of the time (one per event of a huge capture):
    the event's fields unpacked at once, one f-string, a JSON escape only where a character needs it."""
    index, kind, data, id_, retry, start, end, t_first, t, chunk = e
    kind_json = _TYPES.get(kind)
    if kind_json is None:
        kind_json = encode_string(kind)
        if len(_TYPES) < _TYPES_KEPT:
            _TYPES[kind] = kind_json
    line = (
        f'{{"index": {index}, "type": {kind_json}, "data": {encode_string(data)}, "id": {encode_string(id_)}, '
        f'"retry": {"null" if retry is None else repr(retry)}, "t": {"null" if t is None else repr(t)}, '
        f'"t_first": {"null" if t_first is None else repr(t_first)}, "offset": {start}, "end": {end}, "chunk": {chunk}}}\n'
    )  # (`_number`s, inline; json.dumps writes ints and floats with repr)
    if line.isascii() and "\x7f" not in line:  # (O(1), then memchr) no character `json_visible` escapes
        return line
    return json_visible(line)


def _number(value: float | None) -> str:
    return "null" if value is None else repr(value)  # json.dumps writes floats and ints with repr


def comment_json(c: Comment) -> dict[str, Any]:
    return {"comment": c.text, "t": c.t, "offset": c.offset, "chunk": c.chunk}


def _text(passage: Passage, held: bool) -> str | Passage:
    return passage if held else str(passage)


def _tool_call(call: ToolCall, held: bool) -> dict[str, Any]:
    return {
        "id": call.id,
        "index": call.index,
        "name": call.name,
        "arguments": _text(call.held_arguments, held),
        "arguments_valid_json": call.arguments_valid_json,
    }


def _choice(choice: Choice, held: bool) -> dict[str, Any]:
    return {
        "index": choice.index,
        "text": _text(choice.held_text, held),
        "reasoning": _text(choice.held_reasoning, held),
        "refusal": _text(choice.held_refusal, held),
        "plan": _text(choice.held_plan, held),
        "tool_calls": [_tool_call(c, held) for c in choice.tool_calls],
        "finish_reason": choice.finish_reason,
    }


def answer_json(answer: Answer, *, held: bool = False) -> dict[str, Any]:
    """The answer as `text --json` writes it; `held`: its texts as the `Passage`s (`write_doc` writes them)."""
    first = answer.choices[0] if answer.choices else Choice()
    return {
        "dialect": answer.dialect,
        "text": _text(first.held_text, held),
        "reasoning": _text(first.held_reasoning, held),
        "refusal": _text(first.held_refusal, held),
        "tool_calls": [_tool_call(c, held) for c in answer.tool_calls],
        "finish_reason": answer.finish_reason,
        "complete": answer.complete,
        "end_marker": answer.end_marker,
        "end_marker_seen": answer.end_marker_seen,
        "errors": [
            {"message": e.message, "code": e.code, "type": e.type, "event_index": e.event_index} for e in answer.errors
        ],
        "usage": answer.usage,
        "model": answer.model,
        "response_id": answer.response_id,
        "choices": [_choice(c, held) for c in answer.choices],
        "extra": answer.extra,
    }


def analysis_json(a: Analysis, *, held: bool = False) -> dict[str, Any]:
    """The `text --json` document: the answer, plus how the recording and the parse went; `held`: the
    answer's texts as the `Passage`s, which `write_doc` writes piece by piece."""
    capture = a.capture
    doc = answer_json(a.answer, held=held)
    doc["framing"] = a.framing
    doc["recording"] = {
        "path": capture.path,
        "end": capture.end.kind if capture.end else None,
        "timed": capture.timed,
        "warnings": list(capture.warnings),
    }
    doc["notices"] = [{"kind": n.kind, "message": n.message, "offset": n.offset, "t": n.t} for n in a.notices]
    doc["notice_counts"] = a.notice_counts
    doc["timing"] = {
        "ttfb": a.timing.ttfb,
        "first_event": a.timing.first_event,
        "first_token": a.timing.first_token,
        "total": a.timing.total,
        "chunks": a.timing.chunks,
        "bytes": a.timing.bytes,
        "events": a.timing.events,
    }
    return doc


class JsonLinesOut(Observer):
    """Writes each event (and comment, if asked) of an analysis pass as a JSON line, as it comes."""

    def __init__(self, out: TextIO, *, comments: bool = False) -> None:
        self.out = out
        self.comments = comments
        self.pending: list[str] = []  # a block's lines, written together when its chunks come (`chunk_block`)

    def event(self, event: Event, flags: EventFlags) -> None:
        self.pending.append(event_line(event))

    def comment(self, comment: Comment) -> None:
        if self.comments:
            self.pending.append(dumps(comment_json(comment)) + "\n")

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        """The end of a block (what was read together): its lines in one write."""
        self._write()

    def close(self, analysis: Analysis) -> None:
        self._write()

    def _write(self) -> None:
        if self.pending:
            text = "".join(self.pending)
            self.pending.clear()
            write_out(self.out, text)
