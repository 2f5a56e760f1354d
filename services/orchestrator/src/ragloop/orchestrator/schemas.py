"""REST request and response bodies (snake_case), validated at the edge."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

COLLECTION_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,254}$"


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: str = Field(..., min_length=1, max_length=4000, description="The question.")
    top_k: int | None = Field(None, ge=1, le=50, description="Passages retrieved per round.")
    similarity_threshold: float | None = Field(
        None, ge=0, le=1, description="Minimum cosine similarity of a retrieved passage."
    )
    max_rewrite_attempts: int | None = Field(None, ge=0, le=5, description="Rewrites allowed.")
    grade_pass_threshold: float | None = Field(
        None, ge=0, le=1, description="Share of passages that must pass grading."
    )
    collection: str | None = Field(None, pattern=COLLECTION_PATTERN, description="Knowledge base.")


class CitationOut(BaseModel):
    number: int
    document_id: str
    source: str
    quote: str


class QuerySummary(BaseModel):
    original: str
    final: str
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
    node: str
    round: int
    started_at: datetime
    duration_ms: float
    status: str
    details: dict[str, Any]


class UsageOut(BaseModel):
    model_calls: int
    prompt_tokens: int
    completion_tokens: int


class WorkflowOut(BaseModel):
    outcome: str = Field(description="passed | max_attempts | circular_rewrite | budget_exhausted")
    decision_path: list[str]
    node_executions: list[NodeExecutionOut]
    total_duration_ms: float
    usage: UsageOut


class QueryResponse(BaseModel):
    answer: str
    grounded: bool
    citations: list[CitationOut]
    query: QuerySummary
    rewrite_history: list[RewriteOut]
    retrieval: RetrievalOut
    grader_result: GraderResultOut
    workflow: WorkflowOut


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(..., min_length=1, max_length=1024, description="Name of the document.")
    text: str = Field(..., min_length=1, description="Full text; chunked by the retriever.")
    metadata: dict[str, Any] = Field(default_factory=dict)


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    documents: list[DocumentIn] = Field(..., min_length=1)


class IngestedSourceOut(BaseModel):
    source: str
    chunk_count: int


class IngestResponse(BaseModel):
    collection: str
    sources: list[IngestedSourceOut]
    chunks_written: int


class ErrorDetail(BaseModel):
    code: str
    message: str
    stage: str | None = None
    decision_path: list[str] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorDetail
