"""REST request and response bodies (snake_case), validated at the edge."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ragloop.core.domain import Turn
from ragloop.core.filters import parse_filters
from ragloop.core.names import LoopNode, Outcome, RetrievalMode
from ragloop.core.validation import (
    COLLECTION_PATTERN,
    MAX_ANSWER_INSTRUCTIONS_CHARS,
    MAX_HISTORY_CHARS,
    MAX_HISTORY_TURN_CHARS,
    MAX_HISTORY_TURNS,
    MAX_QUERY_CHARS,
    TENANT_PATTERN,
    history_turns,
    json_data,
    unicode_text,
)
from ragloop.orchestrator.loop.request_policy import RequestPolicy, overrides_of
from ragloop.orchestrator.loop.thresholds import check_schedule


def tenant_field() -> Any:
    return Field(
        None,
        pattern=TENANT_PATTERN,
        description="Tenant whose chunks are used; omitted means the default tenant.",
    )


class QueryOptions(overrides_of(RequestPolicy)):  # type: ignore[misc]
    """What a question chooses of the loop's policy (``RequestPolicy``'s fields among them): the
    fields of ``QueryRequest`` but the question, and the ``ragloop`` object of a chat completion
    request."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    relax_similarity: bool | None = Field(
        None,
        description="Lower the similarity threshold round by round, along the server's "
        "RAGLOOP_SIMILARITY_RELAXATION (e.g. 0.65 → 0.5 → 0.35) or `similarity_thresholds`; "
        "omitted means the server's default (RAGLOOP_RELAX_SIMILARITY).",
    )
    similarity_thresholds: list[float] | None = Field(
        None,
        description="Similarity threshold of each round (1 to 6 values in [0, 1], never "
        "increasing; later rounds keep the last), e.g. [0.65, 0.5, 0.35].",
    )
    collection: str | None = Field(None, pattern=COLLECTION_PATTERN, description="Knowledge base.")
    retrieval_mode: RetrievalMode | None = Field(
        None,
        description="dense (embeddings), sparse (BM25 keywords) or hybrid (both, fused); "
        "omitted means the retriever's default.",
    )
    filters: dict[str, Any] | None = Field(
        None,
        description='Metadata filters, all of which must hold, e.g. {"lang": "en", '
        '"year": {"gte": 2020}, "tag": {"in": ["a", "b"]}}; operators eq, in, gt, gte, lt, lte. '
        "Strings (ISO dates too) compare lexicographically.",
    )
    tenant: str | None = tenant_field()
    answer_instructions: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_ANSWER_INSTRUCTIONS_CHARS,
        description='How the answer should be written, e.g. "Answer in French." or "Begin your '
        f'answer with yes, no or maybe." (1 to {MAX_ANSWER_INSTRUCTIONS_CHARS} characters). Only '
        "the generator reads them: retrieval, grading and rewriting see the query as asked, and "
        "they never override answering from the sources with citations. Omitted: none.",
    )

    @field_validator("query", "answer_instructions", check_fields=False)
    @classmethod
    def _unicode_text(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else unicode_text(value, str(info.field_name))

    @field_validator("filters")
    @classmethod
    def _valid_filters(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # Each raises InvalidInput (a ValueError): a 422 naming `filters`.
        parse_filters(json_data(value, "filters"))
        return value

    @field_validator("similarity_thresholds")
    @classmethod
    def _valid_schedule(cls, value: list[float] | None) -> list[float] | None:
        return None if value is None else check_schedule(value, "similarity_thresholds")

    @model_validator(mode="after")
    def _one_threshold_choice(self) -> QueryOptions:
        if self.similarity_thresholds is None:
            if self.relax_similarity and self.similarity_threshold is not None:
                raise ValueError(
                    "relax_similarity takes the thresholds of RAGLOOP_SIMILARITY_RELAXATION: "
                    "give similarity_thresholds to choose them, not similarity_threshold"
                )
            return self
        if self.similarity_threshold is not None:
            raise ValueError(
                "give either similarity_threshold (the same in every round) or "
                "similarity_thresholds (one per round), not both"
            )
        if self.relax_similarity is False:
            raise ValueError(
                "relax_similarity false contradicts similarity_thresholds (which relaxes the "
                "threshold round by round): omit one of them"
            )
        return self


class TurnIn(BaseModel):
    """One earlier turn of the conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"] = Field(description="Who said it.")
    content: str = Field(
        ...,
        min_length=1,
        max_length=MAX_HISTORY_TURN_CHARS,
        description=f"What was said (1 to {MAX_HISTORY_TURN_CHARS} characters).",
    )


class QueryRequest(QueryOptions):
    """A question, and what it chooses of the loop's policy."""

    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS, description="The question.")
    history: list[TurnIn] = Field(
        default_factory=list,
        max_length=MAX_HISTORY_TURNS,
        description="The conversation before this question, oldest first, for a follow-up "
        'question ("and when was it founded?"): the question is first rewritten into one that '
        "stands alone (the `contextualize` node), which retrieval, grading, rewriting and the "
        f"answer use. At most {MAX_HISTORY_TURNS} turns of at most {MAX_HISTORY_TURN_CHARS} "
        f"characters each, {MAX_HISTORY_CHARS} together. Omitted or empty: the question stands "
        "alone.",
    )

    @field_validator("history")
    @classmethod
    def _bounded_history(cls, value: list[TurnIn]) -> list[TurnIn]:
        # InvalidInput (a ValueError) naming the limit: a 422, INVALID_ARGUMENT over gRPC.
        history_turns([(turn.role, turn.content) for turn in value])
        return value

    def turns(self) -> list[Turn]:
        """The history as the loop takes it."""
        return [Turn(turn.role, turn.content.strip()) for turn in self.history]


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

    @field_validator("source", "text")
    @classmethod
    def _unicode_text(cls, value: str, info: ValidationInfo) -> str:
        return unicode_text(value, str(info.field_name))

    @field_validator("metadata")
    @classmethod
    def _unicode_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_data(value, "metadata")


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    tenant: str | None = tenant_field()
    documents: list[DocumentIn] = Field(..., min_length=1)


class IngestedSourceOut(BaseModel):
    source: str
    chunk_count: int


class IngestResponse(BaseModel):
    collection: str
    sources: list[IngestedSourceOut]
    chunks_written: int


class UploadOptions(BaseModel):
    """The non-file parts of a multipart upload."""

    model_config = ConfigDict(extra="forbid")

    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    tenant: str | None = tenant_field()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _unicode_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_data(value, "metadata")


class DeletedSourceOut(BaseModel):
    collection: str
    source: str
    chunks_deleted: int


class CollectionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=COLLECTION_PATTERN, description="Name of the new collection.")


