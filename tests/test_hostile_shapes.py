"""Hostile shapes of captured JSON (issue 17, items 6 and 14): tool-call arguments nested deeper than
Python's parser goes, and one huge tool-call argument, a huge HAR, a re-cut into one-byte pieces.

The deep-nesting captures are tests/data/hostile/deep-*.jsonl (written by make_deep.py there); the
big inputs are generated in tmp_path and measured in processes of their own (tests/huge.py)."""

from __future__ import annotations

import base64
import itertools
import json
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import load_capture
from sse_inspect._analysis import analyze
from sse_inspect._capture import Capture, Chunk, Request, Response, chunk_line, end_line, header_line
from sse_inspect._rechunk import RechunkSpec, rechunk, replay_chunks
from sse_inspect.cli import cli
from sse_inspect.dialects import _answer
from sse_inspect.dialects._accumulate import Channel
from sse_inspect import ToolCall

from .helpers import ROOT
from .huge import measured, write_openai_capture

HOSTILE = ROOT / "tests" / "data" / "hostile"
DEEP = {path.stem.removeprefix("deep-"): path for path in sorted(HOSTILE.glob("deep-*.jsonl"))}
TOO_DEEP = "[" * 20_000 + "1" + "]" * 20_000
"""Valid JSON, 40 KB, that `json.loads` cannot nest on any supported Python (about 1,000 levels on 3.11,
a few thousand on 3.13)."""


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback in the command is the failure
    return result.exit_code, result.stdout, result.stderr


def test_the_deep_captures_are_there_and_too_deep_for_json_loads() -> None:
    assert set(DEEP) == {"anthropic", "cohere", "gemini", "openai-chat", "openai-responses"}
    with pytest.raises(RecursionError):
        json.loads(TOO_DEEP)
    for dialect, path in DEEP.items():
        assert path.stat().st_size < 200_000
        analysis = analyze(load_capture(path))
        assert analysis.dialect == dialect
        (call,) = analysis.answer.tool_calls
        assert call.name == "deep" and max(call.arguments.count("["), call.arguments.count("{")) > 400


