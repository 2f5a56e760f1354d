"""ragloop.core.tracing on its own: where spans go (the setting, then the standard variables),
that tracing off costs nothing (no provider, one shared no-op, no context change), the spans of
model calls (OpenTelemetry's GenAI conventions) and the exemplar that links the loop's latency
to its trace. Spans are kept in memory (tests/spans.py)."""

from __future__ import annotations

import logging
from contextlib import aclosing

import pytest
from opentelemetry import trace
from prometheus_client import REGISTRY
from prometheus_client.openmetrics.exposition import generate_latest

from ragloop.core import tracing
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.metrics import observe_loop
from ragloop.core.models import ChatMessage, ChatReply
from ragloop.core.models.metered import MeteredChatModel
from tests.spans import one, traced_in_memory
from tests.unit.core.metrics.test_stage_metrics import FailingChatModel
from tests.unit.fakes import ScriptedChatModel

MESSAGES = [ChatMessage("user", "Say something.")]


@pytest.mark.parametrize(
    ("configured", "environ", "url"),
    [
        ("", {}, ""),
        ("http://tempo:4318", {}, "http://tempo:4318/v1/traces"),
        ("http://tempo:4318/", {}, "http://tempo:4318/v1/traces"),
        ("http://collector:4318/v1/traces", {}, "http://collector:4318/v1/traces"),
        ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"),
        ("", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/t"}, "http://c:4318/t"),
        (
            "http://mine:4318",
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
            "http://mine:4318/v1/traces",
        ),
    ],
)
def test_spans_go_to_the_setting_else_the_standard_variables(
    configured: str, environ: dict[str, str], url: str
) -> None:
    assert tracing.traces_url(configured, environ) == url


def test_without_an_endpoint_tracing_stays_off() -> None:
    assert tracing.setup_tracing("grader", "", {}) is None
    disabled = {"OTEL_SDK_DISABLED": "true"}
    assert tracing.setup_tracing("grader", "http://127.0.0.1:1", disabled) is None
    assert not tracing.enabled()


def test_with_an_endpoint_the_process_traces_as_its_service(
    caplog: pytest.LogCaptureFixture,
) -> None:
    environ = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with caplog.at_level(logging.WARNING, logger="ragloop.core.tracing"):
        provider = tracing.setup_tracing("grader", "http://127.0.0.1:1", environ)
    try:
        assert provider is not None and tracing.enabled()
        assert provider.resource.attributes["service.name"] == "grader"
        assert provider.resource.attributes["service.namespace"] == "ragloop"
        assert "OTLP/HTTP (http/protobuf) only" in caplog.text
    finally:
        tracing.install(None)
        provider.shutdown()  # the export to the closed port fails quietly: no span was made


def test_off_every_helper_is_one_shared_no_op() -> None:
    assert not tracing.enabled()
    before = trace.get_current_span()
    with tracing.span("node") as span, tracing.call_span("chat m") as call:
        assert span is call is trace.INVALID_SPAN
        assert trace.get_current_span() is before
    assert tracing.span("a") is tracing.span("b") is tracing.call_span("c")
    assert tracing.start_span("x") is trace.INVALID_SPAN
    assert tracing.current_trace_id() == "" and tracing.exemplar() is None


def test_a_block_span_is_current_inside_and_failed_by_an_exception() -> None:
    with traced_in_memory() as finished:
        with pytest.raises(ValueError), tracing.span("work") as span:
            assert trace.get_current_span() is span
            raise ValueError("broken")
        assert trace.get_current_span() is trace.INVALID_SPAN
        (work,) = finished()
    assert work.failed and work.attributes["error.type"] == "ValueError"


async def test_each_model_call_is_a_gen_ai_span_with_its_tokens() -> None:
    replies = ["a reply", "another", "yes"]
    model = MeteredChatModel(
        ScriptedChatModel(replies, prompt_tokens=40, completion_tokens=7), stage="rewriter"
    )
    with traced_in_memory() as finished:
        await model.complete(MESSAGES, json_schema={"type": "object"}, max_tokens=64)
        async with aclosing(model.stream(MESSAGES)) as pieces:
            streamed = [item async for item in pieces]
        await model.next_token(MESSAGES)
        spans = finished()
    assert isinstance(streamed[-1], ChatReply)
    assert [s.name for s in spans] == ["chat chat"] * 3
    complete, stream, token = spans
    assert complete.kind == "CLIENT" and not complete.failed
    assert complete.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": "chat",
        "gen_ai.request.max_tokens": 64,
        "gen_ai.output.type": "json",
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.usage.output_tokens": 7,
        "ragloop.stage": "rewriter",
    }
    assert stream.attributes["gen_ai.output.type"] == "text"
    assert stream.attributes["gen_ai.usage.output_tokens"] == 7
    assert token.attributes["gen_ai.request.max_tokens"] == 1
    assert token.attributes["gen_ai.usage.output_tokens"] == 1


async def test_a_failed_model_call_fails_its_span_and_a_stream_closed_early_does_not() -> None:
    failing = MeteredChatModel(FailingChatModel(DependencyUnavailable("down")), stage="grader")
    reading = MeteredChatModel(ScriptedChatModel(["a long reply"]), stage="generator")
    with traced_in_memory() as finished:
        with pytest.raises(DependencyUnavailable):
            await failing.complete(MESSAGES)
        async with aclosing(reading.stream(MESSAGES)) as pieces:
            await anext(pieces)
        spans = finished()
    failed = one(spans, "chat failing")
    assert failed.failed and failed.attributes["error.type"] == "DependencyUnavailable"
    closed = one(spans, "chat chat")
    assert not closed.failed and "gen_ai.usage.output_tokens" not in closed.attributes


def test_the_loop_latency_carries_the_trace_id_as_an_exemplar() -> None:
    with traced_in_memory(), tracing.span("query") as span:
        observe_loop("passed", 12.3, rewrites=0, final_pass_rate=1.0)
        trace_id = tracing.trace_id_of(span)
    exposition = generate_latest(REGISTRY).decode()  # OpenMetrics: what Prometheus asks for
    [bucket] = [line for line in exposition.splitlines() if trace_id in line]
    assert bucket.startswith('ragloop_loop_duration_seconds_bucket{le="20.0",outcome="passed"}')
    assert f'# {{trace_id="{trace_id}"}} 12.3 ' in bucket  # then the time of the exemplar


def test_log_lines_outside_a_span_get_no_trace_id() -> None:
    record = logging.makeLogRecord({"msg": "x"})
    with traced_in_memory():
        assert tracing.TraceContextFilter().filter(record)
    assert not hasattr(record, "trace_id")
