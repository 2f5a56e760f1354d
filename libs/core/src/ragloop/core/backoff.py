"""Capped exponential backoff: how long to wait before each retry (no I/O, no dependencies)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2  # extra attempts after the first one
    backoff_s: float = 0.5  # wait before the first retry; doubled for every further one
    max_backoff_s: float = 8.0  # cap of one wait

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        return min(self.max_backoff_s, self.backoff_s * 2**retry)


NO_RETRIES = RetryPolicy(retries=0)
