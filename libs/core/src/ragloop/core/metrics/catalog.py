"""Every metric ragloop exports, in one place: name, help text, labels and buckets.

Label values always come from the closed sets below, or from a set fixed when a process starts
(the gRPC methods a server registers, the model a stage is configured with, the REST routes the
app defines). Never a query, a document id, a collection or a tenant: those are unbounded and
would give Prometheus one series per value.

Every metric is defined here unregistered; a process registers a group on prometheus_client's
default registry (next to its process and Python collectors) with ``export`` when it starts using
it. So each process's ``/metrics`` holds only the families it can produce: no loop metrics in the
grader, no grader metrics in the orchestrator.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.metrics import MetricWrapperBase

from ragloop.core.names import Outcome, RetrievalMode, Stage, values

# The `<name>_created` series double the series count and Prometheus 2 ignores them.
disable_created_metrics()

# --- closed label sets -------------------------------------------------------------------------

STAGES = values(Stage)
# The loop's outcomes, plus `no_documents` (nothing retrieved) and `failed` (a stage failed; the
# client got 503/504).
LOOP_OUTCOMES = (*values(Outcome), "no_documents", "failed")
RETRIEVAL_MODES = values(RetrievalMode)
GRADE_VERDICTS = (
    "relevant",
    "not_relevant",
    "unparseable",  # no reply parsed, even after the repair attempt: graded not relevant
    "below_score_floor",  # retrieval similarity under RAGLOOP_GRADER_MIN_SCORE, no model call
    "instructions_only",  # nothing left once instruction-like text was removed
)
CACHE_RESULTS = ("hit", "miss")
TOKEN_KINDS = ("prompt", "completion")
# Why a model call or an ingestion failed, from ragloop.core.errors (see record.error_reason).
ERROR_REASONS = (
    "invalid_input",
    "not_found",
    "timeout",
    "unavailable",
    "configuration",
    "internal",
)
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
OTHER_HTTP_METHOD = "OTHER"
UNMATCHED_ROUTE = "unmatched"  # requests no route matched (404s): one series, not one per path
GRPC_TYPES = ("unary", "client_stream", "server_stream", "bidi_stream")

# --- buckets (seconds unless said otherwise) ---------------------------------------------------

# One stage call or one model call: milliseconds for the retriever, up to the 120 s model timeout.
RPC_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120)
# A whole request: up to the request budget (300 s) plus the generation reserve (60 s).
REQUEST_SECONDS = (*RPC_SECONDS, 180, 240, 300, 360)
SEARCH_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
REWRITE_COUNTS = (0, 1, 2, 3, 4, 5)
PASS_RATES = (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1)
DOCUMENT_COUNTS = (0, 1, 2, 3, 5, 10, 20, 50)

# --- gRPC (the names of go-grpc-prometheus, so existing dashboards and habits apply) -----------

_RPC = ("grpc_service", "grpc_method", "grpc_type")

GRPC_SERVER_STARTED = Counter(
    "grpc_server_started_total", "RPCs started on the server.", _RPC, registry=None
)
GRPC_SERVER_HANDLED = Counter(
    "grpc_server_handled_total",
    "RPCs completed on the server, whatever their status code.",
    (*_RPC, "grpc_code"),
    registry=None,
)
GRPC_SERVER_HANDLING_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Time from an RPC's start on the server to its status being sent.",
    _RPC,
    buckets=RPC_SECONDS,
    registry=None,
)
GRPC_CLIENT_STARTED = Counter(
    "grpc_client_started_total",
    "RPCs started by the orchestrator's stage clients.",
    _RPC,
    registry=None,
)
GRPC_CLIENT_HANDLED = Counter(
    "grpc_client_handled_total",
    "RPCs the orchestrator's stage clients saw complete, whatever their status code.",
    (*_RPC, "grpc_code"),
    registry=None,
)
GRPC_CLIENT_HANDLING_SECONDS = Histogram(
    "grpc_client_handling_seconds",
    "Time from an RPC's start on the client to its status arriving.",
    _RPC,
    buckets=RPC_SECONDS,
    registry=None,
)

# --- REST (orchestrator) -----------------------------------------------------------------------

HTTP_REQUESTS = Counter(
    "ragloop_http_requests_total",
    "REST requests answered, by route template, method and status code.",
    ("route", "method", "status"),
    registry=None,
)
HTTP_REQUEST_SECONDS = Histogram(
    "ragloop_http_request_duration_seconds",
    "Time from a REST request's arrival to the last byte of its response.",
    ("route", "method"),
    buckets=REQUEST_SECONDS,
    registry=None,
)
HTTP_IN_FLIGHT = Gauge(
    "ragloop_http_requests_in_flight", "REST requests being answered now.", registry=None
)

# --- the corrective loop (orchestrator) --------------------------------------------------------

LOOP_REQUESTS = Counter(
    "ragloop_loop_requests_total",
    "Queries the corrective loop finished, by outcome.",
    ("outcome",),
    registry=None,
)
LOOP_SECONDS = Histogram(
    "ragloop_loop_duration_seconds",
    "End-to-end time of one query through the loop, by outcome.",
    ("outcome",),
    buckets=REQUEST_SECONDS,
    registry=None,
)
LOOP_REWRITES = Histogram(
    "ragloop_loop_rewrites",
    "Query rewrites one query needed.",
    buckets=REWRITE_COUNTS,
    registry=None,
)
LOOP_FINAL_PASS_RATE = Histogram(
    "ragloop_loop_final_pass_rate",
    "Share of graded passages that passed in a query's last round (0 to 1).",
    buckets=PASS_RATES,
    registry=None,
)

# --- retriever ---------------------------------------------------------------------------------

RETRIEVED_DOCUMENTS = Histogram(
    "ragloop_retriever_documents",
    "Passages one retrieve call returned after the similarity threshold, by retrieval mode.",
    ("mode",),
    buckets=DOCUMENT_COUNTS,
    registry=None,
)
MILVUS_SEARCH_SECONDS = Histogram(
    "ragloop_milvus_search_duration_seconds",
    "Time of one Milvus search (embedding excluded), by retrieval mode.",
    ("mode",),
    buckets=SEARCH_SECONDS,
    registry=None,
)
INGESTED_DOCUMENTS = Counter("ragloop_ingest_documents_total", "Documents ingested.", registry=None)
INGESTED_CHUNKS = Counter(
    "ragloop_ingest_chunks_total", "Chunks written to Milvus by ingestion.", registry=None
)
INGEST_FAILURES = Counter(
    "ragloop_ingest_failures_total",
    "Ingestion calls that failed, by reason.",
    ("reason",),
    registry=None,
)

# --- grader ------------------------------------------------------------------------------------

GRADE_VERDICTS_TOTAL = Counter(
    "ragloop_grader_verdicts_total",
    "Passages graded, by verdict.",
    ("verdict",),
    registry=None,
)
GRADE_CACHE_LOOKUPS = Counter(
    "ragloop_grader_cache_lookups_total",
    "Grade cache lookups, by result (hit: no model call needed).",
    ("result",),
    registry=None,
)

# --- model calls (retriever embeddings, grader, rewriter, generator) ---------------------------

_MODEL = ("stage", "model")

MODEL_CALL_SECONDS = Histogram(
    "ragloop_model_call_duration_seconds",
    "Time of one successful model call, by stage and model.",
    _MODEL,
    buckets=RPC_SECONDS,
    registry=None,
)
MODEL_TOKENS = Counter(
    "ragloop_model_tokens_total",
    "Tokens of successful model calls, by stage, model and kind (prompt or completion).",
    (*_MODEL, "kind"),
    registry=None,
)
MODEL_CACHED_PROMPT_TOKENS = Counter(
    "ragloop_model_cached_prompt_tokens_total",
    "Of the prompt tokens of successful model calls, those the model server took from its prompt "
    "cache instead of evaluating them, by stage and model (0 where the server reports none).",
    _MODEL,
    registry=None,
)
MODEL_CALL_FAILURES = Counter(
    "ragloop_model_call_failures_total",
    "Model calls that failed, by stage, model and reason.",
    (*_MODEL, "reason"),
    registry=None,
)
MODEL_PARSE_FAILURES = Counter(
    "ragloop_model_parse_failures_total",
    "Model replies that did not parse as the requested JSON (each attempt, repaired or not).",
    _MODEL,
    registry=None,
)


# --- groups a process exports ------------------------------------------------------------------

GRPC_SERVER_METRICS = (GRPC_SERVER_STARTED, GRPC_SERVER_HANDLED, GRPC_SERVER_HANDLING_SECONDS)
GRPC_CLIENT_METRICS = (GRPC_CLIENT_STARTED, GRPC_CLIENT_HANDLED, GRPC_CLIENT_HANDLING_SECONDS)
REST_METRICS = (HTTP_REQUESTS, HTTP_REQUEST_SECONDS, HTTP_IN_FLIGHT)
LOOP_METRICS = (LOOP_REQUESTS, LOOP_SECONDS, LOOP_REWRITES, LOOP_FINAL_PASS_RATE)
RETRIEVAL_METRICS = (RETRIEVED_DOCUMENTS, MILVUS_SEARCH_SECONDS)
INGEST_METRICS = (INGESTED_DOCUMENTS, INGESTED_CHUNKS, INGEST_FAILURES)
GRADER_METRICS = (GRADE_VERDICTS_TOTAL, GRADE_CACHE_LOOKUPS)
MODEL_METRICS = (
    MODEL_CALL_SECONDS,
    MODEL_TOKENS,
    MODEL_CACHED_PROMPT_TOKENS,
    MODEL_CALL_FAILURES,
    MODEL_PARSE_FAILURES,
)

_exported: set[int] = set()
_export_lock = threading.Lock()


def export(metrics: Iterable[MetricWrapperBase]) -> None:
    """Register these metrics on the default registry, once per process (cheap when done)."""
    missing = [metric for metric in metrics if id(metric) not in _exported]
    if not missing:
        return
    with _export_lock:
        for metric in missing:
            if id(metric) not in _exported:
                REGISTRY.register(metric)
                _exported.add(id(metric))
