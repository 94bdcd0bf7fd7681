"""The checks' per-event lists hold at most a fixed number (the rest counted): a pass over a huge capture
holds no list that grows with it, and below the bound the findings are what they always were."""

from __future__ import annotations

import pytest

from sse_inspect import Request, Response, capture_from_body
from sse_inspect.checks import check_capture
from sse_inspect.checks import timing as timing_check

HEADERS = (("Content-Type", "text/event-stream"),)


def _silent_stream(silences: int, gap: float = 31.0) -> list[tuple[float, bytes]]:
    """An OpenAI-like stream with `silences` silences of `gap` seconds (over `long_silence_s`) between events."""
    chunks = [(0.1 + i * gap, b'data: {"choices":[{"index":0,"delta":{"content":"w"}}]}\n\n') for i in range(silences + 1)]
    chunks.append((chunks[-1][0] + 0.01, b"data: [DONE]\n\n"))
    return chunks


def _check(chunks: list[tuple[float, bytes]]):  # type: ignore[no-untyped-def]
    capture = capture_from_body(chunks, request=Request(url="https://api.openai.com/v1/chat/completions"),
                                response=Response(headers=HEADERS, t=0.05))  # fmt: skip
    return check_capture(capture, keep=False)


@pytest.mark.parametrize("kept", [3, 10])
def test_silences_past_the_bound_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch, kept: int) -> None:
    monkeypatch.setattr(timing_check, "KEPT", kept)
    report = _check(_silent_stream(kept + 4))
    silences = [f for f in report.findings if f.code == "long-silence"]
    listed = [f for f in silences if f.message.startswith("no byte for")]
    assert len(listed) == kept
    assert [f.message for f in silences if f.message.startswith("and ")] == [
        f"and 4 more silences longer than 30 s after t={listed[-1].t:.1f} s"
    ]


def test_below_the_bound_every_silence_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing_check, "KEPT", 10)
    report = _check(_silent_stream(10))
    silences = [f for f in report.findings if f.code == "long-silence"]
    assert len(silences) == 10 and all(f.message.startswith("no byte for") for f in silences)
