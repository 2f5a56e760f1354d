"""Prometheus metrics of every ragloop process.

``catalog`` defines every metric (names, labels, buckets); ``record`` holds the one-line helpers
the services call and the series each process creates up front; ``exporter`` serves a stage's
``/metrics``. The gRPC interceptors are ``ragloop.core.grpc.server_metrics`` (installed on every
stage server) and ``ragloop.core.grpc.client_metrics`` (for the orchestrator's channels); the
orchestrator's REST middleware is ``ragloop.orchestrator.rest.metrics``.
"""

from ragloop.core.metrics.record import (
    count_cache_lookup,
    count_ingest_failure,
    count_model_failure,
    count_parse_failure,
    count_verdict,
    error_reason,
    init_grader_series,
    init_loop_series,
    init_model_series,
    init_retriever_series,
    observe_ingest,
    observe_loop,
    observe_model_call,
    observe_retrieval,
)

__all__ = [
    "count_cache_lookup",
    "count_ingest_failure",
    "count_model_failure",
    "count_parse_failure",
    "count_verdict",
    "error_reason",
    "init_grader_series",
    "init_loop_series",
    "init_model_series",
    "init_retriever_series",
    "observe_ingest",
    "observe_loop",
    "observe_model_call",
    "observe_retrieval",
]
