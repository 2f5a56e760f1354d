"""A stage that answers slowly (its model calls held) trips the deadlines of the calls waiting on
it — the orchestrator's stage timeout, or the query's own budget — and nothing else: the other
endpoints answer meanwhile, its circuit stays closed, and the next query after it speeds up is
answered at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from ragloop.local.launcher import Stack
from tests.reliability.conftest import QUESTION, STAGE_TIMEOUT_S
from tests.reliability.scripted_model import ScriptedModel
from tests.reliability.tally import Tally

pytestmark = pytest.mark.reliability

SLOW_QUERIES = 6  # more than the breaker's threshold (5): deadlines must not open the circuit
GRACE_S = 30.0


def post_query(base_url: str, body: dict[str, Any]) -> httpx.Response:
    timeout = float(body["time_budget_s"]) + GRACE_S  # past it, the request hung
    return httpx.post(f"{base_url}/v1/query", json=body, timeout=timeout)


@pytest.mark.parametrize(
    ("budget_s", "expected"),
    [
        # The rounds get half the budget, three stage timeouts: the call's deadline is the
        # stage timeout.
        (6 * STAGE_TIMEOUT_S, "stage_timeout"),
        (4, "budget"),  # the rounds' share of the budget (2 s) ends first
    ],
)
def test_a_slow_stage_trips_deadlines_not_the_service(
    fault_stack: Stack, scripted_model: ScriptedModel, tally: Tally, budget_s: int, expected: str
) -> None:
    url = fault_stack.config.base_url
    body = {"query": QUESTION, "time_budget_s": budget_s}
    with (
        scripted_model.hold("grader") as held,
        ThreadPoolExecutor(SLOW_QUERIES) as pool,
    ):
        slow = [pool.submit(post_query, url, body) for _ in range(SLOW_QUERIES)]
        assert held.wait_for_arrivals(1, timeout_s=30), "no grading call reached the model"
        # Meanwhile the rest of the service answers.
        assert httpx.get(f"{url}/v1/collections", timeout=10).status_code == 200
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200
        try:
            answers = [future.result() for future in slow]
        except httpx.TimeoutException:
            tally.hung_requests += 1
            raise
    tally.fault_checks += 1

    for response in answers:
        if expected == "stage_timeout":
            assert response.status_code == 504, response.text
            error = response.json()["error"]
            assert (error["stage"], error["code"]) == ("grader", "stage_timeout")
            assert error["decision_path"] == ["retrieve", "grade"]
        else:
            assert response.status_code == 200, response.text
            answer = response.json()
            assert answer["workflow"]["outcome"] == "budget_exhausted"
            grade = answer["workflow"]["node_executions"][-1]
            assert (grade["node"], grade["status"]) == ("grade", "error")
            assert not answer["grounded"]
    # Released, the grader is as fast as before; the deadlines did not open its circuit.
    after = post_query(url, {"query": QUESTION, "time_budget_s": 30})
    assert after.status_code == 200, after.text
    assert after.json()["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]
