"""The command line, driven through click's runner; stdout and stderr checked apart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from sse_inspect import (
    Capture,
    Chunk,
    End,
    Event,
    Request,
    Response,
    analyze,
    dump_capture,
    load_capture,
    parse_events,  # fmt: skip
)
from sse_inspect.checks import Severity, check_capture
from sse_inspect.cli import cli

from .helpers import CORPUS, INTERRUPTED, ROOT, ctrl_c, running

CAPTURES = ROOT / "captures"


def run(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_show_a_bundled_capture() -> None:
    code, out, err = run("show", str(CAPTURES / "openai-chat-text.jsonl"))
    assert code == 0, err
    assert "POST https://api.openai.com/v1/chat/completions" in out
    assert "200 OK" in out
    assert "openai-chat" in out
    assert "[DONE] seen" in out
    assert "The capital of the UK is London." in out


def test_show_says_when_the_end_marker_is_missing(tmp_path: Path) -> None:
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes().replace(b"data: [DONE]\n\n", b"")
    path = tmp_path / "cut.sse"
    path.write_bytes(body)
    code, out, _ = run("show", str(path))
    assert code == 0
    assert "MISSING" in out


def test_events_json_lines() -> None:
    code, out, _ = run("events", "--json", str(CORPUS / "anthropic-messages-text-basic.sse"))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["type"] == "message_start"
    assert rows[-1]["type"] == "message_stop"
    assert {"type", "data", "id", "retry", "t", "offset"} <= set(rows[0])
    assert rows[0]["id"] == "" and rows[0]["retry"] is None
    offsets = [r["offset"] for r in rows]
    assert offsets == sorted(offsets)


def test_events_json_with_comments() -> None:
    code, out, _ = run("events", "--json", "--comments", str(CORPUS / "openrouter-chat-midstream-error.sse"))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert sum("comment" in r for r in rows) == 17
    assert rows[0] == {"comment": " OPENROUTER PROCESSING", "t": None, "offset": 0, "chunk": 0}


def test_events_table() -> None:
    code, out, _ = run("events", str(CORPUS / "cohere-chat-v2-text.sse"))
    assert code == 0
    assert "message-start" in out and "content-delta" in out


@pytest.mark.parametrize("spec", ["whole", "bytes:1", "bytes:7", "event", "line", "random:3"])
def test_rechunk_changes_nothing(spec: str) -> None:
    path = str(CORPUS / "gemini-generatecontent-split-tokens-crlf.sse")
    _, plain, _ = run("events", "--json", path)
    _, cut, _ = run("events", "--json", "--rechunk", spec, path)
    strip = lambda out: [{k: v for k, v in json.loads(x).items() if k != "chunk"} for x in out.splitlines()]  # noqa: E731
    assert strip(cut) == strip(plain)
    _, text_plain, _ = run("text", "--json", path)
    _, text_cut, _ = run("text", "--json", "--rechunk", spec, path)
    keep = ("text", "tool_calls", "finish_reason", "complete", "dialect")
    assert {k: json.loads(text_cut)[k] for k in keep} == {k: json.loads(text_plain)[k] for k in keep}


def test_text_plain_and_json() -> None:
    path = str(CORPUS / "anthropic-messages-text-then-tooluse.sse")
    code, out, _ = run("text", path)
    assert code == 0
    assert out.startswith("I'll check the current weather in Paris for you.")
    assert '[tool call] get_weather {"location": "Paris"}' in out
    doc = json.loads(run("text", "--json", path)[1])
    assert doc["dialect"] == "anthropic"
    assert doc["complete"] is True
    assert doc["finish_reason"] == "tool_use"
    assert doc["tool_calls"][0]["name"] == "get_weather"
    assert doc["tool_calls"][0]["arguments_valid_json"] is True
    assert {"text", "reasoning", "tool_calls", "finish_reason", "complete"} <= set(doc)


def test_text_per_choice() -> None:
    code, out, _ = run("text", str(CORPUS / "openai-chat-n3-multichoice-refusal.sse"))
    assert "--- choice 2 ---" in out
    assert "I'm sorry" in out


def test_dialect_override() -> None:
    doc = json.loads(run("text", "--json", "--dialect", "generic", str(CORPUS / "openai-chat-text-usage.sse"))[1])
    assert doc["dialect"] == "generic"


def test_stdin() -> None:
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes()
    code, out, _ = run("text", "-", input=body)
    assert code == 0
    assert out == "The capital of the UK is London.\n"


BAD_INPUT = [
    (["show", "nope.jsonl"], "no such file"),
    (["events", "tests"], "is a directory"),
    (["text", "--rechunk", "bytes:0", "x"], "rechunk"),
    (["text", "--rechunk", "sometimes", "x"], "unknown rechunk spec"),
    (["text", "--dialect", "nope", "x"], "nope"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_one_line_exit_2(args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty file"), (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage\x00", "gzip data is corrupt"),
     (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF document"),
     (b'{"format": "sse-capture/1", "request": \n', "not a JSON line")],
)  # fmt: skip
def test_bad_files_one_line_exit_2(content: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code, out, err = run("show", str(path))
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert out == ""


def test_hostile_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "evil.sse"
    path.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"hi\\u001b[2J\\u001b]0;owned\\u0007"}}]}\n\n')
    code, out, _ = run("show", str(path))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out


def test_python_dash_m_and_the_script() -> None:
    path = str(CAPTURES / "openai-chat-text.jsonl")
    done = subprocess.run([sys.executable, "-m", "sse_inspect", "text", path], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"The capital of the UK is London.\n"
    missing = subprocess.run([sys.executable, "-m", "sse_inspect", "show", "nope"], capture_output=True, timeout=60)
    assert missing.returncode == 2
    assert missing.stderr.decode().strip() == "Error: nope: no such file"


def test_event_lines_are_what_json_dumps_writes() -> None:
    from sse_inspect.cli._json import dumps, event_json, event_line

    events = [e for path in sorted(CORPUS.glob("*.sse")) for e in parse_events(path.read_bytes())]
    events += [Event(index=7, type="é\u2028\x00", data='"\\\n', id="x", retry=3000, start=1, end=9, t_first=0.25, t=1e-07)]
    events += [Event(index=8, type="message", data=d, start=1, end=9) for d in ("a\x7fb", "ascii only", "\x85", "\u200b")]
    assert len(events) > 500
    for e in events:
        assert event_line(e) == dumps(event_json(e)) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.builds(Event, index=st.integers(0, 2**63), type=st.text(), data=st.text(), id=st.text(),
                 retry=st.none() | st.integers(0, 2**63), start=st.integers(0, 2**63), end=st.integers(0, 2**63),
                 t_first=st.none() | st.floats(allow_nan=False, allow_infinity=False),
                 t=st.none() | st.floats(allow_nan=False, allow_infinity=False), chunk=st.integers(0, 2**63)))  # fmt: skip
def test_any_event_line_is_what_json_dumps_writes(event: Event) -> None:
    """Any text (lone surrogates, controls, invisible characters) and any finite time (a capture's are)."""
    from sse_inspect.cli._json import dumps, event_json, event_line

    assert event_line(event) == dumps(event_json(event)) + "\n"


@pytest.mark.parametrize(("args", "expected"), [(["text"], "London"), (["events", "--json"], '"index": 0')])
def test_text_and_events_json_start_without_rich_the_proxy_server_or_report_code(args: list[str], expected: str) -> None:
    code = (
        f"import sys; from sse_inspect.cli import main; sys.argv = ['sse-inspect', *{args!r}, "
        "'captures/openai-chat-text.jsonl']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('asyncio', 'mitmproxy', 'h11', 'httpx', 'rich', 'sse_inspect.checks', "
        "'sse_inspect.report', 'sse_inspect.cli._report', 'sse_inspect.cli._replay', 'sse_inspect.cli._record') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
    assert expected in done.stdout


# -- what show, check and text print is whole: every word, at any width, on a terminal or piped -----------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTHS = [("piped", None), ("piped", 60), ("terminal", 40), ("terminal", 60), ("terminal", 80), ("terminal", 200)]


def view(args: list[str], mode: str, width: int | None) -> tuple[int, str]:
    """Run the CLI as a user would: piped (not a terminal) or on a terminal `width` columns wide."""
    env = {"COLUMNS": None if width is None else str(width), "LINES": None, "TTY_COMPATIBLE": None,
           "FORCE_COLOR": "1" if mode == "terminal" else None, "NO_COLOR": None}  # fmt: skip
    result = CliRunner().invoke(cli, args, env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, ANSI.sub("", result.stdout)


def long_answer_capture(tmp_path: Path) -> Path:
    """A 60-word answer and a tool call with long arguments (a path, a query, a 40-item list)."""
    words = [f"word{i:02d}-{'x' * (i % 7)}" for i in range(60)]
    args = json.dumps({"path": "/srv/archive/2026/11/30/" + "deeply/nested/" * 3 + "report.json",
                       "query": "every line where the upstream held the stream longer than the idle timeout",
                       "ids": list(range(1000, 1040))})  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choices = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f'data: {{"id":"c1","object":"chat.completion.chunk","model":"m",{json.dumps(choices)[1:]}\n\n'.encode()

    events = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": w + " "}) for w in words]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "search_the_archive", "arguments": ""}}
    events.append(chunk({"tool_calls": [call]}))
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + 25]}}]})
               for i in range(0, len(args), 25)]  # fmt: skip
    events += [chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    capture = Capture(chunks=tuple(Chunk(0.5 + 0.02 * i, e) for i, e in enumerate(events)),
                      request=Request(method="POST", url="https://api.openai.com/v1/chat/completions"),
                      response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.3),
                      end=End(kind="complete", t=0.6 + 0.02 * len(events)))  # fmt: skip
    path = tmp_path / "long-answer.jsonl"
    path.write_text(dump_capture(capture))
    return path


