"""The retriever stage: query embedding + Milvus search, and document ingestion. No gRPC here."""

from __future__ import annotations

import asyncio
import logging
import time
import unicodedata
from collections.abc import AsyncIterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pymilvus import MilvusException

from ragloop.core import tracing
from ragloop.core.domain import (
    CollectionInfo,
    DeletedSource,
    IngestedSource,
    IngestResult,
    RetrievalResult,
    SourceDocument,
    StreamedDocument,
    one_by_one,
)
from ragloop.core.errors import ConfigurationError, DependencyUnavailable, InvalidInput
from ragloop.core.filters import parse_filters
from ragloop.core.metrics import (
    count_ingest_failure,
    count_model_failure,
    observe_ingest,
    observe_model_call,
    observe_retrieval,
)
from ragloop.core.models import Embedder
from ragloop.core.models.embeddings import OnnxMiniLMEmbedder
from ragloop.core.names import Stage
from ragloop.core.validation import collection_name, required_text, tenant_id
from ragloop.retriever.chunking import CHARACTERS, Chunker, Measure, Tokens
from ragloop.retriever.expressions import all_of, metadata_condition
from ragloop.retriever.ingestion import BatchWriter, PendingChunk
from ragloop.retriever.search import DENSE, SearchRequest, checked_mode
from ragloop.retriever.store import MAX_SOURCE_CHARS, MilvusStore
from ragloop.retriever.windows import neighbour_keys, with_windows

log = logging.getLogger(__name__)
T = TypeVar("T")

# Up to 100 for evaluations (recall@100); the REST API lets a query ask for 50 at most.
MAX_TOP_K = 100
FEED_CHARS = 64 * 1024  # text handed to the chunker at a time


