"""The core replay (`Playback`): chunk by chunk what the analysis finds, the answer growing as the
old replay showed it, work that grows with the stream and not its square; and the pacing rule."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, End, Event, Request, analyze, load_capture, parse_rechunk_spec
from sse_inspect._analysis import DETECT_EVENTS
from sse_inspect._parser import EventStreamParser
from sse_inspect._outcome import Cause, State
from sse_inspect._playback import Pacing, Playback, PlaybackStep
from sse_inspect.cli import cli
from sse_inspect.dialects import get_dialect
from sse_inspect.dialects._accumulate import Channel
from sse_inspect.dialects._base import Reader

from .helpers import CORPUS, DATA, ROOT

CAPTURES = sorted((ROOT / "captures").glob("*.jsonl")) + sorted(DATA.glob("*.jsonl"))
CHAT_URL = "https://api.openai.com/v1/chat/completions"


def corpus_capture(path: Path) -> Capture:
    return Capture(chunks=(Chunk(None, path.read_bytes()),), timed=False, end=End(kind="complete"))


def chat_capture(pieces: list[tuple[int, str]], cuts: int = 1, end: End | None = None) -> Capture:
    """An OpenAI Chat stream of (choice index, text) pieces, `cuts` events to a chunk, 10 ms apart."""
    events = [f"data: {json.dumps({'choices': [{'index': i, 'delta': {'content': text}}]})}\n\n".encode()
              for i, text in pieces] + [b"data: [DONE]\n\n"]  # fmt: skip
    chunks = tuple(Chunk(0.01 * (n + 1), b"".join(events[at : at + cuts]))
                   for n, at in enumerate(range(0, len(events), cuts)))  # fmt: skip
    return Capture(chunks=chunks, request=Request(method="POST", url=CHAT_URL),
                   end=End(kind="complete", t=0.01 * (len(chunks) + 1)) if end is None else end)  # fmt: skip


def plain(playback: Playback) -> str:
    """What `sse-inspect replay` writes to a pipe, but the last newline."""
    return "".join("\n" + step.text if step.restarted else step.text for step in playback)


def rebuilt_after_every_chunk(capture: Capture) -> str:
    """The replay as it was: the answer rebuilt from all the events so far after every chunk (quadratic)."""
    analysis = analyze(capture)
    rebuild = get_dialect(analysis.dialect).rebuild
    parser = EventStreamParser()
    events: list[Event] = []
    shown = out = ""
    for chunk in analysis.chunks:
        events += [x for x in parser.feed(chunk.data, chunk.t) if isinstance(x, Event)]
        text = rebuild(events).text
        out += text[len(shown) :] if text.startswith(shown) else "\n" + text
        shown = text
    return out


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_plain_replay_prints_the_analysed_answer(path: Path) -> None:
    """`sse-inspect replay` piped writes exactly the answer `analyze` rebuilds, for every bundled capture."""
    result = CliRunner().invoke(cli, ["replay", "--instant", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == analyze(load_capture(path)).answer.text + "\n"


@pytest.mark.parametrize("spec", [None, "bytes:7", "event", "random:3"])
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_steps_are_the_analysis_chunk_by_chunk(path: Path, spec: str | None) -> None:
    """The steps' chunks, events and comments are the analysis's, in order, with running counts; the
    last step is the end; the answer after it is the analysis's, to the last field."""
    capture = load_capture(path)
    rechunk = parse_rechunk_spec(spec) if spec else None
    analysis = analyze(capture, rechunk=rechunk)
    playback = Playback(capture, rechunk=rechunk)
    steps = list(playback)
    *chunks, last = steps
    assert [s.chunk for s in chunks] == list(analysis.chunks)
    assert last.chunk is None and last.outcome is not None and last.outcome.end == capture.end
    assert last.outcome == analysis.outcome  # decided as the analysis decides it
    assert all(s.outcome is None for s in chunks)
    items = [x for s in steps for x in s.items]
    assert [x for x in items if isinstance(x, Event)] == list(analysis.events)
    assert [x for x in items if type(x).__name__ == "Comment"] == list(analysis.comments)
    assert [s.events for s in steps] == [sum(isinstance(x, Event) for t in steps[: n + 1] for x in t.items)
                                         for n in range(len(steps))]  # fmt: skip
    assert last.bytes == sum(len(c.data) for c in analysis.chunks)
    assert playback.dialect.name == analysis.dialect
    assert playback.answer() == analysis.answer
    assert plain(Playback(capture, rechunk=rechunk)) == analysis.answer.text


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.sse")), ids=lambda p: p.name)
def test_every_corpus_stream_plays_to_its_answer(path: Path) -> None:
    capture = corpus_capture(path)
    playback = Playback(capture, rechunk=parse_rechunk_spec("random:5"))
    assert plain(playback) == analyze(capture).answer.text
    assert playback.answer() == analyze(capture).answer


