"""Compare two analyses of a stream: the rebuilt answers, the events, or when the events arrived.

    diff_text(a, b).unified        what the user saw, as a unified diff
    diff_events(a, b).changes      event by event on (type, data, id)
    diff_timing(a, b).summary      the same stream recorded before and after a hop: what it held

The timing view is how a buffering proxy is proven rather than suspected: record the
stream on both sides of the hop, and every event the hop held shows as extra delay
over the hop's own latency floor.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from ._analysis import Analysis
from ._errors import SSEInspectError
from ._events import Event
from ._release import Release
from .dialects import Answer

__all__ = [
    "HOLD_THRESHOLD",
    "RELEASE_WINDOW",
    "EventChange",
    "EventDelay",
    "EventsDiff",
    "HeldRelease",
    "TextDiff",
    "TimingDiff",
    "answer_lines",
    "diff_events",
    "diff_text",
    "diff_timing",
]

HOLD_THRESHOLD = 0.1
"""Seconds over the baseline delay from which an event counts as held: well above network
jitter, well below the silences a buffering hop causes."""
RELEASE_WINDOW = 0.010
"""Held events that reached B within this many seconds of each other are one release (one flush)."""


# -- text ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDiff:
    """The two rebuilt answers as canonical lines, and their unified diff."""

    a: tuple[str, ...]
    b: tuple[str, ...]
    unified: tuple[str, ...]
    """`difflib.unified_diff` of `a` and `b` ("--- A", "+++ B", "@@ ...", then " ", "-", "+" lines)."""
    changed: tuple[str, ...]
    """The parts that differ, e.g. ("choice 0 text", "complete"), in rendering order."""

    @property
    def identical(self) -> bool:
        return self.a == self.b


def _answer_parts(answer: Answer) -> list[tuple[str, list[str]]]:
    parts: list[tuple[str, list[str]]] = [("dialect", [f"dialect {answer.dialect}"])]
    for c in answer.choices:
        name = f"choice {c.index}"
        parts.append((name, [name]))
        for field, value in (("text", c.text), ("reasoning", c.reasoning), ("refusal", c.refusal)):
            if value:
                parts.append((f"{name} {field}", [f"  {field}:", *(f"    {line}" for line in value.split("\n"))]))
        if c.tool_calls:
            parts.append((f"{name} tool calls", [f"  tool call {t.name} {t.arguments}" for t in c.tool_calls]))
        finish = "(none)" if c.finish_reason is None else c.finish_reason
        parts.append((f"{name} finish reason", [f"  finish reason {finish}"]))
    complete = {True: "true", False: "false", None: "null (the dialect has no end marker)"}[answer.complete]
    parts.append(("complete", [f"complete {complete}"]))
    if answer.errors:
        parts.append(("errors", [f"error at event #{e.event_index}: {e.message}" for e in answer.errors]))
    return parts


def answer_lines(answer: Answer) -> tuple[str, ...]:
    """The answer as canonical lines: per choice its text, reasoning, refusal, tool calls, finish
    reason; then `complete` and any in-band errors. Lines may hold CRs or control characters."""
    return tuple(line for _, lines in _answer_parts(answer) for line in lines)


def diff_text(a: Analysis, b: Analysis) -> TextDiff:
    """Compare what the users of the two streams saw."""
    parts_a, parts_b = dict(_answer_parts(a.answer)), dict(_answer_parts(b.answer))
    names = [*parts_a, *(n for n in parts_b if n not in parts_a)]
    lines_a, lines_b = answer_lines(a.answer), answer_lines(b.answer)
    unified = difflib.unified_diff(lines_a, lines_b, fromfile="A", tofile="B", lineterm="")
    return TextDiff(
        a=lines_a,
        b=lines_b,
        unified=tuple(unified),
        changed=tuple(n for n in names if parts_a.get(n) != parts_b.get(n)),
    )


# -- events --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventChange:
    """One step of the alignment: "equal", "changed" (both sides), "missing" (only in A), "inserted" (only in B)."""

    op: str
    a: Event | None
    b: Event | None

    @property
    def fields(self) -> tuple[str, ...]:
        """For "changed": which of type, data, id differ."""
        if self.a is None or self.b is None:
            return ()
        return tuple(f for f in ("type", "data", "id") if getattr(self.a, f) != getattr(self.b, f))


@dataclass(frozen=True, slots=True)
class EventsDiff:
    """The two event sequences aligned on (type, data, id), in stream order."""

    changes: tuple[EventChange, ...]

    def _op(self, op: str) -> tuple[EventChange, ...]:
        return tuple(c for c in self.changes if c.op == op)

    @property
    def equal(self) -> tuple[EventChange, ...]:
        return self._op("equal")

    @property
    def changed(self) -> tuple[EventChange, ...]:
        return self._op("changed")

    @property
    def missing(self) -> tuple[EventChange, ...]:
        return self._op("missing")

    @property
    def inserted(self) -> tuple[EventChange, ...]:
        return self._op("inserted")

    @property
    def identical(self) -> bool:
        return all(c.op == "equal" for c in self.changes)


def _opcodes(
    a: Sequence[Event], b: Sequence[Event], key: Callable[[Event], Hashable]
) -> list[tuple[str, int, int, int, int]]:
    # autojunk off: a stream's repeated events (pings, empty deltas) must still align
    matcher = difflib.SequenceMatcher(None, [key(e) for e in a], [key(e) for e in b], autojunk=False)
    return [(tag, i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]


def diff_events(a: Analysis, b: Analysis) -> EventsDiff:
    """Align the events of A and B on (type, data, id); a replaced run pairs up as "changed" events."""
    changes: list[EventChange] = []
    for tag, i1, i2, j1, j2 in _opcodes(a.events, b.events, lambda e: (e.type, e.data, e.id)):
        left, right = a.events[i1:i2], b.events[j1:j2]
        if tag == "equal":
            changes += [EventChange("equal", x, y) for x, y in zip(left, right)]
            continue
        paired = min(len(left), len(right)) if tag == "replace" else 0
        changes += [EventChange("changed", x, y) for x, y in zip(left[:paired], right[:paired])]
        changes += [EventChange("missing", x, None) for x in left[paired:]]
        changes += [EventChange("inserted", None, y) for y in right[paired:]]
    return EventsDiff(tuple(changes))


# -- timing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventDelay:
    """One event seen on both sides: when it reached A and B, and how long the hop kept it."""

    a: Event
    b: Event
    t_a: float
    t_b: float
    delay: float
    """`t_b - t_a`: the hop's latency plus any offset between the two recorders' clocks."""
    hold: float
    """`delay` minus the baseline: how much longer than the fastest event this one took."""


@dataclass(frozen=True, slots=True)
class HeldRelease(Release):
    """Held events that reached B together, each within `RELEASE_WINDOW` of the one before: one
    flush of the hop. `t` is on B's clock."""

    events: tuple[EventDelay, ...]
    """The held events it brought, in order (at least one)."""

    @property
    def first_hold(self) -> float:
        """How long the release's first event was held: the silence the hop imposed."""
        return self.events[0].hold


