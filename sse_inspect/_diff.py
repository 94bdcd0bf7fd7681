"""Compare two analyses of a stream: the rebuilt answers, the events, or when the events arrived.

    diff_text(a, b).unified        what the user saw, as a unified diff
    diff_events(a, b).changes      event by event on (type, data, id)
    diff_timing(a, b).summary      the same stream recorded before and after a hop: what it held

The timing view is how a buffering proxy is proven rather than suspected: record the
stream on both sides of the hop, and every event the hop held shows as extra delay
over the hop's own latency floor. A hop that passes the events on is timed event by event
(`TimingDiff`); a hop that re-frames them (an app that reads OpenAI JSON chunks and sends its
own plain-text events) is timed character by character of the answer text (`TextTimingDiff`).
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import operator
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._analysis import Analysis
from ._errors import SSEInspectError
from ._events import Event
from ._release import Release
from .dialects import Answer

__all__ = [
    "HOLD_THRESHOLD",
    "RELEASE_WINDOW",
    "STRAGGLER",
    "EventChange",
    "EventDelay",
    "EventsDiff",
    "HeldRelease",
    "HeldText",
    "TextDelay",
    "TextDiff",
    "TextTimingDiff",
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
STRAGGLER = 2
"""A lone straggler (see `TimingDiff.straggler`) is one held less than this many times the threshold."""


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


Opcode = tuple[str, int, int, int, int]
"""(tag, i1, i2, j1, j2) as `difflib.SequenceMatcher.get_opcodes` gives them: a[i1:i2] is b[j1:j2]
("equal"), became it ("replace"), went ("delete", j1 == j2) or came ("insert", i1 == i2)."""

EXACT_PAIRS = 1_000_000
"""How much exact alignment one comparison may do, in pairs of events: aligning a stretch of `n`
events of A with `m` of B by difflib costs `n * m` of them (and difflib's time grows at least with
that product). Two captures of up to 1,000 events each are aligned entirely as difflib aligns them."""


def _opcodes(a: Sequence[Event], b: Sequence[Event], key: Callable[[Event], Hashable]) -> list[Opcode]:
    return _Aligner([key(e) for e in a], [key(e) for e in b]).opcodes()


class _Aligner:
    """Aligns two sequences of keys in time near-linear in their lengths, however hostile.

    Within `EXACT_PAIRS` the answer is difflib's (the longest matching run, then recursively either
    side of it). Past it: the common head and tail are equal; in the middle, the keys found exactly
    once on each side are anchors, and the longest run of anchors in the same order on both sides
    (patience diff) is equal; each gap between two anchors has its own head and tail matched, and
    its middle is aligned by difflib while the budget of `EXACT_PAIRS` lasts. A middle left over
    when the budget has run out, or when nothing anchors it, is compared position by position (the
    k-th event of A's stretch with the k-th of B's: equal or replaced), the longer side's extra events
    deleted or inserted at its end. So events that were only changed in place still line up; when A
    and B differ wildly, their events pair up in order.
    """

    def __init__(self, a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
        self.a, self.b = a, b
        self.budget = EXACT_PAIRS

    def opcodes(self) -> list[Opcode]:
        ops = self._align(0, len(self.a), 0, len(self.b), anchored=True)
        merged: list[Opcode] = []
        for op in ops:
            if merged and op[0] == merged[-1][0] == "equal":
                merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
            else:
                merged.append(op)
        return merged

    def _exact(self, i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
        self.budget -= (i2 - i1) * (j2 - j1)
        # autojunk off: a stream's repeated events (pings, empty deltas) must still align
        matcher = difflib.SequenceMatcher(None, self.a[i1:i2], self.b[j1:j2], autojunk=False)
        return [(tag, i1 + x1, i1 + x2, j1 + y1, j1 + y2) for tag, x1, x2, y1, y2 in matcher.get_opcodes()]

    def _align(self, i1: int, i2: int, j1: int, j2: int, *, anchored: bool) -> list[Opcode]:
        if (i2 - i1) * (j2 - j1) <= self.budget:
            return self._exact(i1, i2, j1, j2)
        a, b = self.a, self.b
        head = 0
        while i1 + head < i2 and j1 + head < j2 and a[i1 + head] == b[j1 + head]:
            head += 1
        tail = 0
        while i2 - tail > i1 + head and j2 - tail > j1 + head and a[i2 - tail - 1] == b[j2 - tail - 1]:
            tail += 1
        m1, m2, n1, n2 = i1 + head, i2 - tail, j1 + head, j2 - tail
        ops: list[Opcode] = [("equal", i1, m1, j1, n1)] if head else []
        if (m2 - m1) * (n2 - n1) <= self.budget:
            ops += self._exact(m1, m2, n1, n2)
        elif anchored:
            ops += self._anchored(m1, m2, n1, n2)
        else:
            ops += self._in_order(m1, m2, n1, n2)
        if tail:
            ops.append(("equal", m2, i2, n2, j2))
        return ops

    def _anchored(self, i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
        a, b = self.a, self.b
        in_a, in_b = Counter(a[i1:i2]), Counter(b[j1:j2])
        where_b = {b[j]: j for j in range(j1, j2) if in_b[b[j]] == 1}
        pairs = [(i, where_b[a[i]]) for i in range(i1, i2) if in_a[a[i]] == 1 and a[i] in where_b]
        ops: list[Opcode] = []
        for i, j in _increasing(pairs):
            ops += self._align(i1, i, j1, j, anchored=False)
            ops.append(("equal", i, i + 1, j, j + 1))
            i1, j1 = i + 1, j + 1
        return ops + self._align(i1, i2, j1, j2, anchored=False)


    def _in_order(self, i1: int, i2: int, j1: int, j2: int) -> list[Opcode]:
        """a[i1:i2] against b[j1:j2] position by position; the longer side's rest deleted or inserted."""
        ops: list[Opcode] = []
        n = min(i2 - i1, j2 - j1)
        k = 0
        while k < n:
            same = self.a[i1 + k] == self.b[j1 + k]
            run = k + 1
            while run < n and (self.a[i1 + run] == self.b[j1 + run]) == same:
                run += 1
            ops.append(("equal" if same else "replace", i1 + k, i1 + run, j1 + k, j1 + run))
            k = run
        if i1 + n < i2:
            ops.append(("delete", i1 + n, i2, j2, j2))
        if j1 + n < j2:
            ops.append(("insert", i2, i2, j1 + n, j2))
        return ops


