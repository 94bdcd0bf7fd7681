"""The terminal arrival timeline: bars per time column, burst / first-token / end marks, an axis, a legend."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console

from sse_inspect import Capture, capture_from_body, check_capture, dump_capture, parse_rechunk_spec
from sse_inspect.cli import cli
from sse_inspect.cli._render import Arrivals, Timeline, timeline

from .checks import timelines as T


def render(capture: Capture, width: int = 80, *, dialect: str | None = None, terminal: bool = False) -> list[str]:
    report = check_capture(capture, dialect=dialect)
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=terminal, color_system="standard" if terminal else None).print(
        timeline(report.analysis, report)
    )
    return out.getvalue().splitlines()


def test_a_burst_is_marked_where_the_tall_bar_is() -> None:
    bars, marks, axis, legend = render(T.burst_after_silence())
    assert bars.startswith("│") and bars.endswith(" 3800 B")
    frame = bars.rindex("│")
    burst = bars.index("█")  # the 40 held events: the tallest column
    assert marks.index("▲") == burst
    assert set(marks[marks.index("─") : burst]) == {"─"}  # the 2 s it was held
    assert marks.index("│") == 1 + int(0.4 / T.burst_after_silence().duration * (frame - 1))  # first token at 0.4 s
    assert marks.rstrip()[-1] == "✔" and len(marks.rstrip()) == frame + 1  # the end, under the closing frame
    assert axis.split()[0] == "0" and axis.endswith("6.916 s")
    assert legend.startswith("✔ data: [DONE] at 6.915 s · ▲ 40 events held 2.000 s · │ first token 400 ms")


def test_it_follows_the_console_width_in_four_plain_lines() -> None:
    for width in (40, 60, 80, 120, 200):
        lines = render(T.burst_after_silence(), width)
        assert len(lines) == 4
        assert all(cell_len(line) <= width for line in lines), (width, lines)
        assert width - 3 <= len(lines[0]) <= width  # the bars fill what the scale (up to 10 columns) leaves
        assert "\x1b" not in "".join(lines) and "…" not in lines[3]  # the legend drops what does not fit
    assert len(render(T.steady(), 200)[0]) > len(render(T.steady(), 60)[0])


def test_on_a_terminal_it_is_styled() -> None:
    assert "\x1b[" in "".join(render(T.burst_after_silence(), terminal=True))


def test_a_missing_end_marker_and_a_dialect_without_one() -> None:
    _, marks, _, legend = render(T.paced(T.openai_events(20, done=False)))
    assert marks.rstrip().endswith("✘") and legend.startswith("✘ no data: [DONE]")
    _, marks, _, legend = render(T.paced(T.openai_events(20)), dialect="generic")
    assert marks.rstrip().endswith("?") and legend.startswith("? no end marker in generic")


def test_a_long_silence_is_drawn() -> None:
    bars, marks, _, legend = render(T.silent_gap())
    assert "╌" * 20 in marks and "·" * 20 in bars
    assert "╌ silent 45.0 s" in legend


def test_a_steady_stream_has_no_burst_mark() -> None:
    _, marks, _, legend = render(T.steady())
    assert "▲" not in marks and "─" not in marks and "▲" not in legend


def test_no_timeline_without_times() -> None:
    untimed = capture_from_body(b"".join(T.openai_events(5)))
    assert render(untimed) == ["no timeline: untimed capture"]


def test_show_draws_it_with_the_bursts_check_found(tmp_path: Path) -> None:
    path = tmp_path / "burst.jsonl"
    path.write_text(dump_capture(T.burst_after_silence()))
    result = CliRunner().invoke(cli, ["show", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("│") and line.endswith(" 3800 B"))
    assert "▲" in lines[at + 1] and lines[at + 3].startswith("✔ data: [DONE]")
    assert "\x1b" not in result.stdout


def test_a_re_cut_is_drawn_as_it_arrives() -> None:
    """A re-cut chunk arrives when the original chunk holding its last byte did: `whole` is one bar, at the end."""
    capture = T.steady(n=100)
    for spec, columns in (("whole", 1), ("original", None)):
        report = check_capture(capture, rechunk=parse_rechunk_spec(spec))
        a = report.analysis
        bars = Timeline(a, report, Arrivals.of(a.chunks)).lines(80)[0].plain
        inside = bars[1 : bars.rindex("│")]
        filled = [i for i, c in enumerate(inside) if c != "·"]
        if columns == 1:
            assert len(filled) == 1 and filled[0] == len(inside) - 1 and a.timing.chunks == 1
            assert a.timing.ttfb == capture.chunks[-1].t and a.timing.max_gap == a.timing.ttfb
        else:
            assert len(filled) > 40 and a.timing.chunks == len(capture.chunks)
        out = io.StringIO()
        Console(file=out, width=80).print(timeline(a, report))  # without arrivals: the re-cut chunks
        assert out.getvalue().splitlines()[0] == bars
