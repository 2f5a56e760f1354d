"""Per-request policy, time budgets and failure semantics of the REST API, over real HTTP and real
gRPC stage servers: 422s that say what is wrong, a budget that runs out mid-loop, a stage that is
down or hangs (503 naming it), and the request id from the client to the stages' log lines."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from ragloop.core.errors import InvalidInput
from ragloop.core.logging import RequestIdFilter
from ragloop.orchestrator.rest.request_ids import RequestIdMiddleware
from tests.service.http_helpers import serving_http
from tests.service.loop_stack_helpers import (
    RequestIdsSeen,
    closed_address,
    generator_spec,
    grader_spec,
    rest_over_stages,
    retriever_spec,
    rewriter_spec,
    silent_address,
    simple_stages,
)
from tests.sse_events import parse_events, without_keep_alives
from tests.unit.fakes import (
    DictGrader,
    RaisingGrader,
    ScriptedRetriever,
    ScriptedRewriter,
    StallingRetriever,
    StreamingEchoGenerator,
    doc,
)

PASS = (True, 0.9)
FAIL = (False, 0.2)
ENDPOINTS = ("/v1/query", "/v1/query/stream")


@pytest.fixture
async def api() -> AsyncIterator[httpx.AsyncClient]:
    async with (
        rest_over_stages(simple_stages()) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        yield client


# --- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        ({"time_budget_s": 0.5}, "time_budget_s", "greater than or equal to 1"),
        ({"time_budget_s": 601}, "time_budget_s", "less than or equal to 600"),
        ({"time_budget_s": "soon"}, "time_budget_s", "valid number"),
        ({"relax_similarity": "maybe"}, "relax_similarity", "valid boolean"),
        ({"similarity_thresholds": []}, "similarity_thresholds", "needs 1 to 6 thresholds"),
        (
            {"similarity_thresholds": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]},
            "similarity_thresholds",
            "needs 1 to 6 thresholds (one per round), got 7",
        ),
        ({"similarity_thresholds": [0.5, 1.5]}, "similarity_thresholds", "between 0 and 1"),
        ({"similarity_thresholds": [0.3, 0.5]}, "similarity_thresholds", "<= the one before"),
        (
            {"similarity_thresholds": [0.5], "similarity_threshold": 0.4},
            "body",
            "either similarity_threshold (the same in every round) or similarity_thresholds",
        ),
        (
            {"similarity_thresholds": [0.5], "relax_similarity": False},
            "body",
            "relax_similarity false contradicts similarity_thresholds",
        ),
        (
            {"relax_similarity": True, "similarity_threshold": 0.4},
            "body",
            "give similarity_thresholds to choose them, not similarity_threshold",
        ),
        ({"max_rewrite_attempts": 6}, "max_rewrite_attempts", "less than or equal to 5"),
        ({"top_k": 51}, "top_k", "less than or equal to 50"),
        ({"answer_instructions": " \n\t "}, "answer_instructions", "at least 1 character"),
        ({"answer_instructions": "x" * 501}, "answer_instructions", "at most 500 characters"),
    ],
)
async def test_each_invalid_policy_gets_a_422_saying_what_is_wrong(
    api: httpx.AsyncClient, fields: dict[str, Any], where: str, message: str
) -> None:
    for endpoint in ENDPOINTS:
        response = await api.post(endpoint, json={"query": "q", **fields})

        assert response.status_code == 422, (endpoint, response.text)
        (error,) = response.json()["detail"]
        assert error["loc"][-1] == where
        assert message in error["msg"]
        assert response.headers["x-request-id"]


async def test_a_valid_policy_is_applied(api: httpx.AsyncClient) -> None:
    response = await api.post(
        "/v1/query",
        json={"query": "q", "time_budget_s": 30, "similarity_thresholds": [0.6, 0.4]},
    )

    assert response.status_code == 200, response.text
    assert response.json()["workflow"]["outcome"] == "passed"


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_answer_instructions_reach_the_generator_and_no_other_stage(endpoint: str) -> None:
    retriever = ScriptedRetriever({"q": [doc("a")]})
    grader = DictGrader({"a": PASS})
    generator = StreamingEchoGenerator()
    stages = simple_stages(
        retriever=retriever_spec(retriever),
        grader=grader_spec(grader),
        generator=generator_spec(generator),
    )
    body = {"query": "q", "answer_instructions": " Answer in French. "}
    async with rest_over_stages(stages) as url, httpx.AsyncClient(timeout=60) as client:
        response = await client.post(f"{url}{endpoint}", json=body)

    assert response.status_code == 200, response.text
    (call,) = generator.calls
    assert (call.question, call.instructions) == ("q", "Answer in French.")
    assert retriever.queries == ["q"]
    assert [c.question for c in grader.calls] == ["q"]


# --- budget ------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_a_budget_spent_mid_loop_answers_from_what_passed(endpoint: str) -> None:
    """Round 1 passes b only (1/2); the rewritten query's retrieval never answers. With a 2 s
    budget the rounds stop after 1 s (the other second is generation's), and the answer comes
    from b."""
    retriever = StallingRetriever({"q": [doc("a"), doc("b")]}, stall_on="q2")
    stages = simple_stages(
        retriever=retriever_spec(retriever),
        grader=grader_spec(DictGrader({"a": FAIL, "b": PASS})),
        rewriter=rewriter_spec(ScriptedRewriter(["q2"])),
    )
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        response = await client.post(endpoint, json={"query": "q", "time_budget_s": 2})

    assert response.status_code == 200, response.text
    if endpoint.endswith("/stream"):
        events = without_keep_alives(parse_events(response.text))
        failed = [e.data for e in events if e.name == "node_finished" and e.data["status"] != "ok"]
        assert [(e["node"], e["round"]) for e in failed] == [("retrieve", 2)]
        body = events[-1].data
    else:
        body = response.json()
    workflow = body["workflow"]
    assert workflow["outcome"] == "budget_exhausted"
    assert workflow["decision_path"] == ["retrieve", "grade", "rewrite", "retrieve", "generate"]
    assert [n["status"] for n in workflow["node_executions"]] == ["ok"] * 3 + ["error", "ok"]
    assert "time budget" in workflow["node_executions"][3]["details"]["error"]
    assert body["answer"] == "b" and [c["document_id"] for c in body["citations"]] == ["b"]
    # The retriever's call carried the deadline: the stage gave it up when it passed.
    assert retriever.stall.cancelled.is_set()


# --- stages that are down ----------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_a_stage_that_is_down_gives_503_naming_it(endpoint: str) -> None:
    stages = simple_stages(grader=closed_address())
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        response = await client.post(
            endpoint,
            json={"query": "q", "time_budget_s": 30},
            headers={"x-request-id": "down-1"},
        )

    assert response.headers["x-request-id"] == "down-1"
    if endpoint.endswith("/stream"):
        assert response.status_code == 200  # the stream had started; its last event says it
        error = without_keep_alives(parse_events(response.text))[-1]
        assert error.name == "error"
        assert error.data["status"] == 503
        error = error.data
    else:
        assert response.status_code == 503
        error = response.json()["error"]
    assert (error["stage"], error["code"]) == ("grader", "stage_unavailable")
    assert error["decision_path"] == ["retrieve", "grade"]
    assert "grader" in error["message"]


async def test_a_stage_host_that_never_answers_gives_503_after_the_connect_timeout() -> None:
    """The connection's handshake never completes. Without a connect timeout gRPC would wait
    20 s, past this query's rounds (5 s of its 10 s budget): the answer would be 200 with
    nothing passed instead of 503."""
    with silent_address() as hanging:
        stages = simple_stages(grader=hanging)
        async with (
            rest_over_stages(stages, stage_connect_timeout_s=1) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as client,
        ):
            response = await client.post("/v1/query", json={"query": "q", "time_budget_s": 10})

    assert response.status_code == 503, response.text
    assert response.json()["error"]["stage"] == "grader"


# --- request ids -------------------------------------------------------------------------------


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Captured log records, each with the request id it was logged under (as in production,
    where configure_logging puts the filter on the handler)."""
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdFilter())
    return caplog


