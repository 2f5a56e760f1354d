"""The REST API (FastAPI): query, ingest, the OpenAI-compatible API, health, readiness and
metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragloop.orchestrator.access.admission import AdmissionInterceptor, install_admission
from ragloop.orchestrator.application.queries import QueryService
from ragloop.orchestrator.loop.corrective import CorrectiveLoop
from ragloop.orchestrator.rest.chat import chat_router
from ragloop.orchestrator.rest.ingest import ingest_router
from ragloop.orchestrator.rest.knowledge import knowledge_router
from ragloop.orchestrator.rest.metrics import install_rest_metrics
from ragloop.orchestrator.rest.page import install_page
from ragloop.orchestrator.rest.query import query_router
from ragloop.orchestrator.rest.request_ids import RequestIdMiddleware
from ragloop.orchestrator.rest.security import install_security
from ragloop.orchestrator.rest.tracing import install_tracing
from ragloop.orchestrator.rpc.service import start_rag_server
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.remote import StageSet, remote_stages

log = logging.getLogger(__name__)


def create_app(
    settings: OrchestratorSettings,
    stages_factory: Callable[[], StageSet] | None = None,
    *,
    serve_grpc: bool = False,
) -> FastAPI:
    """Build the app. ``stages_factory`` defaults to gRPC clients of the four stage services.
    With ``serve_grpc`` (the process entry point; not apps in tests of the REST API, which would
    all take the same port) the app also serves RagService on RAGLOOP_ORCHESTRATOR_GRPC_PORT
    while it runs, over the same loop."""
    make_stages = stages_factory or (lambda: remote_stages(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stages = make_stages()
        app.state.settings = settings
        app.state.stages = stages
        app.state.queries = QueryService(CorrectiveLoop(stages), settings)
        gate = app.state.admission
        admission = [AdmissionInterceptor(gate)] if gate else []
        app.state.draining = False
        app.state.grpc_server = (
            await start_rag_server(app.state.queries, admission) if serve_grpc else None
        )
        app.state.grpc_stopped = None
        try:
            yield
        finally:
            stop_accepting(app)  # in-flight calls finish first, then the stages close
            if app.state.grpc_stopped is not None:
                await app.state.grpc_stopped
            await stages.close()

    app = FastAPI(
        title="ragloop",
        version="0.1.0",
        description="Self-corrective RAG: retrieve, grade, rewrite when too few passages pass, "
        "then answer with citations.",
        lifespan=lifespan,
    )

    app.include_router(query_router)
    app.include_router(ingest_router)
    app.include_router(knowledge_router)
    app.include_router(chat_router)
    install_page(app)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Liveness: the orchestrator process answers."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: every stage answers its gRPC health check with SERVING, and the
        orchestrator is not shutting down."""
        if request.app.state.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        stages = await request.app.state.stages.readiness()
        ready = all(stages.values())
        return JSONResponse(
            {"status": "ready" if ready else "not_ready", "stages": stages},
            status_code=200 if ready else 503,
        )

    app.state.draining = False
    install_security(app, settings)
    install_admission(app, settings.max_inflight_queries)  # innermost: after keys and rate limits
    # Added after the security middleware, so outside it: its refusals carry the request id.
    app.add_middleware(RequestIdMiddleware)
    install_tracing(app)  # outside the request-id middleware: its error lines carry the trace id
    install_rest_metrics(app)  # last, so outermost: it sees every response
    return app


async def begin_drain(app: FastAPI) -> None:
    """Say not ready (``/readyz`` 503, RagService's health NOT_SERVING), still answering."""
    app.state.draining = True
    grpc_server = getattr(app.state, "grpc_server", None)  # None before the lifespan started
    if grpc_server is not None:
        await grpc_server.drain()


def stop_accepting(app: FastAPI) -> None:
    """Start stopping RagService (new calls refused, in-flight ones get the grace); once."""
    grpc_server = getattr(app.state, "grpc_server", None)
    if grpc_server is not None and app.state.grpc_stopped is None:
        grace = app.state.settings.shutdown_grace_s
        app.state.grpc_stopped = asyncio.ensure_future(grpc_server.stop(grace))
