"""RagService: the orchestrator's gRPC face (Query and QueryStream), for clients that speak gRPC
only. The same query service, validation and failures as the REST API (``application.queries``);
only the envelope differs: messages of ragloop.v1.rag, errors as status codes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import grpc

from ragloop.core import context, tracing
from ragloop.core.errors import InvalidInput
from ragloop.core.grpc.server import RunningServer, ServiceSpec, start_server
from ragloop.orchestrator.access.auth import ApiKeys, KeyDigest, bearer_token
from ragloop.orchestrator.application.failures import UNEXPECTED_ERROR, described_failure
from ragloop.orchestrator.application.queries import QueryService
from ragloop.orchestrator.application.tenants import TenantRefused
from ragloop.orchestrator.loop.corrective import StageFailure
from ragloop.orchestrator.loop.events import LoopEvent
from ragloop.orchestrator.rpc.messages import (
    done_event,
    event_to_proto,
    query_request_from_proto,
    response_to_proto,
)
from ragloop.v1 import rag_pb2, rag_pb2_grpc

log = logging.getLogger(__name__)

STATUS_OF_FAILURE = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "precondition": grpc.StatusCode.FAILED_PRECONDITION,
    "timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "internal": grpc.StatusCode.INTERNAL,
}
# Trailing metadata of a failed query: the failed stage, the REST API's error code, the nodes run.
STAGE_KEY = "ragloop-stage"
ERROR_KEY = "ragloop-error"
DECISION_PATH_KEY = "ragloop-decision-path"


class RagServicer(rag_pb2_grpc.RagServiceServicer):
    def __init__(self, queries: QueryService, keys: ApiKeys | None = None) -> None:
        self.queries = queries
        self.keys = keys  # None: no authentication

    async def Query(
        self, request: rag_pb2.QueryRequest, rpc: grpc.aio.ServicerContext
    ) -> rag_pb2.QueryResponse:
        async with _query_call(rpc, self.keys) as caller:
            query = self.queries.admit(query_request_from_proto(request), caller and caller.tenant)
            answer = await query.answer()
        return response_to_proto(answer)

    async def QueryStream(
        self, request: rag_pb2.QueryRequest, rpc: grpc.aio.ServicerContext
    ) -> None:
        # Written with rpc.write from inside the run rather than yielded from a queue: the run is
        # this call's task, so the client cancelling the call cancels the run and its stage call.
        async def send(event: LoopEvent) -> None:
            await rpc.write(event_to_proto(event))

        async with _query_call(rpc, self.keys) as caller:
            query = self.queries.admit(query_request_from_proto(request), caller and caller.tenant)
            await rpc.write(done_event(await query.answer(send)))


@asynccontextmanager
async def _query_call(
    rpc: grpc.aio.ServicerContext, keys: ApiKeys | None
) -> AsyncIterator[KeyDigest | None]:
    """The request id of the call (the client's x-request-id when valid, else a new one: on
    every log line, passed on to the stages, sent back in the initial metadata with the trace id
    while tracing is on), the caller's
    API key when keys are configured (the REST API's keys; yielded, None without keys), and its
    failures as status codes."""
    metadata = dict(rpc.invocation_metadata() or ())
    request_id = context.accepted_request_id(metadata.get(context.REQUEST_ID_HEADER))
    sent = [(context.REQUEST_ID_HEADER, request_id)]
    if trace_id := tracing.current_trace_id():
        sent.append((tracing.TRACE_ID_HEADER, trace_id))
    await rpc.send_initial_metadata(sent)
    with context.request_id_set(request_id):
        caller = None
        if keys is not None:
            caller = await _authenticate(rpc, keys, metadata.get("authorization"))
        try:
            yield caller
        except InvalidInput as exc:
            await rpc.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except TenantRefused as exc:
            await rpc.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except StageFailure as exc:
            failure = described_failure(exc, exc.stage, exc.trace)
            trailing = (
                (STAGE_KEY, failure.stage or ""),
                (ERROR_KEY, failure.code),
                (DECISION_PATH_KEY, ",".join(failure.decision_path)),
            )
            await rpc.abort(STATUS_OF_FAILURE[failure.kind], failure.message, trailing)
        except grpc.aio.AbortError:
            raise
        except Exception:
            log.exception("unexpected error in a gRPC query")
            await rpc.abort(grpc.StatusCode.INTERNAL, UNEXPECTED_ERROR)


async def _authenticate(
    rpc: grpc.aio.ServicerContext, keys: ApiKeys, authorization: str | None
) -> KeyDigest:
    token = bearer_token(authorization)
    if token is None:
        log.info("gRPC call without an API key refused", extra={"client": rpc.peer()})
        await rpc.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            "this API needs an API key: send the metadata 'authorization: Bearer KEY'",
        )
    caller = keys.match(token)
    if caller is None:
        log.warning("gRPC call with an unknown API key refused", extra={"client": rpc.peer()})
        await rpc.abort(grpc.StatusCode.UNAUTHENTICATED, "the API key is not valid")
    return caller


def rag_service_spec(queries: QueryService) -> ServiceSpec:
    return ServiceSpec.for_servicer(
        "orchestrator gRPC (RagService)",
        RagServicer(queries, ApiKeys.from_settings(queries.settings)),
        rag_pb2_grpc.add_RagServiceServicer_to_server,
        rag_pb2,
    )


async def start_rag_server(
    queries: QueryService, interceptors: Sequence[grpc.aio.ServerInterceptor] = ()
) -> RunningServer | None:
    """Serve RagService (with health and reflection, which need no key) on
    RAGLOOP_ORCHESTRATOR_GRPC_PORT; None when the port is 0 (off). ``interceptors``: e.g. the
    admission gate the REST API shares."""
    settings = queries.settings
    if not settings.orchestrator_grpc_port:
        return None
    return await start_server(
        rag_service_spec(queries),
        host=settings.bind_host,
        port=settings.orchestrator_grpc_port,
        interceptors=interceptors,
    )