@dataclass(frozen=True, slots=True)
class TimingDiff:
    """The same stream recorded upstream (A) and downstream (B) of a hop: what the hop held back.

    `baseline` is the smallest delay: the hop's latency floor, plus the constant offset between
    the recorders' clocks, which therefore cancels out of every `hold`.
    """

    matched: tuple[EventDelay, ...]
    only_a: tuple[Event, ...]
    only_b: tuple[Event, ...]
    baseline: float
    threshold: float
    window: float
    hop: str = "between A and B"

    @property
    def held(self) -> tuple[EventDelay, ...]:
        """Events held more than `threshold` over the baseline."""
        return tuple(d for d in self.matched if d.hold > self.threshold)

    @property
    def max_hold(self) -> EventDelay:
        """The event held longest (the first of them on a tie)."""
        return max(self.matched, key=lambda d: d.hold)

    @property
    def releases(self) -> tuple[HeldRelease, ...]:
        groups: list[list[EventDelay]] = []
        for d in sorted(self.held, key=lambda d: d.t_b):
            if groups and d.t_b - groups[-1][-1].t_b <= self.window:
                groups[-1].append(d)
            else:
                groups.append([d])
        return tuple(HeldRelease(t=g[0].t_b, span=g[-1].t_b - g[0].t_b, events=tuple(g)) for g in groups)

    @property
    def identical(self) -> bool:
        """True when no event was held more than `threshold` over the baseline."""
        return not self.held

    @property
    def summary(self) -> str:
        base = f"{self.baseline * 1000:.1f} ms baseline"
        held = self.held
        if not held:
            return (f"the hop {self.hop} held no event more than {self.threshold * 1000:g} ms over its {base} "
                    f"(max {self.max_hold.hold * 1000:.1f} ms)")  # fmt: skip
        rels = self.releases
        largest = max(rels, key=lambda r: len(r.events))
        bursts = "1 burst" if len(rels) == 1 else f"{len(rels)} bursts"
        return (f"the hop {self.hop} held {len(held)} events up to {self.max_hold.hold:.3f} s over its {base}, "
                f"released in {bursts} (largest: {len(largest.events)} events at t={largest.t:.3f} s)")  # fmt: skip


def _untimed(analysis: Analysis) -> bool:
    return not analysis.capture.timed or any(e.t is None for e in analysis.events)


def diff_timing(
    a: Analysis, b: Analysis, *, threshold: float = HOLD_THRESHOLD, window: float = RELEASE_WINDOW
) -> TimingDiff:
    """Align A's and B's events on (type, data) and measure how long each took from A to B.

    Raises SSEInspectError when a capture is untimed or the two share no event.
    """
    for name, side in (("A", a), ("B", b)):
        if _untimed(side):
            where = f" ({side.capture.path})" if side.capture.path else ""
            raise SSEInspectError(
                f"{name}{where} is untimed: comparing timing needs per-chunk arrival times in both captures",
                hint="--by text or --by events compare untimed captures",
            )
    pairs: list[tuple[Event, Event]] = []
    only_a: list[Event] = []
    only_b: list[Event] = []
    for tag, i1, i2, j1, j2 in _opcodes(a.events, b.events, lambda e: (e.type, e.data)):
        if tag == "equal":
            pairs += zip(a.events[i1:i2], b.events[j1:j2])
        else:
            only_a += a.events[i1:i2]
            only_b += b.events[j1:j2]
    if not pairs:
        raise SSEInspectError("A and B share no event: they are not two recordings of the same stream")
    times = [(x.t or 0.0, y.t or 0.0) for x, y in pairs]  # never None: both captures are timed
    baseline = min(tb - ta for ta, tb in times)
    return TimingDiff(
        matched=tuple(EventDelay(x, y, ta, tb, tb - ta, tb - ta - baseline) for (x, y), (ta, tb) in zip(pairs, times)),
        only_a=tuple(only_a),
        only_b=tuple(only_b),
        baseline=baseline,
        threshold=threshold,
        window=window,
    )
