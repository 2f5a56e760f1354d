"""One-line helpers the services call to record what happened, and the series each process
creates up front.

Every helper checks its label values against the closed sets of ``catalog``: a value outside
them is a programming error (ValueError), never a new series.

Why series are created up front: a labelled metric has no series until a value is observed, so
a panel or alert over it shows "no data" on a fresh process — indistinguishable from a broken
scrape — and ratios such as errors/requests stay empty until the first error. Creating every
known label combination at zero when the owning component starts makes panels show real zeros.
Each helper exports (registers) its metric group on first use, and each process calls only its
own ``init_*``, so a metric never appears in a process that cannot produce it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragloop.core import tracing
from ragloop.core.errors import (
    ConfigurationError,
    DependencyTimeout,
    DependencyUnavailable,
    InvalidInput,
    NotFound,
)
from ragloop.core.metrics import catalog as m

_REASON_OF_ERROR: list[tuple[type[Exception], str]] = [
    (InvalidInput, "invalid_input"),
    (NotFound, "not_found"),
    (DependencyTimeout, "timeout"),
    (DependencyUnavailable, "unavailable"),
    (ConfigurationError, "configuration"),
]


def _closed(value: str, allowed: Iterable[str], label: str) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"metric label {label}={value!r} is not one of {', '.join(allowed)}")
    return value


def _model_labels(stage: str, model: str) -> tuple[str, str]:
    if not model:
        raise ValueError("metric label model must name the configured model")
    return _closed(stage, m.STAGES, "stage"), model


def error_reason(error: BaseException) -> str:
    """The ERROR_REASONS value of an exception (anything not ragloop's own is `internal`)."""
    for error_type, reason in _REASON_OF_ERROR:
        if isinstance(error, error_type):
            return reason
    return "internal"


# --- model calls -------------------------------------------------------------------------------


def observe_model_call(
    stage: str,
    model: str,
    seconds: float,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cached_prompt_tokens: int = 0,
) -> None:
    """A successful model call: its latency and tokens (``cached_prompt_tokens``: of
    ``prompt_tokens``, those taken from the server's prompt cache)."""
    labels = _model_labels(stage, model)
    m.export(m.MODEL_METRICS)
    m.MODEL_CALL_SECONDS.labels(*labels).observe(seconds)
    m.MODEL_TOKENS.labels(*labels, "prompt").inc(prompt_tokens)
    m.MODEL_TOKENS.labels(*labels, "completion").inc(completion_tokens)
    m.MODEL_CACHED_PROMPT_TOKENS.labels(*labels).inc(cached_prompt_tokens)


def count_model_failure(stage: str, model: str, error: BaseException) -> None:
    m.export(m.MODEL_METRICS)
    m.MODEL_CALL_FAILURES.labels(*_model_labels(stage, model), error_reason(error)).inc()


def count_parse_failure(stage: str, model: str) -> None:
    """A model reply that did not parse as the requested JSON (counted per attempt)."""
    m.export(m.MODEL_METRICS)
    m.MODEL_PARSE_FAILURES.labels(*_model_labels(stage, model)).inc()


def init_model_series(stage: str, model: str) -> None:
    """Create the model-call series of ``stage`` calling ``model`` (when the stage starts)."""
    labels = _model_labels(stage, model)
    m.export(m.MODEL_METRICS)
    m.MODEL_CALL_SECONDS.labels(*labels)
    m.MODEL_PARSE_FAILURES.labels(*labels)
    m.MODEL_CACHED_PROMPT_TOKENS.labels(*labels)
    for kind in m.TOKEN_KINDS:
        m.MODEL_TOKENS.labels(*labels, kind)
    for reason in m.ERROR_REASONS:
        m.MODEL_CALL_FAILURES.labels(*labels, reason)


# --- the corrective loop -----------------------------------------------------------------------


def observe_loop(
    outcome: str, seconds: float, *, rewrites: int | None, final_pass_rate: float | None
) -> None:
    """A finished query. ``rewrites`` and ``final_pass_rate`` are None when unknown (a query that
    failed, or found no documents to grade)."""
    outcome = _closed(outcome, m.LOOP_OUTCOMES, "outcome")
    m.export(m.LOOP_METRICS)
    m.LOOP_REQUESTS.labels(outcome).inc()
    # The exemplar links a latency to the trace of the query (Grafana shows it as a point).
    m.LOOP_SECONDS.labels(outcome).observe(seconds, exemplar=tracing.exemplar())
    if rewrites is not None:
        m.LOOP_REWRITES.observe(rewrites)
    if final_pass_rate is not None:
        m.LOOP_FINAL_PASS_RATE.observe(final_pass_rate)


def init_loop_series() -> None:
    m.export(m.LOOP_METRICS)
    for outcome in m.LOOP_OUTCOMES:
        m.LOOP_REQUESTS.labels(outcome)
        m.LOOP_SECONDS.labels(outcome)


# --- retriever ---------------------------------------------------------------------------------


def observe_retrieval(mode: str, documents: int, search_seconds: float) -> None:
    """One retrieve call: the mode actually used, passages returned, time in Milvus."""
    mode = _closed(mode, m.RETRIEVAL_MODES, "mode")
    m.export(m.RETRIEVAL_METRICS)
    m.RETRIEVED_DOCUMENTS.labels(mode).observe(documents)
    m.MILVUS_SEARCH_SECONDS.labels(mode).observe(search_seconds)


def observe_ingest(documents: int, chunks: int) -> None:
    m.export(m.INGEST_METRICS)
    m.INGESTED_DOCUMENTS.inc(documents)
    m.INGESTED_CHUNKS.inc(chunks)


def count_ingest_failure(error: BaseException) -> None:
    m.export(m.INGEST_METRICS)
    m.INGEST_FAILURES.labels(error_reason(error)).inc()


def init_retriever_series() -> None:
    m.export((*m.RETRIEVAL_METRICS, *m.INGEST_METRICS))
    for mode in m.RETRIEVAL_MODES:
        m.RETRIEVED_DOCUMENTS.labels(mode)
        m.MILVUS_SEARCH_SECONDS.labels(mode)
    for reason in m.ERROR_REASONS:
        m.INGEST_FAILURES.labels(reason)


# --- grader ------------------------------------------------------------------------------------


def count_verdict(verdict: str, passages: int = 1) -> None:
    verdict = _closed(verdict, m.GRADE_VERDICTS, "verdict")
    m.export(m.GRADER_METRICS)
    m.GRADE_VERDICTS_TOTAL.labels(verdict).inc(passages)


def count_cache_lookup(*, hit: bool) -> None:
    m.export(m.GRADER_METRICS)
    m.GRADE_CACHE_LOOKUPS.labels("hit" if hit else "miss").inc()


def init_grader_series() -> None:
    m.export(m.GRADER_METRICS)
    for verdict in m.GRADE_VERDICTS:
        m.GRADE_VERDICTS_TOTAL.labels(verdict)
    for result in m.CACHE_RESULTS:
        m.GRADE_CACHE_LOOKUPS.labels(result)
