"""A release: what a hop let through at once. The value the timing check and the timing diff share.

A release is arrivals each within a few milliseconds of the one before (one flush of a buffer may
reach a recorder as several reads). Two places find releases, and each extends `Release` with what
it counts: the timing check among one capture's chunks (`checks/timing.py`, `ChunkRelease`: the
silence before it, its chunks, bytes and text events), and the timing diff among the events a hop
held (`_diff.py`, `HeldRelease`: the held events it brought).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Release"]


@dataclass(frozen=True, slots=True)
class Release:
    """When a release began and how long it took to come through."""

    t: float
    """When its first arrival came, in seconds on the recording's clock."""
    span: float
    """Seconds from its first arrival to its last."""
