"""A server interceptor recording grpc_server_* metrics for every method a server registered:
unary and streaming, the stage's own, health and reflection alike."""

from __future__ import annotations

from types import TracebackType

import grpc

from ragloop.core.grpc.handlers import HandlerInterceptor, call_status, rewrapped, within
from ragloop.core.grpc.rpc_metrics import SERVER, RpcLabels, rpc_type


class ServerMetricsInterceptor(HandlerInterceptor):
    # An unknown method (gRPC answers UNIMPLEMENTED) is not recorded, so a caller's made-up
    # method names never become label values.
    def handler_for(
        self, handler: grpc.RpcMethodHandler, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        labels = RpcLabels.of(
            handler_call_details.method,
            rpc_type(
                client_streaming=handler.request_streaming,
                server_streaming=handler.response_streaming,
            ),
        )
        return rewrapped(
            handler, lambda behavior: within(behavior, lambda context: _ServerCall(labels, context))
        )


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
        self._observation.finish(call_status(self._context, exc))
