"""What the launcher does when one of its processes exits: start it again — the same command on
the same ports — after a wait that doubles with each recent crash (capped), say when it is back
(its readiness probe passes again), and give up on a process that keeps crashing.

Pure logic: the processes, their readiness probes and the clock are passed in, and nothing here
sleeps. The launcher's loop calls :meth:`Supervisor.tick` a few times a second and prints the
events it returns, so a stop signal is never kept waiting by a restart's backoff.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol


class Supervised(Protocol):
    """What the supervisor needs of a process (``processes.ChildProcess`` has it)."""

    name: str
    log_path: Path

    @property
    def running(self) -> bool: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def exit_status(self) -> str: ...

    def start(self) -> None: ...

    def kill(self) -> None: ...


@dataclass(frozen=True)
class RestartPolicy:
    first_delay_s: float = 0.5
    max_delay_s: float = 10.0
    # A process that exits this many times within window_s is not started again. With the
    # delays above, a process that crashes as soon as it starts reaches it after 25.5 s of
    # delays plus its start-up times; one that runs for minutes between crashes never does.
    crash_limit: int = 7
    window_s: float = 120.0
    ready_timeout_s: float = 180.0  # a restarted process not ready by then counts as a crash

    def __post_init__(self) -> None:
        if self.first_delay_s <= 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError("a restart policy needs 0 < first_delay_s <= max_delay_s")
        if self.crash_limit < 1 or self.window_s <= 0 or self.ready_timeout_s <= 0:
            raise ValueError("a restart policy needs crash_limit >= 1 and positive durations")

    def delay_s(self, recent_crashes: int) -> float:
        """The wait before starting a process again after its ``recent_crashes``-th crash
        within the window: the first delay, doubled for each earlier one, at most the cap."""
        return min(self.max_delay_s, self.first_delay_s * 2.0 ** max(0, recent_crashes - 1))


class EventKind(Enum):
    EXITED = "exited"  # and will be started again
    BACK = "back"  # started again and ready
    GAVE_UP = "gave_up"  # crashed too often: left stopped


@dataclass(frozen=True)
class Event:
    kind: EventKind
    name: str
    message: str


class Phase(Enum):
    UP = "up"
    WAITING = "waiting"  # exited; started again at `due`
    STARTING = "starting"  # started again; back once ready, a crash if not ready by `due`
    GIVEN_UP = "given_up"


@dataclass
class _Watch:
    process: Supervised
    ready: Callable[[], bool]
    phase: Phase = Phase.UP
    due: float = 0.0
    down_since: float = 0.0
    crashes: deque[float] = field(default_factory=deque)  # within the policy's window


class Supervisor:
    """Watches processes that are running and ready when it is made."""

    def __init__(
        self,
        processes: Sequence[Supervised],
        ready: Mapping[str, Callable[[], bool]],
        policy: RestartPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy or RestartPolicy()
        self.clock = clock
        self._watches = [_Watch(p, ready[p.name]) for p in processes]

    def phase(self, name: str) -> Phase:
        return next(w.phase for w in self._watches if w.process.name == name)

    def tick(self) -> list[Event]:
        """Look at every process once: notice exits, start what is due, report what is back."""
        events = [self._step(watch) for watch in self._watches]
        return [event for event in events if event is not None]

    def _step(self, watch: _Watch) -> Event | None:
        process = watch.process
        if watch.phase is Phase.UP:
            if process.running:
                return None
            watch.down_since = self.clock()
            return self._crashed(watch, process.exit_status)
        if watch.phase is Phase.WAITING:
            if self.clock() < watch.due:
                return None
            try:
                process.start()
            except OSError as exc:
                return self._crashed(watch, f"could not be started: {exc}")
            watch.phase, watch.due = Phase.STARTING, self.clock() + self.policy.ready_timeout_s
            return None
        if watch.phase is Phase.STARTING:
            if not process.running:
                return self._crashed(watch, f"{process.exit_status} while starting")
            if watch.ready():
                watch.phase = Phase.UP
                down_s = self.clock() - watch.down_since
                message = f"{process.name} is back (pid {process.pid}) after {down_s:.1f} s"
                return Event(EventKind.BACK, process.name, message)
            if self.clock() >= watch.due:
                process.kill()
                timeout = self.policy.ready_timeout_s
                return self._crashed(watch, f"not ready {timeout:.0f} s after a restart; killed")
        return None

    def _crashed(self, watch: _Watch, how: str) -> Event:
        now, policy, name = self.clock(), self.policy, watch.process.name
        watch.crashes.append(now)
        while watch.crashes[0] <= now - policy.window_s:
            watch.crashes.popleft()
        crashes = len(watch.crashes)
        log = f"see {watch.process.log_path}"
        if crashes >= policy.crash_limit:
            watch.phase = Phase.GIVEN_UP
            message = (
                f"{name} keeps crashing ({crashes} exits within {policy.window_s:.0f} s, the "
                f"last: {how}); not starting it again ({log})"
            )
            return Event(EventKind.GAVE_UP, name, message)
        delay = policy.delay_s(crashes)
        watch.phase, watch.due = Phase.WAITING, now + delay
        message = (
            f"{name} exited ({how}); starting it again in {delay:.1f} s "
            f"(exit {crashes} of {policy.crash_limit} allowed within {policy.window_s:.0f} s; "
            f"{log})"
        )
        return Event(EventKind.EXITED, name, message)
