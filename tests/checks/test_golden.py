"""`check`, `check --json`, `show` and `report` print what they printed before the checks were
restructured: every command in `tests/data/golden/outputs.json` (made by its `make.py` from main
at 958fff8: the bundled captures, the corpus, a trigger and a near miss of every finding code,
select, ignore, thresholds, a re-cut, bad input) gives the same exit code, stdout and stderr.

Regenerated once since, on purpose (issue 21, the framings beyond SSE), every difference read: the four new
framing codes in the `skipped` lists and the codes' hint, their cases' captures, and a JSON document served
as `application/json` (read as NDJSON now: its `{"error": ...}` is an in-band error, not an unterminated event)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sse_inspect.cli import cli

ROOT = Path(__file__).parents[2]
GOLDEN = json.loads((ROOT / "tests/data/golden/outputs.json").read_text(encoding="utf-8"))


def _id(entry: dict[str, Any]) -> str:
    return " ".join(a.removeprefix("tests/data/golden/captures/") for a in entry["args"])[:120]


@pytest.mark.parametrize("entry", GOLDEN, ids=[_id(e) for e in GOLDEN])
def test_the_cli_prints_what_main_printed(entry: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, entry["args"], env={"COLUMNS": "100"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    stdout = result.stdout
    if entry["stdout"].startswith("sha256:"):
        stdout = "sha256:" + hashlib.sha256(stdout.encode()).hexdigest()
    assert (result.exit_code, stdout, result.stderr) == (entry["exit_code"], entry["stdout"], entry["stderr"])


def test_the_goldens_cover_every_code_and_json_shape() -> None:
    """The goldens hold each finding code in a --json document, so each evidence shape is compared."""
    from sse_inspect.checks import CODES

    found = {
        f["code"]
        for e in GOLDEN
        if e["args"][:2] == ["check", "--json"] and not e["stdout"].startswith("sha256:")  # a big one is kept as its hash
        for c in json.loads(e["stdout"])["captures"]
        for f in c.get("findings", [])
    }
    assert found == set(CODES)
