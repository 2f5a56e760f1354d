"""A server interceptor recording grpc_server_* metrics for every method a server registered:
unary and streaming, the stage's own, health and reflection alike."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import grpc

from ragloop.core.grpc.handlers import Behavior, rewrapped
from ragloop.core.grpc.rpc_metrics import SERVER, RpcLabels, rpc_type


class ServerMetricsInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            # An unknown method (gRPC answers UNIMPLEMENTED): not recorded, so a caller's
            # made-up method names never become label values.
            return None
        labels = RpcLabels.of(
            handler_call_details.method,
            rpc_type(
                client_streaming=handler.request_streaming,
                server_streaming=handler.response_streaming,
            ),
        )
        return rewrapped(handler, lambda behavior: _observed(behavior, labels))


def _observed(behavior: Behavior, labels: RpcLabels) -> Behavior:
    if inspect.isasyncgenfunction(behavior):

        async def stream_responses(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with _ServerCall(labels, context):
                async for response in behavior(request, context):
                    yield response

        return stream_responses
    if inspect.iscoroutinefunction(behavior):

        async def respond(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with _ServerCall(labels, context):
                return await behavior(request, context)

        return respond
    # A synchronous handler would run in gRPC's thread pool; ragloop's aio servers have none.
    return behavior


class _ServerCall:
    """Times one call and records its status code, however the handler ends."""

    def __init__(self, labels: RpcLabels, context: grpc.aio.ServicerContext) -> None:
        self._labels = labels
        self._context = context

    def __enter__(self) -> None:
        self._observation = SERVER.start(self._labels)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._observation.finish(self._code(exc))

    def _code(self, exc: BaseException | None) -> grpc.StatusCode:
        set_code = self._context.code()
        if exc is None:
            return set_code or grpc.StatusCode.OK
        if isinstance(exc, grpc.aio.AbortError):  # context.abort() set the code, then raised
            return set_code or grpc.StatusCode.UNKNOWN
        if isinstance(exc, asyncio.CancelledError | GeneratorExit):
            remaining = self._context.time_remaining()
            if remaining is not None and remaining <= 0:
                return grpc.StatusCode.DEADLINE_EXCEEDED
            return grpc.StatusCode.CANCELLED
        return grpc.StatusCode.UNKNOWN  # what gRPC answers for an unexpected exception