def _increasing(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of `pairs` (in their order) whose second items increase: n log n."""
    ends: list[int] = []  # ends[k]: the pair ending the best run of length k + 1 found so far
    end_js: list[int] = []  # and its second item: the smallest any run of that length ends on
    before = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(end_js, j)
        before[n] = ends[k - 1] if k else -1
        if k == len(ends):
            ends.append(n)
            end_js.append(j)
        else:
            ends[k], end_js[k] = n, j
    run: list[tuple[int, int]] = []
    n = ends[-1] if ends else -1
    while n >= 0:
        run.append(pairs[n])
        n = before[n]
    return run[::-1]


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


class _Holds:
    """What both timing diffs share: the held items (events or stretches of text) and their
    releases, computed once when the diff is made, the longest hold, and the verdict.

    A subclass is a frozen dataclass with `threshold` and `window`, the fields `held`, `releases`
    and `max_hold` (not set by its caller), and `_delays` naming the field of its timed items."""

    __slots__ = ()
    _delays: str
    threshold: float
    window: float
    held: tuple[Any, ...]
    releases: tuple[Any, ...]

    def __post_init__(self) -> None:
        delays: Sequence[EventDelay | TextDelay] = getattr(self, self._delays)
        held = tuple(d for d in delays if d.hold > self.threshold)
        groups = _flushes(self._in_b_order(held), self.window)
        object.__setattr__(self, "held", held)
        object.__setattr__(self, "releases", tuple(self._release(g) for g in groups))
        # the item held longest, the first of them on a tie (None: nothing was timed)
        object.__setattr__(self, "max_hold", max(delays, key=operator.attrgetter("hold"), default=None))

    def _in_b_order(self, held: tuple[Any, ...]) -> Sequence[Any]:
        return held

    def _release(self, group: list[Any]) -> Any:
        raise NotImplementedError

    @property
    def straggler(self) -> bool:
        """Whether all that was held is one straggler: what one event of A brought, held less than
        `STRAGGLER` times the threshold, alone. One late token is jitter (a scheduler, a delayed
        ACK, a timer), not a buffer: a hop that buffers holds what comes after it too, so its holds
        come in more than one release, or bring more than one of A's events, or last longer."""
        return (
            len(self.releases) == 1
            and len({id(d.a) for d in self.held}) == 1
            and max(d.hold for d in self.held) < STRAGGLER * self.threshold
        )

    @property
    def identical(self) -> bool:
        """True when nothing was held more than `threshold` over the baseline, but a lone straggler."""
        return not self.held or self.straggler


@dataclass(frozen=True, slots=True)
class TimingDiff(_Holds):
    """The same stream recorded upstream (A) and downstream (B) of a hop: what the hop held back.

    `baseline` is the smallest delay: the hop's latency floor, plus the constant offset between
    the recorders' clocks, which therefore cancels out of every `hold`.
    """

    _delays = "matched"
    matched: tuple[EventDelay, ...]
    only_a: tuple[Event, ...]
    only_b: tuple[Event, ...]
    baseline: float
    threshold: float
    window: float
    hop: str = "between A and B"
    alignment: str = "events"
    """How A and B were aligned: "events" (here), "text" (`TextTimingDiff`)."""
    held: tuple[EventDelay, ...] = field(init=False, repr=False, compare=False)
    """Events held more than `threshold` over the baseline."""
    releases: tuple[HeldRelease, ...] = field(init=False, repr=False, compare=False)
    max_hold: EventDelay = field(init=False, repr=False, compare=False)
    """The event held longest (the first of them on a tie)."""

    def _in_b_order(self, held: tuple[EventDelay, ...]) -> list[EventDelay]:
        return sorted(held, key=lambda d: d.t_b)

    def _release(self, group: list[EventDelay]) -> HeldRelease:
        return HeldRelease(t=group[0].t_b, span=group[-1].t_b - group[0].t_b, events=tuple(group))

    @property
    def summary(self) -> str:
        return _summary(self, "event", len(self.held), lambda r: len(r.events))


@dataclass(frozen=True, slots=True)
class TextDelay:
    """A stretch of the answer text that reached A in one event and B in one event, and how long
    the hop kept it. Its characters are A's, with the whitespace before them (see `diff_timing`)."""

    a: Event
    b: Event
    start: int
    """Where the stretch starts in A's text."""
    text: str
    """The stretch: A's text from `start`."""
    t_a: float
    t_b: float
    delay: float
    """`t_b - t_a`, as for an event."""
    hold: float
    """`delay` minus the baseline."""

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True, slots=True)
class HeldText(Release):
    """Held text that reached B together, each stretch within `RELEASE_WINDOW` of the one before:
    one flush of the hop. `t` is on B's clock."""

    stretches: tuple[TextDelay, ...]
    """The held stretches it brought, in order (at least one)."""

    @property
    def characters(self) -> int:
        return sum(len(s.text) for s in self.stretches)

    @property
    def first_hold(self) -> float:
        """How long the release's first characters were held: the silence the hop imposed."""
        return self.stretches[0].hold

    def quote(self, width: int = 40) -> str:
        """The start of the text it brought, at most `width` characters, "…" when cut."""
        text = "".join(s.text for s in self.stretches[:width]).strip()
        return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class TextTimingDiff(_Holds):
    """The same answer recorded upstream (A) and downstream (B) of a hop that re-framed its events:
    what the hop held back, character by character of the answer text.

    `stretches` cut A's text where an event of A or of B began: within one, every character reached
    A in one event and B in one event. `baseline` is the smallest delay, as in `TimingDiff`.
    """

    _delays = "stretches"
    stretches: tuple[TextDelay, ...]
    characters: int
    """The length of A's answer text."""
    lost: int
    """Characters at the end of A's text that never reached B (the hop cut the stream)."""
    baseline: float
    threshold: float
    window: float
    hop: str = "between A and B"
    alignment: str = "text"
    held: tuple[TextDelay, ...] = field(init=False, repr=False, compare=False)
    """Stretches held more than `threshold` over the baseline."""
    releases: tuple[HeldText, ...] = field(init=False, repr=False, compare=False)
    max_hold: TextDelay = field(init=False, repr=False, compare=False)
    """The stretch held longest (the first of them on a tie)."""

    def _release(self, group: list[TextDelay]) -> HeldText:  # the held stretches in text order: B's order
        return HeldText(t=group[0].t_b, span=group[-1].t_b - group[0].t_b, stretches=tuple(group))

    @property
    def held_characters(self) -> int:
        return sum(len(s.text) for s in self.held)

    @property
    def summary(self) -> str:
        lost = f"; the last {self.lost} characters of A's text never reached B" if self.lost else ""
        said = _summary(self, "character", self.held_characters, lambda r: r.characters)
        return f"{said}{lost}; aligned by text, as the hop re-framed the events"


