"""The metric helpers: closed label sets, the series created up front, and the labels of gRPC
methods and REST routes."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import grpc
import pytest
from prometheus_client import REGISTRY

from ragloop.core.errors import DependencyTimeout, DependencyUnavailable, InvalidInput
from ragloop.core.grpc.rpc_metrics import RpcLabels, code_label, rpc_type
from ragloop.core.metrics import catalog as m
from ragloop.core.metrics import (
    count_ingest_failure,
    count_model_failure,
    count_verdict,
    error_reason,
    init_grader_series,
    init_loop_series,
    init_model_series,
    init_retriever_series,
    observe_loop,
    observe_model_call,
    observe_retrieval,
)
from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS, metrics_port_for
from ragloop.orchestrator.rest.metrics import method_label, route_template


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_a_model_call_records_latency_and_both_token_kinds() -> None:
    labels = {"stage": "rewriter", "model": "llamacpp:test-model-a"}
    observe_model_call("rewriter", "llamacpp:test-model-a", 1.5, 120, 30)
    observe_model_call("rewriter", "llamacpp:test-model-a", 0.5, 80, 10, cached_prompt_tokens=64)
    assert sample("ragloop_model_call_duration_seconds_count", **labels) == 2
    assert sample("ragloop_model_call_duration_seconds_sum", **labels) == 2.0
    assert sample("ragloop_model_tokens_total", **labels, kind="prompt") == 200
    assert sample("ragloop_model_tokens_total", **labels, kind="completion") == 40
    assert sample("ragloop_model_cached_prompt_tokens_total", **labels) == 64


@pytest.mark.parametrize(
    "record",
    [
        lambda: observe_loop("answered", 1.0, rewrites=0, final_pass_rate=1.0),
        lambda: count_verdict("maybe"),
        lambda: observe_retrieval("semantic", 3, 0.01),
        lambda: observe_model_call("orchestrator", "llamacpp:x", 1.0),
        lambda: observe_model_call("grader", "", 1.0),
    ],
)
def test_label_values_outside_the_closed_sets_are_refused(record) -> None:
    with pytest.raises(ValueError, match="metric label"):
        record()


def test_a_refused_value_creates_no_series() -> None:
    init_loop_series()
    with pytest.raises(ValueError):
        observe_loop("answered", 1.0, rewrites=0, final_pass_rate=1.0)
    assert sample("ragloop_loop_requests_total", outcome="answered") is None


def test_each_process_creates_its_known_series_at_zero() -> None:
    init_loop_series()
    init_retriever_series()
    init_grader_series()
    init_model_series("grader", "llamacpp:test-model-b")
    for outcome in m.LOOP_OUTCOMES:
        assert sample("ragloop_loop_duration_seconds_count", outcome=outcome) is not None
        assert sample("ragloop_loop_requests_total", outcome=outcome) is not None
    for mode in m.RETRIEVAL_MODES:
        # Not necessarily 0: in-process retrievers of earlier tests share this registry.
        assert sample("ragloop_milvus_search_duration_seconds_count", mode=mode) is not None
    for verdict in m.GRADE_VERDICTS:
        assert sample("ragloop_grader_verdicts_total", verdict=verdict) is not None
    model = {"stage": "grader", "model": "llamacpp:test-model-b"}
    assert sample("ragloop_model_parse_failures_total", **model) == 0
    for reason in m.ERROR_REASONS:
        assert sample("ragloop_model_call_failures_total", **model, reason=reason) == 0


def test_a_loop_without_grades_records_no_pass_rate() -> None:
    before = sample("ragloop_loop_final_pass_rate_count") or 0
    observe_loop("failed", 2.0, rewrites=None, final_pass_rate=None)
    observe_loop("passed", 9.0, rewrites=1, final_pass_rate=0.8)
    assert sample("ragloop_loop_final_pass_rate_count") == before + 1


def test_errors_become_reasons_from_a_closed_set() -> None:
    assert error_reason(InvalidInput("x")) == "invalid_input"
    assert error_reason(DependencyTimeout("x")) == "timeout"
    assert error_reason(RuntimeError("anything else")) == "internal"
    before = sample("ragloop_ingest_failures_total", reason="unavailable") or 0
    count_ingest_failure(DependencyUnavailable("milvus is down"))
    assert sample("ragloop_ingest_failures_total", reason="unavailable") == before + 1
    count_model_failure("generator", "llamacpp:test-model-c", TimeoutError())
    labels = {"stage": "generator", "model": "llamacpp:test-model-c", "reason": "internal"}
    assert sample("ragloop_model_call_failures_total", **labels) == 1


def test_grpc_labels_follow_go_grpc_prometheus() -> None:
    assert code_label(grpc.StatusCode.OK) == "OK"
    assert code_label(grpc.StatusCode.DEADLINE_EXCEEDED) == "DeadlineExceeded"
    assert code_label(grpc.StatusCode.INVALID_ARGUMENT) == "InvalidArgument"
    assert rpc_type(client_streaming=False, server_streaming=True) == "server_stream"
    assert rpc_type(client_streaming=True, server_streaming=True) == "bidi_stream"
    labels = RpcLabels.of(b"/ragloop.v1.RetrieverService/Retrieve", "unary")
    assert labels.values() == ("ragloop.v1.RetrieverService", "Retrieve", "unary")


def test_rest_labels_are_route_templates_and_known_methods() -> None:
    route = SimpleNamespace(path="/v1/documents/{source:path}")
    assert route_template({"route": route}) == "/v1/documents/{source:path}"
    assert route_template({}) == m.UNMATCHED_ROUTE
    assert method_label("POST") == "POST"
    assert method_label("PROPFIND") == m.OTHER_HTTP_METHOD


def test_metrics_ports_default_per_stage() -> None:
    assert metrics_port_for("grader", "auto") == DEFAULT_METRICS_PORTS["grader"] == 9102
    assert len(set(DEFAULT_METRICS_PORTS.values())) == len(DEFAULT_METRICS_PORTS)
    assert metrics_port_for("grader", 0) == 0
    assert metrics_port_for("retriever", 9200) == 9200
    with pytest.raises(ValueError, match="RAGLOOP_METRICS_PORT"):
        metrics_port_for("orchestrator", "auto")


def test_a_process_exports_only_the_groups_it_uses() -> None:
    script = (
        "from prometheus_client import generate_latest\n"
        "import ragloop.core.grpc.server, ragloop.core.metrics as metrics\n"
        "metrics.init_grader_series()\n"
        "print(generate_latest().decode())"
    )
    exposition = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "ragloop_grader_verdicts_total" in exposition
    assert "ragloop_loop" not in exposition and "ragloop_http" not in exposition
    assert "grpc_server_started_total" not in exposition  # until a server starts
