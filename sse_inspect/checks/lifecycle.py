"""Findings about how the stream lived and ended: markers, sentinels, payloads, in-band errors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

from .._capture import Chunk
from .._events import Event
from .._outcome import ADVICE, Audience, State, say
from ..dialects import DONE, KEPT, PLAIN_PAYLOADS, EventFlags
from ._check import Check, Context, Need
from ._model import Finding, Severity, Thresholds
from .evidence import EndMissing, ErrorEvent, InvalidEvents

__all__ = ["LifecycleCheck"]

_NOT_TEXT = ~EventFlags.TEXT
"""Every flag but TEXT, as a module global: speed code for `event`, which runs for every event (on
Python 3.11, `~EventFlags.TEXT` written there costs 0.3 µs an event; `check` takes about 7 µs)."""
_SENTINELS_KEPT = 100
"""[DONE]-like events reported (each is a finding)."""
_TIMEOUT_CUTS = ("idle-timeout-cut", "total-timeout-cut")
"""The timing codes that explain a cut connection (the limit that cut it): `connection-cut` yields to them."""
_RECENT = 256
"""Body bytes held to tell how a [DONE] line ended (a longer [DONE] event is told as plain)."""


class LifecycleCheck(Check):
    """Keeps, of a pass, the few events that lifecycle findings quote: markers, sentinels,
    the first invalid payload, the error events, the first event after the end, the last one.
    How the stream ended is the analysis's `Outcome`; this check says what that means for a client."""

    family = "lifecycle"
    needs: ClassVar[Mapping[Need, str]] = {
        Need.HTTP_OK: "an error response: its body is the server's refusal, not an event stream",
    }

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.markers: list[Event] = []  # the first two
        self.after: list[Event] = []  # the first event after the first marker, not a marker nor [DONE]
        self.after_count = 0
        self.sentinels: list[tuple[Event, str]] = []  # (event, "done" | "lone-cr" | "malformed")
        self.invalid: Event | None = None
        self.errors: dict[int, Event] = {}
        self.last: Event | None = None
        self._unresolved: list[Event] = []  # [DONE] events whose line end is told once their chunk is in
        self._tail = b""  # the last `_RECENT` body bytes (or more: the last chunk), up to
        self._offset = 0  # this offset

    def event(self, event: Event, flags: EventFlags) -> None:
        self.last = event
        if flags & _NOT_TEXT or self.markers or len(event.data) < 16:  # most events are text and nothing more
            self._notable(event, flags)

    def _notable(self, event: Event, flags: EventFlags) -> None:
        if flags & EventFlags.END:
            if len(self.markers) < 2:
                self.markers.append(event)
        elif self.markers and event.data != DONE:
            self.after_count += 1
            if not self.after:
                self.after.append(event)
        if flags & EventFlags.INVALID_JSON and self.invalid is None:
            self.invalid = event
        if flags & EventFlags.ERROR and len(self.errors) < KEPT:
            self.errors[event.index] = event
        data = event.data
        if len(self.sentinels) + len(self._unresolved) >= _SENTINELS_KEPT:
            return
        if data == DONE:
            self._unresolved.append(event)
        elif len(data) < 16 and data.strip().upper() == DONE:
            self.sentinels.append((event, "malformed"))

    def event_block(self, events: list[tuple[Event, EventFlags]]) -> None:
        if not events:
            return
        notable, markers = self._notable, self.markers
        for event, flags in events:
            if flags & _NOT_TEXT or markers or len(event.data) < 16:  # most events are text and nothing more
                notable(event, flags)
        self.last = events[-1][0]

    def chunk_block(self, chunks: list[tuple[int, Chunk, int]]) -> None:
        """`chunk` for each; with no [DONE] event to place (most blocks), the tail and offset moved at once."""
        if self._unresolved:
            for index, chunk, text_events in chunks:
                self.chunk(index, chunk, text_events)
        elif chunks:
            datas = [chunk.data for _, chunk, _ in chunks]
            self._offset += sum(map(len, datas))
            self._tail = _tail_after(self._tail, datas)

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> None:
        data = chunk.data
        if self._unresolved:  # the [DONE] events this chunk completed (all of them, but in a block's list)
            tail = self._tail + data
            start = self._offset + len(data) - len(tail)
            later = []
            for event in self._unresolved:
                if event.chunk > index:
                    later.append(event)
                    continue
                raw = tail[event.start - start : event.end + 1 - start] if event.start >= start else b""
                lone_cr = b"[DONE]\r" in raw and b"[DONE]\r\n" not in raw
                self.sentinels.append((event, "lone-cr" if lone_cr else "done"))
            self._unresolved[:] = later
        self._offset += len(data)
        self._tail = data if len(data) >= _RECENT else (self._tail + data)[-_RECENT:]

    def findings(self, ctx: Context) -> Iterator[Finding]:
        a = ctx.analysis
        ans = a.answer
        timing = a.timing
        dialect = ctx.dialect

        if ctx.capture.end is None and not ctx.capture.raw:
            yield self.found("recording-incomplete", f"the capture has no end line: the recording stopped after "
                             f"{timing.chunks} chunks", t=timing.total)  # fmt: skip

        if a.outcome.end_marker_missing:
            yield self._missing_marker(ctx)
        elif a.outcome.state is State.CUT and a.outcome.connection_cut:
            # No marker was promised (an app's text stream without `[DONE]`, a generic one), but the
            # connection ended otherwise than cleanly: the client saw a cut, whatever the grammar.
            yield self._cut(ctx)

        if ans.end_markers > 1 and len(self.markers) > 1:
            second = self.markers[1]
            yield self.found("duplicate-end-marker", f"the end marker came {ans.end_markers} times, at events "
                             f"{_list(ans.end_marker_events, ans.end_markers)}", event_index=second.index,
                             t=second.t, offset=second.start)  # fmt: skip
        if self.markers and self.after and dialect.end_closes_stream:
            # a trailing [DONE] in a dialect without one is reported once, by done-not-json
            first = self.after[0]
            yield self.found("data-after-end", f"{self.after_count} event(s) after the end marker (event "
                             f"#{self.markers[0].index}), the first #{first.index} of type {first.type!r}",
                             event_index=first.index, t=first.t, offset=first.start)  # fmt: skip

        # a client of plain-text data compares each with [DONE] and parses none: the sentinel is no trap there
        plain = ans.extra.get("payloads") == PLAIN_PAYLOADS
        yield from self._sentinels(dialect.name, dialect.sends_done, plain)

        if self.invalid is not None:
            first = self.invalid
            yield self.found("invalid-json", f"{ans.invalid_payloads} event(s) whose data is not JSON, the first "
                             f"#{first.index}: {_snippet(first.data)}", event_index=first.index, t=first.t,
                             offset=first.start, evidence=InvalidEvents(ans.invalid_json[:20]))  # fmt: skip

        for err in ans.errors:
            e = self.errors.get(err.event_index)
            code = f" ({err.code})" if err.code else ""
            yield self.found("error-event", f"in-band error at event #{err.event_index}{code}: "
                             f"{_snippet(err.message, 160)}", event_index=err.event_index, t=e.t if e else None,
                             offset=e.start if e else None, evidence=ErrorEvent(err.code, err.type))  # fmt: skip

    def _missing_marker(self, ctx: Context) -> Finding:
        a = ctx.analysis
        ans = a.answer
        end = ctx.capture.end
        cause = a.outcome.cause
        how = say(cause, Audience.FINDING, end, event=ans.errors[-1].event_index if ans.errors else None)
        advice = ADVICE.get(cause)
        last = self.last
        return self.found(
            "missing-end-marker",
            f"no {ans.end_marker} after {_events(a.timing.events)}: {how}",
            # After an in-band error the error is the diagnosis; the missing marker only follows from it.
            severity=Severity.WARNING if ans.errors else None,
            t=end.t if end else (last.t if last else None),
            event_index=last.index if last else None,
            evidence=EndMissing(end.kind if end else None, ans.finish_reason),
            advice=advice,
        )

    def _cut(self, ctx: Context) -> Finding:
        """`connection-cut`: a stream whose grammar promised no end marker, ended by a cut connection."""
        a = ctx.analysis
        end = ctx.capture.end
        assert end is not None  # a connection cut is an end line's
        how = say(a.outcome.cause, Audience.FINDING, end)
        marker = ctx.dialect.end_marker
        may_omit = f"without {marker} (a {ctx.dialect.name} stream may omit it)"
        ended = may_omit if marker else "with no end marker to check"
        last = self.last
        return self.found(
            "connection-cut",
            f"the stream ended after {_events(a.timing.events)} {ended}: {how}",
            t=end.t,
            event_index=last.index if last else None,
            evidence=EndMissing(end.kind, a.answer.finish_reason),
            advice=ADVICE.get(a.outcome.cause),
        )

    def review(self, ctx: Context, findings: list[Finding]) -> list[Finding]:
        """One error per cut: a timeout cut names the limit that made it, so `connection-cut` (the
        same cut, with no cause) goes."""
        if any(f.code in _TIMEOUT_CUTS for f in findings):
            return [f for f in findings if f.code != "connection-cut"]
        return findings

    def _sentinels(self, dialect: str, sends_done: bool, plain: bool) -> Iterator[Finding]:
        for e, kind in self.sentinels:
            if kind == "done" and plain:
                continue
            if kind == "lone-cr":
                yield self.found("done-not-json", f"event #{e.index}: the [DONE] line ends in a lone CR: clients that "
                                 "split on LF see '[DONE]\\r' and miss the end", severity=Severity.WARNING,
                                 event_index=e.index, t=e.t, offset=e.start)  # fmt: skip
            elif kind == "malformed":
                yield self.found("done-not-json", f"event #{e.index} has data {e.data!r}: a malformed sentinel that "
                                 "clients comparing with '[DONE]' miss (and then fail to parse)",
                                 severity=Severity.WARNING, event_index=e.index, t=e.t, offset=e.start)  # fmt: skip
            elif not sends_done:
                yield self.found("done-not-json", f"event #{e.index} is a [DONE] sentinel, which {dialect} never sends "
                                 "(a gateway appended it?): clients of this API json.loads it and crash",
                                 severity=Severity.WARNING, event_index=e.index, t=e.t, offset=e.start)  # fmt: skip
            else:
                yield self.found("done-not-json", f"event #{e.index} is the [DONE] sentinel, not JSON: a client that "
                                 "json.loads every data payload crashes here", event_index=e.index, t=e.t,
                                 offset=e.start)  # fmt: skip


def _events(n: int) -> str:
    return f"{n} event" if n == 1 else f"{n} events"


def _list(indices: tuple[int, ...], count: int) -> str:
    shown = ", ".join(f"#{i}" for i in indices[:5])
    return shown + (f" and {count - 5} more" if count > 5 else "")


def _snippet(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _tail_after(tail: bytes, datas: list[bytes]) -> bytes:
    """What `LifecycleCheck.chunk` leaves as the tail after `datas`, from `tail`: the last chunk of
    `_RECENT` bytes or more and what came after it, or the bytes (of all) that came last, to `_RECENT`."""
    total = 0
    k = len(datas)
    while k:
        data = datas[k - 1]
        if len(data) >= _RECENT:  # the tail starts over with a big chunk
            return data if k == len(datas) else (data + b"".join(datas[k:]))[-_RECENT:]
        total += len(data)
        k -= 1
        if total >= _RECENT:
            return b"".join(datas[k:])[-_RECENT:]
    return (tail + b"".join(datas))[-_RECENT:]
