"""Spans of gRPC calls on both sides, following OpenTelemetry's RPC conventions (``rpc.system``
grpc, ``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code``), with the W3C trace context in
the call's metadata (``traceparent``): a stage's server span is the child of the orchestrator's
client span. Health checks and reflection are not traced (probes would make a trace each).
Both functions return no interceptor while tracing is off."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ragloop.core import context, tracing
from ragloop.core.grpc.client_calls import CallObservation, watching_interceptors
from ragloop.core.grpc.handlers import HandlerInterceptor, call_status, rewrapped, within

UNTRACED_SERVICES = frozenset({health.SERVICE_NAME, reflection.SERVICE_NAME})
# The codes a server's span counts as its own failure (OpenTelemetry's RPC conventions); a
# client's span counts every code but OK.
SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)


def server_interceptors() -> list[grpc.aio.ServerInterceptor]:
    return [TracingServerInterceptor()] if tracing.enabled() else []


def client_interceptors(address: str) -> list[grpc.aio.ClientInterceptor]:
    """For a channel to ``address`` (host:port)."""
    if not tracing.enabled():
        return []
    peer = peer_attributes(address)
    return watching_interceptors(lambda details, _type: _client_call(details, peer))


def rpc_attributes(full_method: str | bytes) -> dict[str, str]:
    """The span attributes of ``/package.Service/Method``."""
    if isinstance(full_method, bytes):
        full_method = full_method.decode()
    service, _, method = full_method.lstrip("/").partition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def span_name(attributes: dict[str, str]) -> str:
    return f"{attributes['rpc.service']}/{attributes['rpc.method']}"


class TracingServerInterceptor(HandlerInterceptor):
    def handler_for(
        self, handler: grpc.RpcMethodHandler, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        attributes = rpc_attributes(handler_call_details.method)
        if attributes["rpc.service"] in UNTRACED_SERVICES:
            return handler
        metadata = _text_metadata(handler_call_details.invocation_metadata or ())
        return rewrapped(
            handler,
            lambda behavior: within(behavior, lambda rpc: _ServerSpan(attributes, metadata, rpc)),
        )


class _ServerSpan:
    """The current span while one call is handled, child of the caller's span."""

    def __init__(
        self, attributes: dict[str, str], metadata: dict[str, str], rpc: grpc.aio.ServicerContext
    ) -> None:
        self._attributes = attributes
        self._metadata = metadata
        self._rpc = rpc

    def __enter__(self) -> Span:
        self._span = tracing.start_span(
            span_name(self._attributes),
            kind=SpanKind.SERVER,
            attributes=self._attributes,
            parent=tracing.extract(self._metadata),
        )
        if request_id := context.request_id.get():
            self._span.set_attribute("ragloop.request_id", request_id)
        self._token = tracing.make_current(self._span)
        return self._span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            code = call_status(self._rpc, exc)
            _finish(self._span, code, code in SERVER_ERRORS, self._rpc.details() or "")
            if code is grpc.StatusCode.UNKNOWN and isinstance(exc, Exception):
                self._span.record_exception(exc)
            self._span.end()
        finally:
            tracing.restore(self._token)


class _ClientSpan:
    def __init__(self, span: Span) -> None:
        self._span = span
        self._ended = False

    def finish(self, code: grpc.StatusCode) -> None:
        if self._ended:
            return
        self._ended = True
        _finish(self._span, code, code is not grpc.StatusCode.OK, "")
        self._span.end()


def _client_call(details: Any, peer: dict[str, Any]) -> tuple[Any, CallObservation]:
    attributes = rpc_attributes(details.method)
    if attributes["rpc.service"] in UNTRACED_SERVICES:
        return details, _Untraced()
    span = tracing.start_span(
        span_name(attributes), kind=SpanKind.CLIENT, attributes={**attributes, **peer}
    )
    carrier: dict[str, str] = {}
    tracing.inject(carrier, span)
    metadata = grpc.aio.Metadata(*(details.metadata or ()), *carrier.items())
    return details._replace(metadata=metadata), _ClientSpan(span)


class _Untraced:
    def finish(self, code: grpc.StatusCode) -> None:
        return None


def _finish(span: Span, code: grpc.StatusCode, failed: bool, details: str) -> None:
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if failed:
        span.set_status(Status(StatusCode.ERROR, details or code.name))


def _text_metadata(metadata: Iterable[tuple[str, Any]]) -> dict[str, str]:
    return {key: value for key, value in metadata if isinstance(value, str)}


def peer_attributes(address: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a channel's address: host:port, or a name
    (dns:///grader:50052); a list of replicas has no one server, so it is the whole list."""
    host, _, port = address.removeprefix("dns:///").rpartition(":")
    if not host or not port.isdigit() or "," in address or "/" in host:
        return {"server.address": address}
    return {"server.address": host.strip("[]"), "server.port": int(port)}
