"""Deadline arithmetic of one query's time budget.

The budget covers the whole query, answer included. The rounds (retrieve, grade, rewrite) must
finish ``reserve_s`` before it ends, so that generation always keeps that slice of it; the
reserve is at most half the budget, so a small budget still leaves the rounds time to search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MAX_RESERVE_SHARE = 0.5
# gRPC and asyncio time a deadline each with its own clock and timer: a call that timed out this
# close to the deadline ran into the deadline (and not into a stage's own, shorter timeout).
DEADLINE_SLACK_S = 0.05


@dataclass(frozen=True)
class Budget:
    started: float  # time.monotonic()
    total_s: float
    reserve_s: float

    @classmethod
    def start(cls, total_s: float, generation_reserve_s: float) -> Budget:
        reserve_s = min(generation_reserve_s, total_s * MAX_RESERVE_SHARE)
        return cls(time.monotonic(), total_s, reserve_s)

    @property
    def rounds_deadline(self) -> float:
        """When the rounds must stop (a time.monotonic() value)."""
        return self.started + self.total_s - self.reserve_s

    @property
    def deadline(self) -> float:
        """When the query must be answered (a time.monotonic() value)."""
        return self.started + self.total_s

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000


def seconds_until(deadline: float) -> float:
    return deadline - time.monotonic()


def reached(deadline: float) -> bool:
    return seconds_until(deadline) <= DEADLINE_SLACK_S
