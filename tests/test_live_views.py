"""The live session and its terminal views, driven by real recorders writing real capture files.

A `StreamRecorder` with a `CaptureWriter` records a stream as the proxy would (on a test clock, so
every time is the test's); the session's `LiveStream` is fed what the writer writes. What a finished
stream says (its verdict) is held to what `sse-inspect show` and `check --json` say of the file."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from sse_inspect import load_capture
from sse_inspect.cli import cli
from sse_inspect.cli._check import verdict_view
from sse_inspect.cli._live import JsonView, LinesView, TableView
from sse_inspect.live import BaseView, Entry, LiveSession

from .helpers import ROOT
from .live_helpers import Clock, Recording, chat, chat_recording, replay


class Told(BaseView):
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def started(self, entry: Entry) -> None:
        self.calls.append(("started", entry.id))

    def stalled(self, entry: Entry, stall: object) -> None:
        self.calls.append(("stalled", entry.id))

    def ended(self, entry: Entry, step: object) -> None:
        self.calls.append(("ended", entry.id))

    def judged(self, entry: Entry) -> None:
        self.calls.append(("judged", entry.id))


def session_with(*views: BaseView) -> tuple[LiveSession, Clock]:
    clock = Clock()
    return LiveSession(list(views), clock=clock, stall_s=2.0), clock


def show_output(path: Path) -> str:
    result = CliRunner().invoke(cli, ["show", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_a_finished_stream_says_what_show_says(tmp_path: Path) -> None:
    """Each bundled capture recorded again through a recorder: the verdict the live views print is the one
    `show` prints for the file written, and the live counts are `check --json`'s."""
    told = Told()
    session, clock = session_with(told)
    for name in ("openai-chat-text", "nginx-buffered", "nginx-cut", "openrouter-midstream-error", "nginx-gzip"):
        path = replay(load_capture(ROOT / "captures" / f"{name}.jsonl"), session, clock, tmp_path)
        entry = session.finished[-1]
        assert entry.report is not None and entry.path == path
        assert " ".join(verdict_view(entry.report).plain.split()) in show_output(path), name
        result = CliRunner().invoke(cli, ["check", "--json", str(path)])
        stats = json.loads(result.output)["captures"][0]["stats"]
        s = entry.stream
        assert (s.events, s.chunks, s.bytes, s.ttfb, s.first_token) == (
            stats["events"], stats["chunks"], stats["bytes"], stats["ttfb"], stats["first_token"]), name  # fmt: skip
    assert told.calls[:3] == [("started", 1), ("ended", 1), ("judged", 1)]
    assert {word for e in session.finished if e.report for word in [e.report.verdict.split(":")[0]]} >= {"OK", "BUFFERED", "CUT"}


def stall_burst_cut(session: LiveSession, clock: Clock, folder: Path) -> None:
    """A stream that streams, stalls for 3 s, releases 20 events at once, and is cut without [DONE]."""
    rec = chat_recording(session, clock, folder)
    events = chat(*(f"w{i} " for i in range(24)))
    for i in range(4):
        rec.chunk(0.1 * (i + 1), events[i])
    rec.wait(1.0)
    rec.wait(2.5)  # silent 2.1 s: a stall
    rec.chunk(3.4, b"".join(events[4:24]))  # resumed, and a burst of 20
    rec.wait(3.6)
    rec.end(3.7, "server-disconnected", "peer closed connection")


def test_lines_say_start_stall_resume_burst_and_the_end_with_its_verdict(tmp_path: Path) -> None:
    out = io.StringIO()
    view = LinesView(Console(file=out, width=80, color_system=None, soft_wrap=True).print)  # (as off a terminal)
    session, clock = session_with(view)
    stall_burst_cut(session, clock, tmp_path)
    lines = out.getvalue().splitlines()
    path = session.finished[-1].path
    assert lines[0] == f"● #1 POST https://api.example/v1/chat/completions → {path}"
    assert lines[1] == "  #1 stalled: silent since 400 ms (2.1 s so far)"
    assert lines[2] == "  #1 resumed after 3.0 s"
    assert lines[3] == "  #1 burst: 20 text events at once at 3.400 s, after 3.000 s of silence"
    assert re.fullmatch(rf"  #1 server-disconnected: 5 chunks, \d+ bytes in 3\.70 s · BUFFERED: 20 text events held 3\.000 s .* · "
                        rf"{re.escape(str(path))}",
                        lines[4]), lines[4]  # fmt: skip
    assert len(lines) == 5


def test_json_lines_one_per_event_and_per_finished_stream(tmp_path: Path) -> None:
    out = io.StringIO()
    session, clock = session_with(JsonView(out))
    stall_burst_cut(session, clock, tmp_path)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds == ["start", *["event"] * 4, "stall", "resume", *["event"] * 20, "burst", "end"], kinds
    assert all(r["stream"] == 1 for r in records)
    event = records[1]
    assert event["dialect"] == "openai-chat" and event["flags"] == ["text"] and event["event"]["index"] == 0
    end = records[-1]
    assert end["check"]["verdict"].startswith("BUFFERED") and end["end"]["kind"] == "server-disconnected"
    assert {f["code"] for f in end["check"]["findings"]} >= {"buffering-burst", "missing-end-marker"}
    assert end["live"]["events"] == 24 and end["live"]["bursts"] == [{"t": 3.4, "events": 20, "silence_s": 3.0}]
    assert end["check"]["stats"]["events"] == end["live"]["events"]


