"""Findings about the bytes and lines: what the parser noticed that clients mishandle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ._context import Context
from ._model import Finding, Severity

__all__ = ["check_framing"]


def check_framing(ctx: Context) -> Iterator[Finding]:
    a = ctx.analysis
    by_kind: dict[str, list] = {}
    for n in a.notices:
        by_kind.setdefault(n.kind, []).append(n)

    for n in by_kind.get("unterminated-event", []):
        yield Finding(code="incomplete-event", severity=Severity.WARNING, offset=n.offset, t=n.t,
                      message=f"{len(ctx.body) - n.offset} bytes after the last blank line (from byte {n.offset}) "
                              "form no event: clients discard them",
                      evidence={"bytes": len(ctx.body) - n.offset})  # fmt: skip

    bad = by_kind.get("invalid-utf8", [])
    if bad:
        yield Finding(code="invalid-utf8", severity=Severity.WARNING, offset=bad[0].offset, t=bad[0].t,
                      message=f"{len(bad)} line(s) hold bytes that are not UTF-8, the first at byte {bad[0].offset}",
                      evidence={"lines": len(bad)})  # fmt: skip

    s = a.stats
    if s.cr or (s.lf and s.crlf):
        styles = ", ".join(f"{n} {name}" for name, n in (("LF", s.lf), ("CRLF", s.crlf), ("lone CR", s.cr)) if n)
        wanted = "lone CR" if s.cr else "CRLF"
        first = next((n.offset for n in by_kind.get("line-ending", []) if wanted in n.message), None)
        yield Finding(code="cr-line-endings", severity=Severity.WARNING, offset=first,
                      message=f"line ends: {styles}" + (" (lone CR)" if s.cr else " (mixed)"),
                      evidence={"lf": s.lf, "crlf": s.crlf, "cr": s.cr})  # fmt: skip

    if s.bom:
        yield Finding(code="bom", severity=Severity.WARNING, offset=0, message="the stream opens with a UTF-8 BOM")

    ignored = by_kind.get("ignored-field", []) + by_kind.get("invalid-id", []) + by_kind.get("invalid-retry", [])
    if ignored:
        names = Counter(n.message for n in ignored)
        listed = "; ".join(f"{m} ×{c}" if c > 1 else m for m, c in names.most_common(3))
        yield Finding(code="ignored-fields", severity=Severity.INFO, offset=ignored[0].offset, t=ignored[0].t,
                      message=f"{len(ignored)} field line(s) ignored: {listed}", evidence={"lines": len(ignored)})  # fmt: skip

    for n in by_kind.get("decode-error", []):
        yield Finding(code="decode-error", severity=Severity.ERROR, offset=n.offset, t=n.t, message=n.message)

    comments = a.comments
    if comments:
        times = [c.t for c in comments if c.t is not None] if ctx.timed else []
        every = f", about every {(times[-1] - times[0]) / (len(times) - 1):.1f} s" if len(times) > 2 else ""
        yield Finding(code="heartbeats", severity=Severity.INFO, t=comments[0].t, offset=comments[0].offset,
                      message=f"{len(comments)} comment line(s) such as {comments[0].text.strip()[:40]!r}{every}",
                      evidence={"comments": len(comments)})  # fmt: skip
