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
    DeletedSource,
    IngestedSource,
    IngestResult,
    RetrievalResult,
    SourceDocument,
)
from ragloop.core.errors import ConfigurationError, DependencyUnavailable, InvalidInput
from ragloop.core.filters import parse_filters
from ragloop.core.models import Embedder
from ragloop.core.validation import collection_name, required_text, tenant_id
from ragloop.retriever.chunking import chunk_text
from ragloop.retriever.expressions import all_of, metadata_condition
from ragloop.retriever.search import DENSE, SearchRequest, checked_mode
from ragloop.retriever.store import MAX_SOURCE_CHARS, ChunkRow, MilvusStore

log = logging.getLogger(__name__)
T = TypeVar("T")

# Up to 100 for evaluations (recall@100); the REST API lets a query ask for 50 at most.
MAX_TOP_K = 100


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
        default_mode: str = "hybrid",
    ) -> None:
        self._store = store
        self._default_mode = checked_mode(default_mode)
        self._fallback_warned: set[str] = set()
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
        return collection_name(name or self._default_collection)

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
        """The ``top_k`` best passages by ``mode`` ("" = the configured default), restricted to
        ``tenant`` and to passages whose metadata matches ``filters``, then dropping those whose
        cosine similarity to the query is below ``similarity_threshold`` (see ``search.py``)."""
        query = required_text(query, "query")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        if not 0.0 <= similarity_threshold <= 1.0:
            raise InvalidInput(
                f"similarity_threshold must be between 0 and 1, got {similarity_threshold}"
            )
        requested = checked_mode(mode) if mode else ""
        conditions = [metadata_condition(c) for c in parse_filters(filters)]
        tenant = tenant_id(tenant)
        name = self._collection(collection)
        layout = await self._milvus(self._store.layout, name, create=False)
        used = requested or self._default_mode
        if layout is None:
            return RetrievalResult([], 0, self._embedder.name, mode=used)
        if used != DENSE and not layout.has_sparse:
            used = self._without_bm25(name, requested)
        expression = all_of(self._store.tenant_filter(name, layout, tenant), *conditions)
        [vector] = await self._embed([query])
        request = SearchRequest(used, vector, query, top_k, expression)
        hits = await self._milvus(self._store.search, name, request)
        kept = [doc for doc in hits if doc.score >= similarity_threshold]
        return RetrievalResult(
            kept, total_found=len(hits), embedding_model=self._embedder.name, mode=used
        )

    def _without_bm25(self, collection: str, requested: str) -> str:
        """The default mode falls back to dense on a collection without BM25 (with a warning,
        once per collection); an explicitly requested sparse or hybrid search is refused."""
        problem = (
            f"collection {collection!r} has no BM25 sparse field (it was created by an older "
            "ragloop, or on a Milvus older than 2.5)"
        )
        if requested:
            raise ConfigurationError(
                f"{problem}, so {requested!r} retrieval is impossible; use mode 'dense' or "
                "re-ingest into a new collection"
            )
        if collection not in self._fallback_warned:
            self._fallback_warned.add(collection)
            log.warning("%s: falling back to dense retrieval", problem)
        return DENSE

    async def describe(self, collection: str = "") -> CollectionInfo:
        return await self._milvus(self._store.describe, self._collection(collection))

    async def list_collections(self) -> list[CollectionInfo]:
        names = await self._milvus(self._store.list_names)
        return [await self._milvus(self._store.describe, name) for name in names]

    async def create_collection(self, collection: str) -> CollectionInfo:
        return await self._milvus(self._store.create, collection_name(collection))

    async def drop_collection(self, collection: str) -> None:
        name = collection_name(collection)  # never the default by omission
        await self._milvus(self._store.drop, name)
        self._fallback_warned.discard(name)

    async def delete_source(
        self, source: str, *, collection: str = "", tenant: str = ""
    ) -> DeletedSource:
        """Delete every chunk of ``source`` (0 chunks if it has none); NotFound if the
        collection does not exist."""
        _validate_source(source, "source")
        name = self._collection(collection)
        count = await self._milvus(
            self._store.delete_source, name, source, tenant=tenant_id(tenant)
        )
        log.info("deleted", extra={"collection": name, "source": source, "chunks": count})
        return DeletedSource(name, source, count)

    async def ingest(
        self, documents: list[SourceDocument], *, collection: str = "", tenant: str = ""
    ) -> IngestResult:
        if not documents:
            raise InvalidInput("no documents to ingest")
        for position, doc in enumerate(documents):
            _validate_source(doc.source, f"document {position}")
            if not doc.text.strip():
                raise InvalidInput(f"document {position} ({doc.source!r}): text must not be empty")
        tenant = tenant_id(tenant)
        name = self._collection(collection)
        ingested: list[IngestedSource] = []
        # Chunks of several small documents share embedding batches (one document of ~2 chunks
        # per call left the model mostly idle); at most about one batch plus one document's
        # chunks wait in memory before they are written.
        pending: list[tuple[SourceDocument, list[str]]] = []
        for doc in documents:
            pending.append(
                (doc, chunk_text(doc.text, size=self._chunk_size, overlap=self._chunk_overlap))
            )
            if sum(len(chunks) for _, chunks in pending) >= self._batch_size:
                ingested += await self._embed_and_write(pending, name, tenant)
                pending = []
        if pending:
            ingested += await self._embed_and_write(pending, name, tenant)
        return IngestResult(name, ingested)

    async def _embed_and_write(
        self, pending: list[tuple[SourceDocument, list[str]]], name: str, tenant: str
    ) -> list[IngestedSource]:
        texts = [text for _, chunks in pending for text in chunks]
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(await self._embed(texts[start : start + self._batch_size]))
        written: list[IngestedSource] = []
        offset = 0
        for doc, chunks in pending:
            doc_vectors = vectors[offset : offset + len(chunks)]
            offset += len(chunks)
            rows = [
                ChunkRow(doc.source, index, text, doc.metadata, vector)
                for index, (text, vector) in enumerate(zip(chunks, doc_vectors, strict=True))
            ]
            try:
                await self._milvus(
                    self._store.replace_source, name, doc.source, rows, tenant=tenant
                )
            except DependencyUnavailable as exc:
                raise DependencyUnavailable(
                    f"ingesting source {doc.source!r} failed: {exc}"
                ) from exc
            log.info(
                "ingested", extra={"collection": name, "source": doc.source, "chunks": len(rows)}
            )
            written.append(IngestedSource(doc.source, len(rows)))
        return written

    def close(self) -> None:
        self._milvus_thread.submit(self._store.close).result()
        self._milvus_thread.shutdown()
        self._embed_threads.shutdown()


def _validate_source(source: str, where: str) -> None:
    if not source.strip():
        raise InvalidInput(f"{where}: source must not be empty")
    if len(source) > MAX_SOURCE_CHARS:
        raise InvalidInput(f"{where}: source is longer than {MAX_SOURCE_CHARS} characters")
    if _has_control_characters(source):
        raise InvalidInput(f"{where}: source must not contain control characters")
