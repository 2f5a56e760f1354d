"""The retriever stage: query embedding + Milvus search, and document ingestion. No gRPC here."""

from __future__ import annotations

import asyncio
import logging
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pymilvus import MilvusException

from ragloop.core.domain import (
    CollectionInfo,
    IngestedSource,
    IngestResult,
    RetrievalResult,
    SourceDocument,
)
from ragloop.core.errors import DependencyUnavailable, InvalidInput
from ragloop.core.models import Embedder
from ragloop.core.validation import required_text
from ragloop.retriever.chunking import chunk_text
from ragloop.retriever.store import MAX_SOURCE_CHARS, ChunkRow, MilvusStore

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_TOP_K = 50


def _has_control_characters(value: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in value)


class MilvusRetriever:
    """Implements the ``Retriever`` and ``Ingestor`` interfaces over Milvus and an embedder."""

    def __init__(
        self,
        store: MilvusStore,
        embedder: Embedder,
        *,
        default_collection: str,
        chunk_size: int,
        chunk_overlap: int,
        embedding_batch_size: int,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._default_collection = default_collection
        self._chunk_size = chunk_size
        self._chunk_overlap = chunk_overlap
        self._batch_size = embedding_batch_size
        # One thread for Milvus (the Lite engine is not meant for concurrent callers), one pool
        # for embeddings so that ingestion does not stall searches.
        self._milvus_thread = ThreadPoolExecutor(1, thread_name_prefix="milvus")
        self._embed_threads = ThreadPoolExecutor(2, thread_name_prefix="embed")

    async def _milvus(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._milvus_thread, lambda: fn(*args, **kwargs))
        except MilvusException as exc:
            raise DependencyUnavailable(f"Milvus call failed: {exc.message}") from exc

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._embed_threads, self._embedder.embed, texts)

    def _collection(self, name: str) -> str:
        return name or self._default_collection

    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, collection: str = ""
    ) -> RetrievalResult:
        query = required_text(query, "query")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        if not 0.0 <= similarity_threshold <= 1.0:
            raise InvalidInput(
                f"similarity_threshold must be between 0 and 1, got {similarity_threshold}"
            )
        name = self._collection(collection)
        [vector] = await self._embed([query])
        hits = await self._milvus(self._store.search, name, vector, limit=top_k)
        kept = [doc for doc in hits if doc.score >= similarity_threshold]
        return RetrievalResult(kept, total_found=len(hits), embedding_model=self._embedder.name)

    async def describe(self, collection: str = "") -> CollectionInfo:
        return await self._milvus(self._store.describe, self._collection(collection))

    async def ingest(
        self, documents: list[SourceDocument], *, collection: str = ""
    ) -> IngestResult:
        if not documents:
            raise InvalidInput("no documents to ingest")
        for position, doc in enumerate(documents):
            _validate_source_document(position, doc)
        name = self._collection(collection)
        ingested: list[IngestedSource] = []
        for doc in documents:
            chunks = chunk_text(doc.text, size=self._chunk_size, overlap=self._chunk_overlap)
            vectors: list[list[float]] = []
            for start in range(0, len(chunks), self._batch_size):
                vectors.extend(await self._embed(chunks[start : start + self._batch_size]))
            rows = [
                ChunkRow(doc.source, index, text, doc.metadata, vector)
                for index, (text, vector) in enumerate(zip(chunks, vectors, strict=True))
            ]
            try:
                await self._milvus(self._store.replace_source, name, doc.source, rows)
            except DependencyUnavailable as exc:
                raise DependencyUnavailable(
                    f"ingesting source {doc.source!r} failed: {exc}"
                ) from exc
            log.info(
                "ingested", extra={"collection": name, "source": doc.source, "chunks": len(rows)}
            )
            ingested.append(IngestedSource(doc.source, len(rows)))
        return IngestResult(name, ingested)

    def close(self) -> None:
        self._milvus_thread.submit(self._store.close).result()
        self._milvus_thread.shutdown()
        self._embed_threads.shutdown()


def _validate_source_document(position: int, doc: SourceDocument) -> None:
    where = f"document {position}"
    if not doc.source.strip():
        raise InvalidInput(f"{where}: source must not be empty")
    if len(doc.source) > MAX_SOURCE_CHARS:
        raise InvalidInput(f"{where}: source is longer than {MAX_SOURCE_CHARS} characters")
    if _has_control_characters(doc.source):
        raise InvalidInput(f"{where}: source must not contain control characters")
    if not doc.text.strip():
        raise InvalidInput(f"{where} ({doc.source!r}): text must not be empty")