async def test_the_request_id_goes_from_the_client_to_the_stages_and_back(
    logged: pytest.LogCaptureFixture,
) -> None:
    retriever = RequestIdsSeen(ScriptedRetriever({"q": [doc("a")]}))
    grader = RequestIdsSeen(RaisingGrader(InvalidInput("grader: passage 1 is empty")))
    stages = simple_stages(retriever=retriever_spec(retriever), grader=grader_spec(grader))
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        failed = await client.post(
            "/v1/query", json={"query": "q"}, headers={"x-request-id": "trace-me-7"}
        )

    assert failed.status_code == 422
    assert failed.headers["x-request-id"] == "trace-me-7"
    assert retriever.request_ids == grader.request_ids == ["trace-me-7"]
    ours = [r for r in logged.records if r.name.startswith("ragloop.")]
    orchestrator = [r for r in ours if r.name.startswith("ragloop.orchestrator")]
    stage_lines = [r for r in ours if r.name == "ragloop.core.grpc.errors"]
    assert [r.getMessage() for r in orchestrator] == ["query failed"]
    assert any("passage 1 is empty" in r.getMessage() for r in stage_lines)  # the grader's
    assert {r.request_id for r in orchestrator + stage_lines} == {"trace-me-7"}


@pytest.mark.parametrize("offered", [None, "", "has spaces", "x" * 129, "-leading-dash"])
async def test_a_missing_or_invalid_request_id_is_replaced_by_a_new_one(
    offered: str | None,
) -> None:
    retriever = RequestIdsSeen(ScriptedRetriever({"q": [doc("a")]}))
    stages = simple_stages(retriever=retriever_spec(retriever))
    headers = {} if offered is None else {"x-request-id": offered}
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        answered = await client.post("/v1/query", json={"query": "q"}, headers=headers)
        again = await client.post("/v1/query", json={"query": "q"}, headers=headers)

    assert answered.status_code == again.status_code == 200
    request_id = answered.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    assert again.headers["x-request-id"] != request_id  # one per request
    assert retriever.request_ids == [request_id, again.headers["x-request-id"]]


def test_an_unexpected_error_is_a_500_with_the_request_id(
    logged: pytest.LogCaptureFixture,
) -> None:
    app = FastAPI()

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_middleware(RequestIdMiddleware)
    with serving_http(app) as url:
        response = httpx.get(f"{url}/boom", headers={"x-request-id": "bug-1"}, timeout=30)

    assert response.status_code == 500
    assert response.headers["x-request-id"] == "bug-1"
    assert response.json()["error"]["code"] == "internal"
    (logged_error,) = [r for r in logged.records if r.getMessage() == "unexpected error"]
    assert logged_error.request_id == "bug-1"
    assert logged_error.exc_info is not None
