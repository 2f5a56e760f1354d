"""The one way in for a query: POST /v1/query, its stream, RagService and the chat completions all
ask ``QueryService``, which puts the request in the caller's tenant, resolves its policy, runs
the loop and builds the answer body. Each edge only translates its envelope."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ragloop.orchestrator.application.answers import QueryResponse, build_query_response
from ragloop.orchestrator.application.policy import resolve_policy
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.application.tenants import scoped_to
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, StageFailure
from ragloop.orchestrator.loop.events import EventSink
from ragloop.orchestrator.settings import OrchestratorSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Query:
    """A request admitted in its tenant, with its policy: ready to run."""

    loop: CorrectiveLoop
    request: QueryRequest
    policy: LoopPolicy

    async def answer(self, on_event: EventSink | None = None) -> QueryResponse:
        """Run the loop (each of its events to ``on_event``) and return the answer body;
        StageFailure when a stage failed."""
        request = self.request
        try:
            result = await self.loop.run(
                request.query, self.policy, history=request.turns(), on_event=on_event
            )
        except StageFailure as exc:
            log.warning(
                "query failed", extra={"stage": exc.stage, "kind": exc.kind, "error": exc.message}
            )
            raise
        log.info(
            "query answered",
            extra={
                "outcome": result.outcome.value,
                "rewrites": len(result.trace.rewrite_history),
                "duration_ms": round(result.total_duration_ms),
            },
        )
        return build_query_response(result)


@dataclass(frozen=True)
class QueryService:
    loop: CorrectiveLoop
    settings: OrchestratorSettings

    def admit(self, request: QueryRequest, bound_tenant: str | None = None) -> Query:
        """``request`` acting in the tenant a caller whose key is bound to ``bound_tenant`` (None:
        unbound, or no keys) may use, with its policy. TenantRefused before anything runs, so
        that a stream can refuse before it starts."""
        request = scoped_to(request, bound_tenant)
        return Query(self.loop, request, resolve_policy(request, self.settings))
