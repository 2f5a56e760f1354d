"""Admission control over real HTTP and gRPC: with ``max_inflight_queries`` queries running (held
at the grader), one more query is refused at once — HTTP 429 with Retry-After on both REST query
endpoints, RESOURCE_EXHAUSTED with a retry-after trailer on RagService — while other endpoints
still answer; once the running queries end, queries are admitted again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import grpc
import httpx
import pytest

from ragloop.core.domain import Document, GradingResult
from ragloop.core.grpc.server import start_server
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.access.admission import AdmissionGate, AdmissionInterceptor
from ragloop.orchestrator.application.queries import QueryService
from ragloop.orchestrator.loop.corrective import CorrectiveLoop
from ragloop.orchestrator.rpc.service import rag_service_spec
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.v1 import rag_pb2, rag_pb2_grpc
from tests.service.loop_stack_helpers import (
    generator_spec,
    grader_spec,
    rest_over_stages,
    retriever_spec,
    rewriter_spec,
)
from tests.unit.fakes import DictGrader, EchoGenerator, ScriptedRetriever, ScriptedRewriter, doc

pytestmark = pytest.mark.reliability

BODY = {"query": "q", "time_budget_s": 60}


class HeldGrader(DictGrader):
    """Passes "a", but only once the test releases it; counts the calls waiting."""

    def __init__(self) -> None:
        super().__init__({"a": (True, 0.9)})
        self.released = asyncio.Event()
        self.waiting = 0

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        self.waiting += 1
        await self.released.wait()
        return await super().grade(question, documents)


async def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def test_queries_beyond_the_limit_get_429_with_retry_after() -> None:
    grader = HeldGrader()
    stages = {
        "retriever": retriever_spec(ScriptedRetriever({"q": [doc("a")]})),
        "grader": grader_spec(grader),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": generator_spec(EchoGenerator()),
    }
    async with (
        rest_over_stages(stages, max_inflight_queries=2) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        running = [asyncio.create_task(client.post("/v1/query", json=BODY)) for _ in range(2)]
        await until(lambda: grader.waiting == 2)
        refused = await client.post("/v1/query", json=BODY, headers={"x-request-id": "full-1"})
        refused_stream = await client.post("/v1/query/stream", json=BODY)
        health = await client.get("/readyz")
        schema = (await client.get("/openapi.json")).json()
        grader.released.set()
        answered = await asyncio.gather(*running)
        admitted_again = await client.post("/v1/query", json=BODY)

    for response in (refused, refused_stream):
        assert response.status_code == 429, response.text
        assert int(response.headers["retry-after"]) >= 1
        error = response.json()["error"]
        assert error["code"] == "overloaded" and "2 queries" in error["message"]
    assert refused.headers["x-request-id"] == "full-1"
    assert health.status_code == 200
    assert [r.status_code for r in answered] == [200, 200]
    assert admitted_again.status_code == 200, admitted_again.text
    assert grader.waiting == 3  # the refused queries never reached a stage
    for path in ("/v1/query", "/v1/query/stream"):
        assert "429" in schema["paths"][path]["post"]["responses"]


async def test_rag_service_beyond_the_limit_is_resource_exhausted() -> None:
    grader = HeldGrader()
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a")]}), grader, ScriptedRewriter([]), EchoGenerator()
        )
    )
    gate = AdmissionGate(1)
    server = await start_server(
        rag_service_spec(QueryService(loop, OrchestratorSettings())),
        host="127.0.0.1",
        port=0,
        interceptors=[AdmissionInterceptor(gate)],
    )
    request = rag_pb2.QueryRequest(query="q", time_budget_s=60)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = rag_pb2_grpc.RagServiceStub(channel)
            running = asyncio.ensure_future(stub.Query(request, timeout=60))
            await until(lambda: grader.waiting == 1)
            with pytest.raises(grpc.aio.AioRpcError) as unary:
                await stub.Query(request, timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as streamed:
                async for _ in stub.QueryStream(request, timeout=10):
                    pass
            grader.released.set()
            answered = await running
            again = await stub.Query(request, timeout=60)
    finally:
        await server.stop(grace=1)

    for refused in (unary.value, streamed.value):
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "1 queries" in (refused.details() or "")
        trailing = dict(refused.trailing_metadata() or ())
        assert int(trailing["retry-after"]) >= 1
    assert answered.answer and again.answer
    assert gate.inflight == 0 and gate.refused == 2
