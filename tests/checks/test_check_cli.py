"""`sse-inspect check` (and the findings of `show`) through click's runner, stdout and stderr apart."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, End, dump_capture, load_capture
from sse_inspect.checks import CODES, Thresholds
from sse_inspect.cli import cli

from . import timelines as T

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def table(out: str) -> dict[str, list[str]]:
    """The summary table's rows by capture path: the lines after its header."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["capture", "dialect", "verdict"])
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1 :] if line.strip()}


def write(folder: Path, name: str, capture: Capture) -> str:
    path = folder / name
    path.write_text(dump_capture(capture))
    return str(path)


CAPTURES = {
    "ok.jsonl": lambda: T.steady(),  # done-not-json (info) only
    "nocache.jsonl": lambda: T.paced(T.openai_events(5), headers=T.SSE_HEADERS[:1]),  # + no-cache-header (info)
    "burst.jsonl": lambda: T.burst_after_silence(),  # buffering-burst (warning)
    "cut.jsonl": lambda: T.paced(T.openai_events(5, done=False)),  # missing-end-marker (error)
}


@pytest.fixture
def caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder `caps/` with one capture per worst severity, the working directory its parent (short paths)."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "caps"
    folder.mkdir()
    for name, build in CAPTURES.items():
        write(folder, name, build())
    return folder


@pytest.mark.parametrize(
    ("name", "fail_on", "code"),
    [
        ("ok.jsonl", "info", 1),
        ("ok.jsonl", "warning", 0),
        ("ok.jsonl", "never", 0),
        ("burst.jsonl", "error", 0),
        ("burst.jsonl", "warning", 1),
        ("burst.jsonl", "info", 1),
        ("cut.jsonl", "error", 1),
        ("cut.jsonl", "never", 0),
    ],
)
def test_exit_codes(caps: Path, name: str, fail_on: str, code: int) -> None:
    exit_code, out, err = run("check", "--fail-on", fail_on, f"caps/{name}")
    assert (exit_code, err) == (code, "")
    assert f"caps/{name}" in out


def test_fail_on_defaults_to_error(caps: Path) -> None:
    assert run("check", "caps/burst.jsonl")[0] == 0
    assert run("check", "caps/cut.jsonl")[0] == 1


def test_verdict_line_of_a_buffered_capture(caps: Path) -> None:
    code, out, _ = run("check", "caps/burst.jsonl")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["caps/burst.jsonl", "[openai-chat]"]
    assert lines[1] == "BUFFERED (see buffering-burst below) · 1 warning, 1 info"  # the sentence is the finding's
    assert lines[2] == "hops: no proxy seen in the headers"
    assert lines[3].startswith("most likely: the application (events arrived held and released together")
    assert "yield (or write) each event inside the loop" in lines[4]  # the culprit's fix: no proxy to blame
    assert lines[5].startswith(
        "warning buffering-burst  40 text events held 2.000 s and released in 3 ms at t=4.454 s (rule: >= 5 text events"
    )
    assert lines[6].strip() == "→ the same fix as the culprit above"
    assert lines[7].split()[:2] == ["info", "done-not-json"]
    assert "nginx" not in out  # no nginx in the headers, so none in the advice


def test_json_is_one_document(caps: Path) -> None:
    code, out, err = run("check", "--json", "--fail-on", "warning", "caps/burst.jsonl")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert set(doc) == {"captures", "fail_on", "exit_code", "thresholds"}
    assert (doc["fail_on"], doc["exit_code"]) == ("warning", 1)
    assert doc["thresholds"] == vars_of(Thresholds())
    [capture] = doc["captures"]
    assert set(capture) == {"path", "dialect", "framing", "verdict", "worst", "findings", "skipped", "hops", "culprit", "warnings",
                            "stats"}
    assert (capture["path"], capture["dialect"], capture["worst"]) == ("caps/burst.jsonl", "openai-chat", "warning")
    assert capture["verdict"].startswith("BUFFERED: 40 text events held 2.000 s")
    assert capture["skipped"] == []
    burst, done = capture["findings"]
    assert set(burst) == {"code", "severity", "message", "fix", "t", "event_index", "offset", "evidence"}
    assert (burst["code"], burst["severity"], burst["fix"]) == (
        "buffering-burst",
        "warning",
        capture["culprit"]["fix"],  # the fix for the hop that held it: no proxy in the headers, the application
    )
    assert (capture["hops"], capture["culprit"]["hop"], capture["culprit"]["decided"]) == ([], "application", True)
    assert burst["evidence"]["events_held"] == 40 and burst["t"] == pytest.approx(4.454, abs=1e-3)
    assert (done["code"], done["severity"], done["event_index"]) == ("done-not-json", "info", 149)
    stats = capture["stats"]
    assert (stats["events"], stats["chunks"], stats["timed"], stats["end"], stats["complete"]) == (
        150,
        150,
        True,
        "complete",
        True,
    )


