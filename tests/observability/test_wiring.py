"""The metrics wiring over real connections on 127.0.0.1: the server interceptor every stage
server gets, the orchestrator's client interceptors, a stage's /metrics endpoint and the REST
middleware. Each test reads the change it caused in the process's registry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
import httpx
import pytest
from fastapi import FastAPI
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import REGISTRY

from ragloop.core.grpc.client_metrics import client_metrics_interceptors
from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.core.metrics import observe_model_call
from ragloop.core.metrics.exporter import serve_metrics
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.metrics import install_rest_metrics
from tests.service.grpc_helpers import reflected_services
from tests.service.http_helpers import serving_http

pytestmark = pytest.mark.observability

HEALTH = {"grpc_service": health.SERVICE_NAME}
REFLECTION = {
    "grpc_service": "grpc.reflection.v1alpha.ServerReflection",
    "grpc_method": "ServerReflectionInfo",
    "grpc_type": "bidi_stream",
}


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def delta(name: str, **labels: str) -> Callable[[], float]:
    """How much a sample has grown since this call."""
    before = sample(name, **labels)
    return lambda: sample(name, **labels) - before


def handled(side: str, method: str, code: str, type_: str = "unary") -> Callable[[], float]:
    labels = {**HEALTH, "grpc_method": method, "grpc_type": type_, "grpc_code": code}
    return delta(f"grpc_{side}_handled_total", **labels)


async def test_every_call_is_counted_with_its_code_on_both_sides() -> None:
    spec = ServiceSpec(name="health-only", register=lambda server: None, service_names=[])
    running = await start_server(spec, host="127.0.0.1", port=0)
    channel = grpc.aio.insecure_channel(
        f"127.0.0.1:{running.port}", interceptors=client_metrics_interceptors()
    )
    server_ok, client_ok = handled("server", "Check", "OK"), handled("client", "Check", "OK")
    server_missing = handled("server", "Check", "NotFound")
    client_missing = handled("client", "Check", "NotFound")
    watch = {"grpc_method": "Watch", "grpc_type": "server_stream"}
    server_cancelled = handled("server", "Watch", "Cancelled", "server_stream")
    client_cancelled = handled("client", "Watch", "Cancelled", "server_stream")
    timed = delta("grpc_server_handling_seconds_count", **HEALTH, **watch)
    reflected = delta("grpc_server_handled_total", **REFLECTION, grpc_code="OK")
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        await stub.Check(health_pb2.HealthCheckRequest(service=""))
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
        stream = stub.Watch(health_pb2.HealthCheckRequest(service=""))
        assert (await stream.read()).status == health_pb2.HealthCheckResponse.SERVING
        stream.cancel()
        assert health.SERVICE_NAME in await reflected_services(channel)
        for _ in range(100):  # the server notices the cancelled stream asynchronously
            if server_cancelled() == 1:
                break
            await asyncio.sleep(0.05)
    finally:
        await channel.close()
        await running.stop(grace=1)
    assert (server_ok(), client_ok()) == (1, 1)
    assert (server_missing(), client_missing()) == (1, 1)
    assert (server_cancelled(), client_cancelled(), timed()) == (1, 1, 1)
    assert reflected() == 1


async def test_series_of_every_method_and_code_exist_before_any_call() -> None:
    spec = ServiceSpec(name="health-only", register=lambda server: None, service_names=[])
    running = await start_server(spec, host="127.0.0.1", port=0)
    await running.stop(grace=0)
    labels = {**REFLECTION, "grpc_code": "Unavailable"}
    assert REGISTRY.get_sample_value("grpc_server_handled_total", labels) is not None
    client_metrics_interceptors()
    retrieve = {
        "grpc_service": "ragloop.v1.RetrieverService",
        "grpc_method": "Retrieve",
        "grpc_type": "unary",
        "grpc_code": "DeadlineExceeded",
    }
    assert REGISTRY.get_sample_value("grpc_client_handled_total", retrieve) is not None


def test_a_stage_serves_its_metrics_on_its_own_port() -> None:
    port = free_port()
    server = serve_metrics("rewriter", host="127.0.0.1", setting=port)
    assert server is not None and server.port == port
    try:
        observe_model_call("rewriter", "llamacpp:exporter-test", 2.0, 10, 5)
        reply = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert reply.status_code == 200
        assert 'model="llamacpp:exporter-test",stage="rewriter"' in reply.text
        with pytest.raises(OSError, match="RAGLOOP_METRICS_PORT"):
            serve_metrics("grader", host="127.0.0.1", setting=port)
    finally:
        server.stop()
    assert serve_metrics("rewriter", host="127.0.0.1", setting=0) is None


def test_rest_requests_are_counted_by_route_template_method_and_status() -> None:
    app = FastAPI()

    @app.get("/items/{item_id}")
    async def item(item_id: int) -> dict[str, int]:
        if item_id == 13:
            raise RuntimeError("unlucky")
        return {"item": item_id}

    install_rest_metrics(app)
    ok = delta("ragloop_http_requests_total", route="/items/{item_id}", method="GET", status="200")
    failed = delta(
        "ragloop_http_requests_total", route="/items/{item_id}", method="GET", status="500"
    )
    invalid = delta(
        "ragloop_http_requests_total", route="/items/{item_id}", method="GET", status="422"
    )
    unmatched = delta("ragloop_http_requests_total", route="unmatched", method="GET", status="404")
    timed = delta(
        "ragloop_http_request_duration_seconds_count", route="/items/{item_id}", method="GET"
    )
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/items/1").status_code == 200
        assert client.get("/items/2").status_code == 200
        assert client.get("/items/not-a-number").status_code == 422
        assert client.get("/no/such/path/42").status_code == 404
        scrape = client.get("/metrics")
        # Last: uvicorn closes the connection after an unhandled exception.
        assert client.get("/items/13").status_code == 500
    assert (ok(), failed(), invalid(), unmatched(), timed()) == (2, 1, 1, 1, 4)
    assert sample("ragloop_http_requests_in_flight") == 0
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    assert 'ragloop_http_requests_total{method="GET",route="/items/{item_id}",status="200"}' in (
        scrape.text
    )
    assert "/no/such/path" not in scrape.text