Held = TypeVar("Held", EventDelay, TextDelay)


def _flushes(held: Sequence[Held], window: float) -> list[list[Held]]:
    """Held events or stretches, in the order they reached B, cut into releases: each within
    `window` of the one before."""
    groups: list[list[Held]] = []
    for d in held:
        if groups and d.t_b - groups[-1][-1].t_b <= window:
            groups[-1].append(d)
        else:
            groups.append([d])
    return groups


def _summary(d: TimingDiff | TextTimingDiff, unit: str, held: int, size: Callable[[Any], int]) -> str:
    """The verdict in one line: what the hop held, in `unit`s (`size` of a release counts them)."""
    base = f"{d.baseline * 1000:.1f} ms baseline"
    if not held:
        return (f"the hop {d.hop} held no {unit} more than {d.threshold * 1000:g} ms over its {base} "
                f"(max {d.max_hold.hold * 1000:.1f} ms)")  # fmt: skip
    if d.straggler:
        late = f"A's event #{d.held[0].a.index}"
        what = late if unit == "event" else f"{held} {unit}{'s' if held > 1 else ''} of {late}"
        return (f"the hop {d.hop} held nothing but one straggler: {what}, {d.max_hold.hold:.3f} s over its {base}, "
                f"alone (under {STRAGGLER}x {d.threshold * 1000:g} ms: jitter, not a buffer)")  # fmt: skip
    rels = d.releases
    largest = max(rels, key=size)
    bursts = "1 burst" if len(rels) == 1 else f"{len(rels)} bursts"
    return (f"the hop {d.hop} held {held} {unit}s up to {d.max_hold.hold:.3f} s over its {base}, "
            f"released in {bursts} (largest: {size(largest)} {unit}s at t={largest.t:.3f} s)")  # fmt: skip


