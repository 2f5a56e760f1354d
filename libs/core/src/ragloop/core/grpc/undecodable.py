"""A server interceptor that answers INVALID_ARGUMENT, naming the message type, to a request
that is not the message its method takes: bytes that do not parse, or a string field that is
not UTF-8 (which proto3 forbids). Without it gRPC answers UNKNOWN ("Unexpected DecodeError"),
which reads as a server fault."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from ragloop.core.grpc.handlers import Behavior, HandlerInterceptor, rewrapped

Deserializer = Callable[[bytes], Any]


@dataclass(frozen=True)
class Undecodable:
    """Stands in for a request message that could not be parsed."""

    message: str


def tolerant(deserialize: Deserializer) -> Deserializer:
    """``deserialize``, returning ``Undecodable`` instead of raising on bytes it cannot parse."""
    type_name = getattr(getattr(deserialize, "__self__", None), "DESCRIPTOR", None)
    what = f"a {type_name.full_name} message" if type_name is not None else "the expected message"

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError as exc:
            reason = str(exc).rpartition(": ")[2] or "it does not parse"
            return Undecodable(f"the request is not {what}: {reason}")

    return parse


class UndecodableRequestInterceptor(HandlerInterceptor):
    def handler_for(
        self, handler: grpc.RpcMethodHandler, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        if handler.request_deserializer is None:
            return handler
        checked = _streamed_requests_checked if handler.request_streaming else _request_checked
        return rewrapped(
            handler, checked, request_deserializer=tolerant(handler.request_deserializer)
        )


async def _refuse(context: grpc.aio.ServicerContext, request: Undecodable) -> None:
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)


def _request_checked(behavior: Behavior) -> Behavior:
    """A unary-request behavior that refuses an undecodable request before it runs."""
    if inspect.isasyncgenfunction(behavior):

        async def stream_responses(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if isinstance(request, Undecodable):
                await _refuse(context, request)
            async for response in behavior(request, context):
                yield response

        return stream_responses

    async def respond(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            await _refuse(context, request)
        return await behavior(request, context)

    return respond


def _streamed_requests_checked(behavior: Behavior) -> Behavior:
    """A streaming-request behavior whose request stream aborts the call at the first
    undecodable message (gRPC tells coroutines from async generators: both kinds are kept)."""

    def decoded(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
        async def messages() -> AsyncIterator[Any]:
            async for request in requests:
                if isinstance(request, Undecodable):
                    await _refuse(context, request)
                yield request

        return messages()

    if inspect.isasyncgenfunction(behavior):

        async def stream_responses(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            async for response in behavior(decoded(requests, context), context):
                yield response

        return stream_responses

    async def respond(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await behavior(decoded(requests, context), context)

    return respond
