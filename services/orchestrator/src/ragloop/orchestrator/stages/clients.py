"""gRPC clients of the four stages. Each implements its stage interface, so the loop cannot tell
them from in-process stages. How each call is made — deadline, request id, retries of the calls
safe to repeat (``idempotent=True`` here), circuit breaker — is ``calls.RemoteStage``'s."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import grpc

from ragloop.core.backoff import NO_RETRIES, RetryPolicy
from ragloop.core.domain import (
    Answer,
    AnswerDelta,
    CollectionInfo,
    DeletedSource,
    Document,
    GradedDocument,
    GradingResult,
    IngestResult,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    SourceDocument,
    StandaloneQuery,
    StreamedDocument,
    Turn,
)
from ragloop.core.grpc import convert
from ragloop.core.grpc.errors import error_from_rpc
from ragloop.core.grpc.ingest_stream import stream_to_proto
from ragloop.core.leads import Decision
from ragloop.core.names import Stage
from ragloop.orchestrator.stages.breaker import CircuitBreaker
from ragloop.orchestrator.stages.calls import RemoteStage
from ragloop.v1 import (
    grader_pb2,
    retriever_pb2,
    rewriter_pb2,
)


class RemoteRetriever(RemoteStage):
    stage = Stage.RETRIEVER

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        timeout_s: float,
        ingest_timeout_s: float | None = None,
        retry: RetryPolicy = NO_RETRIES,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        super().__init__(channel, timeout_s=timeout_s, retry=retry, breaker=breaker)
        self._ingest_timeout_s = ingest_timeout_s or timeout_s

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float,
        collection: str = "",
        mode: str = "",
        filters: dict[str, Any] | None = None,
        tenant: str = "",
    ) -> RetrievalResult:
        request = retriever_pb2.RetrieveRequest(
            query=query,
            top_k=top_k,
            similarity_threshold=similarity_threshold,
            collection=collection,
            mode=convert.mode_to_proto(mode),
            filters=convert.struct_from_dict(filters or {}),
            tenant=tenant,
        )
        reply = await self._call(self._stub.Retrieve, request, idempotent=True)
        return convert.retrieval_from_proto(reply)

    async def ingest(
        self, documents: list[SourceDocument], *, collection: str = "", tenant: str = ""
    ) -> IngestResult:
        request = retriever_pb2.IngestDocumentsRequest(
            collection=collection,
            documents=[convert.source_document_to_proto(d) for d in documents],
            tenant=tenant,
        )
        reply = await self._call(self._stub.IngestDocuments, request, self._ingest_timeout_s)
        return convert.ingest_result_from_proto(reply)

    async def ingest_stream(
        self,
        documents: AsyncIterable[StreamedDocument],
        *,
        collection: str = "",
        tenant: str = "",
    ) -> IngestResult:
        """Send ``documents`` piece by piece (IngestDocumentStream): no size limit."""
        parts = stream_to_proto(documents, collection=collection, tenant=tenant)
        reply = await self._call(self._stub.IngestDocumentStream, parts, self._ingest_timeout_s)
        return convert.ingest_result_from_proto(reply)

    async def describe(self, collection: str = "") -> CollectionInfo:
        request = retriever_pb2.DescribeCollectionRequest(collection=collection)
        reply = await self._call(self._stub.DescribeCollection, request, idempotent=True)
        return convert.collection_info_from_proto(reply)

    async def delete_source(
        self, source: str, *, collection: str = "", tenant: str = ""
    ) -> DeletedSource:
        request = retriever_pb2.DeleteSourceRequest(
            collection=collection, source=source, tenant=tenant
        )
        reply = await self._call(self._stub.DeleteSource, request)
        return convert.deleted_source_from_proto(reply)

    async def list_collections(self) -> list[CollectionInfo]:
        request = retriever_pb2.ListCollectionsRequest()
        reply = await self._call(self._stub.ListCollections, request, idempotent=True)
        return [convert.collection_info_from_proto(c) for c in reply.collections]

    async def create_collection(self, collection: str) -> CollectionInfo:
        request = retriever_pb2.CreateCollectionRequest(collection=collection)
        reply = await self._call(self._stub.CreateCollection, request)
        return convert.collection_info_from_proto(reply.collection)

    async def drop_collection(self, collection: str) -> None:
        request = retriever_pb2.DropCollectionRequest(collection=collection)
        await self._call(self._stub.DropCollection, request)


class RemoteGrader(RemoteStage):
    stage = Stage.GRADER

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        request = grader_pb2.GradeDocumentsRequest(
            question=question, documents=[convert.document_to_proto(d) for d in documents]
        )
        return convert.grading_from_proto(await self._call(self._stub.GradeDocuments, request))


class RemoteRewriter(RemoteStage):
    stage = Stage.REWRITER

    async def rewrite(
        self,
        original_query: str,
        current_query: str,
        failed: list[GradedDocument],
        history: list[RewriteAttempt],
    ) -> Rewrite:
        request = rewriter_pb2.RewriteQueryRequest(
            original_query=original_query,
            current_query=current_query,
            failed_documents=[convert.graded_document_to_proto(d) for d in failed],
            history=[convert.attempt_to_proto(a) for a in history],
        )
        return convert.rewrite_from_proto(await self._call(self._stub.RewriteQuery, request))

    async def standalone(self, history: list[Turn], question: str) -> StandaloneQuery:
        request = rewriter_pb2.StandaloneQueryRequest(
            history=[convert.turn_to_proto(t) for t in history], question=question
        )
        reply = await self._call(self._stub.StandaloneQuery, request)
        return convert.standalone_from_proto(reply)


class RemoteGenerator(RemoteStage):
    stage = Stage.GENERATOR

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        request = convert.generate_request_to_proto(question, documents, instructions, decision)
        return convert.answer_from_proto(await self._call(self._stub.GenerateAnswer, request))

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncIterator[AnswerDelta | Answer]:
        """``generate``, streamed (GenerateAnswerStream): answer text deltas, then the answer."""
        request = convert.generate_request_to_proto(question, documents, instructions, decision)
        try:
            async with self._guarded() as guarded:
                call = self._stub.GenerateAnswerStream(request, **self._call_options())
                try:
                    async for event in call:
                        guarded.reached = True
                        yield convert.answer_event_from_proto(event)
                finally:
                    call.cancel()  # a no-op once the stream ended; else the caller stopped reading
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.stage) from exc


# The client of each stage of the registry; remote.py builds one per row.
REMOTE_CLIENTS: dict[Stage, type[RemoteStage]] = {
    client.stage: client
    for client in (RemoteRetriever, RemoteGrader, RemoteRewriter, RemoteGenerator)
}
