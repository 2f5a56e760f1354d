"""The launcher's supervisor: restarts with capped, doubling delays, readiness before "back", and
giving up on a process that keeps crashing — over fake processes and a clock the test moves."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragloop.local.cli import supervise
from ragloop.local.launcher import StackConfig
from ragloop.local.processes import ChildProcess
from ragloop.local.supervisor import Event, EventKind, Phase, RestartPolicy, Supervisor

POLICY = RestartPolicy(
    first_delay_s=0.5, max_delay_s=10.0, crash_limit=4, window_s=60.0, ready_timeout_s=30.0
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeProcess:
    name: str
    running: bool = True
    ready: bool = True  # what its readiness probe answers while it runs
    starts: int = 0
    start_error: OSError | None = None
    exit_status: str = "running"
    log_path: Path = field(default_factory=lambda: Path("logs/x.log"))

    @property
    def pid(self) -> int:
        return 100 + self.starts

    def start(self) -> None:
        if self.start_error is not None:
            raise self.start_error
        self.starts += 1
        self.running = True
        self.exit_status = "running"

    def kill(self) -> None:
        self.crash("killed by SIGKILL")

    def crash(self, how: str = "killed by SIGKILL") -> None:
        self.running = False
        self.exit_status = how

    def probe(self) -> bool:
        return self.running and self.ready


@dataclass
class Supervised:
    clock: Clock
    processes: dict[str, FakeProcess]
    supervisor: Supervisor

    def __getitem__(self, name: str) -> FakeProcess:
        return self.processes[name]

    def after(self, seconds: float) -> list[Event]:
        self.clock.now += seconds
        return self.supervisor.tick()


def supervised(*names: str, policy: RestartPolicy = POLICY) -> Supervised:
    clock = Clock()
    processes = {name: FakeProcess(name, log_path=Path(f"logs/{name}.log")) for name in names}
    probes = {name: process.probe for name, process in processes.items()}
    supervisor = Supervisor(list(processes.values()), probes, policy, clock=clock)
    return Supervised(clock, processes, supervisor)


def kinds(events: list[Event]) -> list[tuple[EventKind, str]]:
    return [(event.kind, event.name) for event in events]


def test_the_delay_doubles_from_the_first_up_to_the_cap() -> None:
    policy = RestartPolicy(first_delay_s=0.5, max_delay_s=10.0)
    assert [policy.delay_s(n) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 10, 10]


@pytest.mark.parametrize(
    "settings",
    [
        {"first_delay_s": 0},
        {"first_delay_s": 2, "max_delay_s": 1},
        {"crash_limit": 0},
        {"window_s": 0},
        {"ready_timeout_s": -1},
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RestartPolicy(**settings)


def test_nothing_happens_while_every_process_runs() -> None:
    s = supervised("grader", "generator")
    assert s.after(5) == []
    assert s["grader"].starts == 0


def test_an_exit_is_reported_then_restarted_after_the_first_delay_and_back_once_ready() -> None:
    s = supervised("grader", "generator")
    s["grader"].crash()
    [exited] = s.after(0.25)
    assert exited.kind is EventKind.EXITED and exited.name == "grader"
    assert "killed by SIGKILL" in exited.message and "again in 0.5 s" in exited.message
    assert "logs/grader.log" in exited.message
    assert s.after(0.25) == [] and s["grader"].starts == 0  # still waiting
    s["grader"].ready = False
    assert s.after(0.25) == [] and s["grader"].starts == 1  # started, not ready yet
    assert s.supervisor.phase("grader") is Phase.STARTING
    s["grader"].ready = True
    [back] = s.after(2.0)
    assert (back.kind, back.name) == (EventKind.BACK, "grader")
    assert back.message == "grader is back (pid 101) after 2.5 s"
    assert s["generator"].starts == 0  # the others were left alone


def test_the_delay_doubles_with_each_crash_within_the_window_and_resets_after_it() -> None:
    s = supervised("retriever")
    delays = []
    for _ in range(3):
        s["retriever"].crash()
        [exited] = s.after(0.01)
        delays.append(exited.message.split("again in ")[1].split(" s")[0])
        s.after(20)  # started
        assert kinds(s.after(0.01)) == [(EventKind.BACK, "retriever")]
    assert delays == ["0.5", "1.0", "2.0"]
    s.after(POLICY.window_s)  # the earlier crashes age out
    s["retriever"].crash()
    [exited] = s.after(0.01)
    assert "again in 0.5 s" in exited.message


def test_a_process_that_keeps_crashing_is_given_up_on_and_left_alone() -> None:
    s = supervised("rewriter", "orchestrator")
    events: list[Event] = []
    s["rewriter"].crash("exit code 1")
    for _ in range(20):  # crashes again each time it is started, before it is ready
        events += s.after(1.0)
        if s["rewriter"].running:
            s["rewriter"].crash("exit code 1")
    assert [e.kind for e in events] == [EventKind.EXITED] * 3 + [EventKind.GAVE_UP]
    gave_up = events[-1]
    assert gave_up.name == "rewriter"
    assert "keeps crashing (4 exits within 60 s" in gave_up.message
    assert "exit code 1 while starting" in gave_up.message
    assert s.supervisor.phase("rewriter") is Phase.GIVEN_UP
    starts = s["rewriter"].starts
    assert s.after(600) == [] and s["rewriter"].starts == starts
    assert s.supervisor.phase("orchestrator") is Phase.UP


def test_a_restart_that_never_gets_ready_is_killed_and_counts_as_a_crash() -> None:
    s = supervised("model-server")
    s["model-server"].crash()
    s.after(0.1)
    s["model-server"].ready = False
    assert s.after(1) == [] and s["model-server"].running
    [timed_out] = s.after(POLICY.ready_timeout_s)
    assert timed_out.kind is EventKind.EXITED
    assert "not ready 30 s after a restart; killed" in timed_out.message
    assert "again in 1.0 s" in timed_out.message  # the second crash
    assert not s["model-server"].running


def test_a_process_that_cannot_be_started_counts_as_a_crash() -> None:
    s = supervised("generator")
    s["generator"].crash()
    s.after(0.1)
    s["generator"].start_error = FileNotFoundError("no such file: llama-server")
    [failed] = s.after(1)
    assert failed.kind is EventKind.EXITED
    assert "could not be started: no such file: llama-server" in failed.message


# --- the launcher's loop -------------------------------------------------------------------


class ScriptedSupervisor:
    """Returns one scripted list of events per tick."""

    def __init__(self, ticks: list[list[Event]]) -> None:
        self.ticks: Iterator[list[Event]] = iter(ticks)

    def tick(self) -> list[Event]:
        return next(self.ticks, [])


@dataclass
class FakeStack:
    events: list[list[Event]]
    config: StackConfig = field(default_factory=StackConfig)

    def supervisor(self) -> ScriptedSupervisor:
        return ScriptedSupervisor(self.events)


def stop_after(ticks: int) -> Callable[[], bool]:
    asked = itertools.count()
    return lambda: next(asked) >= ticks


def event(kind: EventKind, name: str) -> Event:
    return Event(kind, name, f"{name} {kind.value}")


def test_a_stage_given_up_on_leaves_the_launcher_serving(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragloop.local.cli.SUPERVISE_INTERVAL_S", 0)
    stack = FakeStack([[event(EventKind.EXITED, "grader")], [event(EventKind.GAVE_UP, "grader")]])
    assert supervise(stack, stop_after(3)) == 0  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert "warning: grader exited" in err
    assert "error: grader gave_up" in err
    assert "the grader stays down; the other processes keep serving" in err


def test_a_replica_given_up_on_leaves_its_calls_to_the_others(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragloop.local.cli.SUPERVISE_INTERVAL_S", 0)
    stack = FakeStack([[event(EventKind.GAVE_UP, "grader-2")]], StackConfig(replicas={"grader": 2}))
    assert supervise(stack, stop_after(3)) == 0  # type: ignore[arg-type]
    assert "the grader-2 stays down; the other grader replicas take its calls" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("name", ["model-server", "model-server-2", "orchestrator"])
def test_giving_up_on_the_model_server_or_the_orchestrator_stops_the_run(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragloop.local.cli.SUPERVISE_INTERVAL_S", 0)
    stack = FakeStack([[event(EventKind.BACK, "grader"), event(EventKind.GAVE_UP, name)]])
    assert supervise(stack, stop_after(10)) == 1  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert "grader back" in out
    assert f"nothing answers without the {name}; stopping" in err


def test_a_child_process_says_how_it_ended(tmp_path: Path) -> None:
    log = tmp_path / "log"
    exits = ChildProcess("exits", [sys.executable, "-c", "raise SystemExit(3)"], log)
    sleeps = ChildProcess("sleeps", [sys.executable, "-c", "import time; time.sleep(60)"], log)
    assert exits.exit_status == "not started"
    exits.start()
    exits.wait_stopped(30)
    assert exits.exit_status == "exit code 3"
    sleeps.start()
    assert sleeps.exit_status == "running"
    sleeps.kill()
    assert sleeps.exit_status == "killed by SIGKILL"
