"""Traces in one process: the REST API over real gRPC stage servers on 127.0.0.1 — the real
retriever on Milvus Lite, the real grader, rewriter and generator over a model that answers at
once — with tracing on and every span kept in memory. One query is one trace: the request's
span, the loop's, a span per node and round, each stage call on both sides (the server's the
child of the client's, through the W3C context in the gRPC metadata), each model call and each
Milvus search. With tracing off nothing of it exists. (tests/observability/test_traces.py
proves the same across the five real processes, over the real OTLP export.)"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx

from ragloop.core import tracing
from ragloop.core.grpc import tracing as grpc_tracing
from ragloop.core.logging import JsonFormatter, RequestIdFilter
from ragloop.core.models.metered import MeteredChatModel
from ragloop.core.names import Stage
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.grader.__main__ import build_grader
from ragloop.grader.settings import GraderSettings
from ragloop.rewriter.__main__ import build_rewriter
from ragloop.rewriter.settings import RewriterSettings
from ragloop.v1 import rag_pb2, rag_pb2_grpc
from tests.hostile.fake_model import SchemaShapedChatModel
from tests.hostile.stacks import retriever_spec
from tests.service.loop_stack_helpers import (
    closed_address,
    generator_spec,
    grader_spec,
    rest_over_stages,
    rewriter_spec,
    stack_over_stages,
)
from tests.spans import Span, named, one, parent_of, summary, traced_in_memory

DOCUMENTS = [
    {"source": "notes/cats.md", "text": "Cats sleep up to sixteen hours a day."},
    {"source": "notes/owls.md", "text": "Owls hunt at night and sleep by day."},
]
QUESTION = "How long do cats sleep?"
STAGE_SERVICES = {
    "retrieve": "ragloop.v1.RetrieverService",
    "grade": "ragloop.v1.GraderService",
    "rewrite": "ragloop.v1.RewriterService",
    "generate": "ragloop.v1.GeneratorService",
}


def model_stages(model: SchemaShapedChatModel) -> dict[str, Any]:
    """The grader, rewriter and generator as their services build them: the model metered."""
    return {
        "grader": grader_spec(
            build_grader(GraderSettings(), MeteredChatModel(model, stage=Stage.GRADER))
        ),
        "rewriter": rewriter_spec(
            build_rewriter(RewriterSettings(), MeteredChatModel(model, stage=Stage.REWRITER))
        ),
        "generator": generator_spec(
            build_generator(GeneratorSettings(), MeteredChatModel(model, stage=Stage.GENERATOR))
        ),
    }


def traced_stages(tmp_path: Path, *, down: str = "") -> dict[str, Any]:
    """Milvus Lite and model stages over a chat model that finds everything relevant; the stage
    ``down`` names is down."""
    stages = {"retriever": retriever_spec(str(tmp_path / "milvus.db"))}
    stages |= model_stages(SchemaShapedChatModel(relevant=True))
    if down:
        stages[down] = closed_address()
    return stages


@asynccontextmanager
async def api(tmp_path: Path, *, down: str = "", **settings: Any) -> AsyncIterator[str]:
    """The REST API's base URL over ``traced_stages``."""
    async with rest_over_stages(traced_stages(tmp_path, down=down), **settings) as url:
        yield url


def post(url: str, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, headers=headers, timeout=120)


async def ask(url: str, **headers: str) -> httpx.Response:
    """Ingest the documents, then ask the question (blocking clients, off the servers' loop)."""
    ingested = await asyncio.to_thread(post, url, "/v1/documents", {"documents": DOCUMENTS})
    assert ingested.status_code == 200, ingested.text
    answered = await asyncio.to_thread(post, url, "/v1/query", {"query": QUESTION}, **headers)
    assert answered.status_code == 200, answered.text
    return answered


def trace_of(spans: list[Span], trace_id: str) -> list[Span]:
    return [s for s in spans if s.trace_id == trace_id]


