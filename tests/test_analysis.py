"""analyze(): timing numbers and the rebuilt answer of a timed capture."""

from __future__ import annotations

import json

import pytest

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, parse_rechunk_spec

from .helpers import CORPUS


def openai_chunk(text: str) -> bytes:
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


def timed_capture() -> Capture:
    """A role chunk at 0.5 s, five tokens every 50 ms from 0.6 s, a 2 s stall, [DONE]."""
    role = b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
    chunks = [Chunk(0.5, b": keep-alive\n\n" + role)]
    chunks += [Chunk(0.6 + 0.05 * i, openai_chunk(w)) for i, w in enumerate(["Hel", "lo", ", ", "wor", "ld"])]
    chunks.append(Chunk(2.8, b"data: [DONE]\n\n"))
    return Capture(
        chunks=tuple(chunks),
        request=Request(method="POST", url="http://127.0.0.1:9/v1/chat/completions"),
        response=Response(status=200, headers=(("content-type", "text/event-stream"),), t=0.45),
        end=End(kind="complete", t=2.81),
    )


def test_timing() -> None:
    a = analyze(timed_capture())
    t = a.timing
    assert t.ttfb == 0.5
    assert t.first_event == 0.5
    assert t.first_token == pytest.approx(0.6)
    assert t.total == 2.81
    assert (t.chunks, t.events, t.comments, t.text_events) == (7, 7, 1, 5)
    assert t.max_gap == pytest.approx(2.0) and t.max_gap_at == 2.8
    assert t.tokens_per_s == pytest.approx(4 / 0.2)
    assert a.answer.text == "Hello, world"
    assert a.answer.complete is True


def test_rechunked_times_never_earlier() -> None:
    plain = analyze(timed_capture())
    for spec in ("bytes:3", "whole", "random:5"):
        cut = analyze(timed_capture(), rechunk=parse_rechunk_spec(spec))
        assert [e.data for e in cut.events] == [e.data for e in plain.events]
        assert all(c.t >= p.t for c, p in zip(cut.events, plain.events)), spec  # type: ignore[operator]


def test_untimed_raw_body_has_no_times() -> None:
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes()
    a = analyze(Capture(chunks=(Chunk(None, body),), timed=False, raw=True, end=End(kind="complete")))
    assert (a.timing.ttfb, a.timing.first_token, a.timing.total, a.timing.tokens_per_s) == (None, None, None, None)
    assert a.answer.text == "The capital of the UK is London."


def test_dialect_detected_from_url_when_events_say_nothing() -> None:
    capture = Capture(
        chunks=(Chunk(0.1, b'data: {"id": 1}\n\n'),),  # JSON of no known shape (plain text says text)
        request=Request(url="https://api.anthropic.com/v1/messages"),
        end=End(kind="complete", t=0.2),
    )
    assert analyze(capture).dialect == "anthropic"
