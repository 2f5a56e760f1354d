"""Similarity threshold relaxation: a threshold per retrieval round, e.g. 0.65 → 0.50 → 0.35, so
that a query whose strict search finds too little is searched again less strictly."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

MAX_REWRITE_ATTEMPTS = 5
MAX_ROUNDS = MAX_REWRITE_ATTEMPTS + 1


def check_schedule(thresholds: Sequence[float], name: str) -> list[float]:
    """``thresholds`` if they are 1 to MAX_ROUNDS values in [0, 1] that never increase; else
    ValueError with a message naming ``name``."""
    values = list(thresholds)
    if not 1 <= len(values) <= MAX_ROUNDS:
        raise ValueError(
            f"{name} needs 1 to {MAX_ROUNDS} thresholds (one per round), got {len(values)}"
        )
    if any(not 0 <= value <= 1 for value in values):
        raise ValueError(f"{name}: every threshold must be between 0 and 1, got {values}")
    if any(later > earlier for earlier, later in pairwise(values)):
        raise ValueError(f"{name} relaxes the threshold: each value must be <= the one before")
    return values


def threshold_of_round(schedule: Sequence[float], round_number: int) -> float:
    """The threshold of round ``round_number`` (1-based); rounds past the schedule's end keep its
    last value."""
    return schedule[min(round_number, len(schedule)) - 1]
