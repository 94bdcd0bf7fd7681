"""Opening a capture to stream through, with a progress bar while a big one is read.

Kept apart from the rich views so that `text` and `events --json` start without loading rich.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .._analysis import Observer
from .._capture import Chunk
from .._loading import CaptureStream, open_capture

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["PROGRESS_FROM", "reading"]

PROGRESS_FROM = 32 << 20
"""Captures of at least this many bytes show a progress bar while they are read (on a terminal)."""


@contextmanager
def reading(path: str, *, progress: bool = True) -> Iterator[tuple[CaptureStream, list[Observer]]]:
    """Open a capture to stream through, with a progress bar on stderr while a big one is read (unless not
    `progress`: a reading in the background, as the live page's reports, draws nothing over the views)."""
    with open_capture(path) as stream:
        if not progress or stream.size is None or stream.size < PROGRESS_FROM or not _maybe_terminal():
            yield stream, []  # no bar, and no rich loaded for it
            return
        from rich.progress import DownloadColumn, Progress

        from . import _render

        err = _render.console(stderr=True)
        if not err.is_terminal:
            yield stream, []
            return
        with Progress(*Progress.get_default_columns(), DownloadColumn(), console=err, transient=True) as bar:
            task = bar.add_task(f"reading {_render.markup(os.path.basename(path))}", total=stream.size)
            yield stream, [_ReadProgress(stream, bar, task)]


def _maybe_terminal() -> bool:
    """Whether stderr may be a terminal to rich: a tty, or one forced by rich's own variables
    (rich decides then). Asked first, so that piped runs of big captures do not load rich."""
    return sys.stderr.isatty() or bool(os.environ.get("FORCE_TERMINAL") or os.environ.get("TTY_COMPATIBLE"))


class _ReadProgress(Observer):
    """Moves a progress bar as the capture file is read (every 1024 chunks)."""

    def __init__(self, stream: CaptureStream, bar: Progress, task: TaskID) -> None:
        self.stream, self.bar, self.task = stream, bar, task
        self.chunks = 0

    def wire(self, chunk: Chunk) -> None:
        self.chunks += 1
        if self.chunks % 1024 == 0:  # asking the file where it is costs a system call
            self.bar.update(self.task, completed=self.stream.bytes_read)

    def wire_block(self, chunks: list[Chunk]) -> None:
        before = self.chunks
        self.chunks += len(chunks)
        if self.chunks // 1024 > before // 1024:  # asking the file where it is costs a system call
            self.bar.update(self.task, completed=self.stream.bytes_read)
