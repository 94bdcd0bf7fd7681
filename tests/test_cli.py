"""The command line, driven through click's runner; stdout and stderr checked apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Event, parse_events
from sse_inspect.cli import cli

from .helpers import CORPUS, ROOT

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
    assert len(events) > 500
    for e in events:
        assert event_line(e) == dumps(event_json(e)) + "\n"


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
