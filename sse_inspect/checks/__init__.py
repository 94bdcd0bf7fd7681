"""`run_checks(analysis) -> Report`: findings with evidence, what was skipped and why, and a verdict.

Five families, one module each: framing (the bytes), lifecycle (markers, payloads, errors),
headers (status and streaming headers), timing (bursts, flushes, silences) and hygiene (secrets
left in the capture, checked on every capture). A check
that lacks what it needs (headers of a raw body, times of an untimed capture) is reported
as skipped, never passed in silence.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .._analysis import Analysis
from .._errors import SSEInspectError
from ._context import Context
from ._model import CODES, Code, Finding, Severity, Skipped, Thresholds, parse_threshold
from .framing import check_framing
from .headers import check_headers
from .hygiene import check_hygiene
from .lifecycle import check_lifecycle
from .timing import check_timing

__all__ = [
    "CODES",
    "Code",
    "Finding",
    "Report",
    "Severity",
    "Skipped",
    "Thresholds",
    "parse_codes",
    "parse_threshold",
    "run_checks",
]


_BUFFERING = {"buffering-burst", "single-flush", "fixed-size-flush"}


def _family(name: str) -> tuple[str, ...]:
    return tuple(c.name for c in CODES.values() if c.family == name)


@dataclass(frozen=True, kw_only=True)
class Report:
    """The outcome of checking one capture."""

    analysis: Analysis
    findings: tuple[Finding, ...]
    """Worst first, then in stream order."""
    skipped: tuple[Skipped, ...]
    verdict: str
    """One line: BUFFERED, CUT, ERRORED, HTTP ..., or OK, with the evidence."""
    thresholds: Thresholds

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def count(self, severity: Severity) -> int:
        return sum(f.severity == severity for f in self.findings)


def parse_codes(text: str) -> frozenset[str]:
    """A comma-separated list of finding codes; raises SSEInspectError for an unknown one."""
    codes = frozenset(c.strip() for c in text.split(",") if c.strip())
    unknown = sorted(codes - CODES.keys())
    if unknown:
        raise SSEInspectError(f"unknown finding code(s): {', '.join(unknown)}", hint=f"codes: {', '.join(CODES)}")
    return codes


def run_checks(
    analysis: Analysis,
    *,
    thresholds: Thresholds | None = None,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
) -> Report:
    """Check one analysed capture; `select` keeps only those codes, `ignore` drops codes."""
    ctx = Context(analysis, thresholds or Thresholds())
    capture = analysis.capture
    findings: list[Finding] = []
    skipped = []
    if ctx.http_ok:
        findings += [*check_framing(ctx), *check_lifecycle(ctx)]
    else:
        reason = "an error response: its body is the server's refusal, not an event stream"
        skipped.append(Skipped(_family("framing") + _family("lifecycle"), reason))
    if capture.response is not None:
        findings += check_headers(ctx)
    else:
        skipped.append(Skipped(_family("headers"), "a raw body: no status or headers were recorded"))
    if not ctx.timed:
        skipped.append(Skipped(_family("timing"), "untimed capture: the source kept no per-chunk arrival times"))
    elif not ctx.http_ok:
        skipped.append(Skipped(_family("timing"), "an error response: its timing says nothing about a stream"))
    else:
        findings += check_timing(ctx)
    if ctx.timed and not any(f.code in _BUFFERING for f in findings):
        # nginx strips X-Accel-Buffering on its way to the client, so a fixed stream can never show
        # the header: advise it only where the timing shows buffering, or cannot tell.
        findings = [f for f in findings if f.code != "x-accel-buffering"]
    findings += check_hygiene(ctx)
    findings = [f for f in findings if (select is None or f.code in select) and f.code not in ignore]
    findings.sort(key=lambda f: (-f.severity, f.t if f.t is not None else -1.0))
    return Report(
        analysis=analysis,
        findings=tuple(findings),
        skipped=tuple(skipped),
        verdict=_verdict(analysis, findings),
        thresholds=ctx.thresholds,
    )


def _verdict(a: Analysis, findings: list[Finding]) -> str:
    by_code: dict[str, Finding] = {}
    for f in findings:
        by_code.setdefault(f.code, f)
    for code, word in (
        ("http-error", "HTTP ERROR"),
        ("error-event", "ERRORED"),
        ("single-flush", "BUFFERED"),
        ("buffering-burst", "BUFFERED"),
        ("fixed-size-flush", "BUFFERED"),
        ("missing-end-marker", "CUT"),
        ("invalid-json", "BROKEN"),
        ("long-silence", "AT RISK"),
        ("secret-in-capture", "LEAKS A SECRET"),
    ):
        if code in by_code:
            return f"{word}: {by_code[code].message}"
    t = a.timing
    if t.total is not None:
        first = f", first token at {t.first_token:.3f} s" if t.first_token is not None else ""
        return f"OK: {t.events} events over {t.total:.3f} s{first}"
    return f"OK: {t.events} events (untimed)"