@pytest.mark.parametrize("path", CAPTURES[:4], ids=lambda p: p.name)
def test_the_answer_so_far_is_the_answer_of_the_events_so_far(path: Path) -> None:
    capture = load_capture(path)
    playback = Playback(capture, rechunk=parse_rechunk_spec("bytes:9"))
    dialect = playback.dialect
    events: list[Event] = []
    for step in playback:
        events += [x for x in step.items if isinstance(x, Event)]
        assert playback.answer() == dialect.rebuild(events)


def test_a_lower_choice_restarts_the_text() -> None:
    """Choice 1 streams first, then choice 0 comes: the answer's text is choice 0's from then on. A
    text that goes on from what was shown is only the new part; another starts again (the plain replay
    writes it on a new line), as the replay that rebuilt everything after each chunk did."""
    capture = chat_capture([(1, "B"), (1, "b"), (0, "A"), (1, "!"), (0, "a")])
    steps = [(s.text, s.restarted) for s in Playback(capture)]
    assert steps == [("B", False), ("b", False), ("A", True), ("", False), ("a", False), ("", False), ("", False)]
    going_on = chat_capture([(2, "Hel"), (1, "Hello"), (0, "Hello, you")])
    assert [(s.text, s.restarted) for s in Playback(going_on)][:3] == [("Hel", False), ("lo", False), (", you", False)]
    assert plain(Playback(capture)) == rebuilt_after_every_chunk(capture) == "Bb\nAa"