class CollectionOut(BaseModel):
    name: str
    chunk_count: int
    embedding_model: str
    dimension: int
    full_text: bool = Field(description="Has BM25: sparse and hybrid retrieval work.")
    tenants: bool = Field(description="Has the tenant (partition key) field.")


class CollectionsOut(BaseModel):
    collections: list[CollectionOut]


class ErrorDetail(BaseModel):
    code: str
    message: str
    stage: str | None = None
    decision_path: list[str] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ValidationProblem(BaseModel):
    loc: list[str | int] = Field(description='Where: e.g. ["body", "top_k"].')
    msg: str = Field(description="What is wrong with it.")
    type: str


class ValidationErrorResponse(BaseModel):
    """A request body or parameter that does not fit the schema (FastAPI's shape)."""

    detail: list[ValidationProblem]


# --- the event stream (POST /v1/query/stream): the data of each event ---------------------------


class NodeStartedEvent(BaseModel):
    node: LoopNode
    round: int
    query: str


class NodeFinishedEvent(BaseModel):
    node: LoopNode
    round: int
    duration_ms: float
    status: Literal["ok", "error"]
    details: dict[str, Any]


class TokenEvent(BaseModel):
    text: str
    restart: bool


class StreamErrorEvent(ErrorDetail):
    status: int = Field(description="The HTTP status POST /v1/query would have answered with.")


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its ``$defs`` inlined, for schemas written into the OpenAPI
    document by hand (a request body of two forms, the events of a stream)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)
