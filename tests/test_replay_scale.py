"""`sse-inspect replay --instant` piped (plain text) grows with the stream, not its square.

Issue 17 measured 0.42 / 26 / >300 s for 1k / 10k / 100k events when the whole answer was rebuilt
after every chunk; `Playback` now hands out only what each chunk added (its own tests count the
work). This is the same promise kept by the command itself, as a ratio of CPU time."""

from __future__ import annotations

import time
from pathlib import Path

from click.testing import CliRunner

from sse_inspect.cli import cli

from .huge import write_openai_capture


def _cpu(*args: str) -> float:
    """The least CPU time of two runs of `sse-inspect ARGS` (in this process, stdout piped)."""
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        result = CliRunner().invoke(cli, list(args))
        best = min(best, time.process_time() - started)
        assert result.exit_code == 0, result.output
    return best


def test_piped_instant_replay_time_grows_with_the_stream(tmp_path: Path) -> None:
    """10 times the events (1,000 and 10,000) takes well under 30 times as long (the rebuilt answer: 100 times)."""
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    text = write_openai_capture(small, 1_000 * 190)
    assert write_openai_capture(big, 10_000 * 190) > 9 * text
    t_small = _cpu("replay", "--instant", str(small))
    t_big = _cpu("replay", "--instant", str(big))
    assert t_big < 30 * t_small, (t_small, t_big)