def whole_cases(tmp_path: Path) -> list[Path]:
    return [*sorted(CAPTURES.glob("*.jsonl")), long_answer_capture(tmp_path)]


def flat(text: str) -> str:
    """Text with panel borders and all whitespace removed: a wrapped or folded word is whole again."""
    return re.sub(r"[\s│╭╮╰╯─]", "", text)


@pytest.mark.parametrize(("mode", "width"), WIDTHS, ids=[f"{m}-{w}" for m, w in WIDTHS])
def test_show_prints_every_word_of_the_answer_and_every_finding(tmp_path: Path, mode: str, width: int | None) -> None:
    for path in whole_cases(tmp_path):
        report = check_capture(load_capture(path))
        a = report.analysis
        code, out = view(["show", str(path)], mode, width)
        assert code == 0, out
        texts = [c.text for c in a.answer.choices] + [t.arguments for c in a.answer.choices for t in c.tool_calls]
        fixes = {f.fix for f in report.findings if f.severity > Severity.INFO}
        said = [f.message for f in report.findings] + sorted(fixes)
        assert texts and said, path
        if mode == "piped":  # no width: every text and sentence whole, on a line of its own
            lines = out.splitlines()
            for text in texts:
                assert text.strip() in out, (path, text)
                assert all(len(w) <= 1 or w in out.split() for w in text.split()), path
            for sentence in said:
                assert any(sentence in line for line in lines), (path, sentence)
            assert "╭" not in out and not any(line.startswith("│ ") for line in lines)  # no panel to crop the text
        else:  # wrapped at words to the width, long words folded: nothing lost
            assert all(cell_len(line) <= width for line in out.splitlines()), path
            for text in [*texts, *said]:
                assert flat(text) in flat(out), (path, width, text)
            for text in texts:  # words a panel of this width can hold stay whole
                assert all(w in out.split() for w in text.split() if len(w) < width - 4), (path, width)


