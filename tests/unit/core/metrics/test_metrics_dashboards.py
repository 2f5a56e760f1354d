"""The provisioned dashboards and the alert rules, read as files: well-formed Grafana JSON on the
provisioned datasources, PromQL that reads only metrics ragloop defines (or Prometheus and
Milvus export), and trace searches for spans the services make. tests/observability runs every
expression against a real Prometheus."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from prometheus_client.metrics import MetricWrapperBase

from ragloop.core.metrics import catalog
from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from ragloop.core.names import Stage, values
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.observability.expressions import (
    Expression,
    alert_rules,
    alert_signal,
    all_expressions,
    dashboards,
    metric_names,
    panels,
    prometheus_datasource,
    provisioned_datasource_uid,
    provisioned_datasources,
    scrape_jobs,
)

# Series Prometheus itself or the client library's collectors export, and Milvus's own.
FOREIGN_PREFIXES = ("milvus_", "process_", "python_")
PROMETHEUS_SERIES = {"up"}
SAMPLE_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
}
STAGES = values(Stage)


@cache
def traced_operations() -> frozenset[str]:
    """The names of the orchestrator's REST spans: method and route template (rest/tracing.py)."""
    paths = create_app(OrchestratorSettings()).openapi()["paths"]
    return frozenset(f"{method.upper()} {path}" for path, item in paths.items() for method in item)


def defined_series() -> set[str]:
    names = set()
    for metric in vars(catalog).values():
        if isinstance(metric, MetricWrapperBase):
            for family in metric.describe():
                names |= {family.name + suffix for suffix in SAMPLE_SUFFIXES[family.type]}
    return names


def test_there_is_one_dashboard_per_topic_with_unique_uids() -> None:
    boards = dashboards()
    assert set(boards) == {
        "ragloop-loop.json",
        "ragloop-stages.json",
        "ragloop-models.json",
        "ragloop-milvus.json",
    }
    uids = [board["uid"] for board in boards.values()]
    assert len(set(uids)) == len(uids)


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_dashboard_is_well_formed_on_the_provisioned_datasources(name: str) -> None:
    board = dashboards()[name]
    assert board["schemaVersion"] >= 36 and board["title"] and board["uid"]
    ids = [panel["id"] for panel in panels(board)]
    assert len(set(ids)) == len(ids), "panel ids must be unique"
    chosen = datasource_variables(board)
    provisioned = set(provisioned_datasources().values())
    for panel in panels(board):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        datasource = panel["datasource"]
        # A datasource variable, so that any Prometheus (Jaeger) serves the dashboard, not only
        # one with the uid compose provisions (Kubernetes' Grafana has its own).
        assert chosen.get(datasource["uid"]) == datasource["type"], panel["title"]
        assert datasource["type"] in provisioned, panel["title"]
        targets = panel["targets"]
        assert targets, f"{panel['title']} has no query"
        assert len({t["refId"] for t in targets}) == len(targets), panel["title"]
        for target in targets:
            assert target["datasource"] == datasource, panel["title"]
            if datasource["type"] == "prometheus":
                assert target["expr"].strip(), panel["title"]
            else:
                assert_trace_search(target, panel["title"])


def datasource_variables(board: dict[str, Any]) -> dict[str, str]:
    """``${name}`` to the datasource type of each datasource variable the dashboard declares."""
    return {
        f"${{{variable['name']}}}": variable["query"]
        for variable in board["templating"]["list"]
        if variable["type"] == "datasource"
    }


def assert_trace_search(target: dict[str, Any], title: str) -> None:
    """A Jaeger search for the spans of a ragloop service that the services make."""
    assert target["queryType"] == "search", title
    assert target["service"] in {"orchestrator", *STAGES}, title
    operation = target.get("operation")
    assert operation is None or operation in traced_operations(), f"{title}: {operation}"


def test_the_loop_dashboard_links_queries_to_their_traces() -> None:
    board = dashboards()["ragloop-loop.json"]
    by_type = {panel["datasource"]["type"] for panel in panels(board) if "datasource" in panel}
    assert "jaeger" in by_type, "a panel lists the queries' traces"
    latency = next(p for p in panels(board) if p["title"] == "Loop latency p95 by outcome")
    assert all(target["exemplar"] for target in latency["targets"])
    [prometheus] = [uid for uid, kind in provisioned_datasources().items() if kind == "prometheus"]
    [jaeger] = [uid for uid, kind in provisioned_datasources().items() if kind == "jaeger"]
    assert prometheus == provisioned_datasource_uid()
    destinations = prometheus_datasource()["jsonData"]["exemplarTraceIdDestinations"]
    assert destinations == [{"name": "trace_id", "datasourceUid": jaeger}]


@pytest.mark.parametrize("expression", all_expressions(), ids=str)
def test_expressions_read_only_defined_metrics(expression) -> None:
    assert "$" not in expression.query, f"{expression}: a variable the tests cannot fill in"
    names = metric_names(expression.query)
    assert names, f"no metric found in {expression.promql}"
    ours = defined_series()
    unknown = {
        n
        for n in names
        if n not in ours and n not in PROMETHEUS_SERIES and not n.startswith(FOREIGN_PREFIXES)
    }
    assert not unknown, f"{expression}: not defined in ragloop.core.metrics.catalog: {unknown}"


def test_metric_names_are_found_in_promql() -> None:
    promql = (
        'sum by (le, stage) (rate(ragloop_model_call_duration_seconds_bucket{stage="grader"}[5m]))'
        " / on (stage) max(milvus_rootcoord_collection_num) > bool 1e3"
    )
    assert metric_names(promql) == {
        "ragloop_model_call_duration_seconds_bucket",
        "milvus_rootcoord_collection_num",
    }


def test_every_alert_is_a_signal_compared_with_a_threshold_or_an_absence() -> None:
    rules = alert_rules()
    assert {rule["alert"] for rule in rules} >= {
        "RagloopServiceDown",
        "RagloopServiceAbsent",
        "RagloopStageErrorRatioHigh",
        "RagloopModelStageLatencyHigh",
        "RagloopModelParseFailureRatioHigh",
    }
    for rule in rules:
        if Expression(rule["alert"], rule["expr"].strip(), is_alert=True).is_absence:
            assert all(part.startswith("absent(") for part in rule["expr"].split(" or "))
        else:
            assert alert_signal(rule["expr"]).count(" bool ") == 1
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]
    assert alert_signal("up == 0") == "up == bool 0"
    with pytest.raises(ValueError):
        alert_signal("rate(x[5m])")


def test_prometheus_scrapes_every_service_and_milvus() -> None:
    jobs = scrape_jobs()
    assert jobs["orchestrator"] == ["orchestrator:8000"]
    for stage, port in DEFAULT_METRICS_PORTS.items():
        assert jobs[stage] == [f"{stage}:{port}"]
    assert jobs["milvus"] == ["milvus-standalone:9091"]
