"""`check_capture(capture) -> Report`: findings with evidence, what was skipped and why, and a verdict.

Five families, one module each: framing (the bytes), lifecycle (markers, payloads, errors),
headers (status and streaming headers), timing (bursts, flushes, silences) and hygiene (secrets
left in the capture, checked on every capture). The families that read the stream watch the one
analysis pass as observers ("probes") keeping only what their findings quote, so a capture of any
size is checked in flat memory. A check that lacks what it needs (headers of a raw body, times of an untimed capture) is reported
as skipped, never passed in silence.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .._analysis import Analysis, Observer, analyze
from .._capture import Capture
from .._errors import SSEInspectError
from .._loading import CaptureStream
from .._rechunk import RechunkSpec
from ._context import Context
from ._model import CODES, Code, Finding, Severity, Skipped, Thresholds, parse_threshold
from .framing import FramingProbe
from .headers import check_headers
from .hygiene import HygieneProbe
from .lifecycle import LifecycleProbe
from .timing import TimingProbe

__all__ = [
    "CODES",
    "Code",
    "Finding",
    "Report",
    "Severity",
    "Skipped",
    "Thresholds",
    "check_capture",
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
) -> Report:
    """Analyse and check one capture in a single pass (see `analyze` for `keep` and `observers`);
    `select` keeps only those codes, `ignore` drops codes."""
    thresholds = thresholds or Thresholds()
    framing, lifecycle, timing, hygiene = FramingProbe(), LifecycleProbe(), TimingProbe(thresholds), HygieneProbe()
    analysis = analyze(source, rechunk=rechunk, dialect=dialect, keep=keep,
                       observers=[framing, lifecycle, timing, hygiene, *observers])  # fmt: skip
    ctx = Context(analysis, thresholds, hygiene.head)
    capture = analysis.capture
    findings: list[Finding] = []
    skipped = []
    if ctx.http_ok:
        findings += [*framing.findings(ctx), *lifecycle.findings(ctx)]
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
        findings += timing.findings(ctx)
    if ctx.timed and not any(f.code in _BUFFERING for f in findings):
        # nginx strips X-Accel-Buffering on its way to the client, so a fixed stream can never show
        # the header: advise it only where the timing shows buffering, or cannot tell.
        findings = [f for f in findings if f.code != "x-accel-buffering"]
    findings += hygiene.findings(ctx)
    findings = [f for f in findings if (select is None or f.code in select) and f.code not in ignore]
    findings.sort(key=lambda f: (-f.severity, f.t if f.t is not None else -1.0))
    return Report(
        analysis=analysis,
        findings=tuple(findings),
        skipped=tuple(skipped),
        verdict=_verdict(analysis, findings),
        thresholds=ctx.thresholds,
    )


def run_checks(
    analysis: Analysis,
    *,
    thresholds: Thresholds | None = None,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
) -> Report:
    """Check an analysed capture: its chunks are read again, with the same re-cut and dialect."""
    if not analysis.kept:
        raise ValueError("this analysis kept no chunks (keep=False): check the capture with check_capture")
    return check_capture(analysis.capture, thresholds=thresholds, select=select, ignore=ignore,
                         rechunk=analysis.rechunk, dialect=analysis.dialect)  # fmt: skip


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
    if not t.events:
        return f"EMPTY: no event in {t.decoded_bytes} body bytes"
    if t.total is not None:
        first = f", first token at {t.first_token:.3f} s" if t.first_token is not None else ""
        return f"OK: {t.events} events over {t.total:.3f} s{first}"
    return f"OK: {t.events} events (untimed)"