@pytest.mark.parametrize(("mode", "width"), WIDTHS, ids=[f"{m}-{w}" for m, w in WIDTHS])
def test_check_and_text_print_every_finding_and_word(tmp_path: Path, mode: str, width: int | None) -> None:
    for path in whole_cases(tmp_path):
        report = check_capture(load_capture(path))
        a = report.analysis
        _, out = view(["check", str(path)], mode, width)
        for f in report.findings:
            assert f.message in out if mode == "piped" else flat(f.message) in flat(out), (path, f.code)
        for fix in {f.fix for f in report.findings if f.severity > Severity.INFO}:
            assert fix in out if mode == "piped" else flat(fix) in flat(out), path
        code, out = view(["text", str(path)], mode, width)
        assert code == 0
        for choice in a.answer.choices:
            assert choice.text.strip() in out if mode == "piped" else flat(choice.text) in flat(out), path
            for call in choice.tool_calls:
                line = f"[tool call] {call.name} {call.arguments}"
                assert line in out if mode == "piped" else flat(call.arguments) in flat(out)


def test_piped_show_prints_the_answer_as_it_is(tmp_path: Path) -> None:
    path = long_answer_capture(tmp_path)
    a = analyze(load_capture(path))
    _, out = view(["show", str(path)], "piped", 60)
    lines = out.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("── answer ")))
    assert lines[at + 1] == a.answer.text and len(a.answer.text.split()) == 60
    call = a.answer.tool_calls[0]
    assert lines[at + 2].startswith("── tool call: search_the_archive ") and lines[at + 3] == call.arguments
    assert len(call.arguments) > 300 and json.loads(call.arguments)["ids"][-1] == 1039
    _, wide = view(["show", str(path)], "terminal", 60)
    assert "╭─ answer " in wide and "╭─ tool call: search_the_archive " in wide  # a terminal gets panels


