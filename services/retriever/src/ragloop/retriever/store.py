"""Milvus access for the retriever: one collection per knowledge base, chunks with dense vectors.

Works the same on embedded Milvus Lite (a path) and a Milvus server (an http URI). pymilvus is
synchronous; the retriever calls this class from one worker thread.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymilvus import DataType, MilvusClient, MilvusException

from ragloop.core.domain import CollectionInfo, Document
from ragloop.core.errors import ConfigurationError, DependencyUnavailable, InvalidInput

COLLECTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
MODEL_PROPERTY = "ragloop.embedding_model"
DIMENSION_PROPERTY = "ragloop.dimension"
MAX_SOURCE_CHARS = 1024
MAX_CHUNK_CHARS = 16384
OUTPUT_FIELDS = ["text", "source", "chunk_index", "metadata"]


def chunk_id(collection: str, source: str, chunk_index: int) -> str:
    """Primary key of a chunk: re-ingesting a source overwrites its chunks, never adds copies."""
    digest = hashlib.sha256(f"{collection}\x1f{source}\x1f{chunk_index}".encode()).hexdigest()
    return digest[:32]


def string_literal(value: str) -> str:
    """A Milvus expression string literal. Values are validated (no control characters) upstream."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def validate_collection_name(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        raise InvalidInput(
            f"collection name {name!r} is invalid: use letters, digits and underscores, "
            "starting with a letter or underscore (at most 255 characters)"
        )
    return name


@dataclass(frozen=True)
class ChunkRow:
    source: str
    chunk_index: int
    text: str
    metadata: dict[str, Any]
    vector: list[float]


class MilvusStore:
    def __init__(self, uri: str, *, token: str = "", model_name: str, dimension: int) -> None:
        self._uri = uri
        self._token = token
        self._model_name = model_name
        self._dimension = dimension
        self._client: MilvusClient | None = None
        self._checked: set[str] = set()

    @property
    def client(self) -> MilvusClient:
        if self._client is None:
            is_server = self._uri.startswith(("http://", "https://", "tcp://", "unix:"))
            if not is_server:
                Path(self._uri).parent.mkdir(parents=True, exist_ok=True)
            try:
                self._client = MilvusClient(uri=self._uri, token=self._token)
            except MilvusException as exc:
                raise DependencyUnavailable(f"cannot open Milvus at {self._uri}: {exc}") from exc
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # --- collections -----------------------------------------------------------------------

    def describe(self, collection: str) -> CollectionInfo:
        validate_collection_name(collection)
        if not self.client.has_collection(collection):
            return CollectionInfo(name=collection, exists=False)
        properties = self.client.describe_collection(collection).get("properties", {})
        stats = self.client.get_collection_stats(collection)
        return CollectionInfo(
            name=collection,
            exists=True,
            chunk_count=int(stats.get("row_count", 0)),
            embedding_model=properties.get(MODEL_PROPERTY, ""),
            dimension=int(properties.get(DIMENSION_PROPERTY, 0) or 0),
        )

    def _ensure_usable(self, collection: str, *, create: bool) -> bool:
        """Check that ``collection`` was embedded by our model (creating it if asked).

        Returns False when the collection does not exist and ``create`` is False.
        """
        if collection in self._checked:
            return True
        validate_collection_name(collection)
        if not self.client.has_collection(collection):
            if not create:
                return False
            self._create(collection)
        info = self.describe(collection)
        if info.dimension and info.dimension != self._dimension:
            raise ConfigurationError(
                f"collection {collection!r} holds {info.dimension}-dimensional vectors but the "
                f"embedding model {self._model_name!r} makes {self._dimension}-dimensional ones"
            )
        if info.embedding_model and info.embedding_model != self._model_name:
            raise ConfigurationError(
                f"collection {collection!r} was embedded with {info.embedding_model!r}; "
                f"this retriever uses {self._model_name!r}. Re-ingest into a new collection."
            )
        self.client.load_collection(collection)
        self._checked.add(collection)
        return True

    def _create(self, collection: str) -> None:
        schema = self.client.create_schema(auto_id=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_CHUNK_CHARS)
        schema.add_field("source", DataType.VARCHAR, max_length=MAX_SOURCE_CHARS)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=self._dimension)
        index = self.client.prepare_index_params()
        # Indexes are created with the collection, before any insert (see ENVIRONMENT.md).
        index.add_index(
            field_name="embedding",
            index_type="HNSW",
            metric_type="COSINE",
            params={"M": 16, "efConstruction": 200},
        )
        self.client.create_collection(collection, schema=schema, index_params=index)
        self.client.alter_collection_properties(
            collection,
            properties={MODEL_PROPERTY: self._model_name, DIMENSION_PROPERTY: str(self._dimension)},
        )

    # --- data ------------------------------------------------------------------------------

    def search(self, collection: str, vector: list[float], *, limit: int) -> list[Document]:
        if not self._ensure_usable(collection, create=False):
            return []
        hits = self.client.search(
            collection,
            data=[vector],
            anns_field="embedding",
            limit=limit,
            output_fields=OUTPUT_FIELDS,
            search_params={"metric_type": "COSINE", "params": {"ef": max(64, limit)}},
        )[0]
        return [
            Document(
                id=str(hit["id"]),
                text=hit["entity"]["text"],
                source=hit["entity"]["source"],
                score=float(hit["distance"]),
                metadata=dict(hit["entity"].get("metadata") or {}),
                chunk_index=int(hit["entity"]["chunk_index"]),
            )
            for hit in hits
        ]

    def replace_source(self, collection: str, source: str, rows: list[ChunkRow]) -> None:
        """Make ``rows`` the only chunks of ``source``: upsert them, then drop any older extra ones.

        If writing fails part-way, every chunk of the source is removed so that no half-written
        document stays searchable; the error is re-raised.
        """
        self._ensure_usable(collection, create=True)
        data = [
            {
                "id": chunk_id(collection, row.source, row.chunk_index),
                "text": row.text,
                "source": row.source,
                "chunk_index": row.chunk_index,
                "metadata": row.metadata,
                "embedding": row.vector,
            }
            for row in rows
        ]
        source_filter = f"source == {string_literal(source)}"
        try:
            if data:
                self.client.upsert(collection, data)
            self.client.delete(collection, filter=f"{source_filter} and chunk_index >= {len(rows)}")
        except MilvusException:
            self.client.delete(collection, filter=source_filter)
            raise
