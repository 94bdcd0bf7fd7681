"""The real streams of the corpus, replayed at a healthy pace: clean ones check clean, broken ones say why."""

from __future__ import annotations

import json

import pytest

from sse_inspect.checks import Report, Severity, check_capture

from ..helpers import CORPUS
from . import timelines as T

MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
URL = "https://llm.example/v1/stream"
"""A neutral URL: the dialect comes from the events alone."""

CLEAN = [e for e in MANIFEST if e["complete"] and (e["end_marker_in_file"] or e["provider"] == "gemini")]
CUT = [e for e in MANIFEST if not e["end_marker_in_file"] and e["provider"] != "gemini"]
"""Recorded by tools that dropped the final `[DONE]`."""
ERRORED = [e for e in MANIFEST if e.get("errors")]


def check(entry: dict) -> Report:
    """The stream cut per event: 300 ms to the first, then one every 30 ms, with streaming headers."""
    return check_capture(T.paced((CORPUS / entry["file"]).read_bytes(), ttft=0.3, every=0.03, url=URL))


def serious(report: Report) -> list[str]:
    return [f.code for f in report.findings if f.severity > Severity.INFO]


def ids(entries: list[dict]) -> list[str]:
    return [e["file"] for e in entries]


def test_the_groups_cover_the_corpus() -> None:
    assert sorted(ids(CLEAN + CUT + ERRORED)) == sorted(ids(MANIFEST))
    assert len(CLEAN) >= 15 and len(CUT) >= 4 and len(ERRORED) >= 2


@pytest.mark.parametrize("entry", CLEAN, ids=ids(CLEAN))
def test_complete_streams_check_clean(entry: dict) -> None:
    report = check(entry)
    assert serious(report) == []
    assert report.verdict.startswith("OK: ")
    assert report.skipped == ()
    assert {f.code for f in report.findings} <= {"done-not-json", "heartbeats"}


@pytest.mark.parametrize("entry", CUT, ids=ids(CUT))
def test_streams_without_their_marker_are_cut(entry: dict) -> None:
    report = check(entry)
    assert serious(report) == ["missing-end-marker"]
    assert "the server closed the stream cleanly" in report.findings[0].message
    assert report.verdict.startswith("CUT: no data: [DONE] after ")


@pytest.mark.parametrize("entry", ERRORED, ids=ids(ERRORED))
def test_streams_with_an_inband_error_are_errored(entry: dict) -> None:
    report = check(entry)
    assert serious(report) == ["error-event"] * len(entry["errors"])
    assert report.verdict.startswith("ERRORED: in-band error at event #")
    assert entry["errors"][0]["message"][:40] in report.verdict
