"""OpenTelemetry traces: one trace per request, across the orchestrator and every stage.

Off unless an OTLP endpoint is configured: ``RAGLOOP_OTLP_ENDPOINT``, else the standard
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``. Off, no SDK is loaded
and no tracer provider installed, the gRPC and REST layers add no interceptor or middleware, and
the helpers here return a shared no-op. On, ``setup_tracing`` installs an SDK tracer provider
whose spans carry ``service.name`` (the process: orchestrator, retriever, …) and go out in
batches over OTLP/HTTP (protobuf); W3C trace context travels in gRPC metadata and HTTP headers
(``traceparent``), and every log line written inside a span carries ``trace_id`` and
``span_id``. The standard ``OTEL_*`` variables of the SDK apply (sampler, batch sizes, headers).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger(__name__)

SERVICE_NAMESPACE = "ragloop"
# The response header (REST) and metadata key (RagService) that tell a caller its trace.
TRACE_ID_HEADER = "x-trace-id"
TRACES_PATH = "/v1/traces"
TRACES_ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"  # used as it is
ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"  # a base URL: /v1/traces is appended
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
EXPORTED_PROTOCOL = "http/protobuf"

Attributes = Mapping[str, AttributeValue]

_tracer: trace.Tracer = trace.NoOpTracer()
_enabled = False


def enabled() -> bool:
    """Whether this process traces (``setup_tracing`` found an endpoint)."""
    return _enabled


def traces_url(configured: str, environ: Mapping[str, str] = os.environ) -> str:
    """Where spans are posted: ``configured`` (a base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``),
    else the standard variables; "" when none is set (tracing off)."""
    if configured.strip():
        return _with_traces_path(configured.strip())
    if specific := environ.get(TRACES_ENDPOINT_VARIABLE, "").strip():
        return specific
    if base := environ.get(ENDPOINT_VARIABLE, "").strip():
        return _with_traces_path(base)
    return ""


def _with_traces_path(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def setup_tracing(
    service: str, configured_endpoint: str, environ: Mapping[str, str] = os.environ
) -> TracerProvider | None:
    """Trace this process as ``service`` when an endpoint is configured (the provider, which
    flushes its last spans when the process exits); None, doing nothing, when tracing is off."""
    url = traces_url(configured_endpoint, environ)
    if not url or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    # Imported here: a process that does not trace never loads the SDK or the exporter.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    for variable in PROTOCOL_VARIABLES:
        protocol = environ.get(variable, "").strip()
        if protocol and protocol != EXPORTED_PROTOCOL:
            log.warning(
                "%s=%s is ignored: ragloop exports traces over OTLP/HTTP (%s) only, usually "
                "on port 4318",
                variable,
                protocol,
                EXPORTED_PROTOCOL,
            )
    resource = Resource.create({"service.name": service, "service.namespace": SERVICE_NAMESPACE})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    # Not the global provider: libraries that trace themselves once one is set (FastAPI does)
    # would add spans of their own between ragloop's; the spans here are the ones it makes.
    install(provider)
    log.info("tracing on", extra={"otlp_endpoint": url})
    return provider


def install(provider: trace.TracerProvider | None) -> None:
    """Trace with ``provider`` from now on (None: stop tracing). ``setup_tracing`` calls it;
    tests call it with a provider that keeps spans in memory."""
    global _tracer, _enabled
    _tracer = provider.get_tracer("ragloop") if provider else trace.NoOpTracer()
    _enabled = provider is not None


class _NoSpan:
    """What the helpers return when tracing is off: one shared object, no span, no context."""

    def __enter__(self) -> Span:
        return INVALID_SPAN

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


_NO_SPAN = _NoSpan()


def span(
    name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes | None = None
) -> AbstractContextManager[Span]:
    """``with span(name) as s:`` a span that is the current one inside the block (its children
    and log lines belong to it); recorded as failed when the block raises an exception."""
    if not _enabled:
        return _NO_SPAN
    return _BlockSpan(start_span(name, kind=kind, attributes=attributes), current=True)


def start_span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Attributes | None = None,
    parent: otel_context.Context | None = None,
) -> Span:
    """A span the caller ends, child of ``parent`` (default: the current context), that does not
    become current: for spans whose end is not the end of a block in one task."""
    if not _enabled:
        return INVALID_SPAN
    return _tracer.start_span(name, context=parent, kind=kind, attributes=attributes)


class _BlockSpan:
    """A span that ends with a block, failed by an exception out of it (not by cancellation,
    nor by a stream closed early); ``current``: its context is the current one inside."""

    def __init__(self, span: Span, *, current: bool) -> None:
        self._span = span
        self._current = current
        self._token: object = None

    def __enter__(self) -> Span:
        if self._current:
            self._token = make_current(self._span)
        return self._span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if isinstance(exc, Exception):
                record_error(self._span, exc)
            self._span.end()
        finally:
            if self._current:
                restore(self._token)


def call_span(name: str, attributes: Attributes | None = None) -> AbstractContextManager[Span]:
    """``with call_span(name) as s:`` a CLIENT span of a call to another system (a model,
    Milvus) that ends with the block and never becomes current, so it may wrap an async
    generator's whole life; recorded as failed when the block raises an exception."""
    if not _enabled:
        return _NO_SPAN
    return _BlockSpan(start_span(name, kind=SpanKind.CLIENT, attributes=attributes), current=False)