def test_a_tool_call_title_is_not_markup(tmp_path: Path) -> None:
    body = (b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function",'
            b'"function":{"name":"[bold]x[/bold]","arguments":"{not json"}}]}}]}\n\ndata: [DONE]\n\n')  # fmt: skip
    path = tmp_path / "odd.sse"
    path.write_bytes(body)
    for mode in ("piped", "terminal"):
        _, out = view(["show", str(path)], mode, 80)
        assert "tool call: [bold]x[/bold]  [arguments are not valid JSON]" in out, mode


# -- Ctrl-C, standard input on a terminal, the shared options ----------------------------------------


@pytest.mark.parametrize("command", ["show", "check", "text", "events"])
def test_ctrl_c_is_one_line_and_exit_130(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a capture is read: `interrupted` and 130 (128 + SIGINT), not click's "Aborted!"
    and 1, which `check` uses for "found something"."""
    from sse_inspect.cli import _reading

    def interrupted(path: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_reading, "open_capture", interrupted)
    code, out, err = run(command, str(CAPTURES / "openai-chat-text.jsonl"))
    assert (code, out, err) == (130, "", "interrupted\n")


@pytest.mark.e2e
def test_reading_stdin_from_a_terminal_says_so_and_ctrl_c_stops_it() -> None:
    """`show -` with a terminal on stdin waited in silence: it now says, on stderr, that it reads the
    stream from standard input and how to end it; Ctrl-C then stops it (exit 130). A real process
    under a pseudo-terminal; the signal is sent once the line is there."""
    import os
    import pty
    import select
    import time

    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "sse_inspect", "show", "-"]
    try:
        with running(argv, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     env={**os.environ, "COLUMNS": "200"}) as proc:  # fmt: skip
            os.close(follower)
            assert proc.stderr is not None
            ready, _, _ = select.select([proc.stderr], [], [], 20)
            assert ready, "nothing on stderr"
            line = proc.stderr.readline().decode()
            assert line == "reading the stream from standard input (Ctrl-D to end, Ctrl-C to stop)\n"
            time.sleep(0.1)  # the note is printed before the read starts; either way Ctrl-C must stop it
            out, err = ctrl_c(proc)
    finally:
        os.close(leader)
    assert proc.returncode in INTERRUPTED and (out, err.decode()) == (b"", "interrupted\n")


def test_stdin_from_a_pipe_has_no_note() -> None:
    body = (CORPUS / "openai-chat-text-usage.sse").read_bytes()
    code, out, err = run("text", "-", input=body)
    assert code == 0 and err == "" and out.strip()


def test_threshold_without_a_value_says_the_form() -> None:
    """`--threshold burst_min_events` (no `=`) said "unknown threshold" of a name that exists."""
    for command in ("check", "report"):
        code, _, err = run(command, "--threshold", "burst_min_events", str(CAPTURES / "openai-chat-text.jsonl"))
        assert code == 2
        assert "'burst_min_events': expected NAME=VALUE (e.g. burst_min_events=10)" in err, command
        assert "unknown threshold" not in err


def paced(tmp_path: Path) -> Path:
    """Twelve tokens 200 ms apart, then [DONE]: a healthy stream, one chunk per event."""
    from sse_inspect import Capture, Chunk, End, Request, Response, dump_capture

    events = [b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}).encode() + b"\n\n"
              for i in range(12)]  # fmt: skip
    chunks = tuple(Chunk(0.1 + 0.2 * i, e) for i, e in enumerate(events)) + (Chunk(2.5, b"data: [DONE]\n\n"),)
    capture = Capture(chunks=chunks, request=Request(method="POST", url="http://api.test/v1/chat/completions"),
                      response=Response(headers=(("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")),
                                        t=0.05),
                      end=End(kind="complete", t=2.51))  # fmt: skip
    path = tmp_path / "paced.jsonl"
    path.write_text(dump_capture(capture))
    return path


def test_check_and_report_rechunk_before_checking(tmp_path: Path) -> None:
    """`check --rechunk whole` checks the body as one chunk, which arrives with the last original
    one: the healthy stream now reads as buffered. `report` takes it too."""
    path = paced(tmp_path)
    codes = {}
    for spec in ("original", "whole", "event"):
        code, out, err = run("check", "--json", "--rechunk", spec, str(path))
        codes[spec] = [f["code"] for f in json.loads(out)["captures"][0]["findings"]]
    assert "single-flush" in codes["whole"] and "single-flush" not in codes["original"]
    assert codes["event"] == codes["original"], "one chunk per event already: the same stream"
    code, out, _ = run("check", "--fail-on", "warning", "--rechunk", "whole", str(path))
    assert code == 1 and "single-flush" in out
    assert run("check", "--fail-on", "warning", str(path))[0] == 0
    code, page, err = run("report", "--rechunk", "whole", "-o", "-", str(path))
    assert code == 0, err
    assert "single-flush" in page
    assert "single-flush" not in run("report", "-o", "-", str(path))[1]


REBUILDING = ["show", "events", "text", "check", "report", "replay", "serve", "diff"]


@pytest.mark.parametrize("command", REBUILDING)
def test_every_rechunk_option_lists_every_form(command: str) -> None:
    """`crlf` and `utf8` worked but no --help named them."""
    from sse_inspect._rechunk import RECHUNK_FORMS

    code, out, _ = run(command, "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert f"Re-cut the body before parsing: {RECHUNK_FORMS}." in flat, command


def test_readme_lists_every_rechunk_form_and_where_the_shared_options_apply() -> None:
    """The README's rechunk table has a row per form the parser takes; the commands it says take
    --dialect and --rechunk do, and `events` (the same events in every dialect) takes no --dialect."""
    from sse_inspect._rechunk import RECHUNK_FORMS

    readme = (ROOT / "README.md").read_text()
    for form in RECHUNK_FORMS.split(", "):
        assert f"| `{form}` |" in readme, form
    for command in REBUILDING:
        assert "--rechunk" in run(command, "--help")[1], command
    for command in ("show", "text", "check", "report", "replay", "diff"):
        assert "--dialect" in run(command, "--help")[1], command
    assert "--dialect" not in run("events", "--help")[1]


@pytest.mark.e2e
def test_a_stream_typed_on_a_terminal_ends_at_one_ctrl_d() -> None:
    """Pasted into `text -` on a terminal, a raw stream ends at the first Ctrl-D, as the note says (a
    second read after a terminal's end-of-file waited for a second Ctrl-D)."""
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "sse_inspect", "text", "-"], stdin=follower,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    os.close(follower)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().decode().startswith("reading the stream from standard input")
        for word in ("pasted", " two"):
            os.write(leader, b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % word.encode())
        os.write(leader, b"\x04")  # Ctrl-D at the start of a line: end of file
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    assert (proc.returncode, out.decode(), err.decode()) == (0, "pasted two\n", "")


def test_a_lone_surrogate_in_the_answer_is_written_as_its_escape_never_a_crash(tmp_path: Path) -> None:
    """JSON may say "\\ud800", a code point UTF-8 cannot hold: piped `text`, `text --json`, `show` and
    `events --json` write it as that escape (JSON output: the same value when parsed) and exit 0."""
    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "a\ud800b"}}]})  # json writes \ud800
    body = f"data: {chunk}\n\ndata: [DONE]\n\n"
    path = tmp_path / "surrogate.sse"
    path.write_text(body, encoding="utf-8")

    def run(*argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "sse_inspect", *argv, str(path)], capture_output=True, timeout=60)

    text = run("text")
    assert (text.returncode, text.stdout, text.stderr) == (0, b"a\\ud800b\n", b"")
    doc = run("text", "--json")
    assert doc.returncode == 0 and json.loads(doc.stdout)["text"] == "a\ud800b"
    for argv in (["show"], ["events", "--json"]):
        done = run(*argv)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, argv
