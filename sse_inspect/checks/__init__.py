"""`check_capture(capture) -> Report`: findings with evidence, what was skipped and why, and a verdict.

Five checks, one module each, one family of finding codes each: framing (the bytes), lifecycle
(markers, sentinels, payloads, in-band errors), headers (status and streaming headers), timing
(bursts, flushes, silences) and hygiene (secrets left in the capture). Each is a `Check`: it says
what it needs of a capture, watches the one analysis pass as an observer keeping only what its
findings quote (so a capture of any size is checked in flat memory), then yields its findings.
A check that lacks what it needs (headers of a raw body, times of an untimed capture) is reported
as skipped, never passed in silence. A new check is one module added to `CHECKS` (docs/checks.md).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .._analysis import Analysis, Observer, analyze
from .._capture import Capture
from .._errors import CheckSpecError
from .._loading import CaptureStream
from .._rechunk import RechunkSpec
from ..dialects import Holding
from ._check import BodyHead, Check, Context, Need
from ._model import ALIASES, CODES, Code, Finding, Severity, Skipped, Thresholds, parse_threshold
from .evidence import Evidence
from .framing import FramingCheck
from .headers import HeadersCheck
from .hops import Culprit, Hop, read_hops, with_culprits
from .hygiene import HygieneCheck
from .lifecycle import LifecycleCheck
from .timing import TimingCheck

__all__ = [
    "CHECKS",
    "CODES",
    "Check",
    "Code",
    "Context",
    "Culprit",
    "Finding",
    "Hop",
    "Need",
    "Report",
    "Severity",
    "Skipped",
    "Thresholds",
    "check_capture",
    "parse_codes",
    "parse_threshold",
]

CHECKS: tuple[type[Check], ...] = (FramingCheck, LifecycleCheck, HeadersCheck, TimingCheck, HygieneCheck)
"""Every check, in the order their findings are gathered (and their skips reported)."""

VERDICTS = (
    ("http-error", "HTTP ERROR"),
    ("not-an-event-stream", "NOT AN EVENT STREAM"),
    ("error-event", "ERRORED"),
    ("single-flush", "BUFFERED"),
    ("buffering-burst", "BUFFERED"),
    ("fixed-size-flush", "BUFFERED"),
    ("idle-timeout-cut", "CUT"),
    ("total-timeout-cut", "CUT"),
    ("missing-end-marker", "CUT"),
    ("connection-cut", "CUT"),
    ("invalid-json", "BROKEN"),
    ("long-silence", "AT RISK"),
    ("headers-held", "AT RISK"),
    ("secret-in-capture", "LEAKS A SECRET"),
)
"""The findings that make the verdict, most telling first, each with the verdict's word."""

EvidenceT = TypeVar("EvidenceT", bound=Evidence)


@dataclass(frozen=True, kw_only=True)
class Report:
    """What checking one capture found."""

    analysis: Analysis
    findings: tuple[Finding, ...]
    """Worst first, then in stream order."""
    skipped: tuple[Skipped, ...]
    verdict: str
    """One line: BUFFERED, CUT, ERRORED, HTTP ..., or OK, with the evidence."""
    thresholds: Thresholds
    hops: tuple[Hop, ...] = ()
    """The hops the response passed, as its headers tell, nearest the client first (`checks/hops.py`)."""
    culprit: Culprit | None = None
    """Which hop most likely buffered, held or cut the stream, and the fix; None when nothing did."""

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def evidence(self, kind: type[EvidenceT]) -> list[tuple[Finding, EvidenceT]]:
        """The findings whose evidence is a `kind` (e.g. `Bursts`, `Silence`), each with it."""
        return [(f, f.evidence) for f in self.findings if isinstance(f.evidence, kind)]


def parse_codes(text: str) -> frozenset[str]:
    """A comma-separated list of finding codes (a renamed code's old name, of `ALIASES`, as its new
    one); raises CheckSpecError for an unknown one."""
    codes = frozenset(ALIASES.get(c.strip(), c.strip()) for c in text.split(",") if c.strip())
    unknown = sorted(codes - CODES.keys())
    if unknown:
        raise CheckSpecError(f"unknown finding code(s): {', '.join(unknown)}", hint=f"codes: {', '.join(CODES)}")
    return codes


