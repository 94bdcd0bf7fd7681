"""Issue 17, item 10: extreme numbers in a capture (times of 1e308, negative or going backwards,
statuses and lengths out of range, a URL that does not parse) go through every command without a
traceback; times that are negative or go backwards are kept but said in a warning."""

from __future__ import annotations

import contextlib
import json
import traceback
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sse_inspect import load_capture
from sse_inspect._format import nice_scale, seconds, tick_label
from sse_inspect.cli import cli

DONE = "data: [DONE]\n\n"
TEXT = 'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


def capture(*, t: list[Any] | None = None, status: Any = 200, url: str = "https://api.example/v1/chat",
            headers: list[list[str]] | None = None, response_t: Any = 0.1, end_t: Any = None,
            body: str = TEXT) -> str:  # fmt: skip
    """An sse-capture/1 file's text: a chunk at each of `t` (the body, then [DONE], then more of the body)."""
    times = [0.2, 0.3] if t is None else t
    head = {"format": "sse-capture/1",
            "request": {"method": "POST", "url": url, "headers": []},
            "response": {"status": status, "reason": "OK", "t": response_t,
                         "headers": [["Content-Type", "text/event-stream"], *(headers or [])]}}  # fmt: skip
    lines = [json.dumps(head)]
    for i, at in enumerate(times):
        lines.append(json.dumps({"t": at, "text": DONE if i == 1 else body}))
    if end_t is not None:
        lines.append(json.dumps({"end": "complete", "t": end_t}))
    return "\n".join(lines) + "\n"


CAPTURES = {
    "t-1e308": capture(t=[0.2, 1.7e308], end_t=1.7e308),
    "t-max-float": capture(t=[1.7976931348623157e308, 1.7976931348623157e308]),
    "t-huge-int": capture(t=[10**30, 10**30 + 1]),
    "t-negative": capture(t=[-5.0, -4.0], response_t=-5.0),
    "t-backwards": capture(t=[0.5, 0.2, 0.1], end_t=0.05),
    "t-tiny": capture(t=[5e-324, 1e-320]),
    "status-99999": capture(status=99999),
    "status-negative": capture(status=-1),
    "status-huge-int": capture(status=10**30),
    "content-length": capture(headers=[["Content-Length", "99999999999999999999999999"], ["Content-Length", "-1"]]),
    "retry-huge": capture(body="retry: 99999999999999999999999999\n" + TEXT),
    "url-bad-ipv6": capture(url="http://[::1/v1", end_t=0.4),
    "url-bad-host": capture(url="http://[zz]/v1?api-key=x", end_t=0.4),
}

COMMANDS = [
    ["show"], ["check"], ["check", "--json"], ["events"], ["events", "--json"], ["text"], ["text", "--json"],
    ["replay", "--instant"], ["replay", "--instant", "--events"], ["replay", "--instant", "--raw"],
    ["diff", "--rechunk", "bytes:7"], ["diff", "--by", "events", "--rechunk", "bytes:7"],
    ["diff", "--by", "timing", "{}"], ["report", "-o", "report.html"], ["export", "--to", "har", "-o", "out.har"],
    ["export", "--to", "curl-trace", "-o", "out.trace"], ["export", "--to", "raw", "-o", "out.sse"],
    ["redact", "-o", "redacted.jsonl"],
]  # fmt: skip


@pytest.mark.parametrize("name", list(CAPTURES))
def test_extreme_numbers_go_through_every_command(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(CAPTURES[name], encoding="utf-8")
    for command in COMMANDS:
        args = [command[0], *(str(path) if a == "{}" else a for a in command[1:]), str(path)]
        with contextlib.chdir(tmp_path):
            result = CliRunner().invoke(cli, args)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            pytest.fail(f"{' '.join(args)}:\n{''.join(traceback.format_exception(result.exception))}")
        assert result.exit_code in (0, 1, 2), (args, result.exit_code)
        if result.exit_code == 2:  # bad input: one line
            assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, (args, result.stderr)
    for export in ("out.har", "out.trace"):  # what export wrote imports back
        result = CliRunner().invoke(cli, ["import", str(tmp_path / export), "-o", str(tmp_path / "back.jsonl")])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


def test_negative_and_backward_times_are_said(tmp_path: Path) -> None:
    negative, backwards = tmp_path / "negative.jsonl", tmp_path / "backwards.jsonl"
    negative.write_text(CAPTURES["t-negative"], encoding="utf-8")
    backwards.write_text(CAPTURES["t-backwards"], encoding="utf-8")
    assert load_capture(negative).warnings == (
        "the response's time is negative (t=-5 s): times are as recorded",
        "2 chunk(s) with a negative time, the first #0 at t=-5 s: times are as recorded",
    )
    assert load_capture(backwards).warnings == (
        "times go backwards 2 time(s), first at chunk #1 (t=0.2 s after t=0.5 s): times are as recorded",
        "the end line's time (t=0.05 s) is before the last chunk's (t=0.1 s)",
    )
    result = CliRunner().invoke(cli, ["show", str(backwards)])
    assert "! times go backwards 2 time(s)" in result.stdout


def test_times_in_order_bring_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "fine.jsonl"
    path.write_text(capture(t=[0.2, 0.2, 0.3], end_t=0.3), encoding="utf-8")
    assert load_capture(path).warnings == ()


def test_a_huge_time_prints_short_and_scales() -> None:
    assert seconds(1.7e308) == "1.7e+308 s"
    assert seconds(2.5) == "2.500 s" and seconds(0.25) == "250 ms"
    step, top = nice_scale(1.7e308, 8)
    assert step == 5e307 and top == 1.7e308  # four steps would pass the largest float
    assert tick_label(step * 2, step) == "1e+308 s"
    assert nice_scale(-5.0, 8) == nice_scale(0.0, 8) and nice_scale(5e-324, 8)[0] > 0
