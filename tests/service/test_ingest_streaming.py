"""Ingestion of large sources: the text travels in pieces (IngestDocumentStream), is chunked as it
arrives, and is embedded and written in bounded batches; a failure part-way leaves nothing of the
failing source. Real retriever over gRPC, Milvus Lite, the ONNX MiniLM model and real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from pymilvus import MilvusClient, MilvusException

from ragloop.core.grpc.convert import struct_from_dict
from ragloop.core.grpc.server import start_server
from ragloop.core.models.embeddings import OnnxMiniLMEmbedder
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_spec
from ragloop.retriever.chunking import chunk_text
from ragloop.retriever.settings import RetrieverSettings
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc
from tests.service.http_helpers import serving_http
from tests.service.retriever_helpers import ingest, retriever_stub, source

Part = retriever_pb2.IngestDocumentStreamRequest
Stub = retriever_pb2_grpc.RetrieverServiceStub
BIG_CHUNK = {"chunk_size": 8000, "chunk_overlap": 0}


def cheap_markdown(megabytes: float) -> str:
    """Markdown sections of paragraphs of sentences, each sentence a unique marker word and
    three words of 2600 characters. MiniLM's tokenizer makes one unknown word piece of any word
    over 100 characters, so an 8000-character chunk (one sentence) costs the model about ten
    tokens instead of 256: a multi-megabyte ingest stays quick on two cores while transport,
    chunking, batching and Milvus do their full work."""
    long_word = "x" * 2600
    sentences = [
        f"Marker{n:07d} {long_word} {long_word} {long_word}."
        for n in range(int(megabytes * 1_000_000 / 7818))
    ]
    parts = []
    for start in range(0, len(sentences), 10):
        if start % 200 == 0:
            parts.append(f"## Part {start // 200}")
        parts.append(" ".join(sentences[start : start + 10]))
    return "\n\n".join(parts)


async def delete_count(stub: Stub, name: str, collection: str = "") -> int:
    """How many chunks ``name`` had (an exact count), deleting them."""
    request = retriever_pb2.DeleteSourceRequest(source=name, collection=collection)
    return (await stub.DeleteSource(request)).chunks_deleted


def stream_of(*documents: tuple[str, list[str]], collection: str = "") -> AsyncIterator[Part]:
    """A stream of messages: header, then each (source, text pieces)."""

    async def parts() -> AsyncIterator[Part]:
        yield Part(header=retriever_pb2.IngestStreamHeader(collection=collection))
        for name, pieces in documents:
            yield Part(document=retriever_pb2.DocumentStart(source=name))
            for piece in pieces:
                yield Part(text=piece)

    return parts()


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Sizes of every embedding call and every Milvus upsert, passed through to the real ones."""
    sizes: dict[str, list[int]] = {"embed": [], "upsert": []}

    def recording(name: str, real: Callable[..., Any], size_of: Callable[..., int]) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            sizes[name].append(size_of(*args, **kwargs))
            return real(self, *args, **kwargs)

        return call

    embed = OnnxMiniLMEmbedder.embed
    upsert = MilvusClient.upsert
    monkeypatch.setattr(OnnxMiniLMEmbedder, "embed", recording("embed", embed, len))
    monkeypatch.setattr(
        MilvusClient, "upsert", recording("upsert", upsert, lambda _c, data, **_: len(data))
    )
    return sizes