def _untimed(analysis: Analysis) -> bool:
    return not analysis.capture.timed or any(e.t is None for e in analysis.events)


def diff_timing(
    a: Analysis, b: Analysis, *, threshold: float = HOLD_THRESHOLD, window: float = RELEASE_WINDOW
) -> TimingDiff | TextTimingDiff:
    """How long a hop held what passed it: A recorded before the hop, B after it.

    When the hop passed the events on (at least half of the text-carrying events of each side are
    found on the other, aligned on (type, data)), each matched event's delay is measured
    (`TimingDiff`). When it re-framed them, the answer texts are aligned instead and each stretch
    of text is timed (`TextTimingDiff`): each side's text (the first choice's) as its own dialect
    rebuilds it, event by event. The texts are compared without their whitespace: a hop that
    re-frames text changes whitespace (a newline between events, a space it trims, a trailing
    newline) but not the words. A B that is A cut short is timed as far as it goes.

    Raises SSEInspectError when a capture is untimed, or when neither way aligns: B's events are
    not A's and their answer texts differ (the message says how far they agree and where they part).
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
    if not _passed_on(pairs, a, b):
        return _text_timing(a, b, len(pairs), threshold, window)
    times = [(x.t or 0.0, y.t or 0.0) for x, y in pairs]  # never None: both captures are timed
    baseline = _in_order(min(tb - ta for ta, tb in times), threshold)
    return TimingDiff(
        matched=tuple(EventDelay(x, y, ta, tb, tb - ta, tb - ta - baseline) for (x, y), (ta, tb) in zip(pairs, times)),
        only_a=tuple(only_a),
        only_b=tuple(only_b),
        baseline=baseline,
        threshold=threshold,
        window=window,
    )


def _in_order(baseline: float, threshold: float) -> float:
    """`baseline`, unless it shows that B got the text before A: A and B given the wrong way round.

    Each capture's times count from its own request, so no offset between the recorders' clocks
    enters a delay; the client's request leaves before the hop's upstream request does, and every
    character reaches the client after it reached the upstream: recorded in the right order, no
    delay is negative. A baseline negative by at most `threshold` is let through (recorders may
    start their clocks a little apart: at the request line, at the connection) and cannot change
    the verdict: swapped, the holds read are the true longest hold minus each one, and a true hold
    over `threshold` puts the baseline below `-threshold`. Below it, the pair is refused.
    """
    if baseline < -threshold:
        raise SSEInspectError(
            f"B's text arrived before A's (by up to {-baseline:.3f} s, more than the {threshold * 1000:g} ms "
            "--hold-ms): did you swap UPSTREAM and CLIENT?",
            hint="give the capture recorded before the hop (upstream) as A and the one after it (the client's) as B",
        )
    return baseline


def _passed_on(pairs: Sequence[tuple[Event, Event]], a: Analysis, b: Analysis) -> bool:
    """Whether the hop passed the events on, so that they can be timed one by one: at least half of
    each side's text-carrying events are found on the other side (any event, when neither carries
    text). A `[DONE]` both sides end with is not enough: a hop that re-frames the text may pass it on."""
    if not pairs:
        return False
    text_a, text_b = set(a.answer.text_events), set(b.answer.text_events)
    if not text_a and not text_b:
        return True
    matched_a = sum(1 for x, _ in pairs if x.index in text_a)
    matched_b = sum(1 for _, y in pairs if y.index in text_b)
    return 2 * matched_a >= len(text_a) and 2 * matched_b >= len(text_b)


# -- timing by text --------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_NOT_SPACE = re.compile(r"\S")
"""The characters the texts are aligned on: whitespace is what a re-framing hop changes (see `diff_timing`).
Python's `\\s` is what `str.isspace` says is whitespace."""