def vars_of(thresholds: Thresholds) -> dict[str, Any]:
    return {name: getattr(thresholds, name) for name in thresholds.__dataclass_fields__}


def test_json_of_an_untimed_raw_body(tmp_path: Path) -> None:
    path = tmp_path / "body.sse"
    path.write_bytes(b"".join(T.openai_events(3)))
    code, out, _ = run("check", "--json", str(path))
    [capture] = json.loads(out)["captures"]
    assert code == 0
    assert {s["codes"][0] for s in capture["skipped"]} == {"http-error", "buffering-burst"}
    assert capture["stats"]["timed"] is False and capture["stats"]["ttfb"] is None


@pytest.mark.parametrize(
    ("options", "codes"),
    [
        (["--select", "buffering-burst"], ["buffering-burst"]),
        (["--select", "buffering-burst, done-not-json"], ["buffering-burst", "done-not-json"]),
        (["--ignore", "done-not-json"], ["buffering-burst"]),
        (["--ignore", "buffering-burst,done-not-json"], []),
    ],
)
def test_select_and_ignore(caps: Path, options: list[str], codes: list[str]) -> None:
    code, out, _ = run("check", "--json", "--fail-on", "warning", *options, "caps/burst.jsonl")
    [capture] = json.loads(out)["captures"]
    assert [f["code"] for f in capture["findings"]] == codes
    assert code == (1 if "buffering-burst" in codes else 0)


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_is_bad_usage(caps: Path, option: str) -> None:
    code, out, err = run("check", option, "buffering-burst,no-such-code", "caps/burst.jsonl")
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "no-such-code" in err and "buffering-burst" in err


def test_threshold_changes_the_outcome(caps: Path) -> None:
    assert run("check", "--fail-on", "warning", "caps/burst.jsonl")[0] == 1
    code, out, _ = run(
        "check", "--fail-on", "warning", "--threshold", "burst_min_events=50", "--json", "caps/burst.jsonl"
    )
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0
    assert doc["thresholds"]["burst_min_events"] == 50
    assert doc["captures"][0]["verdict"].startswith("OK: 150 events")


@pytest.mark.parametrize("text", ["burst_min_events", "no_such=1", "burst_min_events=lots"])
def test_bad_threshold_is_bad_usage(caps: Path, text: str) -> None:
    code, out, err = run("check", "--threshold", text, "caps/burst.jsonl")
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith("Error: ")


@pytest.mark.parametrize(("fail_on", "code"), [("error", 1), ("warning", 1), ("never", 0)])
def test_a_folder_gives_a_summary(caps: Path, fail_on: str, code: int) -> None:
    """Four captures or more are checked in parallel; the summary keeps the order of the paths."""
    exit_code, out, err = run("check", "--fail-on", fail_on, "caps")
    assert (exit_code, err) == (code, "")
    assert table(out) == {
        "caps/burst.jsonl": ["openai-chat", "BUFFERED", "0", "1", "1"],
        "caps/cut.jsonl": ["openai-chat", "CUT", "1", "0", "0"],
        "caps/nocache.jsonl": ["openai-chat", "OK", "0", "0", "2"],
        "caps/ok.jsonl": ["openai-chat", "OK", "0", "0", "1"],
    }
    assert "buffering-burst  40 text events held" in out  # captures with warnings or errors are shown in full


def test_a_folder_as_json(caps: Path) -> None:
    code, out, _ = run("check", "--json", "caps")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    assert [(c["path"], c["worst"]) for c in doc["captures"]] == [
        ("caps/burst.jsonl", "warning"),
        ("caps/cut.jsonl", "error"),
        ("caps/nocache.jsonl", "info"),
        ("caps/ok.jsonl", "info"),
    ]


