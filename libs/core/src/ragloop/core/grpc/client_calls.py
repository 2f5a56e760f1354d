"""Client interceptors that watch every call of a channel, whatever its streaming kind: a
``Watch`` starts with the call (and may change its details, e.g. add metadata) and is told the
call's status code once it ends. What the metrics and the traces of stage calls share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc


class CallObservation(Protocol):
    def finish(self, code: grpc.StatusCode) -> None:
        """The call ended with ``code``; called once or more (later calls change nothing)."""
        ...


# (the call's details, its type: unary, server_stream, …) -> (the details to call with, its
# observation)
Watch = Callable[[Any, str], tuple[Any, CallObservation]]


def watching_interceptors(watch: Watch) -> list[grpc.aio.ClientInterceptor]:
    """Interceptors for every kind of call, each watched by ``watch``."""
    return [_UnaryUnary(watch), _UnaryStream(watch), _StreamUnary(watch), _StreamStream(watch)]


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    async def intercept_unary_unary(
        self, continuation: Callable[..., Awaitable[Any]], client_call_details: Any, request: Any
    ) -> Any:
        details, observation = self._watch(client_call_details, "unary")
        return await _single_response(observation, continuation(details, request))


class _StreamUnary(grpc.aio.StreamUnaryClientInterceptor):
    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    async def intercept_stream_unary(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: Any,
        request_iterator: Any,
    ) -> Any:
        details, observation = self._watch(client_call_details, "client_stream")
        return await _single_response(observation, continuation(details, request_iterator))


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    async def intercept_unary_stream(
        self, continuation: Callable[..., Awaitable[Any]], client_call_details: Any, request: Any
    ) -> Any:
        details, observation = self._watch(client_call_details, "server_stream")
        call = await _started(observation, continuation(details, request))
        return _streamed_responses(observation, call)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    async def intercept_stream_stream(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: Any,
        request_iterator: Any,
    ) -> Any:
        details, observation = self._watch(client_call_details, "bidi_stream")
        call = await _started(observation, continuation(details, request_iterator))
        return _streamed_responses(observation, call)


async def _started(observation: CallObservation, starting: Awaitable[Any]) -> Any:
    try:
        return await starting
    except BaseException as exc:
        observation.finish(_code_of(exc))
        raise


async def _single_response(observation: CallObservation, starting: Awaitable[Any]) -> Any:
    """Wait until the call has its status, record it, and hand the finished call back."""
    call = await _started(observation, starting)
    try:
        code = await call.code()
    except BaseException as exc:
        call.cancel()  # the caller gave up: do not leave the RPC running
        observation.finish(_code_of(exc))
        raise
    observation.finish(code)
    return call


def _streamed_responses(observation: CallObservation, call: Any) -> AsyncIterator[Any]:
    # A caller that stops reading and cancels the call never resumes the generator: the done
    # callback records the cancellation right away instead of whenever the generator is collected.
    call.add_done_callback(
        lambda done: observation.finish(grpc.StatusCode.CANCELLED) if done.cancelled() else None
    )
    return _responses(observation, call)


async def _responses(observation: CallObservation, call: Any) -> AsyncIterator[Any]:
    try:
        async for response in call:
            yield response
    except BaseException as exc:
        observation.finish(_code_of(exc))
        raise
    observation.finish(await call.code())


def _code_of(exc: BaseException) -> grpc.StatusCode:
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code()
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN
