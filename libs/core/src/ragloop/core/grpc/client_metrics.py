"""Client interceptors recording grpc_client_* metrics, for the orchestrator's stage channels:
``grpc.aio.insecure_channel(address, interceptors=client_metrics_interceptors())``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import grpc
from grpc_health.v1 import health

from ragloop.core.grpc.rpc_metrics import CLIENT, RpcLabels, RpcObservation
from ragloop.core.stage_registry import STAGE_SPECS


def stage_service_names() -> list[str]:
    """Every service the orchestrator calls: the stages' and gRPC health."""
    return [*(name for spec in STAGE_SPECS for name in spec.grpc_services), health.SERVICE_NAME]


def client_metrics_interceptors(
    service_names: Iterable[str] | None = None,
) -> list[grpc.aio.ClientInterceptor]:
    """Interceptors for every kind of call; the series of ``service_names`` (default: the stage
    services) are created at zero."""
    CLIENT.init_series(stage_service_names() if service_names is None else service_names)
    return [_UnaryUnary(), _UnaryStream(), _StreamUnary(), _StreamStream()]


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(
        self, continuation: Callable[..., Awaitable[Any]], client_call_details: Any, request: Any
    ) -> Any:
        observation = CLIENT.start(RpcLabels.of(client_call_details.method, "unary"))
        return await _single_response(observation, continuation(client_call_details, request))


class _StreamUnary(grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: Any,
        request_iterator: Any,
    ) -> Any:
        observation = CLIENT.start(RpcLabels.of(client_call_details.method, "client_stream"))
        return await _single_response(
            observation, continuation(client_call_details, request_iterator)
        )


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(
        self, continuation: Callable[..., Awaitable[Any]], client_call_details: Any, request: Any
    ) -> Any:
        observation = CLIENT.start(RpcLabels.of(client_call_details.method, "server_stream"))
        call = await _started(observation, continuation(client_call_details, request))
        return _streamed_responses(observation, call)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: Any,
        request_iterator: Any,
    ) -> Any:
        observation = CLIENT.start(RpcLabels.of(client_call_details.method, "bidi_stream"))
        call = await _started(observation, continuation(client_call_details, request_iterator))
        return _streamed_responses(observation, call)


async def _started(observation: RpcObservation, starting: Awaitable[Any]) -> Any:
    try:
        return await starting
    except BaseException as exc:
        observation.finish(_code_of(exc))
        raise


async def _single_response(observation: RpcObservation, starting: Awaitable[Any]) -> Any:
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


def _streamed_responses(observation: RpcObservation, call: Any) -> AsyncIterator[Any]:
    # A caller that stops reading and cancels the call never resumes the generator: the done
    # callback records the cancellation right away instead of whenever the generator is collected.
    call.add_done_callback(
        lambda done: observation.finish(grpc.StatusCode.CANCELLED) if done.cancelled() else None
    )
    return _responses(observation, call)


async def _responses(observation: RpcObservation, call: Any) -> AsyncIterator[Any]:
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
