"""gRPC clients of the four stages. Each implements its stage interface, so the loop cannot tell
them from in-process stages. Every call carries the request id and a deadline: the client's
timeout, or less when the request's budget (``context.deadline``) leaves less. Calls fail fast
when a stage is down (no waiting for it to come up), and connecting may take at most the
channel's connect timeout, so a stage that is down is an error naming it, never a hang.

Calls that are safe to repeat (retrieve, describe, list, health) are retried with capped backoff
when the stage could not be reached, within the call's deadline; the others never are. Each
stage's calls pass a circuit breaker (``breaker.py``): after repeated unreachable calls they fail
at once for a cool-down instead of each waiting for its own connection attempt."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core import context
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
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.grpc import convert
from ragloop.core.grpc.client_metrics import client_metrics_interceptors
from ragloop.core.grpc.errors import error_from_rpc
from ragloop.core.grpc.ingest_stream import stream_to_proto
from ragloop.core.grpc.server import MAX_MESSAGE_BYTES
from ragloop.core.grpc.tls import ClientTls, aio_channel
from ragloop.core.grpc.tracing import client_interceptors as tracing_interceptors
from ragloop.core.names import Stage
from ragloop.core.stage_registry import stage_spec
from ragloop.orchestrator.stages import balancing
from ragloop.orchestrator.stages.breaker import CircuitBreaker, Outcome, Permit, Refusal
from ragloop.v1 import (
    generator_pb2,
    grader_pb2,
    retriever_pb2,
    rewriter_pb2,
)

R = TypeVar("R")
log = logging.getLogger(__name__)

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Ping every 30 s; a stage host that vanished without closing the connection (no RST) fails
    # the calls on it 10 s after an unanswered ping instead of at their deadlines.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    # Reconnect quickly after a stage restarts: the first attempt 250 ms after a connection is
    # lost, then backing off to at most 2 s between attempts (gRPC's default: up to 2 minutes).
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def open_channel(
    address: str,
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    tls: ClientTls | None = None,
) -> grpc.aio.Channel:
    """A channel to a stage's replicas, each call to the next ready one (``balancing.py``):
    TLS when ``tls`` is given, else plaintext."""
    # gRPC core takes its minimum reconnect backoff as the timeout of one connection attempt
    # (default 20 s): a call to a host that never completes the handshake fails after it.
    connect = ("grpc.min_reconnect_backoff_ms", round(connect_timeout_s * 1000))
    return aio_channel(
        balancing.grpc_target(address),
        tls,
        options=[*CHANNEL_OPTIONS, connect, *balancing.channel_options(address)],
        interceptors=[*tracing_interceptors(address), *client_metrics_interceptors()],
    )


def request_metadata() -> tuple[tuple[str, str], ...]:
    """The request id, passed on to every stage."""
    request_id = context.request_id.get()
    return ((context.REQUEST_ID_HEADER, request_id),) if request_id else ()


def outcome_of(exc: grpc.aio.AioRpcError) -> Outcome:
    """What a failed call says about the stage, for its circuit breaker and for retries."""
    code = exc.code()
    if code is grpc.StatusCode.UNAVAILABLE:  # not reached, or it cannot serve at all
        return Outcome.UNREACHABLE
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return Outcome.UNDECIDED
    return Outcome.REACHED  # it answered with an error of its own


def failing_fast(stage: str, refusal: Refusal) -> DependencyUnavailable:
    last = f"; last error: {refusal.last_error}" if refusal.last_error else ""
    return DependencyUnavailable(
        f"{stage}: unavailable ({refusal.failures} calls in a row could not reach it; failing "
        f"fast, next try in {refusal.retry_in_s:.1f} s{last})"
    )


class RemoteStage:
    """Common part of the stage clients: deadline, request id, retries of safe calls, circuit
    breaker, error mapping."""

    stage: ClassVar[Stage]

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        timeout_s: float,
        retry: RetryPolicy = NO_RETRIES,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.channel = channel
        self.timeout_s = timeout_s
        self.retry = retry
        self.breaker = breaker
        self._stub: Any = stage_spec(self.stage).stub(channel)

    def _call_options(self, timeout_s: float | None = None) -> dict[str, Any]:
        return {
            "timeout": context.time_left(timeout_s or self.timeout_s),
            "metadata": request_metadata(),
            "wait_for_ready": False,
        }

    async def _call(
        self,
        method: Callable[..., Awaitable[R]],
        request: Any,
        timeout_s: float | None = None,
        *,
        idempotent: bool = False,
    ) -> R:
        """One call through the breaker; retried when ``idempotent`` and it could not reach the
        stage. A failure becomes the stage error its status code stands for, naming the stage."""

        async def attempt() -> R:
            async with self._guarded():
                return await method(request, **self._call_options(timeout_s))

        deadline = time.monotonic() + context.time_left(timeout_s or self.timeout_s)
        try:
            return await self._retrying(attempt, idempotent=idempotent, deadline=deadline)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.stage) from exc

    async def _retrying(
        self, attempt: Callable[[], Awaitable[R]], *, idempotent: bool, deadline: float
    ) -> R:
        retries = self.retry.retries if idempotent else 0
        for retry in range(retries + 1):
            try:
                return await attempt()
            except grpc.aio.AioRpcError as exc:
                delay = self.retry.delay(retry)
                last = retry >= retries or outcome_of(exc) is not Outcome.UNREACHABLE
                if last or time.monotonic() + delay >= deadline:
                    raise
                log.warning(
                    "stage unreachable; retrying",
                    extra={"stage": self.stage, "retry": retry + 1, "delay_s": delay},
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _guarded(self) -> _BreakerCall:
        return _BreakerCall(self.stage, self.breaker, self.channel)

    async def check_health(self, timeout_s: float = 2.0) -> bool:
        """Whether the stage reports SERVING. Not subject to the breaker: readiness shows the
        stage as it is, and a stage coming back shows as soon as it answers."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.monotonic() + timeout_s

        async def attempt() -> Any:
            timeout = max(0.0, deadline - time.monotonic())
            return await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)

        try:
            reply = await self._retrying(attempt, idempotent=True, deadline=deadline)
        except grpc.aio.AioRpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING


