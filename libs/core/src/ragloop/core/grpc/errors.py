"""Map stage errors to gRPC status codes in servicers, and codes back to errors in clients."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, TypeVar

import grpc

from ragloop.core.errors import (
    ConfigurationError,
    DependencyTimeout,
    DependencyUnavailable,
    InvalidInput,
    NotFound,
)

log = logging.getLogger(__name__)
R = TypeVar("R")

_STATUS_OF_ERROR: list[tuple[type[Exception], grpc.StatusCode]] = [
    (InvalidInput, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (DependencyTimeout, grpc.StatusCode.DEADLINE_EXCEEDED),
    (DependencyUnavailable, grpc.StatusCode.UNAVAILABLE),
    (ConfigurationError, grpc.StatusCode.FAILED_PRECONDITION),
]


def status_for(exc: Exception) -> grpc.StatusCode:
    for error_type, code in _STATUS_OF_ERROR:
        if isinstance(exc, error_type):
            return code
    return grpc.StatusCode.INTERNAL


def maps_errors(
    method: Callable[..., Awaitable[R]],
) -> Callable[..., Awaitable[R]]:
    """Decorate an async servicer method so that stage errors become proper status codes."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> R:
        try:
            return await method(self, request, context)
        except Exception as exc:
            await _abort_for(exc, context, method.__qualname__)
            raise  # unreachable: abort raises

    return wrapper


def maps_stream_errors(
    method: Callable[..., AsyncGenerator[R, None]],
) -> Callable[..., AsyncGenerator[R, None]]:
    """``maps_errors`` for a server-streaming servicer method (an async generator)."""

    @functools.wraps(method)
    async def wrapper(
        self: Any, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncGenerator[R, None]:
        try:
            async with aclosing(method(self, request, context)) as responses:
                async for response in responses:
                    yield response
        except Exception as exc:
            await _abort_for(exc, context, method.__qualname__)
            raise  # unreachable: abort raises

    return wrapper


async def _abort_for(exc: Exception, context: grpc.aio.ServicerContext, method: str) -> None:
    if isinstance(exc, grpc.aio.AbortError):
        raise exc
    code = status_for(exc)
    if code is grpc.StatusCode.INTERNAL:
        log.exception("unexpected error in %s", method)
        await context.abort(code, f"internal error in {method}")
    log.warning("%s failed: %s", method, exc, extra={"grpc_code": code.name})
    await context.abort(code, str(exc))


_ERROR_OF_STATUS: dict[grpc.StatusCode, type[Exception]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidInput,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.DEADLINE_EXCEEDED: DependencyTimeout,
    grpc.StatusCode.UNAVAILABLE: DependencyUnavailable,
    grpc.StatusCode.FAILED_PRECONDITION: ConfigurationError,
}


def error_from_rpc(exc: grpc.aio.AioRpcError, stage: str) -> Exception:
    """Turn a failed call to ``stage`` back into the stage error it stands for."""
    error_type = _ERROR_OF_STATUS.get(exc.code(), DependencyUnavailable)
    return error_type(f"{stage}: {exc.details() or exc.code().name}")
