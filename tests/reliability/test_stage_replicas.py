"""Per-call balancing over stage replicas: two and then three replicas of each model stage, each
its own process on 127.0.0.1 (as ``make run --replicas`` starts them), behind one orchestrator
process whose address settings list them, over the scripted chat model.

- Under load the calls of each stage spread over its replicas within ±20% of the mean (counted
  by each replica's own ``grpc_server_started_total``).
- A replica SIGKILLed while calls are held at it fails only the queries in flight on it (503 or
  502 naming the stage); the circuit breaker (threshold 2 here) does not open for the stage,
  queries keep being answered by the other replicas, and ``/readyz`` stays ready.
- Restarted, the replica is called again once it reports SERVING (how soon is printed: the
  target is 5 s).
- The launcher's supervisor restarts a killed replica by itself, and only it.

The figures (calls per replica, in-flight losses, recovery) are printed at the end (``-s``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from bench.loadgen import Ended, Load
from ragloop.local.launcher import Stack, process_name
from ragloop.local.processes import free_port
from ragloop.local.readiness import grpc_serving
from ragloop.local.supervisor import Event, EventKind
from tests.reliability.conftest import QUESTION, scripted_stack, wait_until
from tests.reliability.scripted_model import NOT_RELEVANT, ScriptedModel
from tests.reliability.tally import Tally

pytestmark = pytest.mark.reliability

MODEL_STAGES = ("grader", "rewriter", "generator")
BUDGET_S = 30
STAGE_TIMEOUT_S = 20
WAIT_S = 60.0  # longest wait for anything the test expects; reaching it fails the test
SPREAD = 0.2  # each replica's calls within ±20% of the mean
CALLS_PER_REPLICA = 12  # the spread is measured once every stage had this many per replica
PLAIN = {"query": QUESTION, "time_budget_s": BUDGET_S}
# Grading fails, so the rewriter is called too: grader twice, rewriter and generator once.
REWRITING = {"query": f"{QUESTION} {NOT_RELEVANT}", "max_rewrite_attempts": 1, "time_budget_s": 30}
# Two unreachable calls in a row would open a breaker that counted one replica's in-flight calls.
BREAKER_FAILURES = 2


@dataclass
class Figures:
    calls: dict[int, dict[str, list[int]]] = field(default_factory=dict)  # by replica count
    kills: list[str] = field(default_factory=list)  # one line per kill


@pytest.fixture(scope="module", params=[2, 3], ids=["2-replicas", "3-replicas"])
def replicated(
    request: pytest.FixtureRequest,
    scripted_model: ScriptedModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    count: int = request.param
    names = [process_name(stage, i) for stage in MODEL_STAGES for i in range(count)]
    with scripted_stack(
        scripted_model,
        tmp_path_factory.mktemp(f"replicas-{count}"),
        {"retriever": 0, **{name: free_port() for name in names}},
        env={
            "RAGLOOP_STAGE_CIRCUIT_FAILURES": str(BREAKER_FAILURES),
            # Calls are held while a replica is killed and the queries it failed are sent again.
            "RAGLOOP_STAGE_TIMEOUT_S": str(STAGE_TIMEOUT_S),
            # The support check's scored call looks like grading to the scripted model: off, a
            # hold at the grader holds the grader's calls only.
            "RAGLOOP_GENERATOR_SUPPORT_THRESHOLD": "0",
        },
        replicas=dict.fromkeys(MODEL_STAGES, count),
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def figures() -> Iterator[Figures]:
    measured = Figures()
    yield measured
    for count, spread in measured.calls.items():
        print(f"\n{count} replicas of each model stage, calls per replica:")
        for stage, calls in spread.items():
            mean = sum(calls) / len(calls)
            worst = max(abs(c - mean) / mean for c in calls)
            print(f"  {stage}: {calls} (mean {mean:.1f}, farthest from it {worst:.0%})")
    for line in measured.kills:
        print(line)


def replicas(stack: Stack, stage: str) -> list[str]:
    return [r.name for r in stack.config.stage_replicas(stage)]


def in_flight(stack: Stack, names: list[str]) -> list[int]:
    return [started - handled for started, handled in (stack.served_calls(n) for n in names)]


def stage_counts(stack: Stack, stage: str) -> list[int]:
    return [stack.served_calls(name)[0] for name in replicas(stack, stage)]


def test_calls_spread_over_the_replicas_within_20_percent(
    replicated: Stack, figures: Figures, tally: Tally
) -> None:
    count = len(replicas(replicated, "grader"))
    before = {stage: stage_counts(replicated, stage) for stage in MODEL_STAGES}

    def calls() -> dict[str, list[int]]:
        now = {stage: stage_counts(replicated, stage) for stage in MODEL_STAGES}
        return {s: [a - b for a, b in zip(now[s], before[s], strict=True)] for s in MODEL_STAGES}

    with Load(replicated.config.base_url, [PLAIN, REWRITING], clients=2 * count) as load:
        enough = wait_until(
            lambda: min(min(c) for c in calls().values()) >= CALLS_PER_REPLICA, WAIT_S, 0.5
        )
    spread = calls()
    results = load.ended()
    tally.hung_requests += sum(e.hung for e in results)
    figures.calls[count] = spread

    assert enough, f"too few calls after {WAIT_S:.0f} s: {spread}"
    assert [e for e in results if e.status != 200] == []
    for stage, per_replica in spread.items():
        mean = sum(per_replica) / count
        assert all(abs(c - mean) <= SPREAD * mean for c in per_replica), (stage, per_replica)


@pytest.mark.parametrize("stage", ["grader", "generator"])
def test_a_killed_replica_loses_only_its_calls_in_flight_and_is_used_again_once_back(
    replicated: Stack,
    scripted_model: ScriptedModel,
    figures: Figures,
    tally: Tally,
    stage: str,
) -> None:
    names = replicas(replicated, stage)
    victim = names[-1]
    clients = 2 * len(names)  # about two calls in flight on each replica
    url = replicated.config.base_url
    with Load(url, [PLAIN], clients=clients) as load:
        assert load.wait_for(lambda e: e.status == 200, timeout_s=WAIT_S), load.ended()
        with scripted_model.hold(stage):
            # Every client's query waits at the stage: none is anywhere else.
            all_held = wait_until(lambda: sum(in_flight(replicated, names)) == clients, WAIT_S)
            assert all_held, in_flight(replicated, names)
            on_victim = in_flight(replicated, [victim])[0]
            killed_at = time.monotonic()
            replicated.kill(victim)
            # The queries that failed were sent again, and reached the other replicas.
            rerouted = wait_until(lambda: sum(in_flight(replicated, names[:-1])) == clients, WAIT_S)
            ready_meanwhile = httpx.get(f"{url}/readyz", timeout=10).status_code
        answered_after = load.wait_for(
            lambda e: e.started > killed_at and e.status == 200, count=clients, timeout_s=WAIT_S
        )
        replicated.child(victim).start()
        address = replicated.replica_address(victim)
        assert wait_until(lambda: grpc_serving(address), WAIT_S, 0.05), f"{victim} not back"
        serving_at = time.monotonic()
        used_again = wait_until(lambda: replicated.served_calls(victim)[0] > 0, WAIT_S, 0.05)
        recovery_s = time.monotonic() - serving_at
    results = load.ended()
    tally.hung_requests += sum(e.hung for e in results)
    tally.fault_checks += 1
    failed = [e for e in results if e.status != 200]
    figures.kills.append(
        f"{victim} killed with {on_victim} calls in flight on it: {len(failed)} queries failed of "
        f"{len(results)}; called again {recovery_s:.2f} s after SERVING"
    )

    assert on_victim >= 1, "no call was in flight on the replica killed"
    assert not [e for e in results if e.hung], "requests hung"
    assert len(failed) == on_victim, failed
    assert all(named(e, stage) and e.in_flight_at(killed_at) for e in failed), failed
    assert rerouted, f"the queries sent again did not reach the other {stage} replicas"
    assert ready_meanwhile == 200, "the orchestrator was not ready with one replica down"
    assert answered_after, f"too few answers after the kill: {results[-5:]}"
    # How soon is a figure (docs/reliability.md, target 5 s), not asserted: a timed assertion
    # would fail on a busy machine, and gRPC's reconnect backoff (at most 2 s) bounds it.
    assert used_again, f"{victim} not called again within {WAIT_S:.0f} s of SERVING"


def named(ended: Ended, stage: str) -> bool:
    """A failure that says which stage could not answer the call."""
    return ended.status in (502, 503) and ended.stage == stage and stage in ended.message


def test_the_launchers_supervisor_restarts_a_killed_replica_alone(replicated: Stack) -> None:
    """What `make run --replicas` does when one replica exits: that replica, and only it, is
    started again on its port and reported back."""
    supervisor = replicated.supervisor()
    victim = replicas(replicated, "grader")[-1]
    replicated.kill(victim)
    events: list[Event] = []

    def back() -> bool:
        events.extend(supervisor.tick())
        return any(e.kind is EventKind.BACK for e in events)

    assert wait_until(back, WAIT_S), events
    assert [(e.kind, e.name) for e in events] == [
        (EventKind.EXITED, victim),
        (EventKind.BACK, victim),
    ]
    assert grpc_serving(replicated.replica_address(victim))