class _Side:
    """One side's answer text as its events brought it: the pieces, and where each piece ends in the
    text with its whitespace taken out (`keys`: the characters the two sides are aligned on)."""

    def __init__(self, analysis: Analysis) -> None:
        self.events: list[Event] = []
        self.ends: list[int] = []  # ends[i]: non-whitespace characters up to the end of events[i]'s piece
        pieces: list[str] = []
        reader = analysis.grammar.reader()
        length = count = 0
        for event in analysis.events:
            reader.feed(event)
            state = reader.first_choice()
            if state is None or len(state.text) <= length:
                continue
            piece = state.text.since(length)
            length = len(state.text)
            pieces.append(piece)
            count += len(_SPACE.sub("", piece))
            self.events.append(event)
            self.ends.append(count)
        self.text = "".join(pieces)
        self.keys = _SPACE.sub("", self.text)
        self.dialect = analysis.dialect


def _text_timing(a: Analysis, b: Analysis, shared: int, threshold: float, window: float) -> TextTimingDiff:
    side_a, side_b = _Side(a), _Side(b)
    common = _agreed(side_a, side_b, shared, min(len(a.events), len(b.events)))
    text = side_a.text  # where[k]: where the k-th key is in A's text (the loops run in C)
    where = list(itertools.compress(range(len(text)), map(operator.not_, map(str.isspace, text))))
    cuts: list[tuple[Event, Event, int, int]] = []  # the stretches: A's event, B's event, first and last key
    i = j = k = 0
    while k < common:
        while side_a.ends[i] <= k:
            i += 1
        while side_b.ends[j] <= k:
            j += 1
        end = min(side_a.ends[i], side_b.ends[j], common)
        cuts.append((side_a.events[i], side_b.events[j], k, end))
        k = end
    baseline = _in_order(min((eb.t or 0.0) - (ea.t or 0.0) for ea, eb, _, _ in cuts), threshold)  # both timed
    stretches = []
    for ea, eb, first, end in cuts:
        start = where[first - 1] + 1 if first else 0  # with the whitespace before it
        t_a, t_b = ea.t or 0.0, eb.t or 0.0
        text = side_a.text[start : where[end - 1] + 1]
        stretches.append(TextDelay(ea, eb, start, text, t_a, t_b, t_b - t_a, t_b - t_a - baseline))
    return TextTimingDiff(
        stretches=tuple(stretches),
        characters=len(side_a.text),
        lost=0 if common == len(side_a.keys) else len(side_a.text) - (where[common - 1] + 1),
        baseline=baseline,
        threshold=threshold,
        window=window,
    )


