"""Every framing and dialect beyond plain SSE, end to end on its fixtures (`tests/data/formats/`).

Each fixture is a capture built from the provider's published shapes (its `recorder` field and its sidecar's
`source` say where from), with a sidecar `<name>.expect.json` saying what the stream holds: dialect, framing,
text, reasoning, tool calls, finish reason, whether it completed, its in-band errors. Here each is:

- rebuilt: detected and read as the sidecar says, through the framer its Content-Type (or first bytes) picks;
- rebuilt the same at every cut (`RECHUNK_MATRIX` and per item): the framers' any-cut contract, seen from the top;
- judged: `check` finds an in-band error exactly when the stream has one, no framing fault, and no missing end;
- replayed: the in-process transport sends the body byte for byte, at every cut, and under a cut fault the
  analysis of what was sent says the stream was cut.

Recording each through a real mitmdump is `tests/test_formats_recording.py`'s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from sse_inspect import analyze, load_capture
from sse_inspect._capture import Capture, Chunk
from sse_inspect._rechunk import RECHUNK_MATRIX, parse_rechunk_spec
from sse_inspect.checks import Severity, check_capture
from sse_inspect.dialects import Answer
from sse_inspect.httpx_transport import CaptureTransport

FORMATS = Path(__file__).resolve().parent / "data" / "formats"
FIXTURES = sorted(FORMATS.glob("*.jsonl"))
CUTS = (*RECHUNK_MATRIX, "item")


def expected(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))


def summary(answer: Answer) -> dict[str, Any]:
    """What a sidecar says of a stream, as the analysis read it."""
    return {
        "dialect": answer.dialect,
        "text": answer.text,
        "reasoning": answer.reasoning,
        "tool_calls": [{"name": call.name, "arguments": call.arguments} for call in answer.tool_calls],
        "finish_reason": answer.finish_reason,
        "complete": answer.complete,
        "errors": [error.message for error in answer.errors],
    }


def test_every_fixture_is_what_its_build_script_writes(tmp_path: Path) -> None:
    """Each `build_*.py`, run as a script in a copy of the tree (the package linked in), writes its fixtures
    again, byte for byte: no file here is edited by hand, each comes from exactly one script, and the
    scripts are deterministic."""
    copy = tmp_path / "tests" / "data" / "formats"
    copy.mkdir(parents=True)
    (tmp_path / "sse_inspect").symlink_to(FORMATS.parents[2] / "sse_inspect")
    written: dict[str, str] = {}
    for script in sorted(FORMATS.glob("build_*.py")):
        before = {p.name for p in copy.iterdir()}
        shutil.copy(script, copy / script.name)
        subprocess.run([sys.executable, str(copy / script.name)], check=True, cwd=tmp_path, timeout=120)
        for name in sorted({p.name for p in copy.iterdir()} - before - {script.name}):
            assert name not in written, f"{name}: written by {written[name]} and {script.name}"
            written[name] = script.name
            assert (copy / name).read_bytes() == (FORMATS / name).read_bytes(), f"{name} differs from what {script.name} writes"
    fixtures = {p.name for p in FORMATS.iterdir() if p.is_file() and not p.name.startswith("build_")}
    assert fixtures - set(written) == set(), "fixtures no script writes"
    assert set(written) - fixtures == set(), "files a script writes that are not in the repository"


def test_there_are_fixtures_of_every_framing() -> None:
    framings = {expected(path)["framing"] for path in FIXTURES}
    assert {"ndjson", "json-array", "eventstream", "sse"} <= framings, framings


def test_every_fixture_has_its_sidecar_and_says_where_it_comes_from() -> None:
    for path in FIXTURES:
        expect = expected(path)
        assert expect["source"], path.name
        recorder = load_capture(path).recorder or ""
        assert recorder.startswith("built from "), path.name


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_rebuilt_as_its_sidecar_says(path: Path) -> None:
    expect = expected(path)
    analysis = analyze(load_capture(path))
    assert analysis.framing == expect["framing"]
    assert summary(analysis.answer) == {k: expect[k] for k in summary(analysis.answer)}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_cut_rebuilds_the_same_answer(path: Path) -> None:
    capture = load_capture(path)
    whole = analyze(capture)
    for cut in CUTS:
        recut = analyze(capture, rechunk=parse_rechunk_spec(cut))
        assert summary(recut.answer) == summary(whole.answer), cut
        assert recut.timing.events == whole.timing.events, cut
    per_item = analyze(capture, rechunk=parse_rechunk_spec("item"))
    assert per_item.timing.chunks == whole.timing.events + (1 if expected(path)["framing"] == "json-array" else 0), (
        "a per-item cut is a chunk an item (and the array's closing bracket)"
    )


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_judged(path: Path) -> None:
    expect = expected(path)
    report = check_capture(load_capture(path))
    codes = {f.code for f in report.findings}
    assert ("error-event" in codes) == bool(expect["errors"]), report.findings
    framing_faults = {"frame-error", "array-syntax", "ndjson-blank-line", "ndjson-line-break", "not-an-event-stream",
                      "wrong-content-type", "invalid-json", "incomplete-event"}  # fmt: skip
    assert not codes & framing_faults, report.findings
    if expect["complete"]:
        assert all(f.severity < Severity.WARNING for f in report.findings), report.findings
        assert report.verdict.startswith("OK"), report.verdict


def received(capture: Capture, **options: Any) -> bytes:
    with httpx.Client(transport=CaptureTransport(capture, **options)) as client:
        request = capture.request
        with client.stream("POST", request.url if request is not None else "http://replay/") as response:
            return b"".join(response.iter_raw())


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_replayed_byte_for_byte_at_every_cut(path: Path) -> None:
    capture = load_capture(path)
    for cut in CUTS:
        assert received(capture, rechunk=cut) == capture.body, cut


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_cut_replay_reads_as_cut(path: Path) -> None:
    capture = load_capture(path)
    whole = analyze(capture)
    with pytest.raises(httpx.HTTPError):  # the transport ends the body as a dropped connection does
        received(capture, faults="cut:event=50%")
    sent = CaptureTransport(capture, faults="cut:event=50%")
    from sse_inspect._fault_plan import ReplayPlan

    plan = ReplayPlan(capture, faults=sent.faults)
    played = plan.as_recorded()
    half = analyze(played)
    assert half.timing.events == round(whole.timing.events * 0.5) or half.timing.events == whole.timing.events // 2
    assert half.outcome.state.name in ("CUT", "NO_END_MARKER", "ENDED"), half.outcome
    assert played.body == capture.body[: len(played.body)]


def test_a_raw_body_of_each_framing_is_read_in_it() -> None:
    """No headers (a body saved by curl): the first bytes tell the framing, and the answer is the same."""
    for path in FIXTURES:
        capture = load_capture(path)
        raw = Capture(chunks=(Chunk(None, capture.body),))
        assert analyze(raw).framing == expected(path)["framing"], path.name
        assert analyze(raw).answer.text == analyze(capture).answer.text, path.name


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
@pytest.mark.parametrize("after", ["0", "50%", "100%"])
def test_an_error_fault_is_the_providers_own_in_its_framing(path: Path, after: str) -> None:
    """A replay's in-band error is written as the provider writes one, in the stream's framing: the analysis of
    what the replay sent reads it back as an in-band error, after as many items as asked, with no framing fault."""
    from sse_inspect._fault_plan import ReplayPlan
    from sse_inspect._faults import FaultSet

    capture = load_capture(path)
    played = ReplayPlan(capture, faults=FaultSet.parse([f"error:after-event={after}"])).as_recorded()
    analysis = analyze(played)
    assert analysis.framing == expected(path)["framing"]
    assert analysis.answer.errors, analysis.answer
    report = check_capture(played)
    assert "error-event" in {f.code for f in report.findings} or analysis.answer.dialect == "gemini", report.findings
    assert not {"frame-error", "array-syntax", "invalid-json"} & {f.code for f in report.findings}, report.findings
