"""Spans as the tests read them, whether kept in memory in the test's process or received over
OTLP/HTTP from the real processes: a receiver of the real export on 127.0.0.1 that parses each
``ExportTraceServiceRequest`` body, and the questions the tests ask of a trace."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode, format_span_id, format_trace_id

from ragloop.core import tracing

# OTLP's span kinds (SPAN_KIND_INTERNAL = 1 …) by the API's names.
OTLP_KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
OTLP_ERROR = 2  # STATUS_CODE_ERROR


@dataclass(frozen=True)
class Span:
    name: str
    kind: str  # INTERNAL, SERVER, CLIENT, …
    trace_id: str  # 32 hex digits
    span_id: str
    parent_id: str  # "" for a root span
    service: str  # the resource's service.name
    attributes: dict[str, Any] = field(default_factory=dict)
    failed: bool = False

    @classmethod
    def of_sdk(cls, span: ReadableSpan) -> Span:
        context, parent = span.context, span.parent
        assert context is not None
        return cls(
            name=span.name,
            kind=span.kind.name,
            trace_id=format_trace_id(context.trace_id),
            span_id=format_span_id(context.span_id),
            parent_id=format_span_id(parent.span_id) if parent else "",
            service=str(span.resource.attributes.get("service.name", "")),
            attributes=dict(span.attributes or {}),
            failed=span.status.status_code is StatusCode.ERROR,
        )


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def spans_of_export(body: bytes) -> list[Span]:
    """The spans of one OTLP/HTTP protobuf export request."""
    request = ExportTraceServiceRequest.FromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    Span(
                        name=span.name,
                        kind=OTLP_KINDS.get(span.kind, str(span.kind)),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        service=str(resource.get("service.name", "")),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        failed=span.status.code == OTLP_ERROR,
                    )
                )
    return found


class OtlpReceiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1 (what a collector, Tempo or Jaeger listens on at
    4318): ``endpoint`` is what RAGLOOP_OTLP_ENDPOINT names."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.exports = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def serving(self) -> Iterator[OtlpReceiver]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=10)

    def received(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, found: Callable[[list[Span]], bool], timeout_s: float) -> list[Span]:
        """The spans received once ``found`` says they are complete, or by ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not found(spans := self.received()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return spans

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != tracing.TRACES_PATH:
                    self.send_error(404)
                    return
                spans = spans_of_export(body)
                with receiver._lock:
                    receiver.spans += spans
                    receiver.exports += 1
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler


@contextmanager
def traced_in_memory(service: str = "test") -> Iterator[Callable[[], list[Span]]]:
    """Tracing on in this process, every span kept in memory: yields what returns the spans
    ended so far. Tracing is off again afterwards."""
    from opentelemetry.sdk.resources import Resource

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield lambda: [Span.of_sdk(s) for s in exporter.get_finished_spans()]
    finally:
        tracing.install(None)
        provider.shutdown()


# --- questions about a trace ----------------------------------------------------------------


def named(spans: list[Span], name: str, kind: str = "", **attributes: Any) -> list[Span]:
    """The spans called ``name``, of ``kind`` if given, with these attribute values."""
    return [
        s
        for s in spans
        if s.name == name
        and (not kind or s.kind == kind)
        and all(s.attributes.get(k) == v for k, v in attributes.items())
    ]


def one(spans: list[Span], name: str, kind: str = "", **attributes: Any) -> Span:
    found = named(spans, name, kind, **attributes)
    assert len(found) == 1, f"{len(found)} spans {name!r} {kind} {attributes}: {summary(spans)}"
    return found[0]


def parent_of(spans: list[Span], span: Span) -> Span:
    parents = [s for s in spans if s.span_id == span.parent_id]
    assert len(parents) == 1, f"the parent of {span.name!r} is not in the trace: {summary(spans)}"
    return parents[0]


def summary(spans: list[Span]) -> list[str]:
    return [f"{s.service}:{s.kind}:{s.name}" for s in spans]