def model_call(operation: str, model_ref: str) -> tuple[str, dict[str, AttributeValue]]:
    """The span name and GenAI attributes of an ``operation`` (chat, embeddings) of the model
    ``provider:name``."""
    provider, _, model = model_ref.partition(":")
    model = model or provider
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
    }
    return f"{operation} {model}", attributes


def record_error(span: Span, exc: BaseException, description: str | None = None) -> None:
    span.record_exception(exc)
    span.set_attribute("error.type", type(exc).__qualname__)
    span.set_status(Status(StatusCode.ERROR, description if description is not None else str(exc)))


def make_current(span: Span) -> object:
    """Make ``span`` the current span; the token to pass to ``restore``."""
    return otel_context.attach(trace.set_span_in_context(span))


def restore(token: object) -> None:
    otel_context.detach(token)  # type: ignore[arg-type]


def inject(carrier: dict[str, str], span: Span | None = None) -> None:
    """Add the W3C trace context of ``span`` (default: the current one) to ``carrier``."""
    propagate.inject(carrier, context=trace.set_span_in_context(span) if span else None)


def extract(carrier: Mapping[str, str]) -> otel_context.Context:
    """The trace context a caller sent in ``carrier`` (headers or metadata with lower-case
    keys); an empty context when it sent none."""
    return propagate.extract(carrier)


def trace_id_of(span: Span) -> str:
    """The span's trace id as 32 hex digits; "" for no span or one that is not sampled."""
    context = span.get_span_context()
    if not context.is_valid or not context.trace_flags.sampled:
        return ""
    return trace.format_trace_id(context.trace_id)


def current_trace_id() -> str:
    """The trace id of the current span ("" outside one, and always when tracing is off)."""
    return trace_id_of(trace.get_current_span()) if _enabled else ""


def exemplar() -> dict[str, str] | None:
    """A Prometheus exemplar naming the current trace (Grafana links it to the trace), or None."""
    trace_id = current_trace_id()
    return {"trace_id": trace_id} if trace_id else None


class TraceContextFilter(logging.Filter):
    """Adds ``trace_id`` and ``span_id`` to a record logged inside a span (nothing when tracing
    is off)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _enabled:
            context = trace.get_current_span().get_span_context()
            if context.is_valid:
                record.trace_id = trace.format_trace_id(context.trace_id)
                record.span_id = trace.format_span_id(context.span_id)
        return True
