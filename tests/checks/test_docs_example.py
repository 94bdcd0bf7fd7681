"""The worked example of docs/checks.md runs: its module, its code row and its CHECKS line, taken
from the page as written, make a check that finds what it says and passes what it should."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from sse_inspect import Capture, Severity, check_capture, dump_capture
from sse_inspect import checks as checks_module
from sse_inspect.checks import CHECKS, CODES, Code
from sse_inspect.cli._check import evidence_json

from . import timelines as T

DOC = (Path(__file__).parents[2] / "docs" / "checks.md").read_text(encoding="utf-8")
MODULE, ROW, LIST = re.findall(r"```python\n(.*?)```", DOC.split("### The worked example")[1], re.DOTALL)[:3]


@pytest.fixture
def size(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The example module, imported as `sse_inspect.checks.size`, its code in `CODES` for the test."""
    module = types.ModuleType("sse_inspect.checks.size")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(MODULE, "docs/checks.md", "exec"), module.__dict__)  # noqa: S102 (this repository's docs page)
    code = eval(ROW, {"Code": Code, "Severity": Severity})
    monkeypatch.setitem(CODES, code.name, code)
    return module


def stream(data_size: int) -> Capture:
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * data_size + b'"}}]}\n\n'
    return T.paced(T.openai_events(3, done=False) + [big] + T.openai_events(2)[-1:])


def test_the_example_finds_an_event_too_long_for_a_line_reader(size: types.ModuleType) -> None:
    report = check_capture(stream(70_000), checks=(*CHECKS, size.SizeCheck))
    [finding] = [f for f in report.findings if f.code == "long-event"]
    assert finding.severity == Severity.WARNING and finding.event_index == 3
    assert (
        finding.message.startswith("1 event(s) longer than 64 KiB, the longest 700") and "first #3" in finding.message
    )
    assert finding.evidence == size.LongEvents(1, finding.evidence.longest)
    assert evidence_json(finding.evidence) == {"events": 1, "longest": finding.evidence.longest} and finding.fix
    assert [f.code for f in check_capture(stream(70_000), checks=(*CHECKS, size.SizeCheck),
                                          select={"long-event"}).findings] == ["long-event"]  # fmt: skip


def test_the_example_passes_a_long_event_a_line_reader_holds(size: types.ModuleType) -> None:
    report = check_capture(stream(60_000), checks=(*CHECKS, size.SizeCheck))
    assert "long-event" not in {f.code for f in report.findings}


def test_the_example_is_skipped_on_an_error_response(size: types.ModuleType) -> None:
    refused = T.capture([(0.3, b"Internal Server Error")], status=500, headers=(("Content-Type", "text/plain"),))
    report = check_capture(refused, checks=(*CHECKS, size.SizeCheck))
    assert any(s.codes == ("long-event",) and "refusal" in s.reason for s in report.skipped)


def test_the_example_keeps_flat_memory_on_a_streamed_capture(size: types.ModuleType, tmp_path: Path) -> None:
    from sse_inspect import open_capture

    path = tmp_path / "big.jsonl"
    path.write_text(dump_capture(stream(70_000)))
    with open_capture(str(path)) as source:
        report = check_capture(source, keep=False, checks=(*CHECKS, size.SizeCheck))
    assert report.analysis.events == () and "long-event" in {f.code for f in report.findings}


def test_the_pages_checks_line_is_the_list_plus_the_example(size: types.ModuleType) -> None:
    namespace = {**vars(checks_module), "SizeCheck": size.SizeCheck}
    exec(LIST, namespace)  # noqa: S102 (a line of this repository's docs page)
    assert namespace["CHECKS"] == (*CHECKS, size.SizeCheck)
