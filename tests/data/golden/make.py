"""Write the golden CLI outputs that `tests/checks/test_golden.py` holds the package to.

    python tests/data/golden/make.py [PACKAGE_ROOT]

Run from the repository root. PACKAGE_ROOT is the tree whose `sse_inspect` (and `tests`) make the
outputs: the commit the goldens stand for (they were made from main at 958fff8, before the checks
were restructured, to prove that `check`, `check --json`, `show` and `report` print the same since).
It writes the captures of every finding code's trigger and near miss (`tests/checks/test_codes.py`)
under `captures/`, then `outputs.json`: each command's arguments, exit code, stdout (a long one as its
SHA-256: regenerate from that commit and diff to see what changed) and stderr.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path("tests/data/golden")
if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])

from click.testing import CliRunner

from sse_inspect import dump_capture
from sse_inspect.cli import cli
from tests.checks.test_codes import NEAR_MISSES, TRIGGERS

COLUMNS = "100"


def commands(captures: list[str], cases: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    for path in captures + cases:
        out += [["check", "--json", path], ["check", path], ["show", path]]
    out += [
        ["check", "--json", "captures"],
        ["check", "captures"],
        ["check", "--json", "tests/data/corpus"],
        ["check", "--json", "--select", "buffering-burst,missing-end-marker", "captures/nginx-buffered.jsonl"],
        ["check", "--json", "--ignore", "buffering-burst", "captures/nginx-buffered.jsonl"],
        ["check", "--json", "--threshold", "burst_min_events=100", "captures/nginx-buffered.jsonl"],
        ["check", "--json", "--rechunk", "bytes:7", "captures/openai-chat-text.jsonl"],
        ["check", "--fail-on", "warning", "captures/nginx-gzip.jsonl"],
        ["check", "--select", "no-such-code", "captures/openai-chat-text.jsonl"],
        ["check", "--threshold", "no_such=1", "captures/openai-chat-text.jsonl"],
        ["check", "--threshold", "burst_min_events=x", "captures/openai-chat-text.jsonl"],
        ["report", "-o", "-", "captures/nginx-buffered-upstream.jsonl", "captures/nginx-buffered.jsonl"],
        ["report", "-o", "-", "captures", *cases[:12]],
        ["report", "-o", "-", *cases[12:]],
    ]
    return out


BIG = 30_000
"""A longer stdout (an HTML report of many captures) is kept as its SHA-256 only."""


def stored(text: str) -> str:
    return text if len(text) <= BIG else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    folder = HERE / "captures"
    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for kind, group in (("trigger", TRIGGERS), ("miss", NEAR_MISSES)):
        for case in group:
            path = folder / f"{case.code}--{kind}--{case.id}.jsonl"
            path.write_text(dump_capture(case.build()), encoding="utf-8")
            cases.append(str(path))
    captures = sorted(str(p) for p in Path("captures").glob("*.jsonl"))
    captures += ["tests/data/v1-sample.jsonl", *sorted(str(p) for p in Path("tests/data/corpus").glob("*.sse"))]
    runner = CliRunner()
    results = []
    for args in commands(captures, cases):
        r = runner.invoke(cli, args, env={"COLUMNS": COLUMNS})
        if r.exception and not isinstance(r.exception, SystemExit):
            raise r.exception
        results.append({"args": args, "exit_code": r.exit_code, "stdout": stored(r.stdout), "stderr": r.stderr})
    (HERE / "outputs.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(results)} outputs from {sys.modules['sse_inspect'].__file__}")


if __name__ == "__main__":
    main()