def draw(view: TableView) -> list[str]:
    out = view.console.file
    assert isinstance(out, io.StringIO)
    out.seek(0)
    out.truncate()
    view.console.print(view.render(view.rows()))
    return out.getvalue().splitlines()


def table(width: int) -> tuple[TableView, LiveSession, Clock]:
    clock = Clock()
    session = LiveSession(clock=clock, stall_s=2.0)
    view = TableView(Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None), session)
    session.views.append(view)
    return view, session, clock


def test_the_table_fits_60_columns_and_shows_the_focus_growing(tmp_path: Path) -> None:
    view, session, clock = table(60)
    rec = chat_recording(session, clock, tmp_path)
    rec.chunk(0.2, chat("Hello")[0])
    first = draw(view)
    rec.chunk(0.4, chat(", world")[0])
    rec.wait(3.0)
    second = draw(view)
    for lines in (first, second):
        assert all(len(line) <= 60 for line in lines), lines
    assert "Hello" in "\n".join(first) and "Hello, world" in "\n".join(second)
    assert any("stalled" in line for line in second) and any("⏸" in line for line in second)
    assert any("POST /v1/chat" in line for line in second)  # (the path, not the host, when narrow)


def test_the_keys_move_the_focus_and_f_follows_the_newest(tmp_path: Path) -> None:
    view, session, clock = table(120)
    a = chat_recording(session, clock, tmp_path, "https://api.example/a")
    a.chunk(0.1, chat("from a")[0])
    b = chat_recording(session, clock, tmp_path, "https://api.example/b")
    b.chunk(0.1, chat("from b")[0])
    assert view._focused(view.rows()).id == 2  # type: ignore[union-attr]
    view.key("up")
    assert view._focused(view.rows()).id == 1  # type: ignore[union-attr]
    assert any("from a" in line for line in draw(view))
    view.key("j")
    assert view.focus == 2
    view.key("k")
    view.key("f")
    assert view.focus is None and view._focused(view.rows()).id == 2  # type: ignore[union-attr]


def test_hostile_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """Escape sequences in the URL and in the answer are shown as escapes in the table, the focus and the lines."""
    view, session, clock = table(100)
    out = io.StringIO()
    session.views.append(LinesView(Console(file=out, width=300, force_terminal=True, color_system=None).print))
    rec = chat_recording(session, clock, tmp_path, "https://api.example/v1/\x1b[2Jchat")
    rec.chunk(0.1, b'data: {"choices": [{"index": 0, "delta": {"content": "hi \\u001b]0;pwned\\u0007 \\u001b[31mred"}}]}\n\n')
    drawn = "\n".join(draw(view))
    rec.end(0.2)
    for text in (drawn, out.getvalue()):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned" in drawn


def test_a_view_that_fails_is_dropped_and_recording_goes_on(tmp_path: Path) -> None:
    class Broken(BaseView):
        def started(self, entry: Entry) -> None:
            raise RuntimeError("boom")

    told = Told()
    session, clock = session_with(Broken(), told)
    path = replay(load_capture(ROOT / "captures" / "openai-chat-text.jsonl"), session, clock, tmp_path)
    assert len(session.views) == 1 and ("judged", 1) in told.calls
    assert load_capture(path).end is not None



def test_json_lines_to_a_reader_that_went_stop_the_recording_once(tmp_path: Path) -> None:
    """`record --json | head -3`: when the pipe's reader has gone, the view calls `on_closed` (record stops
    the proxy) once, writes nothing more and raises nothing into the session."""

    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    stopped: list[bool] = []
    view = JsonView(Gone(), on_closed=lambda: stopped.append(True))
    session, clock = session_with(view)
    replay(load_capture(ROOT / "captures" / "openai-chat-text.jsonl"), session, clock, tmp_path)
    assert stopped == [True] and session.views == [view] and view.out is None


def test_more_streams_than_rows_say_how_many_are_not_shown(tmp_path: Path) -> None:
    view, session, clock = table(100)
    for i in range(TableView.ROWS + 3):
        chat_recording(session, clock, tmp_path, f"https://api.example/s{i}").chunk(0.1, chat("x")[0])
    lines = draw(view)
    assert "… and 3 more streams in flight (the oldest)" in lines
    shown = [int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit()]
    assert shown == list(range(4, 4 + TableView.ROWS))  # the newest, in order


def test_a_stream_the_live_model_fails_on_leaves_the_views_and_is_recorded_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the live model must cost the view of one stream, not the recording nor the other streams."""
    told = Told()
    session, clock = session_with(told)
    rec = chat_recording(session, clock, tmp_path)
    rec.chunk(0.1, chat("a")[0])

    def broken(self: object, times: object, datas: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr("sse_inspect._live.LiveStream.feed", broken)
    rec.chunk(0.2, chat("b")[0])
    rec.chunk(0.3, chat("c")[0])
    path = rec.end(0.4)
    assert session.entries == {} and ("judged", 1) not in told.calls
    assert [r.message for r in caplog.records if "stopped watching stream #1" in r.message]
    assert [c.data for c in load_capture(path).chunks] == chat("a", "b", "c")
