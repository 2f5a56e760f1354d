"""A query request's policy: what the request sets, the server's settings for the rest."""

from __future__ import annotations

from typing import TypeVar

from ragloop.orchestrator.loop import LoopPolicy
from ragloop.orchestrator.schemas import QueryRequest
from ragloop.orchestrator.settings import OrchestratorSettings

V = TypeVar("V", int, float)


def resolve_policy(request: QueryRequest, settings: OrchestratorSettings) -> LoopPolicy:
    return LoopPolicy(
        top_k=_or(request.top_k, settings.top_k),
        similarity_threshold=_or(request.similarity_threshold, settings.similarity_threshold),
        similarity_relaxation=similarity_relaxation(request, settings),
        max_rewrite_attempts=_or(request.max_rewrite_attempts, settings.max_rewrite_attempts),
        grade_pass_threshold=_or(request.grade_pass_threshold, settings.grade_pass_threshold),
        collection=request.collection or "",
        retrieval_mode=request.retrieval_mode or "",
        filters=request.filters,
        tenant=request.tenant or "",
        answer_instructions=request.answer_instructions or "",
        budget_s=_or(request.time_budget_s, settings.request_budget_s),
        generation_reserve_s=settings.generation_reserve_s,
        max_generation_documents=settings.max_generation_documents,
        generation_context_tokens=settings.generation_context_tokens,
        answer_min_confidence=settings.answer_min_confidence,
    )


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


def _or(value: V | None, default: V) -> V:
    return default if value is None else value
