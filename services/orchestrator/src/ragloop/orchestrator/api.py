"""The REST API (FastAPI): query, ingest, health and readiness."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragloop.core import context
from ragloop.core.domain import SourceDocument
from ragloop.core.errors import RagloopError
from ragloop.orchestrator.loop import (
    CorrectiveLoop,
    LoopPolicy,
    StageFailure,
    Trace,
    classify_error,
)
from ragloop.orchestrator.response import build_query_response
from ragloop.orchestrator.schemas import (
    ErrorDetail,
    ErrorResponse,
    IngestedSourceOut,
    IngestRequest,
    IngestResponse,
    QueryRequest,
    QueryResponse,
)
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages import StageSet, remote_stages

log = logging.getLogger(__name__)

STATUS_OF_FAILURE = {"invalid": 422, "timeout": 504, "unavailable": 503, "internal": 502}
STAGE_OF_NODE = {
    "retrieve": "retriever",
    "grade": "grader",
    "rewrite": "rewriter",
    "generate": "generator",
}
ERROR_RESPONSES = {
    422: {"model": ErrorResponse, "description": "Invalid input"},
    502: {"model": ErrorResponse, "description": "A stage failed unexpectedly"},
    503: {"model": ErrorResponse, "description": "A stage is unavailable"},
    504: {"model": ErrorResponse, "description": "A stage or the request's budget timed out"},
}


def error_response(status: int, detail: ErrorDetail, request_id: str) -> JSONResponse:
    return JSONResponse(
        ErrorResponse(error=detail).model_dump(),
        status_code=status,
        headers={"x-request-id": request_id},
    )


def failure_response(
    exc: StageFailure | RagloopError, stage: str, trace: Trace | None
) -> JSONResponse:
    if isinstance(exc, StageFailure):
        kind, message, stage = exc.kind, exc.message, STAGE_OF_NODE.get(exc.stage, exc.stage)
    else:
        kind, message = classify_error(exc, stage)
    detail = ErrorDetail(
        code=f"stage_{kind}" if kind != "invalid" else "invalid_input",
        message=message,
        stage=stage,
        decision_path=trace.decision_path if trace else [],
    )
    return error_response(STATUS_OF_FAILURE[kind], detail, context.request_id.get())


def create_app(
    settings: OrchestratorSettings,
    stages_factory: Callable[[], StageSet] | None = None,
) -> FastAPI:
    """Build the app. ``stages_factory`` defaults to gRPC clients of the four stage services."""
    make_stages = stages_factory or (lambda: remote_stages(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stages = make_stages()
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

    @app.post("/v1/documents", response_model=IngestResponse, responses=ERROR_RESPONSES)
    async def ingest(body: IngestRequest, request: Request) -> IngestResponse | JSONResponse:
        """Ingest text documents: chunk, embed and store. Re-ingesting a source replaces it."""
        if len(body.documents) > settings.max_ingest_documents:
            detail = ErrorDetail(
                code="invalid_input",
                message=f"{len(body.documents)} documents sent; at most "
                f"{settings.max_ingest_documents} per request",
            )
            return error_response(422, detail, context.request_id.get())
        for position, doc in enumerate(body.documents):
            if len(doc.text) > settings.max_document_chars:
                detail = ErrorDetail(
                    code="invalid_input",
                    message=f"document {position} ({doc.source!r}) has {len(doc.text)} characters; "
                    f"at most {settings.max_document_chars}",
                )
                return error_response(422, detail, context.request_id.get())
        documents = [SourceDocument(d.source, d.text, d.metadata) for d in body.documents]
        stages: StageSet = request.app.state.stages
        try:
            result = await stages.ingestor.ingest(documents, collection=body.collection or "")
        except RagloopError as exc:
            return failure_response(exc, "retriever", None)
        return IngestResponse(
            collection=result.collection,
            sources=[
                IngestedSourceOut(source=s.source, chunk_count=s.chunk_count)
                for s in result.sources
            ],
            chunks_written=result.chunks_written,
        )

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
