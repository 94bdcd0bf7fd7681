"""Findings about the bytes and lines: what the parser noticed that clients mishandle."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import ClassVar

from .._capture import Chunk
from .._events import Comment, Event, Notice
from .._loading import utf16_encoding
from ..dialects import EventFlags
from ._check import Check, Context, Need
from ._model import Finding, Thresholds
from .evidence import Bytes, Comments, Encoding, LineEnds, Lines

__all__ = ["FramingCheck"]

_IGNORED = ("ignored-field", "invalid-id", "invalid-retry")
_FRAME_ERRORS = ("bad-prelude-crc", "bad-length", "bad-message-crc", "bad-header", "duplicate-header", "message-too-long")
"""The AWS event stream framer's notices of a message that fails its checks (`_eventstream`)."""
_ARRAY_SYNTAX = ("not-an-array", "missing-comma", "empty-element", "trailing-data")
"""The JSON-array framer's notices of a malformed array (`_ndjson`)."""
_MESSAGES_KEPT = 1000
_NOTICES_KEPT = 1000
"""Notices of each kind in `every` kept (the rest are counted in `counts`): a pass holds no per-event list."""
"""Distinct ignored-field messages counted (a hostile stream could make each one new)."""
_DATA_LINE = (b"\ndata:", b"\rdata:")
"""A line that starts with the data field (after an LF or a CR: a CRLF line holds both)."""
_SPREAD_LINES = 3
"""Data lines in one event, arriving spread out, that make it several events glued together."""
# The two patterns below are for a body that was no event stream: through re's own cache, compiled then.
_HTML = rb"(?:<!--.*?-->\s*)*(?:<!doctype html|<html)"
"""An HTML page's start, after any comments (matched ignoring case, `.` matching newlines)."""
_FIELD = rb"(?:data|event|id|retry)(?::|\r|\n|$)|:"
"""A line an event stream may start with: a field of the spec, or a comment."""
_CARRY = len(_DATA_LINE[0]) - 1
"""Bytes of a chunk kept to find a data line that starts in it and ends in the next."""