def test_an_unreadable_capture_among_good_ones(caps: Path) -> None:
    (caps / "newer.jsonl").write_text('{"format": "sse-capture/2"}\n')
    code, out, err = run("check", "--fail-on", "never", "caps")
    assert code == 2
    assert "caps/newer.jsonl" in err and "newer capture format" in err
    assert "Traceback" not in err
    rows = table(out)
    assert rows["caps/newer.jsonl"] == ["unreadable"]
    assert rows["caps/burst.jsonl"][:2] == ["openai-chat", "BUFFERED"] and len(rows) == 5

    code, out, err = run("check", "--json", "caps")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 2
    by_path = {c["path"]: c for c in doc["captures"]}
    assert set(by_path["caps/newer.jsonl"]) == {"path", "error"}
    assert "newer capture format" in by_path["caps/newer.jsonl"]["error"]
    assert by_path["caps/burst.jsonl"]["verdict"].startswith("BUFFERED") and len(by_path) == 5


def test_an_unreadable_capture_is_one_line_on_stderr(caps: Path) -> None:
    (caps / "newer.jsonl").write_text('{"format": "sse-capture/2"}\n')
    _, _, err = run("check", "caps/ok.jsonl", "caps/newer.jsonl")
    assert len(err.splitlines()) == 1


def test_a_missing_file_alone(caps: Path) -> None:
    code, out, err = run("check", "caps/missing.jsonl")
    assert code == 2 and "no such file" in err
    assert "unreadable" in out


def test_show_lists_the_findings(caps: Path) -> None:
    code, out, _ = run("show", "caps/burst.jsonl")
    assert code == 0
    findings = [line for line in out.splitlines() if line.split()[:1] in (["warning"], ["info"])]
    assert [line.split()[:2] for line in findings] == [["warning", "buffering-burst"], ["info", "done-not-json"]]
    assert "40 text events held 2.000 s" in findings[0]
    assert "→ yield (or write) each event inside the loop" in out, "show gives the culprit's fix, as check does"
    assert "→ the same fix as the culprit above" in out


# -- show and check: the numbers and the findings agree, said once and plainly --------------------------------

BUNDLED = Path(__file__).parent.parent.parent / "captures"


def test_show_counts_the_silence_before_the_cut() -> None:
    code, out, _ = run("show", str(BUNDLED / "nginx-cut.jsonl"))
    assert code == 0
    [line] = [line for line in out.splitlines() if line.startswith("longest silence")]
    assert line.split() == ["longest", "silence", "1.002", "s", "(to", "t=1.006", "s,", "before", "the", "cut)"]
    code, out, _ = run("check", "--json", str(BUNDLED / "nginx-cut.jsonl"))
    stats = json.loads(out)["captures"][0]["stats"]
    assert stats["longest_silence"] == pytest.approx(1.0019, abs=1e-4) and stats["longest_silence_final"] is True
    assert stats["longest_silence_to"] == pytest.approx(stats["total"])


def test_show_says_a_long_stall_then_a_cut(tmp_path: Path) -> None:
    capture = T.paced(T.openai_events(10, done=False), ttft=0.3, every=0.03)
    last = capture.chunks[-1].t or 0.0
    capture = dataclasses.replace(capture, end=End(kind="server-disconnected", t=last + 45.0, error="reset"))
    path = write(tmp_path, "stall.jsonl", capture)
    _, out, _ = run("show", path)
    assert f"longest silence  45.000 s (to t={last + 45:.3f} s, before the cut)" in out
    assert "warning long-silence  no byte for 45.0 s before the cut (t=" in out
    assert "╌ silent 45.0 s" in out  # the timeline shades it too
    # a silence as long as a known idle limit (nginx's, the ALB's 60 s) is the cut's cause, not a risk
    capture = dataclasses.replace(capture, end=End(kind="server-disconnected", t=last + 60.0, error="reset"))
    _, out, _ = run("show", write(tmp_path, "stall60.jsonl", capture))
    assert "error idle-timeout-cut  the stream was cut before its end after 60.00 s without a byte" in out
    assert "CUT (see idle-timeout-cut below)" in out and "long-silence" not in out


