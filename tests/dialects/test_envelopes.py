"""Learnt envelopes: reading token events by their repeated envelope gives what reading each the long way gives.

Every dialect whose reader opts into the cache (`EnvelopeCache`) must have a stream strategy in
`STREAMS`; each is read with the cache on and off, on generated streams and on every capture of the
repository, and the flags of every event and the whole answer must be the same.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import EventStreamParser, analyze, load_capture
from sse_inspect._events import Event
from sse_inspect.dialects import DIALECTS, Answer, EventFlags, get_dialect
from sse_inspect.dialects._envelope import EnvelopeCache

ROOT = Path(__file__).resolve().parent.parent.parent

# Token texts a server sends, and the ones that could fool an envelope: quotes, backslashes, control
# characters, non-ASCII, surrogates, and the other string values of the envelope itself.
TEXTS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["a", "b", "m", "content", "text", "delta", '"', "\\", "\n", "\\n", '\\"', "\ue000\ue001", "é", "\ud800"]),
)


@st.composite
def openai_envelope(draw: st.DrawFn) -> tuple[dict[str, Any], bool, bool]:
    """A chat.completion.chunk without its text, and how it is written (compact, ASCII only)."""
    entry: dict[str, Any] = {"index": draw(st.sampled_from([0, 0, 1])), "delta": {}}
    if draw(st.booleans()):
        entry["finish_reason"] = draw(st.sampled_from([None, "stop", "length", 1]))
    if draw(st.integers(0, 5)) == 0:
        entry["delta"]["role"] = "assistant"
    if draw(st.integers(0, 5)) == 0:
        entry["delta"]["reasoning_content"] = "r"
    payload: dict[str, Any] = {"id": draw(st.sampled_from(["a", "b", ""])), "model": "m"}
    if draw(st.booleans()):
        payload["usage"] = draw(st.sampled_from([None, {"total_tokens": 1}, {"total_tokens": 2}]))
    if draw(st.integers(0, 5)) == 0:
        payload["provider"] = draw(st.sampled_from(["p", "q"]))
    payload["choices"] = [entry] if draw(st.integers(0, 4)) else [entry, {"index": 1, "delta": {"content": "z"}}]
    if draw(st.booleans()):  # padding: its value is drawn again for every event
        payload["obfuscation"] = ""
        if draw(st.booleans()):
            payload = {"obfuscation": "", **payload}  # before the text, where no envelope skips it
    return payload, draw(st.booleans()), draw(st.booleans())


def _with_text(envelope: tuple[dict[str, Any], bool, bool], content: str, padding: str = "") -> str:
    payload, compact, ascii_only = envelope
    payload = json.loads(json.dumps(payload))
    payload["choices"][0]["delta"]["content"] = content
    if "obfuscation" in payload:
        payload["obfuscation"] = padding
    return json.dumps(payload, separators=(",", ":") if compact else None, ensure_ascii=ascii_only)


@st.composite
def openai_stream(draw: st.DrawFn) -> list[str]:
    """Token events of a few envelopes in any order (so that an envelope comes back after others),
    with [DONE], junk, errors, duplicate keys, texts written the long way and texts no JSON writer
    would write."""
    envelopes = draw(st.lists(openai_envelope(), min_size=1, max_size=3))
    datas = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["token"] * 8 + ["escaped", "mangled", "duplicate", "done", "junk", "error"]))
        content, envelope = draw(TEXTS), draw(st.sampled_from(envelopes))
        data = _with_text(envelope, content, draw(TEXTS))
        if kind == "escaped":  # every character of the text as \uXXXX: valid, and like no other field
            data = _with_text(envelope, "\0")
            data = data.replace('"\\u0000"', '"' + "".join(f"\\u{ord(c):04x}" for c in content) + '"', 1)
        elif kind == "done":
            data = "[DONE]"
        elif kind == "junk":
            data = draw(st.sampled_from(["", "{", "null", "[]", '{"choices":"x"}', '{"choices":[1]}']))
        elif kind == "error":
            data = json.dumps({"error": {"message": content}})
        elif kind == "duplicate":  # the last of two keys wins
            data = f'{{"id":"a","choices":[{{"index":0,"delta":{{"content":"x","content":{json.dumps(content)}}}}}]}}'
        elif kind == "mangled":  # raw controls, bad escapes, a lone quote
            bad = draw(st.sampled_from(["\x01", "\\x", '"', "\\u12", "\t"]))
            data = data.replace('"content": ', '"content":').replace('"content":"', '"content":"' + bad, 1)
        datas.append(data)
    return datas


@st.composite
def anthropic_stream(draw: st.DrawFn) -> list[tuple[str, str]]:
    """Deltas of a few blocks in any order, with block starts, message deltas, errors, the end, and
    deltas under other event names (a proxy that drops `event:` lines)."""
    blocks = draw(st.lists(st.tuples(st.sampled_from([0, 1]), st.sampled_from(["text", "thinking", "partial_json"]),
                                      st.booleans(), st.booleans()), min_size=1, max_size=3))  # fmt: skip
    items = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["delta"] * 8 + ["start", "stop", "message_delta", "error", "renamed"]))
        piece = draw(TEXTS)
        index, key, compact, ascii_only = draw(st.sampled_from(blocks))
        if kind == "start":
            block = draw(st.sampled_from([{"type": "text", "text": ""}, {"type": "tool_use", "id": "t", "name": "f", "input": {}}]))
            items.append(("content_block_start", json.dumps({"type": "content_block_start", "index": index, "content_block": block})))
        elif kind == "stop":
            items.append(("message_stop", '{"type":"message_stop"}'))
        elif kind == "message_delta":
            items.append(("message_delta", json.dumps({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})))
        elif kind == "error":
            items.append(("error", json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": piece}})))
        else:
            delta_type = {"text": "text_delta", "thinking": "thinking_delta", "partial_json": "input_json_delta"}[key]
            payload = {"type": "content_block_delta", "index": index, "delta": {"type": delta_type, key: piece}}
            data = json.dumps(payload, separators=(",", ":") if compact else None, ensure_ascii=ascii_only)
            name = "content_block_delta" if kind == "delta" else draw(st.sampled_from(["message", "ping"]))
            items.append((name, data))
    return items


def bedrock_chunks(items: list[tuple[str, str]]) -> list[Event]:
    """Anthropic's events as Bedrock's InvokeModelWithResponseStream wraps them: each the base64 `bytes`
    of a `chunk` (the event's name dropped: the model's JSON alone is wrapped), with its padding."""
    wrapped = (json.dumps({"bytes": base64.b64encode(data.encode("utf-8", "surrogatepass")).decode(), "p": "abc"})
               for _, data in items)  # fmt: skip
    return [Event(index=n, type="chunk", data=data) for n, data in enumerate(wrapped)]


def read(dialect: str, events: list[Event], *, accelerate: bool = True) -> tuple[list[EventFlags], Answer]:
    """The flags of every event and the answer, with its `text_events` as the analysis keeps them."""
    reader = get_dialect(dialect).reader(accelerate=accelerate)
    flags = [reader.feed(event) for event in events]
    text_events = tuple(event.index for event, flag in zip(events, flags) if flag & EventFlags.TEXT)
    return flags, reader.answer(get_dialect(dialect), text_events)


def both_ways(dialect: str, events: list[Event]) -> None:
    assert read(dialect, events) == read(dialect, events, accelerate=False)


STREAMS: dict[str, st.SearchStrategy[list[Event]]] = {
    "openai-chat": openai_stream().map(lambda datas: [Event(index=n, data=data) for n, data in enumerate(datas)]),
    "anthropic": anthropic_stream().map(
        lambda items: [Event(index=n, type=kind, data=data) for n, (kind, data) in enumerate(items)]
    ),
    "bedrock-invoke": anthropic_stream().map(bedrock_chunks),
}
"""Generated streams of every dialect that uses the envelope cache."""
CACHED = sorted(name for name, cls in DIALECTS.items() if isinstance(cls().reader(), EnvelopeCache))


def test_every_dialect_that_uses_the_cache_has_generated_streams() -> None:
    assert CACHED == sorted(STREAMS)
    plain = [name for name in DIALECTS if name not in CACHED]
    assert plain and all(not isinstance(get_dialect(name).reader(), EnvelopeCache) for name in plain)


@pytest.mark.parametrize("dialect", CACHED)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_envelopes_change_nothing(dialect: str, data: st.DataObject) -> None:
    both_ways(dialect, data.draw(STREAMS[dialect]))


def _captured_streams() -> dict[str, list[Event]]:
    """The events of every capture of the repository: the recorded ones and the corpus bodies."""
    found = {}
    for path in sorted([*ROOT.glob("captures/*.jsonl"), *ROOT.glob("tests/data/*.jsonl")]):
        found[str(path.relative_to(ROOT))] = list(analyze(load_capture(path)).events)
    for path in sorted(ROOT.glob("tests/data/corpus/*.sse")):
        parser = EventStreamParser()
        items = parser.feed(path.read_bytes(), 0.0) + parser.close()
        found[str(path.relative_to(ROOT))] = [x for x in items if isinstance(x, Event)]
    return found


CAPTURED = _captured_streams()


def test_the_captures_are_all_there() -> None:
    assert len(CAPTURED) >= 35 and sum(map(len, CAPTURED.values())) > 500


@pytest.mark.parametrize("dialect", CACHED)
@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_envelopes_change_nothing_on_the_captures(dialect: str, name: str) -> None:
    """Each capture read by every caching dialect, its own or not (a stream of another grammar is junk to it)."""
    both_ways(dialect, CAPTURED[name])


def test_the_captures_are_read_by_envelope() -> None:
    """The corpus proves something: its token events are read by envelope (a cache that never hit
    would pass the tests above)."""
    hits = {}
    for dialect in CACHED:
        for events in CAPTURED.values():
            reader = get_dialect(dialect).reader()
            for event in events:
                reader.feed(event)
            hits[dialect] = hits.get(dialect, 0) + reader._hits
    assert all(hits[dialect] >= 10 for dialect in CACHED), hits


def test_without_acceleration_nothing_is_learnt() -> None:
    events = [Event(index=n, data=token(f"w{n}")) for n in range(100)]
    reader = get_dialect("openai-chat").reader(accelerate=False)
    assert all(reader.feed(event) == EventFlags.TEXT for event in events)
    assert (reader._tries, reader._hits, reader._envelope) == (0, 0, None)
    assert str(reader.choice(0).text) == "".join(f"w{n}" for n in range(100))


def token(content: str, **extra: Any) -> str:
    return json.dumps({"id": "a", "model": "m", "choices": [{"index": 0, "delta": {"content": content}}], **extra})


def test_a_stream_of_tokens_is_read_by_its_envelope() -> None:
    events = [Event(index=n, data=token(f"w{n} \"q\" \\ é\n")) for n in range(100)]
    reader = get_dialect("openai-chat").reader()
    assert all(reader.feed(event) for event in events)
    assert (reader._tries, reader._hits) == (1, 99)
    assert str(reader.choice(0).text) == "".join(f"w{n} \"q\" \\ é\n" for n in range(100))


def test_padding_that_changes_every_event_is_skipped() -> None:
    # as OpenAI sends them: `obfuscation`, random characters of random length, after the text
    events = [Event(index=n, data=token(f"w{n}", usage=None, obfuscation="x" * (n % 7))) for n in range(100)]
    both_ways("openai-chat", events)
    reader = get_dialect("openai-chat").reader()
    for event in events:
        reader.feed(event)
    assert (reader._tries, reader._hits) == (1, 99)


def test_an_envelope_that_never_repeats_stops_being_learnt() -> None:
    events = [Event(index=n, data=token("x", sequence_number=n)) for n in range(1000)]
    reader = get_dialect("openai-chat").reader()
    for event in events:
        reader.feed(event)
    assert reader._hits == 0 and reader._tries == 8


def test_a_text_written_unlike_the_field_that_reads_the_same_is_not_taken_for_it() -> None:
    # the text "a" written as \u0061: the only "a" in the data is the id, which must not become the text
    first = token("a").replace('"content": "a"', '"content": "\\u0061"')
    events = [Event(index=n, data=first.replace('"a"', f'"{x}"', 1)) for n, x in enumerate("abc")]
    both_ways("openai-chat", events)
    reader = get_dialect("openai-chat").reader()
    assert [reader.feed(event) for event in events] == [EventFlags.TEXT] * 3
    assert (reader._tries, reader._hits) == (3, 0) and str(reader.choice(0).text) == "aaa"


def chunk_with(content: str, **entry: Any) -> str:
    return json.dumps({"id": "a", "choices": [{"index": 0, "delta": {"content": content}, **entry}]})


def padded(content: str, *, finish: str, padding: str, first: bool = False) -> str:
    entry = f'{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":{finish}}}'
    if first:
        return f'{{"obfuscation":{padding},"choices":[{entry}]}}'
    return f'{{"choices":[{entry}],"obfuscation":{padding}}}'


TOOL = {"index": 1, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{"}}]}}


@pytest.mark.parametrize(
    "datas",
    [
        # the usage of an envelope, another usage between two of its tokens: the last one read wins
        [token("x", usage={"n": 1}), json.dumps({"choices": [], "usage": {"n": 2}}), token("y", usage={"n": 1})],
        # the finish reason likewise
        [chunk_with("x", finish_reason="stop"), chunk_with("", finish_reason="length"), chunk_with("y", finish_reason="stop")],
        # a second choice that carries something else than text
        [json.dumps({"choices": [{"index": 0, "delta": {"content": c}}, TOOL]}) for c in "xyz"],
        # padding before the text, and a string of the same value after it that matters
        [padded("x", finish='""', padding='""', first=True), padded("y", finish='"stop"', padding='""', first=True)],
        # what lies between the text and the padding changes, and keeps its length
        [padded("x", finish="null", padding='"q"'), padded("y", finish='"ab"', padding='"r"')],
    ],
    ids=["usage", "finish-reason", "second-choice", "padding-first", "between"],
)
def test_what_else_a_token_event_does_is_not_skipped(datas: list[str]) -> None:
    both_ways("openai-chat", [Event(index=n, data=data) for n, data in enumerate(datas)])


def test_nothing_is_read_by_envelope_after_the_end() -> None:
    events = [Event(index=n, data=token(str(n))) for n in range(3)]
    events += [Event(index=3, data="[DONE]"), Event(index=4, data=token("late"))]
    flags, answer = read("openai-chat", events)
    assert answer.text == "012" and answer.extra == {"ignored_after_end": 1} and flags[4] == 0


class _Misplaced(EnvelopeCache):
    """A dialect that misuses `learn`: it says its text sits under `id`, or offers events that also end
    the stream or report an error."""

    def is_end(self, event: Event, kind: str, payload: dict[str, Any]) -> bool:
        return payload.get("end") is True

    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        piece = payload.get("text")
        if self.add(self.choice().text, piece):
            assert isinstance(piece, str)
            self.learn(piece, self.choice().text, lambda p: (p, "id"))


def test_a_misplaced_text_is_never_learnt() -> None:
    # the id reads the same as the text: the probe finds that the payload's `text` is not under `id`
    events = [Event(index=n, data=json.dumps({"id": "x", "text": "x" if n < 2 else f"t{n}"})) for n in range(20)]
    reader = _Misplaced()
    for event in events:
        reader.feed(event)
    assert reader._envelope is None and reader._hits == 0
    assert str(reader.choice().text) == "xx" + "".join(f"t{n}" for n in range(2, 20))


class _TwoPieces(_Misplaced):
    def step(self, event: Event, kind: str, payload: dict[str, Any]) -> None:
        piece = payload.get("text")
        if self.add(self.choice().text, piece):
            assert isinstance(piece, str)
            self.learn(piece, self.choice().text, lambda p: (p, "text"))
        self.add(self.choice().reasoning, payload.get("thinking"))


@pytest.mark.parametrize("other", [{"end": True}, {"error": "boom"}, {"thinking": "t"}], ids=["end", "error", "two"])
def test_an_event_that_does_more_than_text_is_never_learnt(other: dict[str, Any]) -> None:
    events = [Event(index=n, data=json.dumps({"text": f"a{n}", **other})) for n in range(2)]
    reader = _TwoPieces()
    for event in events:
        reader.feed(event)
    assert reader._envelope is None and reader._hits == 0
    reader = _TwoPieces()
    reader.feed(Event(index=0, data=json.dumps({"text": "a"})))
    assert reader._envelope is not None  # the same event without it is learnt


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_dialects_reader_takes_accelerate(dialect: str) -> None:
    """`reader(accelerate=False)` works for every dialect: it reads everything the long way where there
    is a cache, and changes nothing where there is none."""
    assert get_dialect(dialect).reader(accelerate=False).accelerate is False
    assert get_dialect(dialect).reader().accelerate is True
    for events in CAPTURED.values():
        both_ways(dialect, events)


def read_in_blocks(dialect: str, events: list[Event], cuts: list[int]) -> tuple[list[EventFlags], Answer]:
    """`read`, the events given to `Reader.feed_many` in blocks cut at `cuts` (what the analysis pass does)."""
    reader = get_dialect(dialect).reader()
    flags: list[EventFlags] = []
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    for start, stop in zip(bounds, bounds[1:]):
        flags += reader.feed_many(events[start:stop])
    text_events = tuple(event.index for event, flag in zip(events, flags) if flag & EventFlags.TEXT)
    return flags, reader.answer(get_dialect(dialect), text_events)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_events_read_in_blocks_read_as_one_at_a_time(dialect: str, data: st.DataObject) -> None:
    """`feed_many` (the envelope's hits in one loop) gives each event's flags and the answer `feed` gives, for
    blocks cut anywhere: on every dialect's generated streams, and on the captures."""
    events = data.draw(st.sampled_from([*STREAMS.values()]).flatmap(lambda s: s)) if data.draw(st.booleans()) else (
        CAPTURED[data.draw(st.sampled_from(sorted(CAPTURED)))])  # fmt: skip
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=8))
    assert read_in_blocks(dialect, events, cuts) == read(dialect, events)


def test_a_block_read_by_envelope_hits_in_one_loop() -> None:
    """The property above proves something: a long block of tokens is read by envelope, with a miss in it."""
    events = [Event(index=n, data=token(f"w{n}")) for n in range(300)]
    events[150] = Event(index=150, data='{"choices":[{"index":0,"delta":{"content":"x","role":"assistant"}}]}')
    reader = get_dialect("openai-chat").reader()
    assert reader.feed_many(events) == [EventFlags.TEXT] * 300
    assert reader._hits >= 290
    flags, answer = read_in_blocks("openai-chat", events, [7, 150, 151, 299])
    assert (flags, answer) == read("openai-chat", events) and answer.text.startswith("w0w1w2")
