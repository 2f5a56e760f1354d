"""The request id on the server side of a stage call: read from the call's ``x-request-id``
metadata (what the orchestrator's clients send), so that every line a stage logs while handling
the call carries the id of the REST request that caused it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc

from ragloop.core import context


class RequestIdInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        # gRPC aio runs the interceptors and then the handler in one task per call, so the value
        # set here is the handler's and no other call's. A call without one gets none: an id is
        # made up only where a request enters the system (the orchestrator's REST API).
        offered = dict(handler_call_details.invocation_metadata or ()).get(
            context.REQUEST_ID_HEADER
        )
        context.request_id.set(context.accepted_request_id(offered) if offered else "")
        return await continuation(handler_call_details)
