"""Synthetic timed captures that mirror real streams, healthy and broken.

Bodies are built per event (`*_events` return one `bytes` per event, blank line included), then
laid out in time: `paced` gives every event its own chunk at a steady pace, `capture` takes
explicit `(t, bytes)` chunks. Each named timeline says which real cause it mirrors.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from sse_inspect import Capture, Chunk, End, Request, Response, parse_rechunk_spec, rechunk

Headers = tuple[tuple[str, str], ...]

SSE_HEADERS: Headers = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
HEADERS_AT = 0.1
"""When the response headers arrive: servers send them before the first token is ready."""
TTFT = 0.3
EVERY = 0.03


# -- bodies, one bytes value per event ---------------------------------------------------


def sse(data: object, event: str | None = None, *, eol: str = "\n") -> bytes:
    """One event: `data` as compact JSON (a str is sent as is), optionally named."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}{eol}" if event else ""
    return f"{head}data: {text}{eol}{eol}".encode()


def tokens(n: int) -> list[str]:
    return [f" tok{i}" for i in range(n)]


def openai_events(n: int, *, done: bool = True) -> list[bytes]:
    """An OpenAI Chat stream: n content chunks, then `[DONE]`."""
    chunks = [
        sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": tok}}]})
        for tok in tokens(n)
    ]
    return chunks + [sse("[DONE]")] if done else chunks


def anthropic_start() -> list[bytes]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }
    return [
        sse({"type": "message_start", "message": message}, "message_start"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]


def anthropic_deltas(n: int) -> list[bytes]:
    return [
        sse(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": tok}},
            "content_block_delta",
        )
        for tok in tokens(n)
    ]


def anthropic_end(*, stop: bool = True) -> list[bytes]:
    end = [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
            "message_delta",
        ),
    ]
    return end + [sse({"type": "message_stop"}, "message_stop")] if stop else end


def anthropic_events(n: int, *, stop: bool = True) -> list[bytes]:
    """An Anthropic Messages stream with one text block of n deltas."""
    return anthropic_start() + anthropic_deltas(n) + anthropic_end(stop=stop)


