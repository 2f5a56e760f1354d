"""A query's policy: what the request sets, the server's settings for the rest."""

from __future__ import annotations

from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.corrective import LoopPolicy
from ragloop.orchestrator.policy.request import RequestPolicy
from ragloop.orchestrator.settings import OrchestratorSettings


def resolve_policy(request: QueryRequest, settings: OrchestratorSettings) -> LoopPolicy:
    chosen = {
        name: value if (value := getattr(request, name)) is not None else getattr(settings, name)
        for name in RequestPolicy.model_fields
    }
    return LoopPolicy(
        **chosen,
        similarity_relaxation=similarity_relaxation(request, settings),
        collection=request.collection or "",
        retrieval_mode=request.retrieval_mode or "",
        filters=request.filters,
        tenant=request.tenant or "",
        answer_instructions=request.answer_instructions or "",
        generation_reserve_s=settings.generation_reserve_s,
        max_generation_documents=settings.max_generation_documents,
        generation_context_tokens=settings.generation_context_tokens,
        fill_generation_context=settings.fill_generation_context,
        answer_min_confidence=settings.answer_min_confidence,
        answer_match_after_refusal=settings.answer_match_after_refusal,
    )


def server_policy(settings: OrchestratorSettings, collection: str = "") -> LoopPolicy:
    """The policy of a request that names only ``collection``: the server's settings."""
    return resolve_policy(QueryRequest.model_construct(collection=collection or None), settings)


def similarity_relaxation(
    request: QueryRequest, settings: OrchestratorSettings
) -> tuple[float, ...]:
    """The per-round thresholds, or () for the same threshold in every round. A request's own
    ``similarity_threshold`` turns off relaxation that only the server's default asked for."""
    if request.similarity_thresholds is not None:
        return tuple(request.similarity_thresholds)
    relax = request.relax_similarity
    if relax is None:
        relax = settings.relax_similarity and request.similarity_threshold is None
    return tuple(settings.similarity_relaxation) if relax else ()
