"""The four stage interfaces. The loop depends only on these; in-process stages and gRPC clients
both implement them, so the loop runs unchanged over either."""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import Any, Protocol

from ragloop.core.domain import (
    Answer,
    CollectionInfo,
    DeletedSource,
    Document,
    GradedDocument,
    GradingResult,
    IngestResult,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    SourceDocument,
    StandaloneQuery,
    StreamedDocument,
    Turn,
)
from ragloop.core.leads import Decision


class Retriever(Protocol):
    async def retrieve(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float,
        collection: str = "",
        mode: str = "",
        filters: dict[str, Any] | None = None,
        tenant: str = "",
    ) -> RetrievalResult:
        """``mode``: one of RETRIEVAL_MODES, "" for the retriever's default. ``filters``: see
        ``ragloop.core.filters``. ``tenant``: "" is the default tenant."""
        ...


class Ingestor(Protocol):
    """Ingestion and collection management (the retriever's other face)."""

    async def ingest(
        self, documents: list[SourceDocument], *, collection: str = "", tenant: str = ""
    ) -> IngestResult: ...

    async def ingest_stream(
        self,
        documents: AsyncIterable[StreamedDocument],
        *,
        collection: str = "",
        tenant: str = "",
    ) -> IngestResult:
        """Like ``ingest`` for documents of any size, read piece by piece."""
        ...

    async def describe(self, collection: str = "") -> CollectionInfo: ...

    async def delete_source(
        self, source: str, *, collection: str = "", tenant: str = ""
    ) -> DeletedSource: ...

    async def list_collections(self) -> list[CollectionInfo]: ...

    async def create_collection(self, collection: str) -> CollectionInfo: ...

    async def drop_collection(self, collection: str) -> None: ...


class Grader(Protocol):
    async def grade(self, question: str, documents: list[Document]) -> GradingResult: ...


class Rewriter(Protocol):
    async def rewrite(
        self,
        original_query: str,
        current_query: str,
        failed: list[GradedDocument],
        history: list[RewriteAttempt],
    ) -> Rewrite: ...

    async def standalone(self, history: list[Turn], question: str) -> StandaloneQuery:
        """``question``, a follow-up in the conversation ``history`` (oldest first, at least
        one turn), rewritten to stand alone."""
        ...


class Generator(Protocol):
    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        """``documents``: most relevant first. ``instructions``: how the user wants the answer
        written (e.g. "Answer in French."), "" for none; they never override answering from
        ``documents`` with citations. ``decision``: what the answer begins with, as the caller
        classified the question (``leads.requested_decision``); None: the generator classifies
        it."""
        ...


@dataclass
class LoopStages:
    """The four stages one corrective loop drives."""

    retriever: Retriever
    grader: Grader
    rewriter: Rewriter
    generator: Generator
