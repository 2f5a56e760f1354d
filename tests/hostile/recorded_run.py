"""Hypothesis settings shared by the generated hostile-input runs (REST and gRPC)."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings


def recorded_settings(examples: int) -> settings:
    """``examples`` cases, the same ones every run (derandomized, no example database), each
    sent once and tallied: never shrunk, and no per-case deadline (every call has its own
    timeout instead)."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