class _BreakerCall:
    """``async with``: admits a call through the stage's breaker (or fails it at once) and
    reports how it ended. Without a breaker it does nothing.

    A call that failed UNAVAILABLE while the channel still has a ready replica says nothing
    about the stage: one replica died under it (round robin takes that replica out of the
    rotation) or answered that it cannot serve. Only failures with no replica ready count, so
    one bad replica among several never opens the circuit of the whole stage."""

    def __init__(
        self, stage: str, breaker: CircuitBreaker | None, channel: grpc.aio.Channel
    ) -> None:
        self.stage = stage
        self.breaker = breaker
        self.channel = channel
        self.permit: Permit | None = None
        self.reached = False  # set by streams once the stage has answered something

    async def __aenter__(self) -> _BreakerCall:
        if self.breaker is not None:
            decision = self.breaker.admit()
            if isinstance(decision, Refusal):
                raise failing_fast(self.stage, decision)
            self.permit = decision
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: Any, tb: Any) -> None:
        if self.breaker is None or self.permit is None:
            return
        if exc is None:
            self.breaker.record(self.permit, Outcome.REACHED)
        elif isinstance(exc, grpc.aio.AioRpcError):
            outcome = outcome_of(exc)
            if outcome is Outcome.UNREACHABLE and self._a_replica_is_ready():
                outcome = Outcome.UNDECIDED
            self.breaker.record(self.permit, outcome, exc.details() or exc.code().name)
        else:  # cancelled, or the caller stopped reading: the stage was there if it answered
            self.breaker.record(self.permit, Outcome.REACHED if self.reached else Outcome.UNDECIDED)

    def _a_replica_is_ready(self) -> bool:
        return self.channel.get_state() is grpc.ChannelConnectivity.READY


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
        self, question: str, documents: list[Document], instructions: str = ""
    ) -> Answer:
        request = _generate_request(question, documents, instructions)
        return convert.answer_from_proto(await self._call(self._stub.GenerateAnswer, request))

    async def generate_stream(
        self, question: str, documents: list[Document], instructions: str = ""
    ) -> AsyncIterator[AnswerDelta | Answer]:
        """``generate``, streamed (GenerateAnswerStream): answer text deltas, then the answer."""
        request = _generate_request(question, documents, instructions)
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


def _generate_request(
    question: str, documents: list[Document], instructions: str
) -> generator_pb2.GenerateAnswerRequest:
    return generator_pb2.GenerateAnswerRequest(
        question=question,
        documents=[convert.document_to_proto(d) for d in documents],
        answer_instructions=instructions,
    )


# The client of each stage of the registry; remote.py builds one per row.
REMOTE_CLIENTS: dict[Stage, type[RemoteStage]] = {
    client.stage: client
    for client in (RemoteRetriever, RemoteGrader, RemoteRewriter, RemoteGenerator)
}
