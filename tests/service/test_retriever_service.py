"""The retriever over real gRPC, with real Milvus Lite and the real ONNX embedding model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core.errors import ConfigurationError
from ragloop.core.models.embeddings import load_minilm_tokenizer
from ragloop.retriever.__main__ import build_retriever, build_spec
from ragloop.retriever.chunking import Tokens, chunk_text
from ragloop.retriever.settings import RetrieverSettings
from ragloop.retriever.store import MilvusStore
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc
from tests.service.grpc_helpers import reflected_services, serving
from tests.service.retriever_helpers import ingest, retriever_stub, source

CATS = "Cats are small domesticated carnivores. They sleep up to sixteen hours a day."
MILVUS = "Milvus Lite is an embedded vector database. Only one process may open its data directory."
BREAD = "Sourdough bread rises thanks to wild yeast and lactic acid bacteria in the starter."


@pytest.fixture
async def stub(milvus_uri: str) -> AsyncIterator[retriever_pb2_grpc.RetrieverServiceStub]:
    async with retriever_stub(milvus_uri) as stub:
        yield stub


async def test_ingest_then_retrieve_finds_the_right_source(stub) -> None:
    reply = await ingest(
        stub,
        source("cats.md", CATS, topic="pets"),
        source("milvus.md", MILVUS),
        source("bread.md", BREAD),
    )
    assert [s.source for s in reply.sources] == ["cats.md", "milvus.md", "bread.md"]
    assert reply.chunks_written == 3
    assert reply.collection == "ragloop"

    found = await stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query="How many processes can open a Milvus Lite data directory?",
            top_k=3,
            similarity_threshold=0.0,
            mode=retriever_pb2.RETRIEVAL_MODE_DENSE,
        )
    )
    assert found.documents[0].source == "milvus.md"
    assert found.total_found == 3
    assert found.mode == retriever_pb2.RETRIEVAL_MODE_DENSE
    assert found.embedding_model == "local:all-minilm-l6-v2"
    scores = [d.score for d in found.documents]
    assert scores == sorted(scores, reverse=True)

    pets = await stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query="how long do cats sleep", top_k=1, similarity_threshold=0.0
        )
    )
    assert pets.documents[0].source == "cats.md"
    assert dict(pets.documents[0].metadata) == {"topic": "pets"}


async def test_similarity_threshold_filters_but_total_found_counts_all(stub) -> None:
    await ingest(stub, source("cats.md", CATS), source("bread.md", BREAD))
    found = await stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query="sourdough starter yeast", top_k=2, similarity_threshold=0.4
        )
    )
    assert found.total_found == 2
    assert [d.source for d in found.documents] == ["bread.md"]


async def test_reingesting_a_source_replaces_its_chunks(stub) -> None:
    long_text = " ".join(
        f"Sentence number {i} talks about cats and their habits." for i in range(30)
    )
    first = await ingest(stub, source("cats.md", long_text))
    assert first.chunks_written > 3
    await ingest(stub, source("cats.md", long_text))
    described = await stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest())
    assert described.chunk_count == first.chunks_written  # replaced, not duplicated

    await ingest(stub, source("cats.md", CATS))  # a shorter version drops the extra chunks
    described = await stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest())
    assert described.chunk_count == 1
    assert described.embedding_model == "local:all-minilm-l6-v2"
    assert described.dimension == 384


async def test_ingested_chunks_leave_milvus_lite_in_memory_table(tmp_path: Path) -> None:
    """Lite searches rows still in its in-memory table one by one (1.5 s a hybrid search over
    SciFact): an ingest seals them into indexed segments, files under the data directory."""
    data_dir = tmp_path / "milvus.db"
    async with retriever_stub(str(data_dir)) as stub:
        await ingest(stub, source("cats.md", CATS), source("bread.md", BREAD))
        segments = list(data_dir.rglob("*.parquet"))
        assert segments, "the ingested rows are still only in Lite's write-ahead log"
        found = await stub.Retrieve(retriever_pb2.RetrieveRequest(query="sleepy cats", top_k=1))
        assert [d.source for d in found.documents] == ["cats.md"]


async def test_collections_are_separate_and_missing_ones_are_empty(stub) -> None:
    await ingest(stub, source("cats.md", CATS), collection="pets")
    empty = await stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query="cats", top_k=5, similarity_threshold=0.0, collection="nothing_here"
        )
    )
    assert list(empty.documents) == [] and empty.total_found == 0
    other = await stub.DescribeCollection(
        retriever_pb2.DescribeCollectionRequest(collection="nothing_here")
    )
    assert not other.exists


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (retriever_pb2.RetrieveRequest(query="", top_k=5), "query must not be empty"),
        (retriever_pb2.RetrieveRequest(query="cats", top_k=0), "top_k"),
        (retriever_pb2.RetrieveRequest(query="cats", top_k=101), "top_k"),
        (
            retriever_pb2.RetrieveRequest(query="cats", top_k=5, similarity_threshold=1.5),
            "similarity_threshold",
        ),
        (
            retriever_pb2.RetrieveRequest(query="cats", top_k=5, collection="bad name!"),
            "collection name",
        ),
    ],
)
async def test_bad_retrieve_requests_are_invalid_argument(stub, request_, message: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Retrieve(request_)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([], "no documents"),
        ([source("", CATS)], "source must not be empty"),
        ([source("a.md", "   ")], "text must not be empty"),
        ([source("a\x00b", CATS)], "control characters"),
    ],
)
async def test_bad_ingest_requests_are_invalid_argument(stub, docs, message: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ingest(stub, *docs)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


async def test_a_collection_of_another_dimension_is_refused_with_both_numbers(
    milvus_uri: str,
) -> None:
    uri = milvus_uri
    other = MilvusStore(uri, model_name="ollama:nomic-embed-text", dimension=768)
    other.replace_source("kb", "x.md", [])  # creates the collection, 768-d
    other.close()
    async with serving(build_spec(RetrieverSettings(milvus_uri=uri))) as channel:
        stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Retrieve(
                retriever_pb2.RetrieveRequest(query="cats", top_k=5, collection="kb")
            )
    assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "768" in caught.value.details() and "384" in caught.value.details()


async def test_health_and_reflection(tmp_path: Path) -> None:
    settings = RetrieverSettings(milvus_uri=str(tmp_path / "milvus.db"))
    async with serving(build_spec(settings)) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        reply = await health.Check(
            health_pb2.HealthCheckRequest(service="ragloop.v1.RetrieverService")
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert await reflected_services(channel) == {
            "ragloop.v1.RetrieverService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        }


async def test_chunks_can_be_measured_in_the_embedding_models_tokens(milvus_uri: str) -> None:
    text = "# Milvus Lite\n\n" + " ".join(
        f"Fact {n}: the embedded database keeps collection number {n} on disk." for n in range(40)
    )
    tokens = Tokens(load_minilm_tokenizer())
    expected = chunk_text(text, size=48, overlap=8, measure=tokens)
    async with retriever_stub(
        milvus_uri, chunk_unit="tokens", chunk_size=48, chunk_overlap=8
    ) as stub:
        reply = await ingest(stub, source("lite.md", text))
        assert reply.chunks_written == len(expected)
        found = await stub.Retrieve(
            retriever_pb2.RetrieveRequest(query="collection on disk", top_k=100)
        )
    assert sorted(d.text for d in found.documents) == sorted(expected)
    assert all(tokens.length(d.text) <= 48 for d in found.documents)
    assert all(d.text.startswith("Milvus Lite\n") for d in found.documents)


def test_token_chunks_longer_than_the_model_reads_are_refused(tmp_path: Path) -> None:
    settings = RetrieverSettings(
        milvus_uri=str(tmp_path / "milvus.db"), chunk_unit="tokens", chunk_size=300
    )
    with pytest.raises(ConfigurationError, match="at most 254"):
        build_retriever(settings)


async def test_found_passages_carry_their_neighbouring_chunks_as_a_window(milvus_uri: str) -> None:
    facts = [f"Fact {n}: the lighthouse keeper logged ship number {n} today." for n in range(30)]
    text = "# Harbour log\n\n" + " ".join(facts)
    chunks = chunk_text(text, size=200, overlap=40)
    middle = next(n for n, chunk in enumerate(chunks) if n > 1 and "ship number 14 " in chunk)
    for tenant in ("", "acme"):
        async with retriever_stub(milvus_uri, passage_window_chunks=1) as stub:
            await ingest(stub, source("log.md", text), source("cats.md", CATS), tenant=tenant)
            found = await stub.Retrieve(
                retriever_pb2.RetrieveRequest(
                    query="Which ship did the keeper log as number 14?", top_k=30, tenant=tenant
                )
            )
        by_index = {d.chunk_index: d for d in found.documents if d.source == "log.md"}
        window = by_index[middle].window
        assert by_index[middle].text == chunks[middle]  # graded alone
        for neighbour in (middle - 1, middle + 1):
            for sentence in chunks[neighbour].split("\n", 1)[1].split(". "):
                assert window.count(sentence.rstrip(".")) == 1, (tenant, sentence)
        assert window.count("Harbour log") == 1
        [cats] = [d for d in found.documents if d.source == "cats.md"]
        assert cats.window == ""  # one chunk: nothing to add

    async with retriever_stub(milvus_uri, passage_window_chunks=0) as stub:
        found = await stub.Retrieve(retriever_pb2.RetrieveRequest(query="ship 14", top_k=5))
    assert found.documents and all(d.window == "" for d in found.documents)
