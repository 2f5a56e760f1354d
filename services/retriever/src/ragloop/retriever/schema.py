"""The shape of a ragloop collection in Milvus, and what an existing collection supports.

A collection created by this code holds, per chunk: ``id`` (VARCHAR primary key), ``text``
(VARCHAR with an analyzer, the input of a BM25 function), ``source``, ``chunk_index``,
``tenant`` (VARCHAR, the Milvus partition key), ``metadata`` (JSON), ``embedding`` (dense
FLOAT_VECTOR, HNSW/COSINE) and ``sparse`` (SPARSE_FLOAT_VECTOR written by the BM25 function,
SPARSE_INVERTED_INDEX/BM25). Both indexes are created with the collection, before any insert.
A server's version decides what it gets (:class:`ServerFeatures`): before 2.5 no ``sparse``
(no BM25), before 2.3.11 a ``tenant`` that is not a partition key (upserts misplaced rows).
Its consistency level is Strong, and the retriever reads Strong whatever a collection says
(``consistency.py``): every replica sees every acknowledged write (the default, Bounded, hides
them for seconds). Milvus Lite is always strongly consistent.

Collections written by older ragloop versions lack ``sparse`` and ``tenant``.
:class:`CollectionLayout` says which fields a collection has, so that callers can fall back or
refuse clearly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pymilvus import DataType, Function, FunctionType, MilvusClient

ID_FIELD = "id"
TEXT_FIELD = "text"
SOURCE_FIELD = "source"
CHUNK_INDEX_FIELD = "chunk_index"
TENANT_FIELD = "tenant"
METADATA_FIELD = "metadata"
DENSE_FIELD = "embedding"
SPARSE_FIELD = "sparse"

MAX_SOURCE_CHARS = 1024
MAX_CHUNK_CHARS = 16384
MAX_TENANT_CHARS = 128
# Milvus gained BM25 functions (full-text search) in 2.5; Milvus Lite 3.x has them too.
BM25_MIN_VERSION = (2, 5, 0)
# Before 2.3.11 an upsert computed a row's partition from the wrong field (milvus-io/milvus#30607,
# fixed by #30773), so tenant-filtered searches missed upserted chunks. There the tenant is a
# plain field: still filtered on, without partition pruning.
PARTITION_KEY_MIN_VERSION = (2, 3, 11)
CONSISTENCY_LEVEL = "Strong"

# Lower-case words (the standard tokenizer lower-cases) that carry no meaning for BM25. Spelled
# out rather than Milvus's "_english_" shorthand, which Milvus Lite does not know.
ENGLISH_STOP_WORDS = (  # noqa: SIM905 - a word list reads best as words
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
).split()
# Milvus's "english" analyzer, spelled out (stop words before stemming, so that the list matches).
# Milvus Lite has no stemmer and ignores that filter (its BM25 matches whole words); a server stems.
ANALYZER_PARAMS: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": [
        "lowercase",
        {"type": "stop", "stop_words": ENGLISH_STOP_WORDS},
        {"type": "stemmer", "language": "english"},
    ],
}


@dataclass(frozen=True)
class CollectionLayout:
    """Which optional fields an existing collection has."""

    has_sparse: bool
    has_tenant: bool

    @classmethod
    def of(cls, description: dict[str, Any]) -> CollectionLayout:
        names = {f["name"] for f in description.get("fields", [])}
        return cls(has_sparse=SPARSE_FIELD in names, has_tenant=TENANT_FIELD in names)


@dataclass(frozen=True)
class ServerFeatures:
    """What the collections of a Milvus reporting ``version`` (``v2.5.4``, ``v2.3.5-lite``,
    ``milvus_lite-3.2.2``) can use. An unparseable version is assumed to be recent."""

    version: str
    bm25: bool
    partition_key: bool
    # Milvus Lite: new rows stay in an unindexed in-memory table until flushed (see
    # MilvusStore.seal); a Milvus server indexes them by itself.
    lite: bool = False

    @classmethod
    def of(cls, version: str) -> ServerFeatures:
        lite = "lite" in version.lower()
        match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
        if match is None:
            return cls(version, bm25=True, partition_key=True, lite=lite)
        numbers = tuple(int(part or 0) for part in match.groups())
        return cls(
            version,
            bm25=numbers >= BM25_MIN_VERSION,
            partition_key=numbers >= PARTITION_KEY_MIN_VERSION,
            lite=lite,
        )


def supports_bm25(server_version: str) -> bool:
    return ServerFeatures.of(server_version).bm25


def vector_dimension(description: dict[str, Any]) -> int:
    """The dimension of a collection's dense vectors, from its ``describe_collection``."""
    for described in description.get("fields", []):
        if described["name"] == DENSE_FIELD:
            return int(described.get("params", {}).get("dim", 0))
    return 0


def create_collection(
    client: MilvusClient,
    name: str,
    *,
    dimension: int,
    features: ServerFeatures,
    properties: dict[str, str],
) -> None:
    """Create ``name`` with its indexes (dense HNSW/COSINE, and BM25 where the server has it)
    and ``properties``."""
    with_bm25 = features.bm25
    schema = client.create_schema(auto_id=False)
    schema.add_field(ID_FIELD, DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field(
        TEXT_FIELD,
        DataType.VARCHAR,
        max_length=MAX_CHUNK_CHARS,
        enable_analyzer=with_bm25,
        **({"analyzer_params": ANALYZER_PARAMS} if with_bm25 else {}),
    )
    schema.add_field(SOURCE_FIELD, DataType.VARCHAR, max_length=MAX_SOURCE_CHARS)
    schema.add_field(CHUNK_INDEX_FIELD, DataType.INT64)
    schema.add_field(
        TENANT_FIELD,
        DataType.VARCHAR,
        max_length=MAX_TENANT_CHARS,
        is_partition_key=features.partition_key,
    )
    schema.add_field(METADATA_FIELD, DataType.JSON)
    schema.add_field(DENSE_FIELD, DataType.FLOAT_VECTOR, dim=dimension)
    index = client.prepare_index_params()
    index.add_index(
        field_name=DENSE_FIELD,
        index_type="HNSW",
        metric_type="COSINE",
        params={"M": 16, "efConstruction": 200},
    )
    if with_bm25:
        schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=[TEXT_FIELD],
                output_field_names=[SPARSE_FIELD],
            )
        )
        index.add_index(
            field_name=SPARSE_FIELD, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
        )
    client.create_collection(
        name,
        schema=schema,
        index_params=index,
        consistency_level=CONSISTENCY_LEVEL,
        properties=properties,
    )
