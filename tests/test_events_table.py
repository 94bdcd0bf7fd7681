"""Issue 17, item 13: the `events` table is printed as the capture is read, a batch of rows at a
time, in memory that does not grow with the number of events; a short capture looks as it did."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from sse_inspect import analyze, load_capture
from sse_inspect.cli import _render, cli

from .helpers import CORPUS
from .huge import measured, write_openai_capture


def test_rows_are_printed_a_batch_at_a_time_as_the_events_come(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    write_openai_capture(path, 1200 * 200)
    out = io.StringIO()
    table = _render.EventsTable(Console(file=out, width=100), comments=False)
    printed: list[int] = []  # how much had been printed when each event came

    class Watch(_render.Observer):
        def event(self, event: object, flags: object) -> None:
            printed.append(out.tell())
            assert len(table.rows) < table.BATCH

    analysis = analyze(load_capture(path), keep=False, rebuild=False, observers=[Watch(), table])
    n = analysis.timing.events
    assert n > 2 * table.BATCH
    assert printed[table.BATCH - 1] == 0 < printed[table.BATCH]  # the first batch was out before the next event
    assert printed[2 * table.BATCH - 1] < printed[2 * table.BATCH]
    rows = [re.match(r" *(\d+) +[\d.]+ m?s ", line) for line in out.getvalue().splitlines()]
    assert [int(r.group(1)) for r in rows if r] == list(range(n))
    assert out.getvalue().count(" offset") == 1  # one header


def test_batches_line_up(tmp_path: Path) -> None:
    """A column is never narrower than in the batches before: the `t` column never ends further left."""
    path = tmp_path / "many.jsonl"
    write_openai_capture(path, 1200 * 200)
    result = CliRunner().invoke(cli, ["events", str(path)], env={"COLUMNS": "100"})
    rows = [line for line in result.stdout.splitlines() if re.match(r" *\d+ +\d+ ms ", line)]
    assert len(rows) > _render.EventsTable.BATCH  # two batches (past t = 1 s the unit changes)
    ends = [line.index(" ms ") for line in rows]  # where the `t` column ends, row by row
    assert ends == sorted(ends)


def test_a_short_capture_is_one_table_as_before() -> None:
    result = CliRunner().invoke(cli, ["events", str(CORPUS / "cohere-chat-v2-text.sse")], env={"COLUMNS": "100"})
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "t", "type", "id", "data", "offset"]
    assert result.stdout.count("offset") == 1


@pytest.mark.e2e
def test_events_table_memory_is_flat(tmp_path: Path) -> None:
    """Four times the events, about the same peak: before, every event and every row was kept
    (about 6 KB an event: 18,000 more events took some 100 MB more)."""
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_openai_capture(small, 2000 * 200)
    write_openai_capture(big, 8000 * 200)
    code_small, _, err_small, peak_small = measured("events", small)
    code_big, _, err_big, peak_big = measured("events", big)
    assert code_small == code_big == 0, err_small + err_big
    assert peak_big - peak_small < 12 << 20, (peak_small, peak_big)
