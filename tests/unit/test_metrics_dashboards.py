"""The provisioned dashboards and the alert rules, read as files: well-formed Grafana JSON on the
provisioned datasource, and PromQL that reads only metrics ragloop defines (or Prometheus and
Milvus export). tests/observability runs every expression against a real Prometheus."""

from __future__ import annotations

import pytest
from prometheus_client.metrics import MetricWrapperBase

from ragloop.core.metrics import catalog
from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from tests.observability.expressions import (
    alert_rules,
    alert_signal,
    all_expressions,
    dashboards,
    metric_names,
    panels,
    provisioned_datasource_uid,
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
def test_dashboard_is_well_formed_on_the_provisioned_datasource(name: str) -> None:
    board = dashboards()[name]
    assert board["schemaVersion"] >= 36 and board["title"] and board["uid"]
    ids = [panel["id"] for panel in panels(board)]
    assert len(set(ids)) == len(ids), "panel ids must be unique"
    uid = provisioned_datasource_uid()
    for panel in panels(board):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == uid, panel["title"]
        targets = panel["targets"]
        assert targets, f"{panel['title']} has no query"
        assert len({t["refId"] for t in targets}) == len(targets), panel["title"]
        for target in targets:
            assert target["datasource"]["uid"] == uid and target["expr"].strip(), panel["title"]


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


def test_every_alert_is_a_signal_compared_with_a_threshold() -> None:
    rules = alert_rules()
    assert {rule["alert"] for rule in rules} >= {
        "RagloopServiceDown",
        "RagloopStageErrorRatioHigh",
        "RagloopModelStageLatencyHigh",
        "RagloopModelParseFailureRatioHigh",
    }
    for rule in rules:
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
