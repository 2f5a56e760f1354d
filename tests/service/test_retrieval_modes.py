"""Dense, sparse (BM25) and hybrid retrieval over real gRPC, real Milvus (embedded Lite and a
Lite server process) and the real ONNX embedding model; scores, thresholds and the fallback of
collections without BM25."""

from __future__ import annotations

import grpc
import pytest
from pymilvus import DataType, MilvusClient

from ragloop.retriever.store import DIMENSION_PROPERTY, MODEL_PROPERTY
from ragloop.v1 import retriever_pb2
from tests.service.retriever_helpers import (
    ingest,
    retrieve,
    retriever_stub,
    source,
    sources,
)

# The code word appears in one passage only; its meaning is nowhere, so embeddings cannot find it.
CODE = "The deployment failed with error XQ-7731 after the nightly build."
KITTENS = "Kittens play with yarn and sleep in warm places during the afternoon."
DOGS = "Dogs are loyal companions that enjoy long walks in the park."
BREAD = "Sourdough bread rises thanks to wild yeast in the starter."


@pytest.fixture
async def stub(milvus_uri: str):
    async with retriever_stub(milvus_uri) as stub:
        await ingest(
            stub,
            source("code.md", CODE),
            source("kittens.md", KITTENS),
            source("dogs.md", DOGS),
            source("bread.md", BREAD),
        )
        yield stub


async def test_sparse_finds_a_rare_keyword_and_reports_its_mode(stub) -> None:
    sparse = await retrieve(stub, "XQ-7731", mode="sparse")
    assert sources(sparse) == ["code.md"]  # BM25 returns only passages sharing a term
    assert sparse.mode == retriever_pb2.RETRIEVAL_MODE_SPARSE

    hybrid = await retrieve(stub, "XQ-7731", top_k=2, mode="hybrid")
    assert sources(hybrid)[0] == "code.md"
    assert hybrid.mode == retriever_pb2.RETRIEVAL_MODE_HYBRID

    default = await retrieve(stub, "young cats napping", top_k=1)
    assert default.mode == retriever_pb2.RETRIEVAL_MODE_HYBRID  # the setting's default
    assert sources(default) == ["kittens.md"]


async def test_dense_finds_meaning_without_shared_words(stub) -> None:
    dense = await retrieve(stub, "young cats napping", top_k=4, mode="dense")
    assert sources(dense)[0] == "kittens.md"
    assert dense.total_found == 4
    scores = [d.score for d in dense.documents]
    assert scores == sorted(scores, reverse=True)
    # No passage shares a word with the query: BM25 finds nothing.
    assert list((await retrieve(stub, "young cats napping", mode="sparse")).documents) == []


async def test_score_is_the_cosine_similarity_in_every_mode(stub) -> None:
    query = "error in the nightly build of the deployment"
    dense = {d.id: d.score for d in (await retrieve(stub, query, top_k=4, mode="dense")).documents}
    for mode in ("sparse", "hybrid"):
        reply = await retrieve(stub, query, top_k=4, mode=mode)
        assert reply.documents
        for doc in reply.documents:
            assert doc.score == pytest.approx(dense[doc.id], abs=1e-4)


async def test_the_threshold_applies_to_cosine_similarity_in_sparse_and_hybrid_modes(stub) -> None:
    # "warm" shares a word with the kittens passage, but means little next to it.
    loose = await retrieve(stub, "warm", mode="sparse")
    assert sources(loose) == ["kittens.md"]
    cosine = loose.documents[0].score
    assert 0 < cosine < 0.9
    strict = await retrieve(stub, "warm", mode="sparse", threshold=cosine + 0.05)
    assert list(strict.documents) == [] and strict.total_found == 1
    hybrid = await retrieve(stub, "warm", top_k=4, mode="hybrid", threshold=cosine + 0.05)
    assert "kittens.md" not in sources(hybrid)
    assert all(d.score >= cosine + 0.05 for d in hybrid.documents)


async def test_weighted_fusion_is_an_option(milvus_uri: str) -> None:
    async with retriever_stub(milvus_uri, hybrid_ranker="weighted") as stub:
        await ingest(stub, source("code.md", CODE), source("kittens.md", KITTENS))
        reply = await retrieve(stub, "XQ-7731 deployment", top_k=2, mode="hybrid")
    assert sources(reply)[0] == "code.md"


def make_pre_bm25_collection(uri: str, name: str) -> None:
    """A collection as the walking system created it: no BM25 field, no tenant field."""
    client = MilvusClient(uri=uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("text", DataType.VARCHAR, max_length=16384)
    schema.add_field("source", DataType.VARCHAR, max_length=1024)
    schema.add_field("chunk_index", DataType.INT64)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=384)
    index = client.prepare_index_params()
    index.add_index(field_name="embedding", index_type="HNSW", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)
    client.alter_collection_properties(
        name, properties={MODEL_PROPERTY: "local:all-minilm-l6-v2", DIMENSION_PROPERTY: "384"}
    )
    client.close()


async def test_a_collection_without_bm25_falls_back_to_dense_unless_asked(
    milvus_uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    if not milvus_uri.startswith("http"):
        make_pre_bm25_collection(milvus_uri, "old")  # Lite: only one client may open the dir
    async with retriever_stub(milvus_uri) as stub:
        if milvus_uri.startswith("http"):
            make_pre_bm25_collection(milvus_uri, "old")
        await ingest(stub, source("kittens.md", KITTENS), collection="old")
        described = await stub.DescribeCollection(
            retriever_pb2.DescribeCollectionRequest(collection="old")
        )
        assert (described.full_text, described.tenants) == (False, False)

        default = await retrieve(stub, "cats", collection="old")
        assert default.mode == retriever_pb2.RETRIEVAL_MODE_DENSE
        assert sources(default) == ["kittens.md"]
        assert "falling back to dense retrieval" in caplog.text

        for mode in ("sparse", "hybrid"):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await retrieve(stub, "cats", collection="old", mode=mode)
            assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
            assert "'old' has no BM25 sparse field" in caught.value.details()

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await retrieve(stub, "cats", collection="old", tenant="acme")
        assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "no tenant field" in caught.value.details()


async def test_an_unknown_mode_number_is_invalid_argument(stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Retrieve(retriever_pb2.RetrieveRequest(query="cats", top_k=3, mode=9))
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
