"""The Check protocol and its one loop, the public names of the checks, and the layering of the views."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest

import sse_inspect
from sse_inspect import (
    Capture,
    CheckSpecError,
    Chunk,
    Event,
    EventFlags,
    SSEInspectError,
    Thresholds,
    analyze,
    check_capture,
)
from sse_inspect.checks import (
    CHECKS,
    CODES,
    Check,
    Context,
    Finding,
    Need,
    Skipped,
    parse_codes,
    parse_threshold,
)
from sse_inspect.checks.evidence import Bursts, Silence
from sse_inspect.cli._check import evidence_json

from . import timelines as T
from .test_codes import OA

ROOT = Path(__file__).parents[2]


class Counting(Check):
    """A check of the lifecycle family (so its codes exist) that counts events and reports nothing."""

    family = "lifecycle"
    needs: ClassVar[Mapping[Need, str]] = {Need.TIMED: "untimed: nothing to count", Need.RESPONSE: "no response"}

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.events = 0

    def event(self, event: Event, flags: EventFlags) -> None:
        self.events += 1

    def findings(self, ctx: Context) -> Iterator[Finding]:
        yield self.found("data-after-end", f"{self.events} events seen", t=ctx.analysis.timing.total)


def test_a_check_watches_the_pass_and_reports_with_its_codes_severity() -> None:
    report = check_capture(T.paced(OA), checks=[Counting])
    [finding] = report.findings
    assert (finding.code, finding.severity, finding.message) == ("data-after-end", CODES["data-after-end"].severity,
                                                                 "21 events seen")  # fmt: skip
    assert report.skipped == ()


def test_a_check_without_what_it_needs_is_skipped_with_its_reason_in_need_order() -> None:
    untimed = Capture(chunks=tuple(Chunk(None, c.data) for c in T.paced(OA).chunks))  # and no response
    report = check_capture(untimed, checks=[Counting])
    assert report.findings == () and report.skipped == (Skipped(Counting.codes(), "untimed: nothing to count"),)
    timed = T.paced(OA)
    report = check_capture(Capture(chunks=timed.chunks, request=timed.request, end=timed.end), checks=[Counting])
    assert report.findings == () and report.skipped == (Skipped(Counting.codes(), "no response"),)


def test_checks_skipped_for_one_reason_share_a_line() -> None:
    refused = T.capture([(0.3, b"Internal Server Error")], status=500, headers=(("Content-Type", "text/plain"),))
    skipped = check_capture(refused).skipped
    framing = tuple(c for c, code in CODES.items() if code.family == "framing")
    lifecycle = tuple(c for c, code in CODES.items() if code.family == "lifecycle")
    assert skipped[0].codes == framing + lifecycle and "refusal" in skipped[0].reason
    timing = "an error response: its timing says nothing about a stream"
    assert [s.reason for s in skipped] == [skipped[0].reason, timing]


class HalfJudged(Check):
    """A timing-family check that runs, finds nothing, and then could not judge two of its codes."""

    family = "timing"

    def findings(self, ctx: Context) -> Iterator[Finding]:
        return iter(())

    def skips(self, ctx: Context) -> Iterator[Skipped]:
        yield Skipped(("single-flush", "long-silence"), "no event carried text")


def test_codes_a_check_could_not_judge_after_running_are_skipped_and_an_ok_verdict_says_so() -> None:
    report = check_capture(T.paced(OA), checks=[HalfJudged])
    assert report.skipped == (Skipped(("single-flush", "long-silence"), "no event carried text"),)
    # only the codes that can make a verdict are named in it
    assert report.verdict.startswith("OK: ")
    assert report.verdict.endswith("; single-flush, long-silence not judged: no event carried text")
    plain = check_capture(T.paced(OA), checks=[Counting])
    assert "not judged" not in plain.verdict and plain.skipped == ()


def test_a_check_reports_only_its_familys_codes() -> None:
    with pytest.raises(AssertionError, match="not a lifecycle code"):
        Counting(Thresholds()).found("http-error", "no")


def test_the_checks_share_out_every_code() -> None:
    families = [c.family for c in CHECKS]
    assert len(set(families)) == len(families)
    assert sorted(code for c in CHECKS for code in c.codes()) == sorted(CODES)


def test_evidence_is_typed_and_the_json_is_made_from_it_at_the_edge() -> None:
    report = check_capture(T.burst_after_silence())
    [(finding, bursts)] = report.evidence(Bursts)
    assert finding.code == "buffering-burst" and isinstance(bursts, Bursts) and bursts.events_held == 40
    assert evidence_json(bursts) == {"bursts": [evidence_json(b) for b in bursts.bursts], "events_held": 40,
                                     "pace_ms": bursts.pace_ms, "lumps": False}  # fmt: skip
    assert list(evidence_json(bursts.bursts[0])) == ["t", "events", "bytes", "silence_s", "span_ms"]
    [(_, gap)] = check_capture(T.silent_gap(gap=45.0)).evidence(Silence)
    assert list(evidence_json(gap)) == ["gap_s", "from", "to", "final"] and evidence_json(gap)["from"] == gap.start
    assert evidence_json(gap)["to"] == gap.end
    assert not any(hasattr(kind, "to_json") for kind in (Bursts, Silence)), "the values hold no JSON"


# -- the public names ------------------------------------------------------------------------------------


def test_the_front_door_has_the_checks() -> None:
    from sse_inspect import checks

    for name in ("Check", "Finding", "Report", "Severity", "Thresholds", "check_capture"):
        assert getattr(sse_inspect, name) is getattr(checks, name), name
        assert name in sse_inspect.__all__


def test_the_checks_names_once_loaded_say_sse_inspect_like_every_export() -> None:
    """In a fresh interpreter, so that the first use of a checks' name is what loads them all."""
    code = (
        "import sse_inspect; sse_inspect.Report; "
        "print(sorted({getattr(sse_inspect, n).__module__ for n in sse_inspect.__all__ "
        "if isinstance(getattr(sse_inspect, n), type)}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['sse_inspect']"
    for name in ("Check", "Finding", "Report", "Severity", "Thresholds"):
        assert getattr(sse_inspect, name).__module__ == "sse_inspect", name
    assert repr(sse_inspect.Finding) == "<class 'sse_inspect.Finding'>"


def test_reading_a_capture_loads_no_check() -> None:
    code = "import sys, sse_inspect; sse_inspect.analyze; print('sse_inspect.checks' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_codes, "buffering-burst,no-such-code"),
        (lambda text: parse_threshold(Thresholds(), text), "no_such=1"),
        (lambda text: parse_threshold(Thresholds(), text), "burst_min_events=many"),
        (lambda text: parse_threshold(Thresholds(), text), "long_silence_s=-1"),
    ],
)
def test_bad_check_specs_raise_check_spec_error(parse, text: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CheckSpecError) as caught:
        parse(text)
    assert isinstance(caught.value, SSEInspectError) and caught.value.message


# -- the views: the terminal one does not load the HTML report ------------------------------------------


@pytest.mark.parametrize("command", ["show", "check"])
def test_the_terminal_views_load_no_html_report(command: str) -> None:
    code = (
        f"import sys; from sse_inspect.cli import main; sys.argv = ['sse-inspect', {command!r}, "
        "'captures/nginx-buffered.jsonl']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('sse_inspect.report' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=True)  # fmt: skip
    assert "BUFFERED" in done.stdout and done.stdout.splitlines()[-1] == "False"
