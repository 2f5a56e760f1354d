"""The admission gate: how many queries run at once, and the Retry-After it suggests."""

from __future__ import annotations

import pytest

from ragloop.orchestrator.access.admission import MAX_RETRY_AFTER_S, AdmissionGate


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_admits_up_to_the_limit_then_refuses_and_counts() -> None:
    gate = AdmissionGate(2)
    assert gate.try_enter() and gate.try_enter()
    assert not gate.try_enter()
    assert (gate.inflight, gate.refused) == (2, 1)
    gate.leave(1.0)
    assert gate.try_enter()


async def test_a_slot_is_held_for_the_block_and_freed_after_an_error() -> None:
    clock = Clock()
    gate = AdmissionGate(1, clock=clock)
    with pytest.raises(RuntimeError):
        async with gate.admitted() as admitted:
            assert admitted
            async with gate.admitted() as second:
                assert not second
            clock.now += 8.0
            raise RuntimeError("the query failed")
    assert gate.inflight == 0
    assert gate.retry_after_s() == 8  # one slot, a query takes 8 s


def test_retry_after_is_a_slot_s_share_of_the_mean_duration() -> None:
    gate = AdmissionGate(4)
    assert gate.retry_after_s() == 1  # nothing measured yet
    for duration in (10.0, 10.0):
        gate.try_enter()
        gate.leave(duration)
    assert gate.retry_after_s() == 3  # ceil(10 / 4)
    assert "4 queries" in gate.message() and "retry in 3 s" in gate.message()


@pytest.mark.parametrize(("duration", "expected"), [(0.01, 1), (10_000.0, MAX_RETRY_AFTER_S)])
def test_retry_after_stays_between_one_second_and_a_minute(duration: float, expected: int) -> None:
    gate = AdmissionGate(1)
    gate.try_enter()
    gate.leave(duration)
    assert gate.retry_after_s() == expected


def test_needs_at_least_one_slot() -> None:
    with pytest.raises(ValueError):
        AdmissionGate(0)