def test_arguments_too_long_to_parse_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ARGUMENTS_CHECKED characters the arguments are not parsed (a 200 MB argument would take
    gigabytes as Python objects): valid JSON one character too long is "not told", with its size."""
    monkeypatch.setattr(_answer, "ARGUMENTS_CHECKED", 1000)
    at_limit = "[" + "1," * 498 + "1]"
    assert len(at_limit) == 999 and ToolCall(name="f", arguments=at_limit + " ").arguments_valid_json is True
    over = ToolCall(name="f", arguments=at_limit + "  ")
    assert over.arguments_valid_json is None
    assert over.arguments_problem == "arguments too long to check as JSON (1,001 characters)"


def test_arguments_too_deep_to_parse_are_not_called_invalid() -> None:
    assert ToolCall(name="f", arguments=TOO_DEEP).arguments_valid_json is None
    assert ToolCall(name="f", arguments=TOO_DEEP).arguments_problem == "arguments nest too deeply to check as JSON"
    assert ToolCall(name="f", arguments=TOO_DEEP[:-1]).arguments_valid_json in (None, False)
    assert ToolCall(name="f", arguments='{"a":').arguments_problem == "arguments are not valid JSON"
    assert ToolCall(name="f", arguments='{"a":' * 50 + "1" + "}" * 50).arguments_problem is None
    assert ToolCall(name="f", arguments="").arguments_valid_json is False


@pytest.mark.parametrize("dialect", sorted(DEEP))
@pytest.mark.parametrize(
    "command",
    [["show"], ["text"], ["text", "--json"], ["events"], ["events", "--json"], ["check"], ["check", "--json"],
     ["report"], ["diff"], ["diff", "--by", "events"], ["diff", "--json"], ["export", "--to", "har"],
     ["replay", "--instant"]],
    ids=" ".join,
)  # fmt: skip
def test_every_command_reads_a_deep_capture(dialect: str, command: list[str], tmp_path: Path) -> None:
    path = DEEP[dialect]
    args: list[str | Path] = [*command, path]
    if command[0] == "diff":
        args.append(path)
    if command[0] in ("report", "export"):
        args += ["-o", tmp_path / "out"]
    code, out, err = run(*args)
    assert code == 0, err
    assert "Traceback" not in out + err and "RecursionError" not in out + err
    if command == ["text", "--json"]:
        (call,) = json.loads(out)["tool_calls"]
        assert call["arguments_valid_json"] is (True if dialect == "gemini" else None)
    if command == ["show"] and dialect != "gemini":
        assert "arguments nest too deeply to check as JSON" in out and "not valid JSON" not in out
    if command[0] == "report":
        assert "arguments nest too deeply to check as JSON" in (tmp_path / "out").read_text() or dialect == "gemini"


def _nested(depth: int) -> str:
    return "{" + '"a":{' * depth + '"b":1' + "}" * (depth + 1)


@pytest.mark.parametrize(
    ("url", "event"),
    [("https://api.openai.com/v1/chat/completions", 'data: {"error":%s}\n\n'),
     ("https://g.example/v1beta/models/g:streamGenerateContent?alt=sse",
      'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]},"index":0}]}\n\n'),
     ("https://api.anthropic.com/v1/messages",
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
      '"content_block":{"type":"tool_use","id":"t","name":"f","input":%s}}\n\n')],
    ids=["openai-chat error", "gemini args", "anthropic input"],
)  # fmt: skip
def test_a_payload_that_parses_at_the_edge_of_the_limit_is_not_written_back_into_a_crash(url: str, event: str) -> None:
    """A dialect writes parts of a parsed payload back as JSON (an error object, Gemini's args,
    Anthropic's first input): at every depth around the recursion limit, parsed or not, no RecursionError."""
    for depth in range(850, 1000):
        body = (event % _nested(depth)).encode()
        analysis = analyze(Capture(chunks=(Chunk(None, body),), request=Request(method="POST", url=url), timed=False))
        for call in analysis.answer.tool_calls:
            assert call.arguments_problem is None or call.arguments == ""


def test_a_deep_json_document_given_as_a_capture_is_refused_in_one_line(tmp_path: Path) -> None:
    for name, doc in (("deep.json", "[" * 20_000 + "]" * 20_000),
                      ("deep.har", '{"log":{"entries":' + "[" * 20_000 + "]" * 20_000 + "}}")):
        (tmp_path / name).write_text(doc)
        for command in (["check"], ["import", "-o", str(tmp_path / "imported")]):
            code, _, err = run(*command, tmp_path / name)
            assert code == 2 and "a JSON document" in err and "Traceback" not in err, err


# -- one huge tool-call argument ---------------------------------------------------------------------

_CHUNK_HEAD = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'


def write_big_argument_capture(path: Path, size: int, piece: int = 65536) -> int:
    """An OpenAI Chat capture whose one tool call has arguments of about `size` characters (a JSON
    object holding one long string), streamed `piece` characters an event. Returns their length."""
    def event(call: str, finish: str = "null") -> bytes:
        return f'data: {_CHUNK_HEAD}{call}}}]}},"finish_reason":{finish}}}]}}\n\n'.encode()

    word = "abcdefgh" * (piece // 8)
    request = Request(method="POST", url="https://api.openai.com/v1/chat/completions")
    response = Response(headers=(("Content-Type", "text/event-stream"),), t=0.1)
    length = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(header_line(request=request, response=response, recorded_at=None, recorder="tests"))
        f.write(chunk_line(0.2, event('"id":"call_1","type":"function","function":{"name":"big","arguments":"{\\"x\\":\\""}')))
        length += 6
        for n in range(size // len(word)):
            f.write(chunk_line(0.3 + n / 1000, event(f'"function":{{"arguments":"{word}"}}')))
            length += len(word)
        f.write(chunk_line(1e4, event('"function":{"arguments":"\\"}"}', '"tool_calls"')))
        f.write(chunk_line(1e4, b"data: [DONE]\n\n") + end_line("complete", 1e4))
    return length + 2


def test_the_big_argument_capture_reads_back(tmp_path: Path) -> None:
    """The generator of the memory test below, checked small and in process."""
    path = tmp_path / "big.jsonl"
    size = write_big_argument_capture(path, 300_000, piece=1024)
    (call,) = analyze(load_capture(path)).answer.tool_calls
    assert call.name == "big" and len(call.arguments) == size and call.arguments_valid_json is True
    assert json.loads(call.arguments)["x"] == "abcdefgh" * (size // 8 - 1)


def test_a_channel_joins_its_text_once_and_lets_the_pieces_go() -> None:
    """Joining a 20 MB argument costs one copy of it (the joined pieces were copied twice more
    before: 60 MB at the peak), and asking again costs nothing."""
    channel = Channel()
    piece = "abcdefgh" * 512
    for _ in range(20_000_000 // len(piece)):
        channel.append(piece)
    tracemalloc.start()
    try:
        whole = str(channel)
        again = str(channel)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert whole is again and whole == piece * (20_000_000 // len(piece))
    assert peak < 1.3 * len(whole), peak
    assert channel.since(len(whole) - 3) == "fgh" and len(channel) == len(whole)


@pytest.mark.e2e
def test_one_huge_tool_call_argument_is_held_about_twice(tmp_path: Path) -> None:
    """100 MB of arguments: the analysis holds the pieces and the joined text, once each, and `show`
    and `check` add no lasting copy of their own (2.1x measured; 2.4x before)."""
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_big_argument_capture(small, 1_000_000)
    size = write_big_argument_capture(big, 100_000_000)
    for command in (["show"], ["check"]):
        base = measured(*command, small)[3]
        code, _, err, peak = measured(*command, big)
        print(f"{command[0]}: {size / 1e6:.0f} MB of arguments, peak RSS {peak / 1e6:.0f} MB (small: {base / 1e6:.0f} MB)")
        assert code == 0, err
        assert peak < base + 2.5 * size, (command, peak, base)


# -- a re-cut into one-byte pieces ------------------------------------------------------------------


def test_a_replay_re_cut_is_made_as_it_is_sent() -> None:
    """`replay_chunks` (serve, the httpx and requests transports) cuts when iterated: the same chunks
    each time, a 100 KB body cut into bytes never holds a Chunk per byte, and the body is joined once."""
    body = b"data: " + b"x" * 100_000 + b"\n\n"
    chunks = [Chunk(0.5, body[:1000]), Chunk(1.5, body[1000:])]
    tracemalloc.start()
    try:
        cut = replay_chunks(chunks, "bytes:1")
        count = sum(1 for _ in cut)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == len(body) and peak < 2_000_000, peak  # a list of Chunks: about 100 bytes each, 10 MB
    tracemalloc.start()
    try:
        again = sum(len(c.data) for c in cut)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert again == len(body) and peak < 50_000, peak  # every client of a server shares one joined body
    assert list(cut) == rechunk(chunks, RechunkSpec("bytes", 1))
    assert [c.t for c in itertools.islice(cut, 999, 1001)] == [0.5, 1.5]
    assert list(replay_chunks(chunks, None)) == chunks


@pytest.mark.e2e
def test_a_one_byte_re_cut_does_not_grow_with_its_pieces(tmp_path: Path) -> None:
    """`text --rechunk bytes:1` holds about what `--rechunk whole` does (it held a Chunk per byte:
    +39 MB for this 500 KB capture before)."""
    path = tmp_path / "small.jsonl"
    write_openai_capture(path, 500_000)
    peaks = {}
    for spec in ("whole", "bytes:1"):
        code, _, err, peaks[spec] = measured("text", "--rechunk", spec, path)
        assert code == 0, err
    print(f"text --rechunk on 500 KB: peak RSS {peaks}")
    assert peaks["bytes:1"] < peaks["whole"] + 15_000_000, peaks


# -- a huge HAR ---------------------------------------------------------------------------------------

_EVENT = 'data: {"choices":[{"index":0,"delta":{"content":" word"}}]}\n\n'


def write_har(path: Path, body: str | bytes) -> None:
    """A HAR of one OpenAI Chat stream whose body is `body` (base64 when bytes)."""
    content: dict[str, object] = {"size": len(body), "mimeType": "text/event-stream"}
    if isinstance(body, bytes):
        content.update(text=base64.b64encode(body).decode(), encoding="base64")
    else:
        content.update(size=len(body.encode()), text=body)
    entry = {
        "startedDateTime": "2026-01-01T00:00:00Z", "time": 1, "timings": {"send": 0, "wait": 1, "receive": 1},
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions", "httpVersion": "HTTP/1.1",
                    "headers": []},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Content-Type", "value": "text/event-stream"}], "content": content},
    }  # fmt: skip
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))


@pytest.mark.parametrize("binary", [False, True], ids=["text", "base64"])
def test_a_big_har_body_is_read_in_pieces_with_the_same_bytes_and_events(binary: bool, tmp_path: Path) -> None:
    body = "data: café\n\n" + _EVENT * 60_000 + "data: [DONE]\n\n"  # 3.6 MB, one character of two bytes
    raw = body.encode()
    write_har(tmp_path / "big.har", raw if binary else body)
    (tmp_path / "big.sse").write_bytes(raw)
    capture = load_capture(tmp_path / "big.har")
    assert b"".join(c.data for c in capture.chunks) == raw
    assert len(capture.chunks) == 4 and all(len(c.data) <= 1_100_000 for c in capture.chunks)
    assert all(c.t is None for c in capture.chunks)
    har, sse = analyze(capture), analyze(load_capture(tmp_path / "big.sse"))
    assert har.timing.events == sse.timing.events == 60_002 and har.answer.text == sse.answer.text


def test_base64_read_in_pieces_is_as_strict_as_whole(tmp_path: Path) -> None:
    good = base64.b64encode(b"data: x\n\n" * 180_000).decode()  # 2.2 MB of base64: two pieces
    for text, valid in ((good, True), (good[:-1], False), (good[:100] + "==" + good[102:], False),
                        (good[:2_000_000] + "\n" + good[2_000_000:], False)):  # fmt: skip
        entry = {"request": {"url": "http://x/"}, "response": {"status": 200, "headers": [],
                 "content": {"text": text, "encoding": "base64"}}}  # fmt: skip
        (tmp_path / "b.har").write_text(json.dumps({"log": {"entries": [entry]}}))
        code, _, err = run("text", tmp_path / "b.har")
        assert (code == 0) is valid and ("not valid base64" in err) is not valid, err


@pytest.mark.e2e
def test_a_huge_har_is_checked_in_a_few_times_its_size(tmp_path: Path) -> None:
    """`check` on a 40 MB HAR: the file, its JSON text and the dict while it is parsed, then the body
    in 1 MiB chunks: 3.3x its size (7.0x before: the parser was given the body as one chunk)."""
    path = tmp_path / "big.har"
    write_har(path, _EVENT * (40_000_000 // len(_EVENT)) + "data: [DONE]\n\n")
    size = path.stat().st_size
    code, _, err, peak = measured("check", path)
    print(f"check on a {size / 1e6:.0f} MB HAR: peak RSS {peak / 1e6:.0f} MB")
    assert code == 0, err
    assert peak < 40_000_000 + 3.5 * size, peak
