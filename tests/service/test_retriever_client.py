"""The orchestrator's gRPC client of the retriever against the real retriever service: every
option and every knowledge-base method crosses the wire and comes back as domain types."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloop.core.domain import DeletedSource, SourceDocument
from ragloop.core.errors import InvalidInput, NotFound
from ragloop.orchestrator.stages.clients import RemoteRetriever
from ragloop.retriever.__main__ import build_spec
from ragloop.retriever.settings import RetrieverSettings
from tests.service.grpc_helpers import serving


async def test_the_client_speaks_every_retriever_method(tmp_path: Path) -> None:
    settings = RetrieverSettings(milvus_uri=str(tmp_path / "milvus.db"))
    async with serving(build_spec(settings)) as channel:
        client = RemoteRetriever(channel, timeout_s=30)
        created = await client.create_collection("kb")
        assert (created.name, created.exists, created.full_text, created.tenants) == (
            "kb",
            True,
            True,
            True,
        )
        docs = [
            SourceDocument("a.md", "Cats sleep sixteen hours.", {"year": 2024, "tag": "x"}),
            SourceDocument("b.md", "Cats purr when content.", {"year": 2001, "tag": "y"}),
        ]
        written = await client.ingest(docs, collection="kb", tenant="acme")
        assert written.chunks_written == 2

        result = await client.retrieve(
            "cats",
            top_k=5,
            similarity_threshold=0.0,
            collection="kb",
            mode="sparse",
            filters={"year": {"gte": 2020}, "tag": {"in": ["x", "z"]}},
            tenant="acme",
        )
        assert [d.source for d in result.documents] == ["a.md"]
        assert result.mode == "sparse"
        assert result.documents[0].metadata == {"year": 2024, "tag": "x"}
        other = await client.retrieve("cats", top_k=5, similarity_threshold=0.0, collection="kb")
        assert other.documents == [] and other.mode == "hybrid"

        assert [c.name for c in await client.list_collections()] == ["kb"]
        assert await client.delete_source("b.md", collection="kb", tenant="acme") == (
            DeletedSource("kb", "b.md", 1)
        )
        assert (await client.describe("kb")).chunk_count == 1

        with pytest.raises(InvalidInput, match="unknown operator"):
            await client.retrieve(
                "cats", top_k=5, similarity_threshold=0, filters={"year": {"near": 1}}
            )
        await client.drop_collection("kb")
        with pytest.raises(NotFound, match="does not exist"):
            await client.drop_collection("kb")