class FramingCheck(Check):
    """Counts the notices and comments of a pass, keeping the first of each kind."""

    family = "framing"
    needs: ClassVar[Mapping[Need, str]] = {
        Need.HTTP_OK: "an error response: its body is the server's refusal, not an event stream",
    }

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self.first: dict[str, Notice] = {}
        self.counts: Counter[str] = Counter()
        self.every: dict[str, list[Notice]] = {
            "unterminated-event": [], "decode-error": [], "decode-bomb": [], "line-too-long": [], "event-too-long": [],
            "line-ending": [], "unterminated-array": [], "unterminated-frame": [],
        }
        self.ignored: Counter[str] = Counter()
        self.comments = 0
        self.first_comment: Comment | None = None
        self.timed_comments = 0
        self.comments_from = self.comments_to = 0.0  # the first and the last timed comment
        self.data_lines = 0  # lines with a data field, counted until an event carries text
        self._counting = True
        self._carry = b"\n"  # the end of the last chunk (the body starts a line)
        self.spread: Event | None = None  # the first event whose data lines came over seconds (blank lines stripped)
        self.spread_count = 0

    def event_block(self, events: list[tuple[Event, EventFlags]]) -> None:
        event = self.event
        for item, flags in events:
            if "\n" in item.data:  # (most events: one data line)
                event(item, flags)

    def event(self, event: Event, flags: EventFlags) -> None:
        """An event of several data lines whose first byte came long before its last: a server writes one
        event at once, so the lines were events whose blank lines a hop stripped."""
        data = event.data
        if "\n" not in data or data.count("\n") < _SPREAD_LINES - 1 or event.t is None or event.t_first is None:
            return  # (most events: one data line)
        if (event.t - event.t_first) * 1000 >= self.thresholds.burst_min_silence_ms:
            self.spread_count += 1
            if self.spread is None:
                self.spread = event

    def chunk(self, index: int, chunk: Chunk, text_events: int) -> bool:
        if not self._counting:
            return True
        if text_events:  # events dispatch: the count is no longer wanted
            self._counting = False
            return True
        window = self._carry + chunk.data
        self.data_lines += window.count(_DATA_LINE[0]) + window.count(_DATA_LINE[1])
        self._carry = window[-_CARRY:]
        return False

    def notice(self, notice: Notice) -> None:
        kind = notice.kind
        self.counts[kind] += 1
        self.first.setdefault(kind, notice)
        if kind in self.every:
            every = self.every[kind]
            if len(every) < _NOTICES_KEPT:
                every.append(notice)
        elif kind in _IGNORED and (notice.message in self.ignored or len(self.ignored) < _MESSAGES_KEPT):
            self.ignored[notice.message] += 1

    def comment(self, comment: Comment) -> None:
        self.comments += 1
        if self.first_comment is None:
            self.first_comment = comment
        if comment.t is not None:
            if not self.timed_comments:
                self.comments_from = comment.t
            self.timed_comments += 1
            self.comments_to = comment.t

    def findings(self, ctx: Context) -> Iterator[Finding]:
        a = ctx.analysis
        body_size = a.timing.decoded_bytes
        not_events = self._not_events(ctx)
        if not_events is not None:
            yield not_events
        # a body that holds no event is that finding's diagnosis, not one event cut short
        for n in self.every["unterminated-event"] if not_events is None else ():
            yield self.found("incomplete-event", f"{body_size - n.offset} bytes after the last blank line (from byte "
                             f"{n.offset}) form no event: clients discard them", offset=n.offset, t=n.t,
                             evidence=Bytes(body_size - n.offset))  # fmt: skip
        yield from self._other_framings(a.framing, body_size)

        bad = self.first.get("invalid-utf8")
        if bad is not None:
            yield self.found("invalid-utf8", f"{self.counts['invalid-utf8']} line(s) hold bytes that are not UTF-8, "
                             f"the first at byte {bad.offset}", offset=bad.offset, t=bad.t,
                             evidence=Lines(self.counts["invalid-utf8"]))  # fmt: skip

        s = a.stats
        if a.framing == "sse" and (s.cr or (s.lf and s.crlf)):  # (NDJSON clients split at either line end alike)
            styles = ", ".join(f"{n} {name}" for name, n in (("LF", s.lf), ("CRLF", s.crlf), ("lone CR", s.cr)) if n)
            wanted = "lone CR" if s.cr else "CRLF"
            first = next((n.offset for n in self.every["line-ending"] if wanted in n.message), None)
            yield self.found("cr-line-endings", f"line ends: {styles}" + (" (lone CR)" if s.cr else " (mixed)"),
                             offset=first, evidence=LineEnds(s.lf, s.crlf, s.cr))  # fmt: skip

        if s.bom:
            yield self.found("bom", "the stream opens with a UTF-8 BOM", offset=0)

        wide = utf16_encoding(ctx.head)
        if wide is not None:
            yield self.found("utf-16", f"the body looks like {wide}, not UTF-8: clients read no events from it",
                             offset=0, evidence=Encoding(wide.split()[0]))  # fmt: skip

        ignored = sum(self.counts[k] for k in _IGNORED)
        if ignored:
            first_ignored = next(self.first[k] for k in _IGNORED if k in self.first)
            listed = "; ".join(f"{m} ×{c}" if c > 1 else m for m, c in self.ignored.most_common(3))
            yield self.found("ignored-fields", f"{ignored} field line(s) ignored: {listed}",
                             offset=first_ignored.offset, t=first_ignored.t, evidence=Lines(ignored))  # fmt: skip

        for code in ("decode-error", "decode-bomb"):
            for n in self.every[code]:
                yield self.found(code, n.message, offset=n.offset, t=n.t)
            unlisted = self.counts[code] - len(self.every[code])
            if unlisted > 0:
                last = self.every[code][-1]
                yield self.found(code, f"and {unlisted} more like it", offset=last.offset, t=last.t)

        for code, what in (("line-too-long", "lines"), ("event-too-long", "events")):
            too_long = self.every[code]
            if too_long:
                first_dropped, count = too_long[0], self.counts[code]
                more = f" ({count} {what} in all)" if count > 1 else ""
                yield self.found(code, first_dropped.message + more, offset=first_dropped.offset, t=first_dropped.t,
                                 evidence=Lines(count) if what == "lines" else None)  # fmt: skip

        first_comment = self.first_comment
        if first_comment is not None:
            every = ""
            if ctx.timed and self.timed_comments > 2:
                span = self.comments_to - self.comments_from
                every = f", about every {span / (self.timed_comments - 1):.1f} s"
            yield self.found("heartbeats", f"{self.comments} comment line(s) such as "
                             f"{first_comment.text.strip()[:40]!r}{every}", t=first_comment.t,
                             offset=first_comment.offset, evidence=Comments(self.comments))  # fmt: skip

    def _other_framings(self, framing: str, body_size: int) -> Iterator[Finding]:
        """What the NDJSON, JSON-array and AWS event stream framers noticed that their clients mishandle."""
        # (An NDJSON body's last line without its LF is no finding: clients' `iter_lines` still yield it, and the
        # dialect judges whether it is whole JSON; a JSON document sent as one line often has none.)
        for kind, what in (("unterminated-array", "its closing `]`"), ("unterminated-frame", "the rest of its last message")):
            for n in self.every[kind]:
                yield self.found("incomplete-event", f"the {framing} body ended without {what}: {n.message}",
                                 offset=n.offset, t=n.t, evidence=Bytes(body_size - n.offset),
                                 advice="the stream was cut before its end: find the hop that closed the connection "
                                        "(a timeout, a crashed worker)")  # fmt: skip
        bad = [self.first[k] for k in _FRAME_ERRORS if k in self.first]
        if bad:
            first = min(bad, key=lambda n: n.offset)
            count = sum(self.counts[k] for k in _FRAME_ERRORS)
            yield self.found("frame-error", f"{count} message(s) failed their checks, the first at byte {first.offset}: "
                             f"{first.message}", offset=first.offset, t=first.t)  # fmt: skip
        blank = self.first.get("blank-line")
        if blank is not None:
            yield self.found("ndjson-blank-line", f"blank lines between the items, the first at byte {blank.offset}: "
                             f"{blank.message}", offset=blank.offset, t=blank.t)  # fmt: skip
        broken = self.first.get("splitlines-break")
        if broken is not None:
            yield self.found("ndjson-line-break", broken.message, offset=broken.offset, t=broken.t)
        syntax = [self.first[k] for k in _ARRAY_SYNTAX if k in self.first]
        if syntax:
            first = min(syntax, key=lambda n: n.offset)
            count = sum(self.counts[k] for k in _ARRAY_SYNTAX)
            yield self.found("array-syntax", f"{count} place(s), the first at byte {first.offset}: {first.message}",
                             offset=first.offset, t=first.t)  # fmt: skip

    def _glued(self, event: Event) -> Finding:
        assert event.t is not None and event.t_first is not None
        lines = event.data.count("\n") + 1
        more = f" ({self.spread_count} such events)" if self.spread_count > 1 else ""
        return self.found("not-an-event-stream", f"event #{event.index}'s {lines} data lines came over "
                          f"{event.t - event.t_first:.3f} s with no blank line between them (a hop stripped them?): "
                          f"a client gets them as one event at t={event.t:.3f} s{more}", offset=event.start,
                          t=event.t, event_index=event.index, evidence=Lines(lines))  # fmt: skip

    def _not_events(self, ctx: Context) -> Finding | None:
        """`not-an-event-stream`: a body served as an event stream from which no event dispatches,
        because it is an HTML page or a JSON document, or because its data lines have no blank line
        between them. A body of comments alone, or an empty one, is not judged: it may be a stream
        that had not started yet."""
        if self.spread is not None:
            return self._glued(self.spread)
        if ctx.analysis.timing.events or ctx.analysis.framing != "sse":
            return None
        response = ctx.capture.response
        if response is not None and (response.header("content-type") or "").split(";")[0].strip().lower() != (
            "text/event-stream"
        ):
            return None  # wrong-content-type says it: the server did not claim an event stream
        start = ctx.head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        quoted = repr(start[:60].decode("utf-8", "replace"))
        if re.match(_HTML, start, re.IGNORECASE | re.DOTALL):
            what = "an HTML page"
        elif start[:1] in (b"{", b"["):
            what = "a JSON document"
        elif self.data_lines > 1:
            return self.found("not-an-event-stream", f"{self.data_lines} data lines and no blank line between them "
                              f"(a hop stripped them?): no event dispatches from {quoted}", offset=0,
                              evidence=Lines(self.data_lines))  # fmt: skip
        elif response is not None and start and not self.comments and not re.match(_FIELD, start) and (
            utf16_encoding(ctx.head) is None
        ):  # served as an event stream (a raw body claimed nothing), and no UTF-16 (utf-16 says it)
            what = "plain text with no field line"
        else:
            return None
        return self.found("not-an-event-stream", f"the body is {what} served as text/event-stream, no event: "
                          f"{quoted}", offset=0)  # fmt: skip