def check_capture(
    source: Capture | CaptureStream,
    *,
    thresholds: Thresholds | None = None,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    rechunk: RechunkSpec | None = None,
    dialect: str | None = None,
    keep: bool = True,
    observers: Sequence[Observer] = (),
    checks: Sequence[type[Check]] = CHECKS,
    holding: Holding = Holding.WHOLE,
) -> Report:
    """Analyse and check one capture in a single pass (see `analyze` for `keep`, `observers` and
    `holding`: no check reads the answer's text, only its length, so `Holding.COUNT` checks the same);
    `select` keeps only those codes, `ignore` drops codes; `checks` are the checks to run."""
    thresholds = thresholds or Thresholds()
    running = [check(thresholds) for check in checks]
    head = BodyHead()
    analysis = analyze(source, rechunk=rechunk, dialect=dialect, keep=keep, observers=[*running, head, *observers],
                       holding=holding)  # fmt: skip
    ctx = Context(analysis, thresholds, head.head)
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    late: list[Skipped] = []  # what a check that ran could not judge after all: an OK verdict says so
    for check in running:
        reason = check.unmet(ctx)
        if reason is None:
            findings += check.findings(ctx)
            for skip in check.skips(ctx):
                late.append(skip)
                _skip(skipped, skip)
        else:
            _skip(skipped, Skipped(check.codes(), reason))
    for check in running:
        findings = check.review(ctx, findings)
    findings = [f for f in findings if (select is None or f.code in select) and f.code not in ignore]
    findings.sort(key=lambda f: (-f.severity, f.t if f.t is not None else -1.0))
    hops = read_hops(analysis.capture)
    findings, culprit = with_culprits(findings, hops)  # each cause's finding advises its culprit's fix
    return Report(analysis=analysis, findings=tuple(findings), skipped=tuple(skipped),
                  verdict=verdict(analysis, findings, late), thresholds=thresholds, hops=hops,
                  culprit=culprit)  # fmt: skip


def _skip(skipped: list[Skipped], skip: Skipped) -> None:
    """Add `skip` to the list, on the last line when that was skipped for the same reason."""
    if skipped and skipped[-1].reason == skip.reason:
        skipped[-1] = Skipped(skipped[-1].codes + skip.codes, skip.reason)
    else:
        skipped.append(skip)


def verdict(a: Analysis, findings: Sequence[Finding], unjudged: Sequence[Skipped] = ()) -> str:
    """The most telling finding (of `VERDICTS`) as `WORD: its message`; with none of them, EMPTY or OK
    and the counts. How the stream ended comes in through the lifecycle findings, which read it from
    the analysis's `Outcome` (a cut stream's `missing-end-marker`, an errored one's `error-event`).
    An OK verdict names the verdict's codes in `unjudged` (the skips of checks that ran, `Check.skips`)
    and why: OK means judged and clean. (A capture's kind already says what it lacks: "(untimed)".)"""
    by_code: dict[str, Finding] = {}
    for f in findings:
        by_code.setdefault(f.code, f)
    for code, word in VERDICTS:
        if code in by_code:
            return f"{word}: {by_code[code].message}"
    t = a.timing
    if not t.events:
        return f"EMPTY: no event in {t.decoded_bytes} body bytes"
    why = "".join(_unjudged(unjudged))
    if t.total is not None:
        first = f", first token at {t.first_token:.3f} s" if t.first_token is not None else ""
        return f"OK: {t.events} events over {t.total:.3f} s{first}{why}"
    return f"OK: {t.events} events (untimed){why}"


def _unjudged(skipped: Sequence[Skipped]) -> Iterator[str]:
    """For an OK verdict: each skip of a code that can make the verdict, as "; CODES not judged: why"."""
    telling = {code for code, _ in VERDICTS}
    for skip in skipped:
        codes = [c for c in skip.codes if c in telling]
        if codes:
            yield f"; {', '.join(codes)} not judged: {skip.reason}"
