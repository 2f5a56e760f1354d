"""The guard that a collection is searched only with the embedding model (and its query and
document prefixes) that wrote it, on real Milvus (Lite, and Lite's TCP server): the model,
dimension and prefixes are written with the collection in one call, and a collection left
without them (an older ragloop, or one that crashed between creating it and writing them) is
repaired on the next start, after which a mismatched model or prefixes get the clear
FAILED_PRECONDITION naming both."""

from __future__ import annotations

import grpc
import pytest
from pymilvus import MilvusClient

from ragloop.core.errors import ConfigurationError
from ragloop.core.models.embedding_profiles import Prefixes
from ragloop.retriever import schema
from ragloop.retriever.store import (
    DIMENSION_PROPERTY,
    MODEL_PROPERTY,
    PREFIXES_PROPERTY,
    MilvusStore,
    prefixes_property,
)
from tests.service.retriever_helpers import ingest, retrieve, retriever_stub, source

MINILM = "local:all-minilm-l6-v2"
COLLECTION = "kb"
NO_PREFIXES = prefixes_property(Prefixes())
MINILM_PROPERTIES = {
    MODEL_PROPERTY: MINILM,
    DIMENSION_PROPERTY: "384",
    PREFIXES_PROPERTY: NO_PREFIXES,
}
NOMIC_PREFIXES = Prefixes(query="search_query: ", document="search_document: ")


def properties(uri: str, collection: str = COLLECTION) -> dict[str, str]:
    client = MilvusClient(uri=uri)
    try:
        return dict(client.describe_collection(collection).get("properties", {}))
    finally:
        client.close()


def create_without_properties(uri: str, dimension: int) -> None:
    """What the retriever's first call of the two used to leave when it crashed before the
    second: the collection, its indexes, and no model or dimension recorded."""
    client = MilvusClient(uri=uri)
    try:
        features = schema.ServerFeatures.of(str(client.get_server_version()))
        schema.create_collection(
            client, COLLECTION, dimension=dimension, features=features, properties={}
        )
    finally:
        client.close()


def test_a_new_collection_records_its_model_as_it_is_created(milvus_uri: str) -> None:
    store = MilvusStore(milvus_uri, model_name=MINILM, dimension=384)
    try:
        store.create(COLLECTION)
    finally:
        store.close()
    assert properties(milvus_uri) == MINILM_PROPERTIES


async def test_the_next_start_repairs_a_collection_that_records_no_model(milvus_uri: str) -> None:
    create_without_properties(milvus_uri, dimension=384)
    assert MODEL_PROPERTY not in properties(milvus_uri)

    async with retriever_stub(milvus_uri) as stub:
        await ingest(
            stub, source("cats.md", "Cats sleep sixteen hours a day."), collection=COLLECTION
        )
        found = await retrieve(stub, "How long do cats sleep?", collection=COLLECTION)
    assert [d.source for d in found.documents] == ["cats.md"]
    assert properties(milvus_uri) == MINILM_PROPERTIES

    # Repaired, the guard holds again: another model of the same dimension is refused by name.
    other = MilvusStore(milvus_uri, model_name="local:another-384-d-model", dimension=384)
    try:
        with pytest.raises(ConfigurationError) as caught:
            other.layout(COLLECTION, create=False)
    finally:
        other.close()
    assert MINILM in str(caught.value) and "local:another-384-d-model" in str(caught.value)


async def test_a_collection_of_another_dimension_that_records_no_model_is_refused_clearly(
    milvus_uri: str,
) -> None:
    """Not the 503 of a failed insert: FAILED_PRECONDITION with both dimensions and our model."""
    create_without_properties(milvus_uri, dimension=768)
    async with retriever_stub(milvus_uri) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await ingest(stub, source("cats.md", "Cats sleep a lot."), collection=COLLECTION)
    assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    details = caught.value.details()
    assert "768" in details and "384" in details and MINILM in details, details
    assert MODEL_PROPERTY not in properties(milvus_uri)  # nothing claimed that is not ours


def opened(uri: str, prefixes: Prefixes, *, create: bool = False) -> None:
    """Open (or create) the collection as a retriever embedding with ``prefixes`` does."""
    store = MilvusStore(uri, model_name=MINILM, dimension=384, prefixes=prefixes)
    try:
        store.layout(COLLECTION, create=create)
    finally:
        store.close()


def test_a_collection_embedded_with_other_prefixes_is_refused_naming_both(milvus_uri: str) -> None:
    opened(milvus_uri, NOMIC_PREFIXES, create=True)
    assert properties(milvus_uri)[PREFIXES_PROPERTY] == prefixes_property(NOMIC_PREFIXES)
    opened(milvus_uri, NOMIC_PREFIXES)  # the same prefixes: accepted

    with pytest.raises(ConfigurationError) as caught:
        opened(milvus_uri, Prefixes())  # ingested with the prefixes, searched without
    message = str(caught.value)
    assert "search_document: " in message and NO_PREFIXES in message, message
    assert "RAGLOOP_EMBEDDING_DOCUMENT_PREFIX" in message


async def test_a_collection_ingested_without_prefixes_is_refused_by_a_retriever_with_them(
    milvus_uri: str,
) -> None:
    """The nomic-embed-text case through the served retriever: FAILED_PRECONDITION, and the
    collection keeps the prefixes it was made with."""
    opened(milvus_uri, Prefixes(), create=True)
    with_prefixes = {
        "embedding_query_prefix": "search_query: ",
        "embedding_document_prefix": "search_document: ",
    }
    async with retriever_stub(milvus_uri, **with_prefixes) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await retrieve(stub, "How long do cats sleep?", collection=COLLECTION)
    assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "search_query: " in caught.value.details(), caught.value.details()
    assert properties(milvus_uri)[PREFIXES_PROPERTY] == NO_PREFIXES


def test_a_collection_that_records_no_prefixes_is_refused_when_prefixes_are_used(
    milvus_uri: str,
) -> None:
    """Made before prefixes were recorded: its vectors may lack them, so a retriever with
    prefixes refuses it (and records nothing); one without prefixes records its empty ones."""
    create_without_properties(milvus_uri, dimension=384)
    with pytest.raises(ConfigurationError, match="records no embedding prefixes"):
        opened(milvus_uri, NOMIC_PREFIXES)
    assert PREFIXES_PROPERTY not in properties(milvus_uri)

    opened(milvus_uri, Prefixes())
    assert properties(milvus_uri) == MINILM_PROPERTIES
