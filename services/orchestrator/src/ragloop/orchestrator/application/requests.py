"""What a question asks, validated where it comes in: the body of POST /v1/query, which the
stream, RagService (``rpc/messages.py``) and the chat completions (``rest/chat_mapping.py``)
build too, so that every way in validates with the same limits and messages."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ragloop.core.domain import Turn
from ragloop.core.filters import parse_filters
from ragloop.core.names import RetrievalMode
from ragloop.core.validation import (
    COLLECTION_PATTERN,
    MAX_ANSWER_INSTRUCTIONS_CHARS,
    MAX_HISTORY_CHARS,
    MAX_HISTORY_TURN_CHARS,
    MAX_HISTORY_TURNS,
    MAX_QUERY_CHARS,
    history_turns,
    json_data,
    unicode_text,
)
from ragloop.orchestrator.application.tenants import tenant_field
from ragloop.orchestrator.policy.request import RequestPolicy, overrides_of
from ragloop.orchestrator.policy.thresholds import check_schedule


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
