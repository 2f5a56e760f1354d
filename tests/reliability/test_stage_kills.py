"""SIGKILL each stage process in turn while clients keep querying the real orchestrator process:
every request in flight ends with HTTP 503 naming the stage (or, if it was past that stage,
200) and none hangs; while the stage is dead its calls fail fast through the circuit breaker;
restarted, the stage answers again through the same orchestrator, which never restarts."""

from __future__ import annotations

import time

import pytest

from bench.loadgen import Ended, Load
from ragloop.local.launcher import Stack
from tests.reliability.conftest import QUESTION
from tests.reliability.scripted_model import NOT_RELEVANT, ScriptedModel
from tests.reliability.tally import Tally

pytestmark = pytest.mark.reliability

BUDGET_S = 30
WAIT_S = 60.0  # longest wait for anything the test expects; reaching it fails the test
FAILING_FAST = "failing fast"  # what the breaker's refusals say
BODIES = {
    # The rewriter is reached only when grading fails; one rewrite, then the loop answers.
    "rewriter": {"query": f"{QUESTION} {NOT_RELEVANT}", "max_rewrite_attempts": 1},
}


def body_for(stage: str) -> dict[str, object]:
    return {"query": QUESTION, "time_budget_s": BUDGET_S, **BODIES.get(stage, {})}


def kill_while_in_flight(stack: Stack, model: ScriptedModel, stage: str, load: Load) -> float:
    """SIGKILL ``stage`` once the load is answered, while a request is held at it (a model
    stage); the moment of the kill."""
    assert load.wait_for(lambda e: e.status == 200, timeout_s=WAIT_S), load.ended()
    if stage == "retriever":  # no model call to hold: killed under the running load
        killed_at = time.monotonic()
        stack.kill(stage)
        return killed_at
    with model.hold(stage) as held:
        assert held.wait_for_arrivals(1, timeout_s=WAIT_S), f"no call reached the {stage}"
        killed_at = time.monotonic()
        stack.kill(stage)
    return killed_at


@pytest.mark.parametrize("stage", ["retriever", "grader", "rewriter", "generator"])
def test_a_killed_stage_fails_requests_fast_naming_it_and_recovers_after_restart(
    fault_stack: Stack, scripted_model: ScriptedModel, tally: Tally, stage: str
) -> None:
    orchestrator = fault_stack.child("orchestrator")
    pid = orchestrator.pid
    with Load(fault_stack.config.base_url, [body_for(stage)], clients=2) as load:
        killed_at = kill_while_in_flight(fault_stack, scripted_model, stage, load)
        failed_fast = load.wait_for(
            lambda e: e.started > killed_at and FAILING_FAST in e.message, timeout_s=WAIT_S
        )
        fault_stack.restart(stage)
        restarted_at = time.monotonic()
        recovered = load.wait_for(
            lambda e: e.started > restarted_at and e.status == 200, count=2, timeout_s=WAIT_S
        )
    results = load.ended()
    tally.hung_requests += sum(e.hung for e in results)
    tally.fault_checks += 1

    assert not [e for e in results if e.hung], "requests hung"
    # Every answer is a success or names the killed stage as unavailable.
    assert not [e for e in results if not answered_or_named(e, stage)], results
    if stage != "retriever":  # (test_ingest_crash kills the retriever under a call for sure)
        in_flight = [e for e in results if e.in_flight_at(killed_at)]
        assert any(e.status == 503 for e in in_flight), f"none in flight failed: {in_flight}"
    assert failed_fast, "no request failed fast while the stage was down"
    assert recovered, f"no success after the {stage} restarted: {results[-5:]}"
    assert orchestrator.running and orchestrator.pid == pid, "the orchestrator restarted"


def answered_or_named(ended: Ended, stage: str) -> bool:
    if ended.status == 200:
        return True
    return (ended.status, ended.stage, ended.code) == (503, stage, "stage_unavailable") and (
        stage in ended.message
    )
