"""Findings about the capture file itself: a secret written into it."""

from __future__ import annotations

from collections.abc import Iterator

from .._secrets import find_secrets
from ._context import Context
from ._model import Finding, Severity

__all__ = ["check_hygiene"]


def check_hygiene(ctx: Context) -> Iterator[Finding]:
    leaks = find_secrets(ctx.capture, ctx.body)
    if not leaks:
        return
    shown = "; ".join(str(leak) for leak in leaks[:3]) + (f"; and {len(leaks) - 3} more" if len(leaks) > 3 else "")
    offset = next((leak.offset for leak in leaks if leak.where == "response body"), None)
    evidence = {"leaks": [{"where": k.where, "kind": k.kind, "offset": k.offset} for k in leaks]}
    message = f"{len(leaks)} secret(s) in the capture: {shown}"
    yield Finding(code="secret-in-capture", severity=Severity.ERROR, offset=offset, message=message, evidence=evidence)