QUOTE = 24
"""Characters quoted from each side where two answer texts part."""


def _agreed(a: _Side, b: _Side, shared: int, shortest: int) -> int:
    """How many characters (whitespace aside) of A's text reached B: all of them, or the start of
    them when B is A cut short. Raises SSEInspectError when B carries other text."""
    events = "A and B share no event" if not shared else f"A and B share only {shared} of {shortest} events"
    for name, side in (("A", a), ("B", b)):
        if not side.keys:
            raise SSEInspectError(
                f"{events}, and {name} carries no answer text read as {side.dialect}: nothing to align them on",
                hint=f"--dialect{'-b' if name == 'B' else ''} reads {name} in another dialect",
            )
    if a.keys.startswith(b.keys):
        return len(b.keys)
    same = _common_prefix(a.keys, b.keys)
    raise SSEInspectError(
        f"{events}, and their answer texts differ: they agree on the first {same} of {len(a.keys)} characters "
        f"of A (whitespace aside), then A has {_quote_at(a, same)} where B has {_quote_at(b, same)}",
        hint="a hop may re-frame the events and change whitespace; these differ in words, so they are "
        "not two recordings of the same answer",
    )


def _common_prefix(x: str, y: str) -> int:
    """The length of the longest common start of `x` and `y`, by halving (string compares run in C)."""
    lo, hi = 0, min(len(x), len(y))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if x[:mid] == y[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _quote_at(side: _Side, key: int) -> str:
    """A short quote of the side's text from its `key`-th non-whitespace character; "its end" past it."""
    found = next(itertools.islice(_NOT_SPACE.finditer(side.text), key, None), None)
    if found is None:
        return "its end"
    text = side.text[found.start() : found.start() + QUOTE]
    return repr(text + ("…" if found.start() + QUOTE < len(side.text) else ""))
