"""Milvus access for the retriever: one collection per knowledge base (see ``schema.py``).

Works the same on embedded Milvus Lite (a path) and a Milvus server (an http URI). pymilvus is
synchronous; the retriever calls this class from one worker thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymilvus import MilvusClient, MilvusException
from pymilvus.client.types import LoadState

from ragloop.core.domain import CollectionInfo, Document
from ragloop.core.errors import ConfigurationError, DependencyUnavailable, NotFound
from ragloop.core.models.embedding_profiles import Prefixes
from ragloop.core.validation import collection_name
from ragloop.retriever import schema
from ragloop.retriever.consistency import StrongReadsClient
from ragloop.retriever.expressions import all_of, equals, string_literal
from ragloop.retriever.schema import CollectionLayout, ServerFeatures
from ragloop.retriever.search import (
    DENSE,
    HYBRID,
    SPARSE_PARAMS,
    Fusion,
    SearchRequest,
    cosines,
    dense_params,
    hybrid_requests,
)

log = logging.getLogger(__name__)

# pymilvus pings every 10 s even when idle; servers that keep gRPC's defaults (no pings closer
# than 5 min, none at all without a call in flight, e.g. `milvus-lite server`) answer with GOAWAY
# "too_many_pings" and the next call can fail. Ping as often as those defaults allow: every
# 5 min, and only while a call is in flight (an idle retriever sent GOAWAY-earning pings).
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": False}
MODEL_PROPERTY = "ragloop.embedding_model"
DIMENSION_PROPERTY = "ragloop.dimension"
# The query and document prefixes the vectors were made with (JSON): the same model with other
# prefixes makes vectors that match questions worse, silently.
PREFIXES_PROPERTY = "ragloop.embedding_prefixes"
NO_PREFIXES = Prefixes()
MAX_SOURCE_CHARS = schema.MAX_SOURCE_CHARS
OUTPUT_FIELDS = [
    schema.TEXT_FIELD,
    schema.SOURCE_FIELD,
    schema.CHUNK_INDEX_FIELD,
    schema.METADATA_FIELD,
    schema.DENSE_FIELD,
]

__all__ = ["ChunkRow", "MilvusStore", "chunk_id", "prefixes_property", "string_literal"]


def prefixes_property(prefixes: Prefixes) -> str:
    """How a collection records its prefixes: ``{"document": …, "query": …}``."""
    return json.dumps({"document": prefixes.document, "query": prefixes.query}, sort_keys=True)


def chunk_id(collection: str, source: str, chunk_index: int, tenant: str = "") -> str:
    """Primary key of a chunk: re-ingesting a source overwrites its chunks, never adds copies.

    The default tenant ("") keeps the key of collections written before tenants existed."""
    parts = (
        (collection, source, chunk_index)
        if not tenant
        else (collection, tenant, source, chunk_index)
    )
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ChunkRow:
    source: str
    chunk_index: int
    text: str
    metadata: dict[str, Any]
    vector: list[float]


class MilvusStore:
    def __init__(
        self,
        uri: str,
        *,
        token: str = "",
        model_name: str,
        dimension: int | Callable[[], int],
        prefixes: Prefixes = NO_PREFIXES,
        fusion: Fusion | None = None,
    ) -> None:
        """``dimension``: of the model's vectors, or how to ask for it (asked when a collection
        is first checked or created: a remote model may not answer yet when this is built).
        ``prefixes``: those the embedder puts before queries and documents."""
        self._uri = uri
        self._token = token
        self._model_name = model_name
        self._prefixes = prefixes
        self._dimension_of = dimension if callable(dimension) else lambda: dimension
        self._fusion = fusion or Fusion()
        self._client: MilvusClient | None = None
        self._layouts: dict[str, CollectionLayout] = {}
        self._features: ServerFeatures | None = None

    @property
    def client(self) -> MilvusClient:
        if self._client is None:
            is_server = self._uri.startswith(("http://", "https://", "tcp://", "unix:"))
            if not is_server:
                Path(self._uri).parent.mkdir(parents=True, exist_ok=True)
            try:
                self._client = StrongReadsClient(
                    uri=self._uri, token=self._token, grpc_options=GRPC_OPTIONS
                )
            except MilvusException as exc:
                raise DependencyUnavailable(f"cannot open Milvus at {self._uri}: {exc}") from exc
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def server_features(self) -> ServerFeatures:
        if self._features is None:
            version = str(self.client.get_server_version())
            self._features = ServerFeatures.of(version)
            if not self._features.bm25:
                log.warning(
                    "Milvus %s has no BM25 functions (needs 2.5 or newer): new collections are "
                    "dense-only and sparse/hybrid retrieval is unavailable on them",
                    version,
                )
            if not self._features.partition_key:
                log.warning(
                    "Milvus %s puts upserted rows in the wrong partition of a partition-key "
                    "collection (fixed in 2.3.11): the tenant of new collections is a filtered "
                    "field, not a partition key",
                    version,
                )
        return self._features

    # --- collections -----------------------------------------------------------------------

    def list_names(self) -> list[str]:
        return sorted(self.client.list_collections())

    def describe(self, collection: str) -> CollectionInfo:
        collection_name(collection)
        if not self.client.has_collection(collection):
            return CollectionInfo(name=collection, exists=False)
        description = self.client.describe_collection(collection)
        properties = description.get("properties", {})
        layout = CollectionLayout.of(description)
        return CollectionInfo(
            name=collection,
            exists=True,
            chunk_count=self._chunk_count(collection),
            embedding_model=properties.get(MODEL_PROPERTY, ""),
            dimension=schema.vector_dimension(description),
            full_text=layout.has_sparse,
            tenants=layout.has_tenant,
        )

    def _chunk_count(self, collection: str) -> int:
        """The chunks of ``collection``. A server's statistics count flushed rows only, deleted
        ones included until compaction, so a loaded collection is counted by a query (which sees
        every acknowledged write); one not loaded gets the statistics' estimate."""
        if self.client.get_load_state(collection)["state"] != LoadState.Loaded:
            return int(self.client.get_collection_stats(collection).get("row_count", 0))
        [row] = self.client.query(
            collection,
            filter="",
            output_fields=["count(*)"],
        )
        return int(row["count(*)"])

    def layout(self, collection: str, *, create: bool) -> CollectionLayout | None:
        """The layout of ``collection`` after checking it was embedded by our model (creating
        it if asked). None when it does not exist and ``create`` is False."""
        known = self._layouts.get(collection)
        if known is not None:
            return known
        collection_name(collection)
        if not self.client.has_collection(collection):
            if not create:
                return None
            self._create(collection)
        description = self.client.describe_collection(collection)
        self._check_model(collection, description)
        self.client.load_collection(collection)
        layout = CollectionLayout.of(description)
        self._layouts[collection] = layout
        return layout

    def _model_properties(self) -> dict[str, str]:
        return {
            MODEL_PROPERTY: self._model_name,
            DIMENSION_PROPERTY: str(self._dimension_of()),
            PREFIXES_PROPERTY: prefixes_property(self._prefixes),
        }

    def _check_model(self, collection: str, description: dict[str, Any]) -> None:
        """Refuse a collection of another model or prefixes (FAILED_PRECONDITION naming both).
        One that records no model (created by an older ragloop, or before this one wrote its
        properties) but holds vectors of our dimension is recorded as ours."""
        dimension = self._dimension_of()
        stored = schema.vector_dimension(description)
        properties = description.get("properties", {})
        recorded = properties.get(MODEL_PROPERTY, "")
        if stored != dimension:
            of = f" of {recorded!r}" if recorded else ""
            raise ConfigurationError(
                f"collection {collection!r} holds {stored}-dimensional vectors{of} but the "
                f"embedding model {self._model_name!r} makes {dimension}-dimensional ones. "
                "Re-ingest into a new collection."
            )
        if recorded and recorded != self._model_name:
            raise ConfigurationError(
                f"collection {collection!r} was embedded with {recorded!r}; "
                f"this retriever uses {self._model_name!r}. Re-ingest into a new collection."
            )
        self._check_prefixes(collection, properties.get(PREFIXES_PROPERTY))
        if missing := [
            name for name in (MODEL_PROPERTY, PREFIXES_PROPERTY) if name not in properties
        ]:
            log.warning(
                "collection %r records no %s; this retriever's (%r, prefixes %s) are recorded now",
                collection,
                " or ".join(missing),
                self._model_name,
                prefixes_property(self._prefixes),
            )
            self.client.alter_collection_properties(collection, properties=self._model_properties())

    def _check_prefixes(self, collection: str, recorded: str | None) -> None:
        """Refuse a collection embedded with other prefixes (FAILED_PRECONDITION naming both).
        One made before ragloop recorded them passes only when ours are empty: with prefixes,
        its vectors may have been made without them (nomic-embed-text before ragloop added its
        prefixes), which nothing here can tell."""
        ours = prefixes_property(self._prefixes)
        if recorded == ours or (recorded is None and self._prefixes == NO_PREFIXES):
            return
        made_with = (
            f"was embedded with the prefixes {recorded}"
            if recorded is not None
            else "records no embedding prefixes (an older ragloop made it): it may have been "
            "embedded without them"
        )
        raise ConfigurationError(
            f"collection {collection!r} {made_with}; this retriever uses {ours} "
            "(RAGLOOP_EMBEDDING_QUERY_PREFIX, RAGLOOP_EMBEDDING_DOCUMENT_PREFIX). "
            "Re-ingest into a new collection."
        )

    def forget_layouts(self) -> None:
        """Check (and load) every collection again on its next use."""
        self._layouts.clear()

    def create(self, collection: str) -> CollectionInfo:
        """Create an empty collection for our model (nothing happens if it exists and fits)."""
        self.layout(collection, create=True)
        return self.describe(collection)

    def drop(self, collection: str) -> None:
        collection_name(collection)
        self._layouts.pop(collection, None)
        if not self.client.has_collection(collection):
            raise NotFound(f"collection {collection!r} does not exist")
        self.client.drop_collection(collection)

    def _create(self, collection: str) -> None:
        # The model and dimension are written with the collection, in the same call: a crash
        # cannot leave a collection that records neither (``_check_model`` repairs older ones).
        schema.create_collection(
            self.client,
            collection,
            dimension=self._dimension_of(),
            features=self.server_features(),
            properties=self._model_properties(),
        )

    def seal(self, collections: Iterable[str] | None = None) -> None:
        """Put what was written into indexed segments, on Milvus Lite (a server does it alone).

        Lite keeps new rows in an in-memory table until 128 MB of them gather, and searches that
        table row by row: with SciFact's 5,183 abstracts there, a hybrid search took 1.5 s, and
        0.08 s once flushed (issue 9). ``None``: every collection."""
        if not self.server_features().lite:
            return
        for name in self.list_names() if collections is None else collections:
            self.client.flush(name)

    # --- data ------------------------------------------------------------------------------

    def search(self, collection: str, request: SearchRequest) -> list[Document]:
        """Documents ranked by ``request.mode``, each scored by its cosine similarity to the
        query vector. The caller has checked the mode against :meth:`layout`."""
        if request.mode == HYBRID:
            hits = self.client.hybrid_search(
                collection,
                hybrid_requests(request),
                self._fusion.make_ranker(),
                limit=request.limit,
                output_fields=OUTPUT_FIELDS,
            )[0]
        else:
            dense = request.mode == DENSE
            hits = self.client.search(
                collection,
                data=[request.vector if dense else request.text],
                anns_field=schema.DENSE_FIELD if dense else schema.SPARSE_FIELD,
                limit=request.limit,
                filter=request.expression,
                output_fields=OUTPUT_FIELDS,
                search_params=dense_params(request.limit) if dense else SPARSE_PARAMS,
            )[0]
        scores = cosines(request.vector, [hit["entity"][schema.DENSE_FIELD] for hit in hits])
        return [_document(hit, score) for hit, score in zip(hits, scores, strict=True)]

    def chunk_texts(
        self, collection: str, keys: Iterable[tuple[str, int]], *, tenant: str = ""
    ) -> dict[tuple[str, int], str]:
        """The texts of the chunks named by (source, chunk index) that exist, by primary key."""
        ids = {chunk_id(collection, source, n, tenant): (source, n) for source, n in keys}
        if not ids:
            return {}
        rows = self.client.get(collection, ids=list(ids), output_fields=[schema.TEXT_FIELD])
        return {ids[str(row[schema.ID_FIELD])]: row[schema.TEXT_FIELD] for row in rows}

    def write_chunks(
        self,
        collection: str,
        rows: Sequence[ChunkRow],
        *,
        tenant: str = "",
        finished: Mapping[str, int] | None = None,
    ) -> None:
        """Upsert ``rows`` (of ``tenant``, any mix of sources), then delete what older, longer
        versions of the ``finished`` sources (name → its number of chunks, all now written)
        left behind. Chunk ids are deterministic, so a row overwrites the chunk of the same
        index of an earlier version."""
        layout = self.layout(collection, create=True)
        assert layout is not None
        tenant_fields = {schema.TENANT_FIELD: tenant} if layout.has_tenant else {}
        if rows:
            data = [
                {
                    schema.ID_FIELD: chunk_id(collection, row.source, row.chunk_index, tenant),
                    schema.TEXT_FIELD: row.text,
                    schema.SOURCE_FIELD: row.source,
                    schema.CHUNK_INDEX_FIELD: row.chunk_index,
                    schema.METADATA_FIELD: row.metadata,
                    schema.DENSE_FIELD: row.vector,
                    **tenant_fields,
                }
                for row in rows
            ]
            self.client.upsert(collection, data)
        if finished:
            self._delete_tails(collection, layout, finished, tenant)

    def _delete_tails(
        self, collection: str, layout: CollectionLayout, lengths: Mapping[str, int], tenant: str
    ) -> None:
        # A source's chunks are always numbered 0..n-1, so an older, longer version exists
        # exactly when chunk n does. Looking that up by primary key is cheap; a filtered
        # delete scans the collection (on Milvus Lite), which made bulk ingest quadratic.
        next_ids = {chunk_id(collection, name, n, tenant): name for name, n in lengths.items()}
        found = self.client.get(collection, ids=list(next_ids), output_fields=[schema.ID_FIELD])
        for hit in found:
            source = next_ids[hit[schema.ID_FIELD]]
            source_filter = self._source_filter(collection, layout, source, tenant)
            tail = f"{schema.CHUNK_INDEX_FIELD} >= {lengths[source]}"
            self.client.delete(collection, filter=all_of(source_filter, tail))

    def remove_sources(self, collection: str, sources: Iterable[str], *, tenant: str = "") -> None:
        """Delete every chunk of each of ``sources`` (of ``tenant``): what a failed write does so
        that no half-written source stays searchable."""
        layout = self.layout(collection, create=False)
        if layout is None:
            return
        for source in sources:
            self.client.delete(
                collection, filter=self._source_filter(collection, layout, source, tenant)
            )

    def replace_source(
        self, collection: str, source: str, rows: list[ChunkRow], *, tenant: str = ""
    ) -> None:
        """Make ``rows`` the only chunks of ``source`` (of ``tenant``).

        If writing fails part-way, every chunk of the source is removed so that no half-written
        document stays searchable; the error is re-raised.
        """
        self.layout(collection, create=True)
        try:
            self.write_chunks(collection, rows, tenant=tenant, finished={source: len(rows)})
        except MilvusException:
            self.remove_sources(collection, [source], tenant=tenant)
            raise

    def delete_source(self, collection: str, source: str, *, tenant: str = "") -> int:
        """Delete every chunk of ``source`` (of ``tenant``); returns how many there were."""
        layout = self.layout(collection, create=False)
        if layout is None:
            raise NotFound(f"collection {collection!r} does not exist")
        source_filter = self._source_filter(collection, layout, source, tenant)
        # The return value of delete differs between Lite and servers: count first.
        [row] = self.client.query(collection, filter=source_filter, output_fields=["count(*)"])
        count = int(row["count(*)"])
        if count:
            self.client.delete(collection, filter=source_filter)
        return count

    def tenant_filter(self, collection: str, layout: CollectionLayout, tenant: str) -> str:
        """The expression confining a search to ``tenant`` ("" on a pre-tenant collection)."""
        if layout.has_tenant:
            return equals(schema.TENANT_FIELD, tenant)
        if tenant:
            raise _no_tenants(collection)
        return ""

    def _source_filter(
        self, collection: str, layout: CollectionLayout, source: str, tenant: str
    ) -> str:
        tenant_part = self.tenant_filter(collection, layout, tenant)
        return all_of(equals(schema.SOURCE_FIELD, source), tenant_part)


def _no_tenants(collection: str) -> ConfigurationError:
    return ConfigurationError(
        f"collection {collection!r} was created before tenants existed and has no tenant field; "
        "use the default tenant with it, or ingest into a new collection"
    )


def _document(hit: dict[str, Any], score: float) -> Document:
    entity = hit["entity"]
    return Document(
        id=str(hit["id"]),
        text=entity[schema.TEXT_FIELD],
        source=entity[schema.SOURCE_FIELD],
        score=score,
        metadata=dict(entity.get(schema.METADATA_FIELD) or {}),
        chunk_index=int(entity[schema.CHUNK_INDEX_FIELD]),
    )
