"""Proof against a real Prometheus (Debian's package, installed when missing).

The real processes — llama.cpp's server, the four stages and the orchestrator, started as
`make run` starts them — run over a real Milvus server (the `milvus` 2.3.5 standalone of the dev
group, whose own metrics are scraped too). Prometheus scrapes them on 127.0.0.1 with the jobs of
deploy/prometheus/prometheus.yml while documents are ingested and questions asked; then every
PromQL expression of every dashboard panel and every alert rule runs through Prometheus's HTTP
API and must be valid and return series. `promtool` checks the rule file, the scrape
configuration and each service's /metrics output.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from ragloop.core.names import Stage, values
from ragloop.local.launcher import Stack, StackConfig
from ragloop.local.processes import free_port
from tests.conftest import MODELS_DIR, REPO_ROOT
from tests.observability.expressions import (
    ALERT_RULES,
    PROMETHEUS_CONFIG,
    Expression,
    all_expressions,
    metric_names,
)
from tests.observability.prometheus_helpers import (
    Prometheus,
    PrometheusTools,
    ensure_prometheus,
    running_prometheus,
    scrape_config_for,
)

pytestmark = pytest.mark.observability

# Metric families defined in ragloop.core.metrics.catalog whose wiring into the services has not
# landed yet, each with the wiring it waits for. An expression reading one of them is expected
# to return no series: a strict xfail, so once the wiring lands the test fails until the entry
# is removed from this list. Empty it as the wiring lands; never skip an expression instead.
METRICS_NOT_WIRED_YET: dict[str, str] = {}
# The orchestrator has no /metrics until its REST metrics are installed.
ORCHESTRATOR_SERVES_METRICS = "ragloop_http_requests_total" not in METRICS_NOT_WIRED_YET

STAGES = values(Stage)
CORPUS = ("docs/storage.md", "docs/architecture.md")
QUESTIONS = (
    "Which process owns the Milvus Lite data directory?",
    "What does the orchestrator answer on /readyz?",
)
QUERY_OPTIONS = {"top_k": 3, "max_rewrite_attempts": 0}  # bounded work for the small model


@dataclass(frozen=True)
class MilvusEndpoints:
    uri: str
    metrics_target: str


@dataclass(frozen=True)
class Observed:
    stack: Stack
    prometheus: Prometheus
    targets: dict[str, str]  # scrape job -> 127.0.0.1:port


def pending_wiring(expression: Expression) -> list[str]:
    """The wiring an expression waits for: that of every not-yet-wired family it reads."""
    families = {_family_of(sample) for sample in metric_names(expression.query)}
    return sorted({METRICS_NOT_WIRED_YET[f] for f in families if f in METRICS_NOT_WIRED_YET})


def _family_of(sample: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if sample.endswith(suffix) and sample.removesuffix(suffix) in METRICS_NOT_WIRED_YET:
            return sample.removesuffix(suffix)
    return sample


@pytest.fixture(scope="module")
def tools() -> PrometheusTools:
    return ensure_prometheus()


@pytest.fixture(scope="module")
def milvus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusEndpoints]:
    """A real Milvus standalone (2.3.5: dense search only) with its metrics endpoint."""
    from milvus import MilvusServer

    server = MilvusServer()
    server.set_base_dir(str(tmp_path_factory.mktemp("milvus")))
    try:
        server.start()  # waits for Milvus's health endpoint, 180 s at most
        yield MilvusEndpoints(
            uri=f"http://127.0.0.1:{server.listen_port}",
            metrics_target=f"127.0.0.1:{server.webservice_port}",
        )
    finally:
        server.stop()


@pytest.fixture(scope="module")
def observed(
    tools: PrometheusTools, milvus: MilvusEndpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Observed]:
    base = tmp_path_factory.mktemp("observed")
    metrics_ports = {stage: free_port() for stage in STAGES}
    config = StackConfig.on_free_ports(
        base,
        models_dir=MODELS_DIR,
        metrics_ports=metrics_ports,
        extra_env={"RAGLOOP_MILVUS_URI": milvus.uri},
    )
    prometheus_port = free_port()
    targets = {
        "orchestrator": f"127.0.0.1:{config.http_port}",
        **{stage: f"127.0.0.1:{port}" for stage, port in metrics_ports.items()},
        "milvus": milvus.metrics_target,
        "prometheus": f"127.0.0.1:{prometheus_port}",
    }
    stack = Stack(config)
    stack.start()
    try:
        scrape = scrape_config_for(targets)
        with running_prometheus(tools, scrape, prometheus_port, base / "prometheus") as prometheus:
            expected_up = set(targets) - _unserved_jobs()
            prometheus.wait_until(lambda: expected_up <= _jobs_up(prometheus), "every target up")
            send_traffic(config.base_url)
            # Each target is scraped on its own schedule: a scrape of the retriever after the
            # last Retrieve call says nothing of the grader's scrape after the last grading.
            traffic_ended = time.time()
            prometheus.wait_until(
                lambda: _oldest_scrape(prometheus) > traffic_ended,
                "every target scraped after the queries",
            )
            yield Observed(stack, prometheus, targets)
    finally:
        stack.stop()


def _unserved_jobs() -> set[str]:
    return set() if ORCHESTRATOR_SERVES_METRICS else {"orchestrator"}


def _jobs_up(prometheus: Prometheus) -> set[str]:
    return {job for job, health in prometheus.target_health().items() if health == "up"}


def _oldest_scrape(prometheus: Prometheus) -> float:
    """When the target scraped least recently was last scraped (Unix seconds; 0 before any)."""
    result = prometheus.series("min(timestamp(up))")
    return float(result[0]["value"][1]) if result else 0.0


def send_traffic(base_url: str) -> None:
    documents = [
        {"source": path, "text": (REPO_ROOT / path).read_text(encoding="utf-8")} for path in CORPUS
    ]
    with httpx.Client(base_url=base_url, timeout=400) as client:
        ingested = client.post("/v1/documents", json={"documents": documents})
        assert ingested.status_code == 200, ingested.text
        for question in QUESTIONS:
            answered = client.post("/v1/query", json={"query": question, **QUERY_OPTIONS})
            # What is measured here is the traffic, not the answer: on a busy machine the small
            # local model may exceed its timeout (504), which the metrics must record too.
            assert answered.status_code in (200, 504), answered.text


# --- promtool ----------------------------------------------------------------------------------


def test_promtool_accepts_the_alert_rules_and_the_scrape_configuration(
    tools: PrometheusTools,
) -> None:
    rules = tools.promtool_run("check", "rules", str(ALERT_RULES))
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = tools.promtool_run("check", "config", str(PROMETHEUS_CONFIG))
    assert config.returncode == 0, config.stdout + config.stderr


@pytest.mark.parametrize(
    "job",
    [
        *STAGES,
        pytest.param(
            "orchestrator",
            marks=pytest.mark.xfail(
                not ORCHESTRATOR_SERVES_METRICS,
                reason="REST metrics not installed yet (METRICS_NOT_WIRED_YET)",
                strict=True,
            ),
        ),
    ],
)
def test_promtool_accepts_each_services_metrics(
    observed: Observed, tools: PrometheusTools, job: str
) -> None:
    reply = httpx.get(f"http://{observed.targets[job]}/metrics", timeout=10)
    assert reply.status_code == 200
    checked = tools.promtool_run("check", "metrics", stdin=reply.text)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- scraping ----------------------------------------------------------------------------------


def test_prometheus_scrapes_every_service_and_milvus(observed: Observed) -> None:
    health = observed.prometheus.target_health()
    assert set(health) == set(observed.targets)
    # While the orchestrator has no /metrics its target must be down: a list that is out of
    # date fails here.
    assert set(health) - _jobs_up(observed.prometheus) == _unserved_jobs()


def test_stage_servers_count_the_calls_the_queries_made(observed: Observed) -> None:
    result = observed.prometheus.series(
        "sum by (grpc_service, grpc_method) (grpc_server_handled_total)"
    )
    calls = {
        f"{r['metric']['grpc_service'].removeprefix('ragloop.v1.')}/{r['metric']['grpc_method']}": (
            float(r["value"][1])
        )
        for r in result
    }
    ingest_calls = [n for name, n in calls.items() if name.startswith("RetrieverService/Ingest")]
    assert sum(ingest_calls) >= 1  # unary or client-streaming ingestion
    assert calls["RetrieverService/Retrieve"] >= len(QUESTIONS)
    assert calls["GraderService/GradeDocuments"] >= len(QUESTIONS), calls
    # A question whose passages all fail grading gets the honest "not in the sources" answer
    # without a generator call; the first question is known to pass (see the integration test).
    assert calls["GeneratorService/GenerateAnswer"] >= 1
    assert calls["grpc.health.v1.Health/Check"] >= len(STAGES)  # readiness checks
    timed = observed.prometheus.series(
        'sum(grpc_server_handling_seconds_count{grpc_service="ragloop.v1.GraderService"})'
    )
    assert float(timed[0]["value"][1]) == calls["GraderService/GradeDocuments"]


# --- every dashboard and alert expression -------------------------------------------------------


EXPRESSIONS = all_expressions()


def _expected_to_return_series(expression: Expression) -> pytest.param:
    waiting = pending_wiring(expression)
    marks = (
        [pytest.mark.xfail(strict=True, reason="waits for " + "; ".join(waiting))]
        if waiting
        else []
    )
    return pytest.param(expression, id=str(expression), marks=marks)


@pytest.mark.parametrize("expression", EXPRESSIONS, ids=str)
def test_expression_is_valid(observed: Observed, expression: Expression) -> None:
    answer = observed.prometheus.query(expression.query)
    assert answer["status"] == "success", f"{expression.query}\n{answer.get('error')}"


@pytest.mark.parametrize(
    "expression", [_expected_to_return_series(e) for e in EXPRESSIONS if not e.is_absence]
)
def test_expression_returns_series(observed: Observed, expression: Expression) -> None:
    assert observed.prometheus.series(expression.query), f"no series: {expression.query}"


@pytest.mark.parametrize("expression", [e for e in EXPRESSIONS if e.is_absence], ids=str)
def test_absence_alert_is_quiet_while_every_service_is_scraped(
    observed: Observed, expression: Expression
) -> None:
    assert not observed.prometheus.series(expression.query), expression.query