_PIECES = st.lists(st.tuples(st.integers(0, 2), st.text(alphabet="ab\n é", min_size=0, max_size=4)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(pieces=_PIECES, cuts=st.integers(1, 4), spec=st.sampled_from([None, "bytes:1", "bytes:13", "random:1", "whole"]))
def test_plain_replay_writes_what_rebuilding_after_every_chunk_wrote(
    pieces: list[tuple[int, str]], cuts: int, spec: str | None
) -> None:
    """On any stream of up to three choices cut anywhere, the incremental replay writes what the old
    quadratic replay wrote (the answer rebuilt from all the events after every chunk)."""
    capture = chat_capture(pieces, cuts)
    rechunk = parse_rechunk_spec(spec) if spec else None
    recut = Capture(chunks=analyze(capture, rechunk=rechunk).chunks, request=capture.request, end=capture.end)
    assert plain(Playback(capture, rechunk=rechunk)) == rebuilt_after_every_chunk(recut)


def test_replay_work_grows_with_the_stream_not_its_square(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: every event is parsed and read once, the answer is never built while
    playing, and the text the steps hand out is gathered once (about its length), for a stream of
    n tokens and one of 8n alike."""
    work = {"feeds": 0, "parses": 0, "answers": 0, "chars": 0}
    reader_type = type(get_dialect("openai-chat").reader())
    feed, parse, answer = reader_type.feed, EventStreamParser.feed, Reader.answer
    since, text = Channel.since, Channel.__str__

    def counted(name: str, method, size=lambda result: 1):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            result = method(*args, **kwargs)
            work[name] += size(result)
            return result

        return call

    monkeypatch.setattr(reader_type, "feed", counted("feeds", feed))
    monkeypatch.setattr(EventStreamParser, "feed", counted("parses", parse))
    monkeypatch.setattr(Reader, "answer", counted("answers", answer))
    monkeypatch.setattr(Channel, "since", counted("chars", since, len))
    monkeypatch.setattr(Channel, "__str__", counted("chars", text, len))

    def played(n: int) -> dict[str, int]:
        work.update(dict.fromkeys(work, 0))
        capture = chat_capture([(0, f" w{i}") for i in range(n)])
        steps = list(Playback(capture, dialect="openai-chat"))
        assert steps[-1].events == n + 1 and len(steps) == n + 2
        return {**work, "text": sum(len(s.text) for s in steps)}

    small, big = played(500), played(4000)
    for counts, n in ((small, 500), (big, 4000)):
        assert counts["feeds"] == n + 1  # the events, [DONE] included: each read once
        assert counts["parses"] == n + 1  # the chunks: each parsed once
        assert counts["answers"] == 0
        assert counts["chars"] == counts["text"]  # each character of text gathered once
    assert big["text"] > 8 * small["text"]


def test_replay_time_grows_with_the_stream_not_its_square() -> None:
    """The same in CPU time, as a ratio: 8 times the stream takes about 8 times as long (quadratic work
    would take 64 times); the bound of 24 leaves room for a busy machine."""

    def cpu(n: int) -> float:
        capture = chat_capture([(0, f" w{i}") for i in range(n)])
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for _ in Playback(capture):
                pass
            best = min(best, time.process_time() - started)
        return best

    small, big = cpu(1000), cpu(8000)
    assert big < 24 * small, (small, big)


def test_the_dialect_is_told_from_the_first_events_only() -> None:
    """Telling the dialect reads ahead as far as the first DETECT_EVENTS events, not the whole capture."""
    read: list[Chunk] = []

    class Chunks(tuple):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            for chunk in super().__iter__():
                read.append(chunk)
                yield chunk

    capture = chat_capture([(0, "x")] * 200)
    playback = Playback(Capture(chunks=Chunks(capture.chunks), request=capture.request, end=capture.end))
    assert playback.dialect.name == "openai-chat"
    assert len(read) == DETECT_EVENTS
    assert len(list(playback)) == 202 and len(read) == 201


def test_the_last_step_is_the_end() -> None:
    """The last step comes when the stream ended (when its last chunk came, if the recording does not
    say) and says how it ended; an untimed capture's steps have no time."""
    cut = End(kind="server-disconnected", t=2.5, error="reset")
    capture = chat_capture([(0, "a")], end=cut)
    size = sum(len(c.data) for c in capture.chunks)
    last = list(Playback(capture))[-1]
    assert last == PlaybackStep(2.5, None, (), "", False, 2, size, analyze(capture).outcome)
    assert last.outcome is not None and last.outcome.end == cut
    # [DONE] came, then the connection was cut: complete, and the end line still says how it ended
    assert (last.outcome.state, last.outcome.cause) == (State.COMPLETE, Cause.END_MARKER)
    assert last.outcome.end_cause == Cause.SERVER_DISCONNECTED
    no_end_line = list(Playback(dataclasses.replace(chat_capture([(0, "a"), (0, "b")]), end=None)))[-1]
    assert no_end_line.outcome is not None and no_end_line.outcome.end is None and no_end_line.t == 0.03
    assert no_end_line.outcome.end_cause == Cause.RECORDING_STOPPED
    untimed = list(Playback(corpus_capture(CORPUS / "cohere-chat-v2-text.sse")))
    assert {s.t for s in untimed} == {None} and untimed[-1].outcome is not None
    assert untimed[-1].outcome.end == End(kind="complete") and untimed[-1].outcome.state == State.COMPLETE


def test_an_unknown_dialect_is_refused_before_anything_plays() -> None:
    with pytest.raises(Exception, match="unknown dialect"):
        Playback(chat_capture([(0, "a")]), dialect="nope")


def test_pacing_plays_recorded_time_over_speed() -> None:
    """Recorded time t plays at t / speed after the start: the wait is what is left of that, never
    negative; no speed, or no recorded time, plays at once."""
    assert Pacing(1.0).delay(0.5, 0.2) == pytest.approx(0.3)
    assert Pacing(10.0).delay(5.0, 0.1) == pytest.approx(0.4)
    assert Pacing(0.5).delay(1.0, 0.5) == pytest.approx(1.5)
    assert Pacing(2.0).delay(1.0, 3.0) == 0.0
    assert Pacing(None).delay(9.0, 0.0) == Pacing(0).delay(9.0, 0.0) == Pacing(1.0).delay(None, 0.0) == 0.0
    assert Pacing(4.0).position(0.5, 0.0) == pytest.approx(2.0)
    assert Pacing(None).position(0.5, 7.0) == 7.0
