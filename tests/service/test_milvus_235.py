"""The retriever over real gRPC against a real Milvus 2.3.5 standalone server, which has no BM25
functions: dense retrieval end to end with tenants and filters, and how sparse and hybrid
retrieval degrade there (the default mode falls back to dense; an explicit request is refused)."""

from __future__ import annotations

import grpc
import pytest

from ragloop.v1 import retriever_pb2
from tests.service.retriever_helpers import (
    chunk_count,
    expect_error,
    ingest,
    retrieve,
    retriever_stub,
    source,
    sources,
)

pytestmark = pytest.mark.milvus_server

CATS = "Cats are small domesticated carnivores. They sleep up to sixteen hours a day."
MILVUS = "Milvus is a vector database. It stores embeddings and searches them by similarity."
BREAD = "Sourdough bread rises thanks to wild yeast and lactic acid bacteria in the starter."
LONG = " ".join(f"Sentence {i} explains how cats groom their fur every day." for i in range(20))


@pytest.fixture
async def stub(milvus_235_uri: str):
    async with retriever_stub(milvus_235_uri) as stub:
        yield stub


async def test_a_new_collection_is_dense_only_with_tenants_and_the_version_is_logged(
    stub, caplog: pytest.LogCaptureFixture
) -> None:
    created = await stub.CreateCollection(retriever_pb2.CreateCollectionRequest(collection="kb"))
    info = created.collection
    assert (info.exists, info.full_text, info.tenants) == (True, False, True)
    assert (info.embedding_model, info.dimension, info.chunk_count) == (
        "local:all-minilm-l6-v2",
        384,
        0,
    )
    # The retriever reads the server's version when it starts (in the fixture), not on demand.
    logged = " ".join(
        r.getMessage() for when in ("setup", "call") for r in caplog.get_records(when)
    )
    assert "Milvus v2.3.5" in logged and "has no BM25 functions" in logged
    assert "the tenant of new collections is a filtered field" in logged

    listed = await stub.ListCollections(retriever_pb2.ListCollectionsRequest())
    assert [c.collection for c in listed.collections] == ["kb"]
    await stub.DropCollection(retriever_pb2.DropCollectionRequest(collection="kb"))
    gone = await stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest(collection="kb"))
    assert not gone.exists


async def test_ingest_retrieve_reingest_and_delete_a_source(stub) -> None:
    await ingest(
        stub, source("cats.md", CATS), source("milvus.md", MILVUS), source("bread.md", BREAD)
    )
    found = await retrieve(stub, "Which database searches embeddings?", top_k=3, mode="dense")
    assert sources(found)[0] == "milvus.md"  # read at once: the collection is Session-consistent
    assert found.total_found == 3
    assert found.mode == retriever_pb2.RETRIEVAL_MODE_DENSE
    scores = [d.score for d in found.documents]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0.3

    first = await ingest(stub, source("cats.md", LONG))
    assert first.chunks_written > 3
    await ingest(stub, source("cats.md", LONG))
    assert await chunk_count(stub) == first.chunks_written + 2  # replaced, not duplicated
    await ingest(stub, source("cats.md", CATS))  # a shorter version drops the extra chunks
    assert await chunk_count(stub) == 3

    deleted = await stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="cats.md"))
    assert deleted.chunks_deleted == 1
    assert await chunk_count(stub) == 2
    assert "cats.md" not in sources(await retrieve(stub, "how long do cats sleep", mode="dense"))


async def test_the_default_mode_falls_back_to_dense_and_explicit_bm25_modes_are_refused(
    stub, caplog: pytest.LogCaptureFixture
) -> None:
    await ingest(stub, source("cats.md", CATS), source("bread.md", BREAD))
    default = await retrieve(stub, "how long do cats sleep", top_k=1)
    assert default.mode == retriever_pb2.RETRIEVAL_MODE_DENSE
    assert sources(default) == ["cats.md"]
    assert "falling back to dense retrieval" in caplog.text

    for mode in ("sparse", "hybrid"):
        await expect_error(
            retrieve(stub, "cats", mode=mode),
            grpc.StatusCode.FAILED_PRECONDITION,
            "'ragloop' has no BM25 sparse field (it was created by an older ragloop, or on a "
            "Milvus older than 2.5)",
        )


async def test_tenants_are_isolated(stub) -> None:
    await ingest(stub, source("notes.md", CATS), tenant="acme")
    await ingest(stub, source("notes.md", BREAD), tenant="globex")

    acme = await retrieve(stub, "sleep", top_k=5, mode="dense", tenant="acme")
    assert [d.text for d in acme.documents] == [CATS]
    globex = await retrieve(stub, "sleep", top_k=5, mode="dense", tenant="globex")
    assert [d.text for d in globex.documents] == [BREAD]
    assert list((await retrieve(stub, "sleep", mode="dense")).documents) == []  # default tenant

    await stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="notes.md", tenant="acme"))
    assert list((await retrieve(stub, "sleep", mode="dense", tenant="acme")).documents) == []
    globex = await retrieve(stub, "sleep", top_k=5, mode="dense", tenant="globex")
    assert [d.text for d in globex.documents] == [BREAD]


FILTER_CASES = [
    ({"lang": "en"}, ["cats.md", "milvus.md"]),
    ({"tag": {"in": ["pets", "food"]}}, ["bread.md", "cats.md"]),
    ({"year": {"gte": 2021, "lt": 2024}}, ["bread.md", "milvus.md"]),
    ({"lang": "en", "year": {"gt": 2022}}, ["milvus.md"]),
    ({"draft": False}, ["bread.md", "cats.md", "milvus.md"]),
    ({"draft": True}, []),
]


async def test_metadata_filters(stub) -> None:
    await ingest(
        stub,
        source("cats.md", CATS, lang="en", year=2020, tag="pets", draft=False),
        source("milvus.md", MILVUS, lang="en", year=2023, tag="tech", draft=False),
        source("bread.md", BREAD, lang="fr", year=2021, tag="food", draft=False),
    )
    query = "cats, bread and databases"  # close to all three: no passage below the threshold
    for filters, expected in FILTER_CASES:
        found = await retrieve(stub, query, top_k=5, mode="dense", filters=filters)
        assert sorted(sources(found)) == expected, filters
