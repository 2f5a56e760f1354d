"""Build the REST response of a query from the loop's result."""

from __future__ import annotations

from typing import Any

from ragloop.core.domain import GradingResult, RetrievalResult
from ragloop.orchestrator.loop.corrective import LoopResult, Outcome, Round
from ragloop.orchestrator.loop.events import usage_details
from ragloop.orchestrator.rest.schemas import (
    CitationOut,
    DocumentOut,
    GradeOut,
    GraderResultOut,
    NodeExecutionOut,
    QueryResponse,
    QuerySummary,
    RetrievalOut,
    RewriteOut,
    UsageOut,
    WorkflowOut,
)


def query_response_body(result: LoopResult) -> dict[str, Any]:
    """The JSON body of POST /v1/query, and the data of the stream's ``done`` event."""
    return build_query_response(result).model_dump(mode="json")


def build_query_response(result: LoopResult) -> QueryResponse:
    usage = result.trace.usage
    # Retrieval and grades of the last graded round (none when the budget ran out before one).
    final = result.final_round or Round(
        0, result.final_query, RetrievalResult([], 0), GradingResult([])
    )
    history = result.trace.rewrite_history
    return QueryResponse(
        answer=result.answer.text,
        grounded=result.answer.grounded,
        citations=[CitationOut(**vars(c)) for c in result.answer.citations],
        removed_citations=result.answer.removed_citations,
        uncited_sentences=result.answer.uncited_sentences,
        hallucination_risk=round(result.answer.hallucination_risk, 4),
        support=None if result.answer.support is None else round(result.answer.support, 4),
        answer_match=result.answer.answer_match,
        lead_probabilities=result.answer.lead_probabilities,
        query=QuerySummary(
            original=result.original_query,
            standalone=result.standalone_query,
            final=result.final_query,
            was_rewritten=bool(history),
            rewrite_count=len(history),
        ),
        rewrite_history=[RewriteOut(query=a.query, reason=a.reason) for a in history],
        retrieval=RetrievalOut(
            total_documents=final.retrieval.total_found,
            filtered_documents=len(final.retrieval.documents),
            documents=[
                DocumentOut(
                    id=d.id,
                    source=d.source,
                    chunk_index=d.chunk_index,
                    score=round(d.score, 4),
                    text=d.text,
                    metadata=d.metadata,
                )
                for d in final.retrieval.documents
            ],
        ),
        grader_result=GraderResultOut(
            pass_rate=round(final.pass_rate, 4),
            pass_count=final.pass_count,
            total_count=len(final.retrieval.documents),
            should_rewrite=result.outcome is not Outcome.PASSED,
            grades=[
                GradeOut(
                    document_id=g.document_id,
                    relevant=g.relevant,
                    confidence=round(g.confidence, 3),
                    reasoning=g.reasoning,
                )
                for g in final.grading.grades
            ],
        ),
        workflow=WorkflowOut(
            outcome=result.outcome.value,
            decision_path=result.trace.decision_path,
            node_executions=[
                NodeExecutionOut(**{**vars(n), "duration_ms": round(n.duration_ms, 1)})
                for n in result.trace.node_executions
            ],
            total_duration_ms=round(result.total_duration_ms, 1),
            usage=UsageOut(**usage_details(usage)),
        ),
    )
