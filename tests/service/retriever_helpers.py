"""Helpers of the retriever service tests: a served retriever and short request builders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest

from ragloop.core.grpc.convert import struct_from_dict
from ragloop.orchestrator.stages.remote import StageSet
from ragloop.retriever.__main__ import build_retriever, build_spec
from ragloop.retriever.settings import RetrieverSettings
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc
from tests.service.grpc_helpers import serving
from tests.unit.fakes import DictGrader, EchoGenerator, ScriptedRewriter

Stub = retriever_pb2_grpc.RetrieverServiceStub
MODES = {
    "": retriever_pb2.RETRIEVAL_MODE_UNSPECIFIED,
    "dense": retriever_pb2.RETRIEVAL_MODE_DENSE,
    "sparse": retriever_pb2.RETRIEVAL_MODE_SPARSE,
    "hybrid": retriever_pb2.RETRIEVAL_MODE_HYBRID,
}


@asynccontextmanager
async def retriever_stub(milvus_uri: str, **settings: Any) -> AsyncIterator[Stub]:
    options = {"chunk_size": 200, "chunk_overlap": 40, **settings}
    async with serving(build_spec(RetrieverSettings(milvus_uri=milvus_uri, **options))) as ch:
        yield retriever_pb2_grpc.RetrieverServiceStub(ch)


def source(name: str, text: str, **metadata: object) -> retriever_pb2.SourceDocument:
    return retriever_pb2.SourceDocument(source=name, text=text, metadata=struct_from_dict(metadata))


async def ingest(
    stub: Stub,
    *docs: retriever_pb2.SourceDocument,
    collection: str = "",
    tenant: str = "",
) -> retriever_pb2.IngestDocumentsResponse:
    return await stub.IngestDocuments(
        retriever_pb2.IngestDocumentsRequest(
            collection=collection, documents=list(docs), tenant=tenant
        )
    )


async def retrieve(
    stub: Stub,
    query: str,
    *,
    top_k: int = 5,
    threshold: float = 0.0,
    mode: str = "",
    filters: dict[str, Any] | None = None,
    tenant: str = "",
    collection: str = "",
) -> retriever_pb2.RetrieveResponse:
    return await stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query=query,
            top_k=top_k,
            similarity_threshold=threshold,
            mode=MODES[mode],
            filters=struct_from_dict(filters or {}),
            tenant=tenant,
            collection=collection,
        )
    )


def sources(reply: retriever_pb2.RetrieveResponse) -> list[str]:
    return [d.source for d in reply.documents]


async def expect_error(call: Any, code: grpc.StatusCode, message: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() is code, caught.value.details()
    assert message in caught.value.details()


async def chunk_count(stub: Stub, collection: str = "") -> int:
    request = retriever_pb2.DescribeCollectionRequest(collection=collection)
    return (await stub.DescribeCollection(request)).chunk_count


def retrieval_stages(milvus_uri: str) -> StageSet:
    """The real retriever in process; the model stages are the unit tests' fakes (every passage
    fails grading, no rewrites, the answer echoes passage ids): for REST tests about retrieval."""
    retriever = build_retriever(RetrieverSettings(milvus_uri=milvus_uri))

    async def close() -> None:
        retriever.close()

    return StageSet(
        retriever=retriever,
        ingestor=retriever,
        grader=DictGrader({}),
        rewriter=ScriptedRewriter([]),
        generator=EchoGenerator(),
        closers=[close],
    )