def _search_attributes(collection: str, mode: str) -> dict[str, str]:
    """The span attributes of a Milvus search (OpenTelemetry's database conventions)."""
    return {
        "db.system": "milvus",
        "db.system.name": "milvus",
        "db.operation.name": "search",
        "db.collection.name": collection,
        "ragloop.retrieval.mode": mode,
    }


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
        chunk_unit: str = "characters",
        ingest_batch_chunks: int = 256,
        passage_window_chunks: int = 0,
    ) -> None:
        self._store = store
        self._default_mode = checked_mode(default_mode)
        self._fallback_warned: set[str] = set()
        self._embedder = embedder
        self._default_collection = default_collection
        self._chunk_size = chunk_size
        self._chunk_overlap = chunk_overlap
        self._measure = chunk_measure(chunk_unit, embedder, chunk_size)
        self._batch_size = embedding_batch_size
        self._ingest_batch_chunks = ingest_batch_chunks
        self._window_chunks = passage_window_chunks
        # One thread for Milvus (the Lite engine is not meant for concurrent callers), one pool
        # for embeddings so that ingestion does not stall searches.
        self._milvus_thread = ThreadPoolExecutor(1, thread_name_prefix="milvus")
        self._embed_threads = ThreadPoolExecutor(2, thread_name_prefix="embed")

    async def _milvus(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._milvus_thread, lambda: fn(*args, **kwargs))
        except MilvusException as exc:
            # Milvus may have restarted and released its collections: check and load them again
            # on the next call instead of failing every read until this process restarts.
            self._store.forget_layouts()
            raise DependencyUnavailable(f"Milvus call failed: {exc.message}") from exc

    async def _embed(self, texts: list[str], *, queries: bool = False) -> list[list[float]]:
        """Documents' vectors, or with ``queries`` the queries' (each model's prefixes differ)."""
        loop = asyncio.get_running_loop()
        name, attributes = tracing.model_call("embeddings", self._embedder.name)
        embed = self._embedder.embed_queries if queries else self._embedder.embed
        with tracing.call_span(name, attributes):
            started = time.perf_counter()
            try:
                vectors = await loop.run_in_executor(self._embed_threads, embed, texts)
            except Exception as exc:
                count_model_failure(Stage.RETRIEVER, self._embedder.name, exc)
                raise
            observe_model_call(Stage.RETRIEVER, self._embedder.name, time.perf_counter() - started)
        return vectors

    async def connect(self) -> None:
        """Raise DependencyUnavailable naming what does not answer yet: the embedding model
        (asked for its dimension: a remote model's is known only from an answer) or Milvus."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._embed_threads, lambda: self._embedder.dimension)
        await self._milvus(self._store.server_features)

    async def warm_up(self) -> None:
        """Load the embedding model and open Milvus before the first request: without this the
        first query after a start paid for both (the ONNX session was the largest cost the
        profiler found in the retriever, issue 9)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._embed_threads, self._embedder.embed, ["warm-up"])
        # Rows an earlier process left unindexed (before ingestion sealed its writes) too.
        await self._milvus(self._store.seal)

    @property
    def embedding_model(self) -> str:
        return self._embedder.name

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
        [vector] = await self._embed([query], queries=True)
        request = SearchRequest(used, vector, query, top_k, expression)
        with tracing.call_span(f"search {name}", _search_attributes(name, used)) as span:
            started = time.perf_counter()
            hits = await self._milvus(self._store.search, name, request)
            observe_retrieval(used, len(hits), time.perf_counter() - started)
            span.set_attribute("db.response.returned_rows", len(hits))
        kept = [doc for doc in hits if doc.score >= similarity_threshold]
        if self._window_chunks and kept:
            keys = neighbour_keys(kept, self._window_chunks)
            texts = await self._milvus(self._store.chunk_texts, name, keys, tenant=tenant)
            kept = with_windows(kept, texts, self._window_chunks)
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
        """Ingest whole documents; all are checked before any is written."""
        if not documents:
            raise InvalidInput("no documents to ingest")
        for position, doc in enumerate(documents):
            _validate_source(doc.source, f"document {position}")
            if not doc.text.strip():
                raise InvalidInput(f"document {position} ({doc.source!r}): text must not be empty")
        return await self.ingest_stream(
            one_by_one([StreamedDocument.of(doc) for doc in documents]),
            collection=collection,
            tenant=tenant,
        )

    async def ingest_stream(
        self,
        documents: AsyncIterable[StreamedDocument],
        *,
        collection: str = "",
        tenant: str = "",
    ) -> IngestResult:
        """Chunk, embed and store documents read piece by piece, in batches (see
        ``ingestion.py``): memory stays bounded however long a document is, and chunks of small
        documents share embedding calls. Re-ingesting a source replaces its chunks. If anything
        fails, every chunk of a partly written source is deleted and the error names it;
        documents finished before stay ingested."""
        tenant = tenant_id(tenant)
        name = self._collection(collection)
        await self._milvus(self._store.layout, name, create=True)
        writer = BatchWriter(
            embed=self._embed,
            write=lambda rows, finished: self._milvus(
                self._store.write_chunks, name, rows, tenant=tenant, finished=finished
            ),
            remove=lambda sources: self._milvus(
                self._store.remove_sources, name, sources, tenant=tenant
            ),
            batch_chunks=self._ingest_batch_chunks,
            embed_batch=self._batch_size,
            log_extra={"collection": name},
        )
        ingested: list[IngestedSource] = []
        try:
            async for document in documents:
                ingested.append(await self._read(document, len(ingested), writer))
            if not ingested:
                raise InvalidInput("no documents to ingest")
            await writer.close()
        except BaseException as exc:
            if isinstance(exc, Exception):
                count_ingest_failure(exc)
            await asyncio.shield(writer.abort())
            raise
        observe_ingest(len(ingested), sum(source.chunk_count for source in ingested))
        try:
            await self._milvus(self._store.seal, [name])
        except DependencyUnavailable as exc:
            # The chunks are stored and searchable; only slower to search until the next seal.
            log.warning("could not seal the ingested chunks: %s", exc, extra={"collection": name})
        return IngestResult(name, ingested)

    async def _read(
        self, document: StreamedDocument, position: int, writer: BatchWriter
    ) -> IngestedSource:
        """Chunk one document into the writer's batches."""
        source = document.source
        _validate_source(source, f"document {position}")
        if writer.holds(source):  # the same source again: its earlier version is written first
            await writer.flush()
        chunker = Chunker(size=self._chunk_size, overlap=self._chunk_overlap, measure=self._measure)
        count = 0
        async for piece in document.pieces:
            # Slices bound both the copies the chunker makes and the time the loop is busy.
            for offset in range(0, len(piece), FEED_CHARS):
                for text in chunker.feed(piece[offset : offset + FEED_CHARS]):
                    await writer.add(PendingChunk(source, count, text, document.metadata))
                    count += 1
        for text in chunker.close():
            await writer.add(PendingChunk(source, count, text, document.metadata))
            count += 1
        if not count:
            raise InvalidInput(f"document {position} ({source!r}): text must not be empty")
        writer.finish(source, count)
        return IngestedSource(source, count)

    def close(self) -> None:
        self._milvus_thread.submit(self._store.close).result()
        self._milvus_thread.shutdown()
        self._embed_threads.shutdown()


def chunk_measure(unit: str, embedder: Embedder, chunk_size: int) -> Measure:
    """How chunk lengths are measured: characters, or the embedding model's own tokens (then a
    chunk may not be longer than the model reads, or its end would be cut off unembedded)."""
    if unit == "characters":
        return CHARACTERS
    if unit != "tokens":
        raise ConfigurationError(f"chunk_unit must be 'characters' or 'tokens', not {unit!r}")
    if not isinstance(embedder, OnnxMiniLMEmbedder):
        raise ConfigurationError(
            f"chunk_unit 'tokens' needs the embedding model's tokenizer, which ragloop has for "
            f"the local all-MiniLM-L6-v2 model only, not {embedder.name!r}: use 'characters'"
        )
    limit = OnnxMiniLMEmbedder.MAX_TOKENS - 2
    if chunk_size > limit:
        raise ConfigurationError(
            f"chunk_size {chunk_size} tokens is more than {embedder.name!r} reads: "
            f"{OnnxMiniLMEmbedder.MAX_TOKENS} word pieces including [CLS] and [SEP], so at most "
            f"{limit}; the end of longer chunks would not be embedded"
        )
    return Tokens(embedder.tokenizer())


def _validate_source(source: str, where: str) -> None:
    if not source.strip():
        raise InvalidInput(f"{where}: source must not be empty")
    if len(source) > MAX_SOURCE_CHARS:
        raise InvalidInput(f"{where}: source is longer than {MAX_SOURCE_CHARS} characters")
    if _has_control_characters(source):
        raise InvalidInput(f"{where}: source must not contain control characters")
