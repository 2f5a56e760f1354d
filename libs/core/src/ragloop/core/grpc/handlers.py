"""Rebuilding a gRPC method handler around a wrapped behavior, whatever its streaming kind: what
server interceptors that wrap every method (metrics, traces, request checks) share."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

import grpc

Behavior = Callable[..., Any]
# What runs around one call of a method, given the call's context (e.g. times it).
CallScope = Callable[[grpc.aio.ServicerContext], AbstractContextManager[Any]]

_HANDLER_FACTORIES: dict[tuple[bool, bool], tuple[str, Callable[..., grpc.RpcMethodHandler]]] = {
    (False, False): ("unary_unary", grpc.unary_unary_rpc_method_handler),
    (False, True): ("unary_stream", grpc.unary_stream_rpc_method_handler),
    (True, False): ("stream_unary", grpc.stream_unary_rpc_method_handler),
    (True, True): ("stream_stream", grpc.stream_stream_rpc_method_handler),
}


class HandlerInterceptor(grpc.aio.ServerInterceptor):
    """A server interceptor that may replace the handler of each call (``handler_for``); an
    unknown method (no handler: gRPC answers UNIMPLEMENTED) passes untouched."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        return None if handler is None else self.handler_for(handler, handler_call_details)

    def handler_for(
        self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        """The handler that serves the call: ``handler``, or one wrapped around it."""
        raise NotImplementedError


def rewrapped(
    handler: grpc.RpcMethodHandler,
    wrap: Callable[[Behavior], Behavior],
    *,
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """``handler`` with its behavior replaced by ``wrap(behavior)`` (and, given, another request
    deserializer); the same kind of handler and response serializer."""
    field, factory = _HANDLER_FACTORIES[(handler.request_streaming, handler.response_streaming)]
    return factory(
        wrap(getattr(handler, field)),
        request_deserializer=request_deserializer or handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def within(behavior: Behavior, scope: CallScope) -> Behavior:
    """``behavior`` run inside ``scope(context)``: a whole call, however it ends, a streamed
    response's last message included."""
    if inspect.isasyncgenfunction(behavior):

        async def stream_responses(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with scope(context):
                async for response in behavior(request, context):
                    yield response

        return stream_responses
    if inspect.iscoroutinefunction(behavior):

        async def respond(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with scope(context):
                return await behavior(request, context)

        return respond
    # A synchronous handler would run in gRPC's thread pool; ragloop's aio servers have none.
    return behavior


def call_status(context: grpc.aio.ServicerContext, exc: BaseException | None) -> grpc.StatusCode:
    """The status code a call ends with: the one the handler set, or what its exception means."""
    set_code = context.code()
    if exc is None:
        return set_code or grpc.StatusCode.OK
    if isinstance(exc, grpc.aio.AbortError):  # context.abort() set the code, then raised
        return set_code or grpc.StatusCode.UNKNOWN
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            return grpc.StatusCode.DEADLINE_EXCEEDED
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN  # what gRPC answers for an unexpected exception
