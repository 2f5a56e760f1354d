"""gRPC clients of the four stages. Each implements its stage interface, so the loop cannot tell
them from in-process stages. Every call carries the request id and a deadline: the client's
timeout, or less when the request's budget (``context.deadline``) leaves less. Calls fail fast
when a stage is down (no waiting for it to come up), and connecting may take at most the
channel's connect timeout, so a stage that is down is an error naming it, never a hang."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core import context
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
    StreamedDocument,
)
from ragloop.core.grpc import convert
from ragloop.core.grpc.client_metrics import client_metrics_interceptors
from ragloop.core.grpc.errors import error_from_rpc
from ragloop.core.grpc.ingest_stream import stream_to_proto
from ragloop.core.grpc.server import MAX_MESSAGE_BYTES
from ragloop.v1 import (
    generator_pb2,
    generator_pb2_grpc,
    grader_pb2,
    grader_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
    rewriter_pb2,
    rewriter_pb2_grpc,
)

R = TypeVar("R")

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", 30_000),
    # Reconnect quickly after a stage restarts instead of backing off for minutes.
    ("grpc.max_reconnect_backoff_ms", 2_000),
]
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def open_channel(
    address: str, *, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
) -> grpc.aio.Channel:
    # gRPC core takes its minimum reconnect backoff as the timeout of one connection attempt
    # (default 20 s): a call to a host that never completes the handshake fails after it.
    connect = ("grpc.min_reconnect_backoff_ms", round(connect_timeout_s * 1000))
    return grpc.aio.insecure_channel(
        address, options=[*CHANNEL_OPTIONS, connect], interceptors=client_metrics_interceptors()
    )


def request_metadata() -> tuple[tuple[str, str], ...]:
    """The request id, passed on to every stage."""
    request_id = context.request_id.get()
    return ((context.REQUEST_ID_HEADER, request_id),) if request_id else ()


class RemoteStage:
    """Common part of the stage clients: deadline, request id, error mapping."""

    stage = "stage"

    def __init__(self, channel: grpc.aio.Channel, *, timeout_s: float) -> None:
        self.channel = channel
        self.timeout_s = timeout_s

    def _call_options(self, timeout_s: float | None = None) -> dict[str, Any]:
        return {
            "timeout": context.time_left(timeout_s or self.timeout_s),
            "metadata": request_metadata(),
            "wait_for_ready": False,
        }

    async def _call(
        self, method: Callable[..., Awaitable[R]], request: Any, timeout_s: float | None = None
    ) -> R:
        try:
            return await method(request, **self._call_options(timeout_s))
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.stage) from exc

    async def check_health(self, timeout_s: float = 2.0) -> bool:
        stub = health_pb2_grpc.HealthStub(self.channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
        except grpc.aio.AioRpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING


class RemoteRetriever(RemoteStage):
    stage = "retriever"

    def __init__(
        self, channel: grpc.aio.Channel, *, timeout_s: float, ingest_timeout_s: float | None = None
    ) -> None:
        super().__init__(channel, timeout_s=timeout_s)
        self._stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
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
        return convert.retrieval_from_proto(await self._call(self._stub.Retrieve, request))

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
        reply = await self._call(self._stub.DescribeCollection, request)
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
        reply = await self._call(self._stub.ListCollections, retriever_pb2.ListCollectionsRequest())
        return [convert.collection_info_from_proto(c) for c in reply.collections]

    async def create_collection(self, collection: str) -> CollectionInfo:
        request = retriever_pb2.CreateCollectionRequest(collection=collection)
        reply = await self._call(self._stub.CreateCollection, request)
        return convert.collection_info_from_proto(reply.collection)

    async def drop_collection(self, collection: str) -> None:
        request = retriever_pb2.DropCollectionRequest(collection=collection)
        await self._call(self._stub.DropCollection, request)


class RemoteGrader(RemoteStage):
    stage = "grader"

    def __init__(self, channel: grpc.aio.Channel, *, timeout_s: float) -> None:
        super().__init__(channel, timeout_s=timeout_s)
        self._stub = grader_pb2_grpc.GraderServiceStub(channel)

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        request = grader_pb2.GradeDocumentsRequest(
            question=question, documents=[convert.document_to_proto(d) for d in documents]
        )
        return convert.grading_from_proto(await self._call(self._stub.GradeDocuments, request))


class RemoteRewriter(RemoteStage):
    stage = "rewriter"

    def __init__(self, channel: grpc.aio.Channel, *, timeout_s: float) -> None:
        super().__init__(channel, timeout_s=timeout_s)
        self._stub = rewriter_pb2_grpc.RewriterServiceStub(channel)

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


class RemoteGenerator(RemoteStage):
    stage = "generator"

    def __init__(self, channel: grpc.aio.Channel, *, timeout_s: float) -> None:
        super().__init__(channel, timeout_s=timeout_s)
        self._stub = generator_pb2_grpc.GeneratorServiceStub(channel)

    async def generate(self, question: str, documents: list[Document]) -> Answer:
        request = generator_pb2.GenerateAnswerRequest(
            question=question, documents=[convert.document_to_proto(d) for d in documents]
        )
        return convert.answer_from_proto(await self._call(self._stub.GenerateAnswer, request))

    async def generate_stream(
        self, question: str, documents: list[Document]
    ) -> AsyncIterator[AnswerDelta | Answer]:
        """``generate``, streamed (GenerateAnswerStream): answer text deltas, then the answer."""
        request = generator_pb2.GenerateAnswerRequest(
            question=question, documents=[convert.document_to_proto(d) for d in documents]
        )
        call = self._stub.GenerateAnswerStream(request, **self._call_options())
        try:
            async for event in call:
                yield convert.answer_event_from_proto(event)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.stage) from exc
        finally:
            call.cancel()  # a no-op once the stream ended; else the caller stopped reading