async def test_one_query_is_one_trace_with_every_node_call_model_call_and_search(
    tmp_path: Path,
) -> None:
    with traced_in_memory() as finished:
        async with api(tmp_path) as url:
            response = await ask(url)
        spans = finished()
    trace_id = response.headers[tracing.TRACE_ID_HEADER]
    trace = trace_of(spans, trace_id)

    root = one(trace, "POST /v1/query")
    assert (root.kind, root.parent_id) == ("SERVER", "")
    assert root.attributes["http.route"] == "/v1/query"
    assert root.attributes["http.response.status_code"] == 200
    assert root.attributes["ragloop.request_id"] == response.headers["x-request-id"]
    loop = one(trace, "corrective_loop")
    assert parent_of(trace, loop) == root
    assert loop.attributes["ragloop.outcome"] == "passed"

    path = response.json()["workflow"]["decision_path"]
    nodes = [s for s in trace if "ragloop.loop.node" in s.attributes]
    assert sorted(s.name for s in nodes) == sorted(path)
    for node in nodes:
        assert parent_of(trace, node) == loop
        assert node.attributes["ragloop.loop.round"] == 1
        [client] = [s for s in trace if s.kind == "CLIENT" and s.parent_id == node.span_id]
        assert client.attributes["rpc.system"] == "grpc"
        assert client.attributes["rpc.service"] == STAGE_SERVICES[node.name]
        assert client.attributes["rpc.grpc.status_code"] == 0
        [server] = [s for s in trace if s.kind == "SERVER" and s.parent_id == client.span_id]
        assert (
            server.name
            == client.name
            == f"{client.attributes['rpc.service']}/" + str(client.attributes["rpc.method"])
        )
        assert server.attributes["ragloop.request_id"] == response.headers["x-request-id"]

    grade_server = one(trace, "ragloop.v1.GraderService/GradeDocuments", "SERVER")
    chats = [s for s in trace if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert chats and all(s.kind == "CLIENT" for s in chats)
    grader_chats = [s for s in chats if s.attributes["ragloop.stage"] == "grader"]
    server_of = {
        s.span_id: s for s in trace if s.kind == "SERVER" and s.attributes.get("rpc.system")
    }
    assert {server_of[c.parent_id].name for c in chats} == {
        "ragloop.v1.GraderService/GradeDocuments",
        "ragloop.v1.GeneratorService/GenerateAnswer",
    }
    assert all(c.parent_id == grade_server.span_id for c in grader_chats)
    chat = chats[0]
    assert chat.name == "chat schema-shaped"
    assert chat.attributes["gen_ai.provider.name"] == "fake"
    assert chat.attributes["gen_ai.request.model"] == "schema-shaped"
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["gen_ai.usage.output_tokens"] > 0

    retrieve_server = one(trace, "ragloop.v1.RetrieverService/Retrieve", "SERVER")
    search = one(trace, "search ragloop", **{"db.system": "milvus"})
    assert parent_of(trace, search) == retrieve_server
    assert search.attributes["db.operation.name"] == "search"
    assert search.attributes["db.response.returned_rows"] == 2
    embedding = one(trace, "embeddings all-minilm-l6-v2")
    assert parent_of(trace, embedding) == retrieve_server
    assert embedding.attributes["gen_ai.operation.name"] == "embeddings"


async def test_a_callers_trace_context_is_continued(tmp_path: Path) -> None:
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    traceparent = f"00-{caller_trace}-00f067aa0ba902b7-01"
    with traced_in_memory() as finished:
        async with api(tmp_path) as url:
            response = await ask(url, traceparent=traceparent)
        spans = finished()
    assert response.headers[tracing.TRACE_ID_HEADER] == caller_trace
    root = one(trace_of(spans, caller_trace), "POST /v1/query")
    assert root.parent_id == "00f067aa0ba902b7"


async def test_a_failed_stage_call_fails_its_spans(tmp_path: Path) -> None:
    with traced_in_memory() as finished:
        async with api(tmp_path, down="grader", stage_retries=0) as url:
            ingested = await asyncio.to_thread(post, url, "/v1/documents", {"documents": DOCUMENTS})
            assert ingested.status_code == 200
            response = await asyncio.to_thread(post, url, "/v1/query", {"query": QUESTION})
        spans = finished()
    assert response.status_code == 503
    trace = trace_of(spans, response.headers[tracing.TRACE_ID_HEADER])
    client = one(trace, "ragloop.v1.GraderService/GradeDocuments", "CLIENT")
    assert client.failed and client.attributes["rpc.grpc.status_code"] == 14  # UNAVAILABLE
    grade = one(trace, "grade")
    assert grade.failed and grade.attributes["error.type"] == "DependencyUnavailable"
    assert one(trace, "corrective_loop").failed
    root = one(trace, "POST /v1/query")
    assert root.attributes["http.response.status_code"] == 503 and root.failed


async def test_rag_service_returns_the_trace_id_in_its_metadata(tmp_path: Path) -> None:
    with traced_in_memory() as finished:
        async with stack_over_stages(traced_stages(tmp_path), serve_grpc=True) as (url, port):
            await asyncio.to_thread(post, url, "/v1/documents", {"documents": DOCUMENTS})
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = rag_pb2_grpc.RagServiceStub(channel).Query(
                    rag_pb2.QueryRequest(query=QUESTION), timeout=120
                )
                await call
                metadata = dict(await call.initial_metadata())
        spans = finished()
    trace = trace_of(spans, metadata[tracing.TRACE_ID_HEADER])
    root = one(trace, "ragloop.v1.RagService/Query")
    assert (root.kind, root.parent_id) == ("SERVER", "")
    assert parent_of(trace, one(trace, "corrective_loop")) == root
    assert len(named(trace, "ragloop.v1.GeneratorService/GenerateAnswer")) == 2  # both sides


async def test_probes_and_health_checks_make_no_trace(tmp_path: Path) -> None:
    with traced_in_memory() as finished:
        async with api(tmp_path) as url:
            for path in ("/healthz", "/readyz", "/metrics"):  # /readyz: four health checks
                response = await asyncio.to_thread(httpx.get, f"{url}{path}")
                assert response.status_code == 200
                assert tracing.TRACE_ID_HEADER not in response.headers
        spans = finished()
    assert not spans, summary(spans)


async def test_with_tracing_off_there_is_no_span_header_or_interceptor(tmp_path: Path) -> None:
    assert not tracing.enabled()
    assert grpc_tracing.server_interceptors() == []
    assert grpc_tracing.client_interceptors("127.0.0.1:1") == []
    async with api(tmp_path) as url:
        response = await ask(url)
    assert tracing.TRACE_ID_HEADER not in response.headers


def test_log_lines_inside_a_span_carry_its_trace_and_span_ids() -> None:
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.addFilter(RequestIdFilter())
    handler.addFilter(tracing.TraceContextFilter())
    handler.setFormatter(JsonFormatter("test"))
    logger = logging.getLogger("tests.tracing")
    logger.addHandler(handler)
    try:
        logger.warning("outside")
        with traced_in_memory(), tracing.span("work") as span:
            logger.warning("inside")
            context = span.get_span_context()
    finally:
        logger.removeHandler(handler)
    outside, inside = (json.loads(line) for line in lines)
    assert "trace_id" not in outside and "span_id" not in outside
    assert inside["trace_id"] == f"{context.trace_id:032x}"
    assert inside["span_id"] == f"{context.span_id:016x}"