@pytest.fixture
def fail_upsert(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """``fail_upsert(n)``: the n-th Milvus upsert from now fails as a broken Milvus would."""

    def arm(n: int) -> None:
        real = MilvusClient.upsert
        count = 0

        def upsert(self: MilvusClient, *args: Any, **kwargs: Any) -> Any:
            nonlocal count
            count += 1
            if count == n:
                raise MilvusException(message="injected: disk quota exceeded")
            return real(self, *args, **kwargs)

        monkeypatch.setattr(MilvusClient, "upsert", upsert)

    return arm


@pytest.fixture
def orchestrator_and_retriever(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """An async context: the retriever served over gRPC on 127.0.0.1, and the orchestrator's
    REST API (its retriever client talks gRPC to it); yields (HTTP client, retriever stub)."""

    @asynccontextmanager
    async def running(**retriever_options: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Stub]]:
        retriever_settings = RetrieverSettings(
            milvus_uri=str(tmp_path / "milvus.db"), **retriever_options
        )
        server = await start_server(build_spec(retriever_settings), host="127.0.0.1", port=0)
        address = f"127.0.0.1:{server.port}"
        settings = OrchestratorSettings(retriever_address=address, stage_timeout_s=5)
        try:
            async with grpc.aio.insecure_channel(address) as channel:
                with serving_http(create_app(settings)) as url:
                    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
                        yield client, Stub(channel)
        finally:
            await server.stop(grace=1)

    yield running


async def test_a_large_upload_streams_through_and_reingesting_keeps_one_copy(
    orchestrator_and_retriever: Callable[..., Any], recorded: dict[str, list[int]]
) -> None:
    text = cheap_markdown(4.5)
    data = text.encode()
    assert len(data) > 4 * 1024 * 1024  # more than gRPC's default message limit
    expected = len(chunk_text(text, size=8000, overlap=0))
    upload = [("files", ("big.md", data, "text/markdown"))]

    async with orchestrator_and_retriever(**BIG_CHUNK, ingest_batch_chunks=64) as (api, stub):
        for _ in range(2):  # the second time replaces the first
            response = await api.post("/v1/documents", files=upload)
            assert response.status_code == 200, response.text
            assert response.json()["sources"] == [{"source": "big.md", "chunk_count": expected}]

        # The text arrived whole and in order: a chunk from the middle is found by its marker.
        middle = chunk_text(text, size=8000, overlap=0)[expected // 2]
        found = await stub.Retrieve(
            retriever_pb2.RetrieveRequest(
                query=middle.split()[2], top_k=1, mode=retriever_pb2.RETRIEVAL_MODE_SPARSE
            )
        )
        assert found.documents[0].text == middle
        assert await delete_count(stub, "big.md") == expected  # one copy, every chunk

    # Written in batches of at most 64 chunks, never all at once.
    assert sum(recorded["upsert"]) == 2 * expected
    assert max(recorded["upsert"]) <= 64 and len(recorded["upsert"]) >= 2 * expected / 64


async def test_small_documents_share_embedding_calls(
    milvus_uri: str, recorded: dict[str, list[int]]
) -> None:
    documents = [source(f"note{n}.md", f"Note {n} is about topic {n}.") for n in range(40)]
    async with retriever_stub(milvus_uri, embedding_batch_size=16) as stub:
        reply = await ingest(stub, *documents)
    assert reply.chunks_written == 40
    # One text embedded at start-up (the warm-up), then batches: not 40 calls of one chunk each.
    assert recorded["embed"] == [1, 16, 16, 8]
    assert recorded["upsert"] == [40]


async def test_a_failure_part_way_leaves_nothing_of_that_source(
    milvus_uri: str, fail_upsert: Callable[[int], None]
) -> None:
    long_text = " ".join(f"Sentence {n} says something about cats." for n in range(200))
    async with retriever_stub(milvus_uri, ingest_batch_chunks=8) as stub:
        await ingest(stub, source("a.md", "Alpha is first."), source("b.md", "Beta is second."))
        first = await ingest(stub, source("cats.md", long_text))
        assert first.chunks_written > 3 * 8  # several batches

        fail_upsert(3)  # the third batch of the re-ingest fails
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.IngestDocumentStream(stream_of(("cats.md", [long_text])))
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "ingesting source 'cats.md' failed" in caught.value.details()
        assert "disk quota exceeded" in caught.value.details()

        assert await delete_count(stub, "cats.md") == 0  # neither half of it stays
        assert await delete_count(stub, "a.md") == 1
        assert await delete_count(stub, "b.md") == 1


async def test_sources_finished_before_a_failure_stay(
    milvus_uri: str, fail_upsert: Callable[[int], None]
) -> None:
    long_text = " ".join(f"Sentence {n} says something about dogs." for n in range(100))
    async with retriever_stub(milvus_uri, ingest_batch_chunks=4) as stub:
        fail_upsert(2)  # "a.md" ends in the first batch, with the start of "dogs.md"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.IngestDocumentStream(
                stream_of(("a.md", ["Short one."]), ("dogs.md", [long_text]))
            )
        assert "'dogs.md'" in caught.value.details()
        assert await delete_count(stub, "dogs.md") == 0
        assert await delete_count(stub, "a.md") == 1


async def test_pieces_split_anywhere_give_the_chunks_of_the_whole_text(milvus_uri: str) -> None:
    text = "# Cats\r\nCats sleep a lot. They purr.\r\n\r\n## Food\n" + " ".join(
        f"Cats eat meal number {n} with joy." for n in range(30)
    )
    pieces = [text[start : start + 7] for start in range(0, len(text), 7)]
    expected = chunk_text(text, size=200, overlap=40)
    async with retriever_stub(milvus_uri) as stub:
        reply = await stub.IngestDocumentStream(stream_of(("cats.md", pieces), collection="kb"))
        assert [(s.source, s.chunk_count) for s in reply.sources] == [("cats.md", len(expected))]
        assert reply.collection == "kb"
        found = await stub.Retrieve(
            retriever_pb2.RetrieveRequest(
                query="meal number 17", top_k=50, collection="kb", similarity_threshold=0
            )
        )
    assert sorted(d.text for d in found.documents) == sorted(expected)


async def test_a_source_repeated_in_one_stream_is_replaced_not_duplicated(milvus_uri: str) -> None:
    long_text = " ".join(f"Version one sentence {n}." for n in range(60))
    async with retriever_stub(milvus_uri) as stub:

        async def parts() -> AsyncIterator[Part]:  # no header: the defaults
            for text in (long_text, "Version two is short."):
                yield Part(
                    document=retriever_pb2.DocumentStart(
                        source="a.md", metadata=struct_from_dict({"v": len(text)})
                    )
                )
                yield Part(text=text)

        reply = await stub.IngestDocumentStream(parts())
        assert [s.chunk_count for s in reply.sources][1] == 1
        assert reply.collection == "ragloop"
        found = await stub.Retrieve(
            retriever_pb2.RetrieveRequest(query="version", top_k=50, similarity_threshold=0)
        )
        assert [d.text for d in found.documents] == ["Version two is short."]


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([Part(text="orphan text")], "message text where document 0 should start"),
        (
            [
                Part(document=retriever_pb2.DocumentStart(source="a.md")),
                Part(text="Fine."),
                Part(header=retriever_pb2.IngestStreamHeader(collection="other")),
            ],
            "message header where document 1 should start",
        ),
        (
            [Part(document=retriever_pb2.DocumentStart(source="a.md")), Part(text=" \n ")],
            "document 0 ('a.md'): text must not be empty",
        ),
        ([Part(document=retriever_pb2.DocumentStart(source=""))], "source must not be empty"),
        ([Part(header=retriever_pb2.IngestStreamHeader(tenant="a b"))], "tenant"),
        ([], "no documents"),
    ],
)
async def test_a_malformed_stream_is_invalid_argument(
    milvus_uri: str, parts: list[Part], message: str
) -> None:
    async def messages() -> AsyncIterator[Part]:
        for part in parts:
            yield part

    async with retriever_stub(milvus_uri) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.IngestDocumentStream(messages())
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert message in caught.value.details()