def test_show_rechunked_whole_is_one_chunk_at_the_end() -> None:
    """A re-cut chunk arrives when the original chunk holding its last byte did: `whole`, at the last one's time."""
    path = str(BUNDLED / "nginx-unbuffered.jsonl")
    capture = load_capture(path)
    last = capture.chunks[-1].t or 0.0
    _, plain, _ = run("show", path)
    code, out, _ = run("show", "--rechunk", "whole", path)
    assert code == 0
    rows = {line[:12].strip(): line[12:].split() for line in out.splitlines() if line[:1].isalpha()}
    assert "chunks       1 (re-cut: whole)" in out and "chunks                    23" in plain
    assert rows["first byte"][:2] == [f"{last * 1000:.0f}", "ms"]  # the one chunk's time
    bars = next(line for line in out.splitlines() if line.startswith("│"))
    inside = bars[1 : bars.rindex("│")]
    assert inside.strip("·") == "█" and inside.endswith("█")  # one column of bytes: the last
    held = f"after {last:.3f} s of silence"
    assert held in out and "single-flush" in out and "single-flush" not in plain  # the findings see the same chunk
    report = json.loads(run("check", "--json", path)[1])["captures"][0]
    assert report["stats"]["chunks"] == 23 and report["worst"] == "info"


def test_the_timing_says_text_events_plainly() -> None:
    _, out, _ = run("show", str(BUNDLED / "nginx-buffered.jsonl"))
    assert "text events  20 (all at once)" in out and "(-)" not in out
    _, out, _ = run("show", str(BUNDLED / "nginx-unbuffered.jsonl"))
    assert "text events  20 (24.7 per s)" in out


def test_a_shared_fix_is_printed_once_and_the_verdict_not_twice() -> None:
    path = str(BUNDLED / "nginx-buffered.jsonl")
    for command in ("show", "check"):
        _, out, _ = run(command, path)
        doc = json.loads(run("check", "--json", path)[1])["captures"][0]
        fix = doc["culprit"]["fix"]  # nginx and the app could both have held it: how to decide, and each fix
        assert fix.startswith("record both sides of nginx") and "proxy_buffering off" in fix and "yield" in fix
        assert out.count(fix) == 1, command
        assert out.count("        → the same fix as the culprit above") == 2, command
        assert "BUFFERED (see single-flush below) · 2 warnings, 2 info" in out
        message = next(line for line in out.splitlines() if line.startswith("warning single-flush  "))
        assert out.count(message.split("  ", 1)[1]) == 1, command  # the sentence once, in its finding
    assert [f["fix"] for f in doc["findings"] if f["severity"] == "warning"] == [fix, fix]  # --json keeps every fix
    assert doc["verdict"].startswith("BUFFERED: 20 of 20 text events")


def test_a_verdict_of_its_own_is_printed_whole(caps: Path) -> None:
    _, out, _ = run("check", "caps/ok.jsonl")
    assert out.splitlines()[1].startswith("OK: 300 events over ")


def test_the_summary_keeps_file_names_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    deep = tmp_path / "staging-captures" / "eu-west"
    deep.mkdir(parents=True)
    names = [write(deep, f"{name[:-6]}-from-the-gateway-{i}.jsonl", build())
             for i, (name, build) in enumerate(CAPTURES.items())]  # fmt: skip
    paths = sorted(str(Path(n).relative_to(tmp_path)) for n in names)
    assert 40 < min(len(p) for p in paths) and max(len(p) for p in paths) < 60

    def summary(width: int | None, terminal: bool) -> list[str]:
        env = {"COLUMNS": None if width is None else str(width), "FORCE_COLOR": "1" if terminal else None,
               "TTY_COMPATIBLE": None}  # fmt: skip
        result = CliRunner().invoke(cli, ["check", "--fail-on", "never", "staging-captures"], env=env)
        lines = [ANSI.sub("", line) for line in result.stdout.splitlines()]
        return lines[next(i for i, line in enumerate(lines) if line.startswith("capture")) :]

    for width in (None, 40, 60):  # piped: as wide as it takes, never folded
        lines = summary(width, terminal=False)
        assert sorted(table("\n".join(lines))) == paths, width
        assert max(len(line) for line in lines) > 80
    lines = summary(60, terminal=True)  # too narrow for a row: each path whole on a line, the rest of its row under it
    assert lines[0] == "capture" and lines[1].split() == ["dialect", "verdict", "errors", "warnings", "info"]
    assert [lines[k] for k in range(2, len(lines), 2)] == paths
    assert all(line.startswith("  openai-chat  ") for line in lines[3::2])
    assert all(len(line) <= 60 for line in lines)
    lines = summary(200, terminal=True)  # wide enough: one line per capture
    assert sorted(table("\n".join(lines))) == paths
    lines = summary(40, terminal=True)  # narrower than a path: it folds, nothing is lost
    assert all(len(line) <= 40 for line in lines)
    assert all(p in "".join(lines) for p in paths)
