"""Issue 17, item 13: the `events` table is printed as the capture is read, a batch of rows at a
time, in memory that does not grow with the number of events; a short capture looks as it did."""

from __future__ import annotations

import io
import math
import random
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console, JustifyMethod, OverflowMethod
from rich.table import Table
from rich.text import Text

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


# -- Rows: rich's table layout, line for line, at a fraction of its cost ---------------------

_SHAPES = ["0", "12", "message_start", "a b", "x" * 40, "word " * 30, "tok" * 60 + " end", "café " * 12,
           "漢字" * 15, "emoji 🎉🎉 " * 6, "  lead and trail  ", "", "…", "a" * 7 + " " + "b" * 70]  # fmt: skip


def _random_rows(rng: random.Random, n: int, columns: int) -> list[tuple[list[Text], str]]:
    rows = []
    for _ in range(n):
        cells = [Text(rng.choice(_SHAPES), style=rng.choice(["", "red", "bold green"])) for _ in range(columns)]
        rows.append((cells, rng.choice(["", "", "yellow"])))
    return rows


def _columns(rng: random.Random, n: int) -> list[_render.Column]:
    justify: list[JustifyMethod] = ["left", "right"]
    overflow: list[OverflowMethod] = ["fold", "ellipsis"]
    return [_render.Column(rng.choice(["#", "type", "a long header"]), rng.choice(justify),
                           rng.choice(["", "cyan", "dim"]), rng.choice(overflow), rng.choice([None, 3, 12]))  # fmt: skip
            for _ in range(n)]


def _printed(renderable: object, width: int, color: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=color, color_system="truecolor" if color else None)
    console.print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("seed", range(40))
def test_rows_print_what_a_rich_table_prints(seed: int) -> None:
    """Random columns and cells (wide characters, long words, spaces, styles, row styles) at random
    widths: the same bytes as rich's Table, with colours and without."""
    rng = random.Random(seed)
    columns = _columns(rng, rng.randint(1, 7))
    rows = _random_rows(rng, rng.randint(0, 12), len(columns))
    header = rng.random() < 0.8
    table = Table(box=None, header_style="bold", pad_edge=False, show_header=header)
    for c in columns:
        table.add_column(c.header, justify=c.justify, style=c.style, overflow=c.overflow, min_width=c.min_width)
    fast = _render.Rows(columns, header=header)
    for cells, style in rows:
        table.add_row(*cells, style=style)
        fast.add_row(*cells, style=style)
    for width in (12, 40, rng.randint(20, 200)):
        for color in (False, True):
            assert _printed(fast, width, color) == _printed(table, width, color), (width, color)


@pytest.mark.parametrize("seed", range(10))
def test_without_the_layout_rule_it_borrows_rows_fall_back_to_a_rich_table(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Rows` takes its column widths from a private method of rich's Table: a rich without it gets the
    same output from a Table itself (slower), never an AttributeError."""
    rng = random.Random(seed)
    columns = _columns(rng, rng.randint(1, 7))
    fast = _render.Rows(columns, header=rng.random() < 0.8)
    for cells, style in _random_rows(rng, rng.randint(0, 12), len(columns)):
        fast.add_row(*cells, style=style)
    widths = [(w, color) for w in (12, 40, rng.randint(20, 200)) for color in (False, True)]
    expected = [_printed(fast, w, color) for w, color in widths]
    monkeypatch.setattr(_render, "_LAYOUT_RULE", "_a_name_a_later_rich_may_give_it")
    assert [_printed(fast, w, color) for w, color in widths] == expected


def _capture_of(path: Path, events: int) -> Path:
    write_openai_capture(path, events * 200)
    return path


def _table_seconds(path: Path, *, rich_table: bool = False, times: int = 3) -> float:
    """The fastest of `times` runs of `events PATH` in this process (its output thrown away); with
    `rich_table`, each batch is drawn by rich's own Table, as it was before `Rows`."""
    best = math.inf
    for _ in range(times):
        out = Console(file=io.StringIO(), width=100)
        table = _render.EventsTable(out)
        if rich_table:
            table.console = _RichTableConsole(out)  # type: ignore[assignment]
        start = time.perf_counter()
        analyze(load_capture(path), keep=False, rebuild=False, observers=[table])
        best = min(best, time.perf_counter() - start)
    return best


class _RichTableConsole:
    """A console that prints a `Rows` as rich's Table would have drawn it (the slow path, for comparison)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def print(self, rows: _render.Rows) -> None:
        table = Table(box=None, header_style="bold", pad_edge=False, show_header=rows.header)
        for c in rows.columns:
            table.add_column(c.header, justify=c.justify, style=c.style, overflow=c.overflow, min_width=c.min_width)
        for cells, _, style in rows.rows:
            table.add_row(*cells, style=style)
        self.console.print(table)


def test_the_events_table_is_linear_and_much_faster_than_rich_tables(tmp_path: Path) -> None:
    """10x the events takes well under 30x the time, and a table is drawn several times faster than
    rich's Table drew it (about 12x on an idle machine: 2 ms a row before, 0.17 ms now)."""
    small, big = _capture_of(tmp_path / "small.jsonl", 1000), _capture_of(tmp_path / "big.jsonl", 10_000)
    t_small, t_big = _table_seconds(small), _table_seconds(big, times=1)
    assert t_big < 30 * t_small, (t_small, t_big)
    t_rich = _table_seconds(small, rich_table=True, times=1)
    assert t_rich > 4 * t_small, (t_small, t_rich)
