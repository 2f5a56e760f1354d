"""Rebuilding a gRPC method handler around a wrapped behavior, whatever its streaming kind: what
server interceptors that wrap every method (metrics, request checks) share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Behavior = Callable[..., Any]

_HANDLER_FACTORIES: dict[tuple[bool, bool], tuple[str, Callable[..., grpc.RpcMethodHandler]]] = {
    (False, False): ("unary_unary", grpc.unary_unary_rpc_method_handler),
    (False, True): ("unary_stream", grpc.unary_stream_rpc_method_handler),
    (True, False): ("stream_unary", grpc.stream_unary_rpc_method_handler),
    (True, True): ("stream_stream", grpc.stream_stream_rpc_method_handler),
}


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
