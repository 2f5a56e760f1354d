"""The stage circuit breaker's states, with a clock the test moves."""

from __future__ import annotations

import pytest

from ragloop.orchestrator.stages.breaker import CircuitBreaker, Outcome, Permit, Refusal, State


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def breaker(clock: Clock, failures: int = 3, cooldown_s: float = 2.0) -> CircuitBreaker:
    return CircuitBreaker(failures, cooldown_s, clock=clock)


def fail(b: CircuitBreaker, times: int = 1, error: str = "connection refused") -> None:
    for _ in range(times):
        permit = b.admit()
        assert isinstance(permit, Permit)
        b.record(permit, Outcome.UNREACHABLE, error)


def test_stays_closed_below_the_threshold(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 2)
    assert b.state is State.CLOSED
    assert isinstance(b.admit(), Permit)


def test_opens_after_the_threshold_and_refuses_with_the_reason(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 3, "failed to connect to all addresses")
    assert b.state is State.OPEN
    clock.now += 0.5
    refusal = b.admit()
    assert isinstance(refusal, Refusal)
    assert refusal.failures == 3
    assert refusal.retry_in_s == pytest.approx(1.5)
    assert refusal.last_error == "failed to connect to all addresses"


def test_a_reached_call_resets_the_count(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 2)
    b.record(b.admit(), Outcome.REACHED)  # type: ignore[arg-type]
    fail(b, 2)
    assert b.state is State.CLOSED


@pytest.mark.parametrize("outcome", [Outcome.REACHED, Outcome.UNDECIDED])
def test_answers_and_deadlines_never_open_it(clock: Clock, outcome: Outcome) -> None:
    """A stage that answered with an error, or too slowly for a deadline, is up."""
    b = breaker(clock, failures=1)
    for _ in range(10):
        b.record(b.admit(), outcome)  # type: ignore[arg-type]
    assert b.state is State.CLOSED


def test_after_the_cooldown_one_probe_goes_through_and_the_rest_wait(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 3)
    clock.now += 2.0
    assert b.state is State.HALF_OPEN
    probe = b.admit()
    assert probe == Permit(probe=True)
    assert isinstance(b.admit(), Refusal)  # while the probe is out
    b.record(probe, Outcome.REACHED)  # type: ignore[arg-type]
    assert b.state is State.CLOSED
    assert b.admit() == Permit(probe=False)


def test_a_failed_probe_opens_it_for_another_cooldown(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 3)
    clock.now += 2.0
    probe = b.admit()
    b.record(probe, Outcome.UNREACHABLE, "still down")  # type: ignore[arg-type]
    assert b.state is State.OPEN
    refusal = b.admit()
    assert isinstance(refusal, Refusal) and refusal.retry_in_s == pytest.approx(2.0)
    assert refusal.last_error == "still down"
    clock.now += 2.0
    assert b.admit() == Permit(probe=True)


def test_an_undecided_probe_lets_the_next_call_probe(clock: Clock) -> None:
    b = breaker(clock)
    fail(b, 3)
    clock.now += 2.0
    b.record(b.admit(), Outcome.UNDECIDED)  # type: ignore[arg-type]  e.g. the caller gave up
    assert b.state is State.HALF_OPEN
    assert b.admit() == Permit(probe=True)


def test_a_late_answer_of_an_earlier_call_closes_it(clock: Clock) -> None:
    """A call let through before the circuit opened reaches the stage: it is up again."""
    b = breaker(clock)
    early = b.admit()
    fail(b, 3)
    b.record(early, Outcome.REACHED)  # type: ignore[arg-type]
    assert b.state is State.CLOSED


def test_late_failures_do_not_extend_an_open_circuit(clock: Clock) -> None:
    b = breaker(clock)
    early = [b.admit() for _ in range(2)]
    fail(b, 3)
    clock.now += 1.5
    for permit in early:
        b.record(permit, Outcome.UNREACHABLE)  # type: ignore[arg-type]
    clock.now += 0.5
    assert b.state is State.HALF_OPEN


@pytest.mark.parametrize(("failures", "cooldown_s"), [(0, 1.0), (1, 0.0)])
def test_refuses_settings_that_cannot_work(failures: int, cooldown_s: float) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failures, cooldown_s)
