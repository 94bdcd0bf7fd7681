"""Findings about how the stream lived and ended: markers, sentinels, payloads, in-band errors."""

from __future__ import annotations

from collections.abc import Iterator

from ._context import Context
from ._model import Finding, Severity

__all__ = ["check_lifecycle"]

DONE = "[DONE]"
_NO_DONE = {"anthropic", "openai-responses", "cohere", "gemini"}
"""Dialects whose servers never send a `[DONE]` sentinel."""
_SENTINEL_AFTER_END_OK = {"gemini", "generic"}
"""Dialects whose "end marker" is no sentinel, so later events are no fault."""


def check_lifecycle(ctx: Context) -> Iterator[Finding]:
    a = ctx.analysis
    ans = a.answer
    events = a.events

    if ctx.capture.end is None and not ctx.capture.raw:
        last = ctx.capture.chunks[-1].t if ctx.capture.chunks else None
        yield Finding(code="recording-incomplete", severity=Severity.WARNING, t=last,
                      message=f"the capture has no end line: the recording stopped after {len(ctx.capture.chunks)} "
                              "chunks")  # fmt: skip

    if ans.end_marker is not None and not ans.end_marker_seen and ctx.http_ok:
        yield _missing_marker(ctx)

    markers = ans.end_marker_events
    if len(markers) > 1:
        yield Finding(code="duplicate-end-marker", severity=Severity.WARNING, event_index=markers[1],
                      t=events[markers[1]].t, offset=events[markers[1]].start,
                      message=f"the end marker came {len(markers)} times, at events {_list(markers)}")  # fmt: skip
    if markers and ans.dialect not in _SENTINEL_AFTER_END_OK:
        # a trailing [DONE] in a dialect without one is reported once, by done-not-json
        after = [e for e in events[markers[0] + 1 :] if e.index not in markers and e.data != DONE]
        if after:
            yield Finding(code="data-after-end", severity=Severity.WARNING, event_index=after[0].index,
                          t=after[0].t, offset=after[0].start,
                          message=f"{len(after)} event(s) after the end marker (event #{markers[0]}), "
                                  f"the first #{after[0].index} of type {after[0].type!r}")  # fmt: skip

    yield from _sentinels(ctx)

    if ans.invalid_json and ctx.http_ok:
        first = events[ans.invalid_json[0]]
        yield Finding(code="invalid-json", severity=Severity.ERROR, event_index=first.index, t=first.t,
                      offset=first.start,
                      message=f"{len(ans.invalid_json)} event(s) whose data is not JSON, the first #{first.index}: "
                              f"{_snippet(first.data)}",
                      evidence={"events": list(ans.invalid_json[:20])})  # fmt: skip

    for err in ans.errors:
        e = events[err.event_index] if err.event_index < len(events) else None
        code = f" ({err.code})" if err.code else ""
        yield Finding(code="error-event", severity=Severity.ERROR, event_index=err.event_index,
                      t=e.t if e else None, offset=e.start if e else None,
                      message=f"in-band error at event #{err.event_index}{code}: {_snippet(err.message, 160)}",
                      evidence={"code": err.code, "type": err.type})  # fmt: skip


def _missing_marker(ctx: Context) -> Finding:
    ans = ctx.analysis.answer
    end = ctx.capture.end
    unterminated = any(n.kind == "unterminated-event" for n in ctx.analysis.notices)
    if ans.errors:
        how = f"the stream ended after the in-band error at event #{ans.errors[-1].event_index}"
    elif end is None:
        how = "the recording stopped first"
    elif end.kind == "server-disconnected":
        how = "the connection was cut mid-stream" + (f" ({end.error})" if end.error else "")
    elif end.kind == "client-disconnected":
        how = "the client went away first"
    elif end.kind == "error":
        how = "the stream failed" + (f": {end.error}" if end.error else "")
    elif unterminated:
        how = "the server closed inside an event"
    else:
        how = "the server closed the stream cleanly without it (or a hop or recorder dropped it)"
    last = ctx.analysis.events[-1] if ctx.analysis.events else None
    return Finding(
        code="missing-end-marker",
        # After an in-band error the error is the diagnosis; the missing marker only follows from it.
        severity=Severity.WARNING if ans.errors else Severity.ERROR,
        t=end.t if end else (last.t if last else None),
        event_index=last.index if last else None,
        message=f"no {ans.end_marker} after {_events(len(ctx.analysis.events))}: {how}",
        evidence={"end": end.kind if end else None, "finish_reason": ans.finish_reason},
    )


def _sentinels(ctx: Context) -> Iterator[Finding]:
    dialect = ctx.analysis.answer.dialect
    body = ctx.body
    for e in ctx.analysis.events:
        data = e.data
        if data == DONE:
            raw = body[e.start : e.end + 1]
            if b"[DONE]\r" in raw and b"[DONE]\r\n" not in raw:
                yield Finding(code="done-not-json", severity=Severity.WARNING, event_index=e.index, t=e.t,
                              offset=e.start,
                              message=f"event #{e.index}: the [DONE] line ends in a lone CR: clients that split "
                                      "on LF see '[DONE]\\r' and miss the end")  # fmt: skip
            elif dialect in _NO_DONE:
                yield Finding(code="done-not-json", severity=Severity.WARNING, event_index=e.index, t=e.t,
                              offset=e.start,
                              message=f"event #{e.index} is a [DONE] sentinel, which {dialect} never sends "
                                      "(a gateway appended it?): clients of this API json.loads it and crash")  # fmt: skip
            else:
                yield Finding(code="done-not-json", severity=Severity.INFO, event_index=e.index, t=e.t,
                              offset=e.start,
                              message=f"event #{e.index} is the [DONE] sentinel, not JSON: a client that "
                                      "json.loads every data payload crashes here")  # fmt: skip
        elif len(data) < 16 and data.strip().upper() == DONE:
            yield Finding(code="done-not-json", severity=Severity.WARNING, event_index=e.index, t=e.t,
                          offset=e.start,
                          message=f"event #{e.index} has data {data!r}: a malformed sentinel that clients "
                                  "comparing with '[DONE]' miss (and then fail to parse)")  # fmt: skip


def _events(n: int) -> str:
    return f"{n} event" if n == 1 else f"{n} events"


def _list(indices: tuple[int, ...]) -> str:
    shown = ", ".join(f"#{i}" for i in indices[:5])
    return shown + (f" and {len(indices) - 5} more" if len(indices) > 5 else "")


def _snippet(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
