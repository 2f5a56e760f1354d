"""Domain types shared by every stage. Plain dataclasses: no gRPC, no Milvus, no model client."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragloop.core.names import RetrievalMode, values

# How the retriever searches: embeddings only, BM25 keywords only, or both fused.
RETRIEVAL_MODES = values(RetrievalMode)


@dataclass(frozen=True)
class Document:
    """A passage (chunk) of a source document."""

    id: str
    text: str
    source: str
    score: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)
    chunk_index: int = 0
    # The passage joined with its neighbouring chunks of the same source, for the generator;
    # empty when the retriever added none.
    window: str = ""


@dataclass(frozen=True)
class Grade:
    """A grader's verdict on one document for one question."""

    document_id: str
    relevant: bool
    confidence: float
    reasoning: str


@dataclass(frozen=True)
class GradedDocument:
    document: Document
    grade: Grade


@dataclass(frozen=True)
class RewriteAttempt:
    query: str
    reason: str


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: ``role`` is "user" or "assistant"."""

    role: str
    content: str


@dataclass(frozen=True)
class ModelUsage:
    """What model calls cost; summed over the calls of one stage invocation."""

    model: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of prompt_tokens, those the model server took from its prompt cache instead of evaluating
    # them (0 where a server reports none).
    cached_prompt_tokens: int = 0

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(
            model=self.model or other.model,
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


@dataclass(frozen=True)
class RetrievalResult:
    documents: list[Document]
    total_found: int
    embedding_model: str = ""
    mode: str = ""  # the retrieval mode actually used (one of RETRIEVAL_MODES)


@dataclass(frozen=True)
class GradingResult:
    grades: list[Grade]
    usage: ModelUsage = field(default_factory=ModelUsage)
    # Ids of documents whose grade stands in for a verdict that could not be had (a reply that
    # did not parse): not to be reused, e.g. by a cache. Never crosses gRPC.
    provisional: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Rewrite:
    query: str
    reason: str
    keywords: list[str] = field(default_factory=list)
    usage: ModelUsage = field(default_factory=ModelUsage)


@dataclass(frozen=True)
class StandaloneQuery:
    """A follow-up question rewritten to stand alone, and what that cost."""

    query: str
    usage: ModelUsage = field(default_factory=ModelUsage)


@dataclass(frozen=True)
class Citation:
    number: int
    document_id: str
    source: str
    quote: str


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[Citation]
    grounded: bool
    usage: ModelUsage = field(default_factory=ModelUsage)
    # The citation check after generation:
    removed_citations: list[int] = field(default_factory=list)  # cited numbers of no given passage
    uncited_sentences: int = 0  # answer sentences left without a valid citation
    hallucination_risk: float = 0.0  # uncited_sentences / answer sentences (0 for a refusal)
    # The support check's probability that the cited passages state the answer, in [0, 1];
    # a refused answer keeps the figure that refused it. None: not checked.
    support: float | None = None
    # The answer-match check's probability that the answer's text answers the question, in
    # [0, 1]; a refused answer keeps the figure that refused it. None: not checked.
    answer_match: float | None = None
    # Where the instructions name the words the answer must begin with, or the question asks yes
    # or no: the scored call's probability of each (normalised over them) that chose the lead.
    # Empty otherwise.
    lead_probabilities: dict[str, float] = field(default_factory=dict)
    # What refused the answer (a ``names.Refusal`` value); "" when it was not refused.
    refused_by: str = ""


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of an answer's text while the model writes it; the ``Answer`` follows."""

    text: str  # to append to the text received so far
    restart: bool = False  # discard the text received so far first


@dataclass(frozen=True)
class SourceDocument:
    """A whole document to ingest."""

    source: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamedDocument:
    """A document whose text arrives in pieces (joined as they are), so that a large one is
    never whole in memory. A consumer reads all of one document's ``pieces`` before the next."""

    source: str
    pieces: AsyncIterable[str]
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, document: SourceDocument) -> StreamedDocument:
        return cls(document.source, _one_piece(document.text), document.metadata)


async def _one_piece(text: str) -> AsyncIterator[str]:
    yield text


async def one_by_one(documents: Iterable[StreamedDocument]) -> AsyncIterator[StreamedDocument]:
    """``documents`` as the asynchronous iterable that ``ingest_stream`` reads."""
    for document in documents:
        yield document


@dataclass(frozen=True)
class IngestedSource:
    source: str
    chunk_count: int


@dataclass(frozen=True)
class IngestResult:
    collection: str
    sources: list[IngestedSource]

    @property
    def chunks_written(self) -> int:
        return sum(s.chunk_count for s in self.sources)


@dataclass(frozen=True)
class DeletedSource:
    collection: str
    source: str
    chunks_deleted: int


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    exists: bool
    chunk_count: int = 0
    embedding_model: str = ""
    dimension: int = 0
    full_text: bool = False  # has a BM25 sparse field: sparse and hybrid retrieval work
    tenants: bool = False  # has the tenant partition-key field
