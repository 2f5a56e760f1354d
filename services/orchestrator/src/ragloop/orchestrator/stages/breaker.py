"""A circuit breaker per stage: a stage that cannot be reached fails calls at once instead of
letting every request wait for its own connection attempt.

closed → (``failures`` unreachable calls in a row) → open: every call fails at once for
``cooldown_s`` → half-open: one call goes through as a probe while the others still fail at
once → the probe reached the stage: closed; it did not: open again for another cool-down.

Only "unreachable" opens the circuit. A stage that answered — even with an error, or too slowly
for a deadline — is up, so those outcomes never count against it; nor does a call that failed
on one replica while another is ready (calls.py), so the circuit is the whole stage's. Pure
logic: no gRPC, no I/O; the caller reports each call's outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class Outcome(Enum):
    REACHED = "reached"  # the stage answered, successfully or with its own error
    UNREACHABLE = "unreachable"  # no connection, or the stage said it cannot serve
    UNDECIDED = "undecided"  # cancelled or timed out: says nothing about the stage


class State(Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class Permit:
    """A call let through; ``probe``: the one call of a half-open circuit."""

    probe: bool = False


@dataclass(frozen=True)
class Refusal:
    """Why a call was not let through, for its error message."""

    failures: int
    retry_in_s: float
    last_error: str


class CircuitBreaker:
    """Not locked: every method runs to completion on the event loop."""

    def __init__(
        self,
        failures: int,
        cooldown_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1 or cooldown_s <= 0:
            raise ValueError("a circuit breaker needs failures >= 1 and cooldown_s > 0")
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._open = False
        self._failures = 0  # unreachable calls in a row
        self._opened_at = 0.0
        self._probing = False
        self._last_error = ""

    @property
    def state(self) -> State:
        if not self._open:
            return State.CLOSED
        if self.clock() - self._opened_at >= self.cooldown_s:
            return State.HALF_OPEN
        return State.OPEN

    def admit(self) -> Permit | Refusal:
        """Ask to make a call: a Permit lets it through (report its outcome with
        :meth:`record`), a Refusal says to fail it at once."""
        state = self.state
        if state is State.CLOSED:
            return Permit()
        if state is State.HALF_OPEN and not self._probing:
            self._probing = True
            return Permit(probe=True)
        retry_in = max(0.0, self._opened_at + self.cooldown_s - self.clock())
        return Refusal(self._failures, retry_in, self._last_error)

    def record(self, permit: Permit, outcome: Outcome, error: str = "") -> None:
        """The outcome of a call that :meth:`admit` let through."""
        if permit.probe:
            self._probing = False
        if outcome is Outcome.REACHED:  # whichever call it was: the stage is there
            self._open = False
            self._failures = 0
        elif outcome is Outcome.UNREACHABLE:
            self._failures += 1
            self._last_error = error
            if permit.probe or (not self._open and self._failures >= self.threshold):
                self._open = True
                self._opened_at = self.clock()
        # UNDECIDED changes nothing; a half-open circuit lets the next call probe.
