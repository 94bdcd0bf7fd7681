"""Every real stream of the corpus: framing counts as recorded, its dialect and answer, and the same answer under any cut."""

from __future__ import annotations

import json

import pytest

from sse_inspect import Capture, Chunk, End, Event, analyze, parse_rechunk_spec

from .helpers import CORPUS, corpus_dialect, parse_all

MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
IDS = [entry["file"] for entry in MANIFEST]


@pytest.mark.parametrize("entry", MANIFEST, ids=IDS)
def test_framing_matches_the_manifest(entry: dict) -> None:
    body = (CORPUS / entry["file"]).read_bytes()
    wire = entry["wire"]
    items = parse_all([body])
    assert len(body) == wire["bytes"]
    assert sum(isinstance(x, Event) for x in items) == wire["events"]
    assert sum(type(x).__name__ == "Comment" for x in items) == wire["comment_lines"]
    kinds = {x.message for x in items if type(x).__name__ == "Notice" and x.kind == "line-ending"}
    assert ("a line ends in CRLF" in kinds) == (wire["line_endings"] == "CRLF")
    assert not any(type(x).__name__ == "Notice" and x.kind == "unterminated-event" for x in items)


@pytest.mark.parametrize("spec", ["bytes:1", "bytes:5", "line", "event", "random:1", "random:2"])
@pytest.mark.parametrize("entry", MANIFEST, ids=IDS)
def test_every_cut_rebuilds_the_same_answer(entry: dict, spec: str) -> None:
    capture = Capture(chunks=(Chunk(None, (CORPUS / entry["file"]).read_bytes()),), timed=False, end=End(kind="complete"))
    whole = analyze(capture)
    cut = analyze(capture, rechunk=parse_rechunk_spec(spec))
    assert cut.answer == whole.answer
    assert [(e.type, e.data, e.start, e.end) for e in cut.events] == [(e.type, e.data, e.start, e.end) for e in whole.events]


@pytest.mark.parametrize("entry", MANIFEST, ids=IDS)
def test_the_whole_capture_keeps_its_dialect_and_answer(entry: dict) -> None:
    """Read as the command line reads a file (every event, no URL): the provider's dialect, never text
    or generic, whatever its first events look like, and the answer the MANIFEST records."""
    capture = Capture(chunks=(Chunk(None, (CORPUS / entry["file"]).read_bytes()),), timed=False, end=End(kind="complete"))
    analysis = analyze(capture)
    assert analysis.dialect == corpus_dialect(entry)
    assert (analysis.answer.text, analysis.answer.reasoning) == (entry["text"], entry["reasoning"])
    assert analysis.answer.invalid_payloads == 0 and "payloads" not in analysis.answer.extra
