"""What the loop tells an observer while it runs: a node started, a node finished (with what it
found), a piece of the answer's text (the SSE stream's events: docs/corrective-loop.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragloop.core.domain import (
    Answer,
    Document,
    GradingResult,
    ModelUsage,
    RetrievalResult,
    Rewrite,
    StandaloneQuery,
)
from ragloop.core.names import LoopNode


@dataclass(frozen=True)
class NodeStarted:
    kind: ClassVar[str] = "node_started"
    node: LoopNode
    round: int  # the retrieval round, from 1 (0: contextualize, before the first round)
    query: str  # what the stage is given: the searched query, or the question


@dataclass(frozen=True)
class NodeFinished:
    kind: ClassVar[str] = "node_finished"
    node: LoopNode
    round: int
    duration_ms: float
    status: str  # ok | error
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerToken:
    kind: ClassVar[str] = "token"
    text: str  # to append to the answer's text received so far
    restart: bool = False  # discard the text received so far first


LoopEvent = NodeStarted | NodeFinished | AnswerToken
EventSink = Callable[[LoopEvent], Awaitable[None]]


def retrieve_details(query: str, retrieval: RetrievalResult) -> dict[str, Any]:
    return {
        "query": query,
        "mode": retrieval.mode,
        "documents": [
            {
                "id": d.id,
                "source": d.source,
                "chunk_index": d.chunk_index,
                "score": round(d.score, 4),
                "text": d.text,
            }
            for d in retrieval.documents
        ],
        "total_documents": retrieval.total_found,
    }


def grade_details(grading: GradingResult, pass_threshold: float) -> dict[str, Any]:
    total = len(grading.grades)
    passed = sum(1 for g in grading.grades if g.relevant)
    pass_rate = passed / total if total else 0.0
    return {
        "pass_rate": round(pass_rate, 4),
        "pass_count": passed,
        "total_count": total,
        "should_rewrite": pass_rate < pass_threshold,
        "usage": usage_details(grading.usage),
        "grades": [
            {
                "document_id": g.document_id,
                "relevant": g.relevant,
                "confidence": round(g.confidence, 3),
                "reasoning": g.reasoning,
            }
            for g in grading.grades
        ],
    }


def rewrite_details(rewrite: Rewrite) -> dict[str, Any]:
    return {"query": rewrite.query, "reason": rewrite.reason, "usage": usage_details(rewrite.usage)}


def contextualize_details(question: str, standalone: StandaloneQuery, turns: int) -> dict[str, Any]:
    return {
        "question": question,
        "standalone": standalone.query,
        "turns": turns,
        "usage": usage_details(standalone.usage),
    }


def generate_details(answer: Answer, documents: list[Document]) -> dict[str, Any]:
    return {
        "citations": len(answer.citations),
        "documents": len(documents),
        "document_ids": [d.id for d in documents],  # the passages the answer was written from
        "grounded": answer.grounded,
        "usage": usage_details(answer.usage),
    } | ({} if answer.answer_match is None else {"answer_match": answer.answer_match})


def usage_details(usage: ModelUsage) -> dict[str, int]:
    """What one node's model calls cost (the names of the response's ``workflow.usage``)."""
    return {
        "model_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_prompt_tokens": usage.cached_prompt_tokens,
    }
