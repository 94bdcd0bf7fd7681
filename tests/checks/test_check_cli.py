"""`sse-inspect check` (and the findings of `show`) through click's runner, stdout and stderr apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, dump_capture
from sse_inspect.checks import CODES, Thresholds
from sse_inspect.cli import cli

from . import timelines as T


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
    assert lines[1].startswith("BUFFERED: 40 text events held 2.000 s and released in 3 ms at t=4.454 s (rule: >= 5 text events")
    assert lines[2].split()[:5] == ["warning", "buffering-burst", "40", "text", "events"]
    assert "proxy_buffering off" in lines[3]  # the fix
    assert lines[4].split()[:2] == ["info", "done-not-json"]


def test_json_is_one_document(caps: Path) -> None:
    code, out, err = run("check", "--json", "--fail-on", "warning", "caps/burst.jsonl")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert set(doc) == {"captures", "fail_on", "exit_code", "thresholds"}
    assert (doc["fail_on"], doc["exit_code"]) == ("warning", 1)
    assert doc["thresholds"] == vars_of(Thresholds())
    [capture] = doc["captures"]
    assert set(capture) == {"path", "dialect", "verdict", "worst", "findings", "skipped", "warnings", "stats"}
    assert (capture["path"], capture["dialect"], capture["worst"]) == ("caps/burst.jsonl", "openai-chat", "warning")
    assert capture["verdict"].startswith("BUFFERED: 40 text events held 2.000 s")
    assert capture["skipped"] == []
    burst, done = capture["findings"]
    assert set(burst) == {"code", "severity", "message", "fix", "t", "event_index", "offset", "evidence"}
    assert (burst["code"], burst["severity"], burst["fix"]) == (
        "buffering-burst",
        "warning",
        CODES["buffering-burst"].fix,
    )
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
    assert "BUFFERED: 40 text events held" in out  # captures with warnings or errors are shown in full


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
    assert "→ a hop buffers the stream" in out, "show gives the fix under each warning, as check does"
