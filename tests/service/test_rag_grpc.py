"""RagService (the orchestrator's gRPC face) served by the orchestrator app on 127.0.0.1, over real
gRPC stage servers around fakes: Query's answer, QueryStream's events in the order of the REST
stream, validation as INVALID_ARGUMENT, a stage that is down as UNAVAILABLE naming it, request ids,
cancellation, health and reflection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core.domain import Turn
from ragloop.v1 import common_pb2, rag_pb2, rag_pb2_grpc, retriever_pb2
from tests.service.grpc_helpers import reflected_services
from tests.service.loop_stack_helpers import (
    RequestIdsSeen,
    closed_address,
    generator_spec,
    grader_spec,
    retriever_spec,
    rewriter_spec,
    simple_stages,
    stack_over_stages,
)
from tests.service.test_rest_stream import PASS, StallingGrader, one_rewrite_stages
from tests.unit.fakes import (
    DictGrader,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    doc,
)

RETRIEVE, GRADE = rag_pb2.LOOP_NODE_RETRIEVE, rag_pb2.LOOP_NODE_GRADE
REWRITE, GENERATE = rag_pb2.LOOP_NODE_REWRITE, rag_pb2.LOOP_NODE_GENERATE
CALL_TIMEOUT_S = 60


@asynccontextmanager
async def rag_over_stages(
    stages: dict[str, Any], **settings: Any
) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the RagService of the orchestrator app (REST and gRPC) over ``stages``."""
    async with (
        stack_over_stages(stages, serve_grpc=True, **settings) as (_, port),
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        yield channel


def without_timings(response: rag_pb2.QueryResponse) -> rag_pb2.QueryResponse:
    stripped = rag_pb2.QueryResponse()
    stripped.CopyFrom(response)
    stripped.workflow.ClearField("total_duration_ms")
    for execution in stripped.workflow.node_executions:
        execution.ClearField("started_at")
        execution.ClearField("duration_ms")
    return stripped


def node_of(event: rag_pb2.QueryEvent) -> tuple[str, int | None, int | None]:
    kind = event.WhichOneof("event")
    if kind in ("node_started", "node_finished"):
        node = getattr(event, kind)
        return kind, node.node, node.round
    return kind, None, None


async def test_query_answers_with_citations_and_the_decision_path() -> None:
    grader = RequestIdsSeen(DictGrader({"a": (False, 0.2), "c": PASS, "d": PASS}))
    stages = {**one_rewrite_stages(), "grader": grader_spec(grader)}
    async with rag_over_stages(stages) as channel:
        call = rag_pb2_grpc.RagServiceStub(channel).Query(
            rag_pb2.QueryRequest(query="q", top_k=5),
            metadata=(("x-request-id", "grpc-1"),),
            timeout=CALL_TIMEOUT_S,
        )
        response = await call
        initial_metadata = await call.initial_metadata()

    assert response.answer == "c d"
    assert response.grounded
    assert [(c.number, c.document_id) for c in response.citations] == [(1, "c"), (2, "d")]
    assert list(response.workflow.decision_path) == [
        RETRIEVE,
        GRADE,
        REWRITE,
        RETRIEVE,
        GRADE,
        GENERATE,
    ]
    assert response.workflow.outcome == rag_pb2.LOOP_OUTCOME_PASSED
    assert [(r.query, r.reason) for r in response.rewrite_history] == [("q2", "reason for q2")]
    assert (response.query.original, response.query.final) == ("q", "q2")
    assert [d.id for d in response.retrieval.documents] == ["c", "d"]
    assert response.grader_result.pass_rate == 1.0
    assert all(g.verdict == common_pb2.VERDICT_RELEVANT for g in response.grader_result.grades)
    executions = response.workflow.node_executions
    assert [(e.node, e.round) for e in executions][:3] == [(RETRIEVE, 1), (GRADE, 1), (REWRITE, 1)]
    assert executions[1].details["passed"] == 1
    # The request id came back, and went on to the stages.
    assert dict(initial_metadata)["x-request-id"] == "grpc-1"
    assert grader.request_ids == ["grpc-1", "grpc-1"]


async def test_query_stream_sends_the_rest_streams_events_then_done_equal_to_query() -> None:
    async with rag_over_stages(one_rewrite_stages(runs=2)) as channel:
        stub = rag_pb2_grpc.RagServiceStub(channel)
        call = stub.QueryStream(rag_pb2.QueryRequest(query="q"), timeout=CALL_TIMEOUT_S)
        events = [event async for event in call]
        generated_id = dict(await call.initial_metadata())["x-request-id"]
        answered = await stub.Query(rag_pb2.QueryRequest(query="q"), timeout=CALL_TIMEOUT_S)

    assert generated_id  # made up for a call that sent none
    # The order of the REST stream's events (tests/service/test_rest_stream.py).
    assert [node_of(e) for e in events] == [
        ("node_started", RETRIEVE, 1),
        ("node_finished", RETRIEVE, 1),
        ("node_started", GRADE, 1),
        ("node_finished", GRADE, 1),
        ("node_started", REWRITE, 1),
        ("node_finished", REWRITE, 1),
        ("node_started", RETRIEVE, 2),
        ("node_finished", RETRIEVE, 2),
        ("node_started", GRADE, 2),
        ("node_finished", GRADE, 2),
        ("node_started", GENERATE, 2),
        ("token", None, None),
        ("token", None, None),
        ("node_finished", GENERATE, 2),
        ("done", None, None),
    ]
    details = {
        (e.node_finished.node, e.node_finished.round): e.node_finished.details
        for e in events[1:11:2]
    }
    assert [d["id"] for d in details[(RETRIEVE, 1)]["documents"]] == ["a", "c"]
    assert details[(GRADE, 1)]["pass_rate"] == 0.5
    assert details[(GRADE, 1)]["should_rewrite"] is True
    rewrite = dict(details[(REWRITE, 1)])
    assert (rewrite["query"], rewrite["reason"]) == ("q2", "reason for q2")
    assert dict(rewrite["usage"]) == {
        "model_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_prompt_tokens": 0,
    }
    assert details[(RETRIEVE, 2)]["query"] == "q2"
    finished = [e.node_finished for e in events if e.WhichOneof("event") == "node_finished"]
    assert {f.status for f in finished} == {rag_pb2.NODE_STATUS_OK}
    tokens = "".join(e.token.text for e in events if e.WhichOneof("event") == "token")
    done = events[-1].done
    assert tokens == done.answer == "c d"
    # Done is what Query answers for the same question (timings aside).
    assert without_timings(done) == without_timings(answered)


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"query": "q", "top_k": 0}, "top_k: Input should be greater than or equal to 1"),
        ({"query": "q", "top_k": 51}, "top_k: Input should be less than or equal to 50"),
        ({"query": ""}, "query: String should have at least 1 character"),
        ({"query": "   "}, "query: String should have at least 1 character"),
        ({"query": "q", "retrieval_mode": 7}, "retrieval_mode: retrieval mode 7 is unknown"),
        ({"query": "q", "time_budget_s": 0.5}, "time_budget_s: Input should be greater than"),
        ({"query": "q", "grade_pass_threshold": 1.5}, "grade_pass_threshold: Input should be"),
        ({"query": "q", "collection": "no-dashes"}, "collection: String should match pattern"),
        (
            {"query": "q", "answer_instructions": " \n "},
            "answer_instructions: String should have at least 1 character",
        ),
        (
            {"query": "q", "answer_instructions": "x" * 501},
            "answer_instructions: String should have at most 500 characters",
        ),
        (
            {"query": "q", "similarity_threshold": 0.5, "similarity_thresholds": [0.6, 0.4]},
            "give either similarity_threshold",
        ),
        (
            {"query": "q", "history": [common_pb2.ConversationTurn(role="user", content="x")] * 51},
            "history: List should have at most 50 items",
        ),
        (
            {"query": "q", "history": [common_pb2.ConversationTurn(role="system", content="x")]},
            "history.0.role: Input should be 'user' or 'assistant'",
        ),
    ],
)
@pytest.mark.parametrize("method", ["Query", "QueryStream"])
async def test_invalid_arguments_are_refused_with_a_clear_message(
    request_fields: dict[str, Any], message: str, method: str
) -> None:
    retriever = RequestIdsSeen(ScriptedRetriever({"q": [doc("a")]}))
    async with rag_over_stages(simple_stages(retriever=retriever_spec(retriever))) as channel:
        call = getattr(rag_pb2_grpc.RagServiceStub(channel), method)(
            rag_pb2.QueryRequest(**request_fields), timeout=CALL_TIMEOUT_S
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            if method == "Query":
                await call
            else:
                _ = [event async for event in call]

    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in refused.value.details()
    assert retriever.request_ids == []  # refused before the loop ran


async def test_filters_and_policy_fields_reach_the_loop() -> None:
    retriever = ScriptedRetriever({"q": [doc("a")]})
    generator = StreamingEchoGenerator()
    request = rag_pb2.QueryRequest(
        query="q",
        top_k=3,
        similarity_thresholds=[0.6, 0.4],
        retrieval_mode=retriever_pb2.RETRIEVAL_MODE_HYBRID,
        tenant="acme",
        time_budget_s=30,
        answer_instructions="Answer in French.",
    )
    request.filters.update({"lang": "en"})
    stages = simple_stages(retriever=retriever_spec(retriever), generator=generator_spec(generator))
    async with rag_over_stages(stages) as channel:
        response = await rag_pb2_grpc.RagServiceStub(channel).Query(request, timeout=CALL_TIMEOUT_S)

    assert response.workflow.outcome == rag_pb2.LOOP_OUTCOME_PASSED
    (call,) = retriever.calls
    assert (call.query, call.top_k, call.similarity_threshold) == ("q", 3, pytest.approx(0.6))
    assert (call.mode, call.filters, call.tenant) == ("hybrid", {"lang": "en"}, "acme")
    (generated,) = generator.calls
    assert (generated.question, generated.instructions) == ("q", "Answer in French.")


async def test_a_follow_up_is_made_standalone_by_the_rewriter_service_first() -> None:
    rewriter = ScriptedRewriter([], standalone="q")  # "q" finds a, which passes
    history = [
        common_pb2.ConversationTurn(role="user", content="What is a?"),
        common_pb2.ConversationTurn(role="assistant", content="A is the first letter [1]."),
    ]
    request = rag_pb2.QueryRequest(query="And what comes after it?", history=history)
    async with rag_over_stages(simple_stages(rewriter=rewriter_spec(rewriter))) as channel:
        call = rag_pb2_grpc.RagServiceStub(channel).QueryStream(request, timeout=CALL_TIMEOUT_S)
        events = [event async for event in call]

    assert rewriter.standalone_calls == [
        (
            [Turn("user", "What is a?"), Turn("assistant", "A is the first letter [1].")],
            "And what comes after it?",
        )
    ]
    contextualize = rag_pb2.LOOP_NODE_CONTEXTUALIZE
    assert [node_of(e) for e in events[:3]] == [
        ("node_started", contextualize, 0),
        ("node_finished", contextualize, 0),
        ("node_started", RETRIEVE, 1),
    ]
    assert events[1].node_finished.details["standalone"] == "q"
    done = events[-1].done
    assert (done.query.original, done.query.standalone) == ("And what comes after it?", "q")
    assert list(done.workflow.decision_path) == [contextualize, RETRIEVE, GRADE, GENERATE]


@pytest.mark.parametrize("method", ["Query", "QueryStream"])
async def test_a_stage_that_is_down_is_unavailable_naming_it(method: str) -> None:
    async with rag_over_stages(simple_stages(grader=closed_address())) as channel:
        call = getattr(rag_pb2_grpc.RagServiceStub(channel), method)(
            rag_pb2.QueryRequest(query="q", time_budget_s=30),
            metadata=(("x-request-id", "down-1"),),
            timeout=CALL_TIMEOUT_S,
        )
        events = []
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            if method == "Query":
                await call
            else:
                async for event in call:
                    events.append(node_of(event))

    error = failed.value
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert "grader" in error.details()
    trailing = dict(error.trailing_metadata())
    assert trailing["ragloop-stage"] == "grader"
    assert trailing["ragloop-error"] == "stage_unavailable"
    assert trailing["ragloop-decision-path"] == "retrieve,grade"
    assert dict(error.initial_metadata())["x-request-id"] == "down-1"
    if method == "QueryStream":  # the events before the failure came through
        assert events == [
            ("node_started", RETRIEVE, 1),
            ("node_finished", RETRIEVE, 1),
            ("node_started", GRADE, 1),
            ("node_finished", GRADE, 1),
        ]


async def test_cancelling_a_stream_cancels_the_stage_call_in_flight() -> None:
    grader = StallingGrader()
    async with rag_over_stages(simple_stages(grader=grader_spec(grader))) as channel:
        call = rag_pb2_grpc.RagServiceStub(channel).QueryStream(
            rag_pb2.QueryRequest(query="q"), timeout=CALL_TIMEOUT_S
        )
        async for event in call:
            if node_of(event) == ("node_started", GRADE, 1):
                break
        await asyncio.wait_for(grader.stall.started.wait(), 30)
        call.cancel()
        await asyncio.wait_for(grader.stall.cancelled.wait(), 30)


async def test_health_and_reflection_list_rag_service() -> None:
    async with rag_over_stages(simple_stages()) as channel:
        services = await reflected_services(channel)
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="ragloop.v1.RagService"), timeout=10
        )

    assert "ragloop.v1.RagService" in services
    assert {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= services
    assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_with_api_keys_a_query_needs_one_and_health_does_not() -> None:
    async with rag_over_stages(simple_stages(), api_keys="key-1") as channel:
        stub = rag_pb2_grpc.RagServiceStub(channel)
        refusals = []
        for metadata in ((), (("authorization", "Bearer wrong"),)):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Query(rag_pb2.QueryRequest(query="q"), metadata=metadata, timeout=30)
            refusals.append((refused.value.code(), refused.value.details()))
        answered = await stub.Query(
            rag_pb2.QueryRequest(query="q"),
            metadata=(("authorization", "Bearer key-1"),),
            timeout=CALL_TIMEOUT_S,
        )
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=10
        )

    assert refusals == [
        (
            grpc.StatusCode.UNAUTHENTICATED,
            "this API needs an API key: send the metadata 'authorization: Bearer KEY'",
        ),
        (grpc.StatusCode.UNAUTHENTICATED, "the API key is not valid"),
    ]
    assert answered.answer == "a"
    assert health.status == health_pb2.HealthCheckResponse.SERVING
