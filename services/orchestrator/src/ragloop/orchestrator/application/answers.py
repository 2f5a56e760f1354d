"""The answer body of a query: the JSON of POST /v1/query and of the stream's ``done`` event, the
``ragloop`` object of a chat completion less its ``answer``, and what RagService's QueryResponse is
built from, so that every way in agrees on every number, rounding included."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragloop.core.domain import GradingResult, RetrievalResult
from ragloop.core.names import LoopNode, Outcome, Refusal
from ragloop.orchestrator.loop.corrective import LoopResult, Round
from ragloop.orchestrator.loop.events import usage_details


class CitationOut(BaseModel):
    number: int
    document_id: str
    source: str
    quote: str


class QuerySummary(BaseModel):
    original: str = Field(description="The question as asked.")
    standalone: str = Field(
        description="The question the loop answered: with `history`, the question rewritten "
        "to stand alone; without, the question as asked."
    )
    final: str = Field(description="The query of the last round.")
    was_rewritten: bool
    rewrite_count: int


class RewriteOut(BaseModel):
    query: str
    reason: str


class DocumentOut(BaseModel):
    id: str
    source: str
    chunk_index: int
    score: float
    text: str
    metadata: dict[str, Any]


class RetrievalOut(BaseModel):
    total_documents: int = Field(description="Passages the search returned.")
    filtered_documents: int = Field(description="Passages above the similarity threshold.")
    documents: list[DocumentOut]


class GradeOut(BaseModel):
    document_id: str
    relevant: bool
    confidence: float
    reasoning: str


class GraderResultOut(BaseModel):
    pass_rate: float
    pass_count: int
    total_count: int
    should_rewrite: bool
    grades: list[GradeOut]


class NodeExecutionOut(BaseModel):
    node: LoopNode
    round: int
    started_at: datetime
    duration_ms: float
    status: str
    details: dict[str, Any]


class UsageOut(BaseModel):
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int = Field(
        0,
        description="Of `prompt_tokens`, those the model server took from its prompt cache "
        "instead of evaluating them (0 where the server reports none).",
    )


class WorkflowOut(BaseModel):
    outcome: Outcome = Field(description="Why the loop stopped looking and answered.")
    decision_path: list[LoopNode]
    node_executions: list[NodeExecutionOut]
    total_duration_ms: float
    usage: UsageOut


class QueryResponse(BaseModel):
    answer: str
    grounded: bool
    citations: list[CitationOut]
    removed_citations: list[int] = Field(
        description="Citation numbers the model wrote that point to no given passage; removed."
    )
    uncited_sentences: int = Field(description="Answer sentences without a valid citation.")
    hallucination_risk: float = Field(
        ge=0, le=1, description="Share of answer sentences without a valid citation."
    )
    support: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The model's probability that the cited passages state the answer (the "
        "support check); an answer refused for a low figure keeps it. Null when not checked.",
    )
    answer_match: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The model's probability that the answer's text answers the question (the "
        "answer-match check, made before the support check); an answer refused for a low figure "
        "keeps it. Null when not checked.",
    )
    lead_probabilities: dict[str, float] = Field(
        default_factory=dict,
        description="Where answer_instructions name the words the answer must begin with, or the "
        "question asks yes or no: the model's probability of each (normalised over them) from "
        "the call that chose the lead.",
    )
    refused_by: Refusal | Literal[""] = Field(
        default="",
        description="What refused the answer: `nothing_passed`, `answer_floor` or `out_of_time` "
        "(the loop, before any answer was written), `writer`, `restated`, `unsourced_name`, "
        "`answer_match`, `support` or `after_refusal` (after one was written); empty when the "
        "answer was not refused.",
    )
    query: QuerySummary
    rewrite_history: list[RewriteOut]
    retrieval: RetrievalOut
    grader_result: GraderResultOut
    workflow: WorkflowOut


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
        refused_by=result.answer.refused_by,
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
