"""The REST API (FastAPI): query, ingest, health and readiness."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragloop.core import context
from ragloop.orchestrator.http_errors import (
    ERROR_RESPONSES,
    failure_response,
)
from ragloop.orchestrator.ingest_api import ingest_router
from ragloop.orchestrator.knowledge_api import knowledge_router
from ragloop.orchestrator.loop import CorrectiveLoop, LoopPolicy, StageFailure
from ragloop.orchestrator.response import build_query_response
from ragloop.orchestrator.schemas import (
    QueryRequest,
    QueryResponse,
)
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages import StageSet, remote_stages

log = logging.getLogger(__name__)


def create_app(
    settings: OrchestratorSettings,
    stages_factory: Callable[[], StageSet] | None = None,
) -> FastAPI:
    """Build the app. ``stages_factory`` defaults to gRPC clients of the four stage services."""
    make_stages = stages_factory or (lambda: remote_stages(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stages = make_stages()
        app.state.settings = settings
        app.state.stages = stages
        app.state.loop = CorrectiveLoop(
            stages.retriever, stages.grader, stages.rewriter, stages.generator
        )
        try:
            yield
        finally:
            await stages.close()

    app = FastAPI(
        title="ragloop",
        version="0.1.0",
        description="Self-corrective RAG: retrieve, grade, rewrite when too few passages pass, "
        "then answer with citations.",
        lifespan=lifespan,
    )

    @app.middleware("http")
    async def request_id_middleware(request: Request, call_next):
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        token = context.request_id.set(request_id[:64])
        try:
            response = await call_next(request)
        finally:
            context.request_id.reset(token)
        response.headers["x-request-id"] = request_id[:64]
        return response

    @app.post("/v1/query", response_model=QueryResponse, responses=ERROR_RESPONSES)
    async def query(body: QueryRequest, request: Request) -> QueryResponse | JSONResponse:
        """Answer a question: the whole loop, with its decision path and node timings."""
        policy = LoopPolicy(
            top_k=body.top_k or settings.top_k,
            similarity_threshold=_or(body.similarity_threshold, settings.similarity_threshold),
            max_rewrite_attempts=_or(body.max_rewrite_attempts, settings.max_rewrite_attempts),
            grade_pass_threshold=_or(body.grade_pass_threshold, settings.grade_pass_threshold),
            collection=body.collection or "",
            retrieval_mode=body.retrieval_mode or "",
            filters=body.filters,
            tenant=body.tenant or "",
            budget_s=settings.request_budget_s,
            generation_reserve_s=settings.generation_reserve_s,
            max_generation_documents=settings.max_generation_documents,
        )
        try:
            result = await request.app.state.loop.run(body.query, policy)
        except StageFailure as exc:
            log.warning(
                "query failed", extra={"stage": exc.stage, "kind": exc.kind, "error": exc.message}
            )
            return failure_response(exc, exc.stage, exc.trace)
        log.info(
            "query answered",
            extra={
                "outcome": result.outcome.value,
                "rewrites": len(result.trace.rewrite_history),
                "duration_ms": round(result.total_duration_ms),
                "request_id": context.request_id.get(),
            },
        )
        return build_query_response(result)

    app.include_router(ingest_router)
    app.include_router(knowledge_router)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Liveness: the orchestrator process answers."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: every stage answers its gRPC health check with SERVING."""
        stages = await request.app.state.stages.readiness()
        ready = all(stages.values())
        return JSONResponse(
            {"status": "ready" if ready else "not_ready", "stages": stages},
            status_code=200 if ready else 503,
        )

    return app


def _or(value: float | int | None, default: float | int) -> float | int:
    return default if value is None else value