def responses_start() -> list[bytes]:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-4.1", "output": []}
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    return [
        sse({"type": "response.created", "sequence_number": 0, "response": response}, "response.created"),
        sse({"type": "response.in_progress", "sequence_number": 1, "response": response}, "response.in_progress"),
        sse(
            {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": item},
            "response.output_item.added",
        ),
        sse(
            {
                "type": "response.content_part.added",
                "sequence_number": 3,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": ""},
            },
            "response.content_part.added",
        ),
    ]


def responses_deltas(n: int, *, first_seq: int = 4) -> list[bytes]:
    return [
        sse(
            {
                "type": "response.output_text.delta",
                "sequence_number": first_seq + i,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": tok,
            },
            "response.output_text.delta",
        )
        for i, tok in enumerate(tokens(n))
    ]


def responses_end(n: int, *, terminal: str | None = "response.completed", error: dict | None = None) -> list[bytes]:
    """The closing events after n deltas; `terminal=None` drops the terminal event."""
    seq = 4 + n
    text = "".join(tokens(n))
    end = [
        sse(
            {
                "type": "response.output_text.done",
                "sequence_number": seq,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "text": text,
            },
            "response.output_text.done",
        ),
        sse(
            {
                "type": "response.output_item.done",
                "sequence_number": seq + 1,
                "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "status": "completed"},
            },
            "response.output_item.done",
        ),
    ]
    if terminal is None:
        return end
    status = terminal.removeprefix("response.")
    response = {"id": "resp_1", "object": "response", "status": status, "model": "gpt-4.1", "error": error}
    return end + [sse({"type": terminal, "sequence_number": seq + 2, "response": response}, terminal)]


def responses_events(n: int, *, terminal: str | None = "response.completed", error: dict | None = None) -> list[bytes]:
    """An OpenAI Responses stream with n text deltas."""
    return responses_start() + responses_deltas(n) + responses_end(n, terminal=terminal, error=error)


def gemini_events(n: int, *, finish: bool = True) -> list[bytes]:
    """A Gemini `alt=sse` stream (CRLF line ends); the last event carries finishReason unless `finish=False`."""
    out = []
    for i, tok in enumerate(tokens(n)):
        candidate: dict[str, object] = {"content": {"parts": [{"text": tok}], "role": "model"}, "index": 0}
        if finish and i == n - 1:
            candidate["finishReason"] = "STOP"
        out.append(sse({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}, eol="\r\n"))
    return out


def cohere_events(n: int, *, end: bool = True) -> list[bytes]:
    """A Cohere v2 chat stream, ended by `message-end` unless `end=False`."""
    out = [
        sse({"id": "c1", "type": "message-start", "delta": {"message": {"role": "assistant"}}}, "message-start"),
        sse(
            {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
            "content-start",
        ),
    ]
    out += [
        sse({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": tok}}}}, "content-delta")
        for tok in tokens(n)
    ]
    out.append(sse({"type": "content-end", "index": 0}, "content-end"))
    if end:
        out.append(sse({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}, "message-end"))
    return out


# -- laying bodies out in time --------------------------------------------------------------


def capture(
    chunks: Iterable[tuple[float, bytes]],
    *,
    headers: Headers = SSE_HEADERS,
    status: int = 200,
    reason: str = "OK",
    headers_at: float = HEADERS_AT,
    end: str | None = "complete",
    end_error: str | None = None,
    url: str = OPENAI_URL,
) -> Capture:
    """A timed capture of `chunks`; `end=None` is a recording without an end line."""
    body = tuple(Chunk(t, data) for t, data in chunks)
    last = body[-1].t if body else headers_at
    return Capture(
        chunks=body,
        request=Request(
            method="POST", url=url, headers=(("Content-Type", "application/json"),), body='{"stream": true}'
        ),
        response=Response(status=status, reason=reason, headers=headers, t=headers_at),
        end=None if end is None else End(kind=end, t=(last or 0.0) + 0.001, error=end_error),
    )


def at(times: Sequence[float], events: Sequence[bytes]) -> list[tuple[float, bytes]]:
    """One chunk per event, event i at times[i]."""
    assert len(times) == len(events)
    return list(zip(times, events))


def jittered(n: int, *, start: float, lo: float, hi: float, rng: random.Random) -> list[float]:
    """n arrival times from `start`, each gap drawn uniformly from [lo, hi] seconds."""
    out, t = [], start
    for _ in range(n):
        out.append(round(t, 6))
        t += rng.uniform(lo, hi)
    return out


def paced(body: bytes | Sequence[bytes], *, ttft: float = TTFT, every: float = EVERY, **kw: Any) -> Capture:
    """A healthy stream: the body cut after each event, the first at `ttft`, then one every `every` s.

    Mirrors a server that flushes each event as the model produces it, with nothing in between.
    """
    raw = body if isinstance(body, bytes) else b"".join(body)
    pieces = rechunk([Chunk(0.0, raw)], parse_rechunk_spec("event"))
    return capture([(round(ttft + i * every, 6), c.data) for i, c in enumerate(pieces)], **kw)


# -- named timelines -----------------------------------------------------------------------


def steady(seed: int = 1, n: int = 300) -> Capture:
    """A healthy OpenAI stream: one chunk per token, 20-60 ms apart (a GPU's decode pace with network jitter)."""
    events = openai_events(n - 1)
    return capture(at(jittered(n, start=0.4, lo=0.02, hi=0.06, rng=random.Random(seed)), events))


def groq_fast(n: int = 1000) -> Capture:
    """A fast LPU/vLLM server: headers at once, 300 ms of prefill, then a token every ~2 ms, each flushed."""
    events = openai_events(n - 1)
    return capture(at(jittered(n, start=0.4, lo=0.0015, hi=0.0025, rng=random.Random(7)), events))


def burst_after_silence(held: int = 40, hold: float = 2.0, seed: int = 2) -> Capture:
    """A hop (proxy, WSGI middleware) holds `held` events for `hold` s, then releases them within 3 ms.

    Normal pace (20-60 ms) for 50 events, then the held events all arrive at once, then normal pace again.
    """
    rng = random.Random(seed)
    events = openai_events(149)
    before = jittered(50, start=0.4, lo=0.02, hi=0.06, rng=rng)
    release = round(before[-1] + hold, 6)
    burst = [round(release + 0.003 * i / (held - 1), 6) for i in range(held)]
    after = jittered(150 - 50 - held, start=burst[-1] + 0.04, lo=0.02, hi=0.06, rng=rng)
    return capture(at(before + burst + after, events))


def nginx_4k_buffer(n: int = 200, size: int = 4096, period: float = 0.6) -> Capture:
    """nginx with `proxy_buffering on`: ~150-byte events leave as exactly-4096-byte chunks every ~0.6 s.

    The buffer fills at the model's pace and is sent when full, cut wherever the 4 KiB boundary falls;
    the rest goes out when the upstream closes.
    """
    body = b"".join(openai_events(n - 1))
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    rng = random.Random(3)
    times = jittered(len(pieces), start=0.4 + period, lo=period - 0.05, hi=period + 0.05, rng=rng)
    return capture(zip(times, pieces), headers=SSE_HEADERS + (("Server", "nginx/1.24.0"),))


def close_delimited_through_nginx(n: int = 120, hold: float = 3.0) -> Capture:
    """An upstream answering HTTP/1.0-style (no chunking, close-delimited) behind nginx's defaults:
    nginx holds the headers with the body, and the whole answer arrives in one read `hold` s in."""
    return capture([(hold, b"".join(openai_events(n - 1)))], headers_at=hold)


def slow_model(n: int = 30) -> Capture:
    """A slow but healthy model (a big model on a busy GPU, a CPU llama.cpp): one token every 0.5 s."""
    return capture(at([0.6 + 0.5 * i for i in range(n)], openai_events(n - 1)))


def thinking_pause(seed: int = 4) -> Capture:
    """The model stops for 4 s mid-answer (deciding on a tool call), then goes on at its normal pace."""
    rng = random.Random(seed)
    before = jittered(60, start=0.4, lo=0.02, hi=0.06, rng=rng)
    after = jittered(60, start=before[-1] + 4.0, lo=0.02, hi=0.06, rng=rng)
    return capture(at(before + after, openai_events(119)))


def anthropic_paced(n: int = 80, seed: int = 5) -> Capture:
    """Anthropic's own batching: message_start + content_block_start + ping in one write after an 800 ms
    TTFT, deltas one by one, then content_block_stop + message_delta + message_stop in one write."""
    rng = random.Random(seed)
    times = jittered(n + 2, start=0.8, lo=0.02, hi=0.06, rng=rng)
    chunks = [(times[0], b"".join(anthropic_start()))]
    chunks += at(times[1:-1], anthropic_deltas(n))
    chunks.append((times[-1], b"".join(anthropic_end())))
    return capture(chunks, url="https://api.anthropic.com/v1/messages")


def responses_paced(n: int = 80, seed: int = 6) -> Capture:
    """OpenAI Responses: created, in_progress, output_item.added, content_part.added and the first delta
    in one write 1 s in, then one delta per write, then the closing events in one write."""
    rng = random.Random(seed)
    times = jittered(n + 1, start=1.0, lo=0.02, hi=0.06, rng=rng)
    deltas = responses_deltas(n)
    chunks = [(times[0], b"".join(responses_start() + deltas[:1]))]
    chunks += at(times[1:-1], deltas[1:])
    chunks.append((times[-1], b"".join(responses_end(n))))
    return capture(chunks, url="https://api.openai.com/v1/responses")


def silent_gap(gap: float = 45.0, keepalive_every: float | None = None) -> Capture:
    """A long tool run or a queue wait: 20 tokens, `gap` s without output, 20 tokens; with
    `keepalive_every`, the server writes `: keep-alive` comments through the gap (what keeps proxies open)."""
    events = openai_events(39)
    times = [0.4 + 0.03 * i for i in range(20)]
    resume = times[-1] + gap
    times += [resume + 0.03 * i for i in range(20)]
    chunks = at(times, events)
    if keepalive_every:
        k = 1
        while times[19] + k * keepalive_every < resume:
            chunks.append((round(times[19] + k * keepalive_every, 6), b": keep-alive\n\n"))
            k += 1
    return capture(sorted(chunks, key=lambda c: c[0]))


def gzipped(n: int = 40, *, corrupt_at: int | None = None) -> Capture:
    """A gzip middleware in front of the stream (Content-Encoding: gzip, a Z_SYNC_FLUSH per event).

    With `corrupt_at`, the compressed bytes of that event are garbled: a hop mangled the body.
    """
    z = zlib.compressobj(wbits=31)
    pieces = [z.compress(e) + z.flush(zlib.Z_SYNC_FLUSH) for e in openai_events(n - 1)]
    pieces[-1] += z.flush()
    if corrupt_at is not None:
        pieces[corrupt_at] = bytes(b ^ 0x5A for b in pieces[corrupt_at])
    return capture(
        at([TTFT + EVERY * i for i in range(n)], pieces), headers=SSE_HEADERS + (("Content-Encoding", "gzip"),)
    )


def gzip_bomb(decoded: int = 40 << 20) -> Capture:
    """A gzip body of a few tens of KB that decodes to `decoded` bytes (one line of zeros after the first events):
    a decompression bomb."""
    z = zlib.compressobj(9, wbits=31)
    events = openai_events(3)
    wire = [z.compress(b"".join(events)) + z.flush(zlib.Z_SYNC_FLUSH)]
    zeros = bytes(1 << 20)
    wire.append(b"".join(z.compress(zeros) for _ in range(decoded >> 20)) + z.flush())
    return capture(at([TTFT, TTFT + EVERY], wire), headers=SSE_HEADERS + (("Content-Encoding", "gzip"),))


def long_line(size: int, lines: int = 1) -> Capture:
    """The OpenAI stream with an event of one `data:` line of `size` bytes in the middle (or of `lines` such lines
    of `size // lines` bytes each), gzipped as `gzipped` does (a small capture: the line is one byte repeated)."""
    events = openai_events(6)
    events = events[:3] + [(b"data: " + b"a" * (size // lines - 6) + b"\n") * lines + b"\n"] + events[3:]
    z = zlib.compressobj(9, wbits=31)
    pieces = [z.compress(e) + z.flush(zlib.Z_SYNC_FLUSH) for e in events]
    pieces[-1] += z.flush()
    times = [TTFT + EVERY * i for i in range(len(pieces))]
    return capture(at(times, pieces), headers=SSE_HEADERS + (("Content-Encoding", "gzip"),))


def retransmit_stall(stall: float = 0.28, seed: int = 10) -> Capture:
    """One lost TCP segment on the way from the provider: the stream stops for a retransmission
    timeout (Linux's minimum RTO is 200 ms, plus a round trip), then what was sent meanwhile arrives at once."""
    times = jittered(300, start=0.4, lo=0.02, hi=0.06, rng=random.Random(seed))
    start = times[150]
    return capture(at([start + stall if start < t < start + stall else t for t in times], openai_events(299)))


def h2_image_frames(images: int = 3, frame: int = 16384) -> Capture:
    """Image generation over HTTP/2 (Responses `partial_image` events of ~60 KB of base64, 1.5 s apart):
    each event is sent as back-to-back DATA frames of the default maximum size, 16,384 bytes."""
    big = [
        sse(
            {
                "type": "response.image_generation_call.partial_image",
                "sequence_number": 4 + i,
                "partial_image_b64": base64.b64encode(random.Random(i).randbytes(45_000)).decode(),
            },
            "response.image_generation_call.partial_image",
        )
        for i in range(images)
    ]
    chunks, t = [(1.0, b"".join(responses_start()))], 1.0
    for event in big:
        t += 1.5
        chunks += [(round(t + 0.0001 * k, 6), event[i : i + frame]) for k, i in enumerate(range(0, len(event), frame))]
    chunks.append((t + 0.2, b"".join(responses_end(0))))
    return capture(chunks, url="https://api.openai.com/v1/responses")


def flush_timer(period: float = 0.6, pause: float = 0.0, seed: int = 11) -> Capture:
    """A hop that flushes on a timer (a compression or logging middleware writing out every `period` s)
    in front of a model that sends its role chunk at once and then, with `pause`, thinks before answering
    (a reasoning model on Chat Completions)."""
    rng = random.Random(seed)
    tokens_at = jittered(199, start=0.45 + pause, lo=0.02, hi=0.06, rng=rng)
    flushed = [round(period * (int(t / period) + 1), 6) for t in tokens_at]
    return capture(at([0.4] + flushed, openai_events(199)))


def one_write(body: bytes, ttft: float = 0.6) -> Capture:
    """A short answer finished in one decode step (max_tokens=1, a yes/no, a tool call the server does not
    stream): the server writes all its events back to back, `ttft` s in, with no hop holding anything."""
    return capture([(ttft, body)], url="https://llm.example/v1/stream")


# -- the application's own buffering, and the cuts of hops' time limits ---------------------------------------------


def answer_text(chars: int) -> str:
    """`chars` characters of answer, in words: what a model says in about chars / 4 tokens."""
    words = ("the", "stream", "arrives", "all", "at", "once", "because", "the", "app", "collects", "every", "token")
    text, i = "", 0
    while len(text) < chars:
        text += ("" if not text else " ") + words[i % len(words)]
        i += 1
    return text[:chars]


def openai_text_events(pieces: Sequence[str], *, done: bool = True) -> list[bytes]:
    """An OpenAI Chat stream whose content deltas are `pieces`, then `[DONE]`."""
    chunks = [
        sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]})
        for piece in pieces
    ]
    return chunks + [sse("[DONE]")] if done else chunks


def collected_answer(
    chars: int = 400, silence: float = 1.6, *, events: int = 1, plain: bool = False, headers_at: float = HEADERS_AT
) -> Capture:
    """The classic bug (the tutorial app of seed 003): the app reads the model's stream, collects the
    answer, and writes it after the loop, `silence` s after the request, as `events` events (one: the
    answer in a string; a few: collected in big pieces), then `[DONE]`, all in one write. With `plain`,
    the data is the text itself and no `[DONE]` follows (a generic stream)."""
    text = answer_text(chars)
    step = -(-chars // events)
    pieces = [text[i : i + step] for i in range(0, chars, step)]
    body = [f"data: {piece}\n\n".encode() for piece in pieces] if plain else openai_text_events(pieces)
    return capture([(silence, b"".join(body))], headers_at=headers_at, url="http://127.0.0.1:5000/chat/stream")


def thought_then_answered(text: str = "Yes.", think: float = 3.0) -> Capture:
    """A slow model that thinks `think` s, then answers in one token: a short answer, in one event, as
    any server sends it."""
    return capture([(think, b"".join(openai_text_events([text])))])


def slices(size: int, period: float = 0.6, *, events: int | None = None) -> Capture:
    """A hop with a fixed-size buffer of `size` bytes in front of a steady OpenAI stream (about 95 bytes an
    event): exactly-`size`-byte chunks every ~`period` s, cut wherever the boundary falls; enough events
    for five slices and a rest."""
    return nginx_4k_buffer(n=events or 5 * size // 90 + 7, size=size, period=period)


def cut_after_silence(
    silence: float, *, n: int = 10, marker: bool = False, kind: str = "server-disconnected"
) -> Capture:
    """n tokens 30 ms apart, then `silence` s without a byte, then the connection cut (`kind`); with
    `marker`, the end marker came before the silence (a complete answer, then a slow close)."""
    stream = paced(openai_events(n, done=marker), ttft=0.3, every=0.03)
    last = stream.chunks[-1].t or 0.0
    return dataclasses.replace(stream, end=End(kind=kind, t=round(last + silence, 6), error="peer closed connection"))


def cut_while_flowing(total: float, *, every: float = 0.25, kind: str = "server-disconnected") -> Capture:
    """A long answer, one token every `every` s from 0.4 s on, cut `total` s after the request while still
    flowing (a duration limit: gunicorn's sync worker killed at its `--timeout`); `kind="complete"` ends it
    there with its `[DONE]` instead."""
    n = int((total - 0.4) / every) + 1  # events, the last less than `every` before `total`
    events = openai_events(n - 1) if kind == "complete" else openai_events(n, done=False)
    times = [round(0.4 + every * i, 6) for i in range(len(events))]
    stream = capture(at(times, events))
    return dataclasses.replace(stream, end=End(kind=kind, t=total, error=None if kind == "complete" else "reset"))


def cut_before_first_byte(silence: float, *, headers_at: float = 0.02, server: str = "nginx") -> Capture:
    """A model (or a tool call) thinking behind `server`: the headers at once, then no body byte for `silence`
    s, and the connection cut: a hop's idle limit counting from the headers, before the first token."""
    stream = capture([], headers=(*SSE_HEADERS, ("Server", server)), headers_at=headers_at,
                     url="http://127.0.0.1:8080/chat/stream")  # fmt: skip
    return dataclasses.replace(stream, end=End(kind="server-disconnected", t=round(headers_at + silence, 6)))


def gemini_one_chunk_answer(chars: int = 91, think: float = 2.4, headers_at: float = 0.3) -> Capture:
    """A direct Gemini recording of a thinking model: its headers early, then after the think its whole short
    answer in one chunk carrying `finishReason` (Gemini sends text in batches: this is its own shape)."""
    event = {"candidates": [{"content": {"parts": [{"text": answer_text(chars)}], "role": "model"},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"thoughtsTokenCount": 400}, "modelVersion": "gemini-2.5-flash"}  # fmt: skip
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    return capture([(think, sse(event, eol="\r\n"))], headers_at=headers_at, url=url)


def few_big_events_spread(sizes: Sequence[int], *, silence: float = 3.0, every: float = 0.02,
                          plain: bool = False) -> Capture:  # fmt: skip
    """A held answer written in a few big writes after `silence`: each piece its own chunk `every` s apart
    (a hop or an event loop writing a held list in several writes), then `[DONE]` with the last one."""
    text = answer_text(sum(sizes))
    cuts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    pieces = [text[a:b] for a, b in zip(cuts, cuts[1:])]
    body = [f"data: {piece}\n\n".encode() for piece in pieces] + [b"data: [DONE]\n\n"]
    if not plain:
        body = openai_text_events(pieces)
    body[-2:] = [body[-2] + body[-1]]  # the end marker with the last piece
    return capture(at([round(silence + every * i, 6) for i in range(len(body))], body),
                   url="http://127.0.0.1:5000/chat/stream")  # fmt: skip


def lumps(per: int, period: float, n: int = 60, *, gap_ms: float = 0.0, server: str = "nginx") -> Capture:
    """Tokens delivered `per` events a read, one read every `period` s (a hop flushing what it held on a
    timer, or HAProxy waiting on a delayed ACK), the events of a read `gap_ms` apart (0: in one chunk)."""
    events = openai_events(n)
    chunks: list[tuple[float, bytes]] = []
    for i in range(0, len(events), per):
        start = round(0.3 + period * (i // per), 6)
        group = events[i : i + per]
        if gap_ms:
            chunks += [(round(start + j * gap_ms / 1000, 6), e) for j, e in enumerate(group)]
        else:
            chunks.append((start, b"".join(group)))
    return capture(chunks, headers=(*SSE_HEADERS, ("Server", server)), url="http://127.0.0.1:8080/chat/stream")
