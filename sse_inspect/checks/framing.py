"""Findings about the bytes and lines: what the parser noticed that clients mishandle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .._analysis import Observer
from .._loading import utf16_encoding
from .._events import Comment, Notice
from ._context import Context
from ._model import Finding, Severity

__all__ = ["FramingProbe"]

_IGNORED = ("ignored-field", "invalid-id", "invalid-retry")
_MESSAGES_KEPT = 1000
"""Distinct ignored-field messages counted (a hostile stream could make each one new)."""


class FramingProbe(Observer):
    """Counts the notices and comments of a pass, keeping the first of each kind."""

    def __init__(self) -> None:
        self.first: dict[str, Notice] = {}
        self.counts: Counter[str] = Counter()
        self.every: dict[str, list[Notice]] = {"unterminated-event": [], "decode-error": [], "line-ending": []}
        self.ignored: Counter[str] = Counter()
        self.comments = 0
        self.first_comment: Comment | None = None
        self.timed_comments = 0
        self.comments_from = self.comments_to = 0.0  # the first and the last timed comment

    def notice(self, notice: Notice) -> None:
        kind = notice.kind
        self.counts[kind] += 1
        self.first.setdefault(kind, notice)
        if kind in self.every:
            self.every[kind].append(notice)
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
        for n in self.every["unterminated-event"]:
            yield Finding(code="incomplete-event", severity=Severity.WARNING, offset=n.offset, t=n.t,
                          message=f"{body_size - n.offset} bytes after the last blank line (from byte {n.offset}) "
                                  "form no event: clients discard them",
                          evidence={"bytes": body_size - n.offset})  # fmt: skip

        bad = self.first.get("invalid-utf8")
        if bad is not None:
            yield Finding(code="invalid-utf8", severity=Severity.WARNING, offset=bad.offset, t=bad.t,
                          message=f"{self.counts['invalid-utf8']} line(s) hold bytes that are not UTF-8, the first at "
                                  f"byte {bad.offset}",
                          evidence={"lines": self.counts["invalid-utf8"]})  # fmt: skip

        s = a.stats
        if s.cr or (s.lf and s.crlf):
            styles = ", ".join(f"{n} {name}" for name, n in (("LF", s.lf), ("CRLF", s.crlf), ("lone CR", s.cr)) if n)
            wanted = "lone CR" if s.cr else "CRLF"
            first = next((n.offset for n in self.every["line-ending"] if wanted in n.message), None)
            yield Finding(code="cr-line-endings", severity=Severity.WARNING, offset=first,
                          message=f"line ends: {styles}" + (" (lone CR)" if s.cr else " (mixed)"),
                          evidence={"lf": s.lf, "crlf": s.crlf, "cr": s.cr})  # fmt: skip

        if s.bom:
            yield Finding(code="bom", severity=Severity.WARNING, offset=0, message="the stream opens with a UTF-8 BOM")

        wide = utf16_encoding(ctx.head)
        if wide is not None:
            yield Finding(code="utf-16", severity=Severity.ERROR, offset=0,
                          message=f"the body looks like {wide}, not UTF-8: clients read no events from it",
                          evidence={"encoding": wide.split()[0]})  # fmt: skip

        ignored = sum(self.counts[k] for k in _IGNORED)
        if ignored:
            first_ignored = next(self.first[k] for k in _IGNORED if k in self.first)
            listed = "; ".join(f"{m} ×{c}" if c > 1 else m for m, c in self.ignored.most_common(3))
            yield Finding(code="ignored-fields", severity=Severity.INFO, offset=first_ignored.offset,
                          t=first_ignored.t, message=f"{ignored} field line(s) ignored: {listed}",
                          evidence={"lines": ignored})  # fmt: skip

        for n in self.every["decode-error"]:
            yield Finding(code="decode-error", severity=Severity.ERROR, offset=n.offset, t=n.t, message=n.message)

        first_comment = self.first_comment
        if first_comment is not None:
            every = ""
            if ctx.timed and self.timed_comments > 2:
                span = self.comments_to - self.comments_from
                every = f", about every {span / (self.timed_comments - 1):.1f} s"
            yield Finding(code="heartbeats", severity=Severity.INFO, t=first_comment.t, offset=first_comment.offset,
                          message=f"{self.comments} comment line(s) such as {first_comment.text.strip()[:40]!r}{every}",
                          evidence={"comments": self.comments})  # fmt: skip
