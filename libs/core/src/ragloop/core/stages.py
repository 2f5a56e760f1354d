"""The four stage interfaces. The loop depends only on these; in-process stages and gRPC clients
both implement them, so the loop runs unchanged over either."""

from __future__ import annotations

from typing import Protocol

from ragloop.core.domain import (
    Answer,
    CollectionInfo,
    Document,
    GradedDocument,
    GradingResult,
    IngestResult,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    SourceDocument,
)


class Retriever(Protocol):
    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, collection: str = ""
    ) -> RetrievalResult: ...


class Ingestor(Protocol):
    async def ingest(
        self, documents: list[SourceDocument], *, collection: str = ""
    ) -> IngestResult: ...

    async def describe(self, collection: str = "") -> CollectionInfo: ...


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


class Generator(Protocol):
    async def generate(self, question: str, documents: list[Document]) -> Answer: ...
