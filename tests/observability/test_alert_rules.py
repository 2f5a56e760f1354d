"""The alert rules of deploy/prometheus/alert-rules.yml under `promtool test rules` (Debian's
prometheus package, installed when missing): synthetic series, evaluated by Prometheus's own rule
engine, minute by minute.

Proven: every warning carries the `job` of the service it is about (Alertmanager's inhibition
holds back one job's warnings only: test_alert_routing.py); a service with no target at all (its
pods all Pending, scaled to zero) fires RagloopServiceAbsent for its job, and none fires while
every job has one; Milvus's jobs on Kubernetes (one per Service of its chart) are matched as
compose's `milvus` is.

The rules are a copy without their annotations (promtool compares those too, and they are
prose); expressions, `for:` and labels are the file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts.deploy_files import ragloop_job_names
from tests.observability.expressions import ALERT_RULES
from tests.observability.prometheus_helpers import ensure_prometheus

pytestmark = pytest.mark.observability

JOBS = ragloop_job_names()
SERVER_FAULT = "Internal"


def up(job: str, values: str = "1x30") -> dict[str, str]:
    return {"series": f'up{{job="{job}", instance="{job}:9100"}}', "values": values}


def every_job_up(*, but: str = "") -> list[dict[str, str]]:
    return [up(job) for job in [*JOBS, "milvus"] if job != but]


def stage_calls(job: str, service: str, code: str, per_minute: int) -> dict[str, str]:
    labels = f'job="{job}", grpc_service="ragloop.v1.{service}", grpc_code="{code}"'
    return {"series": f"grpc_server_handled_total{{{labels}}}", "values": f"0+{per_minute}x30"}


def query_requests(status: str, per_minute: int) -> dict[str, str]:
    labels = f'job="orchestrator", route="/v1/query", status="{status}"'
    return {"series": f"ragloop_http_requests_total{{{labels}}}", "values": f"0+{per_minute}x30"}


def expect(alertname: str, at: str, *fired: dict[str, str]) -> dict[str, Any]:
    return {
        "eval_time": at,
        "alertname": alertname,
        "exp_alerts": [{"exp_labels": labels} for labels in fired],
    }


def case(series: list[dict[str, str]], *expected: dict[str, Any]) -> dict[str, Any]:
    return {"interval": "1m", "input_series": series, "alert_rule_test": list(expected)}


CRITICAL, WARNING = {"severity": "critical"}, {"severity": "warning"}
CASES = {
    "no absence while every job has a target": case(
        every_job_up(),
        expect("RagloopServiceAbsent", "10m"),
        expect("MilvusAbsent", "10m"),
    ),
    "a stage with no target fires absent for its job alone": case(
        every_job_up(but="grader"),
        expect("RagloopServiceAbsent", "1m"),  # `for: 2m`
        expect("RagloopServiceAbsent", "3m", {"job": "grader", **CRITICAL}),
    ),
    "a stage whose targets vanish (pods Pending) fires absent": case(
        [*every_job_up(but="retriever"), up("retriever", "1x3 stale")],
        expect("RagloopServiceAbsent", "3m"),
        expect("RagloopServiceAbsent", "9m", {"job": "retriever", **CRITICAL}),
    ),
    "Milvus's Kubernetes jobs are Milvus": case(
        [
            *every_job_up(but="milvus"),
            up("milvus"),  # the chart's proxy Service
            up("milvus-querynode", "0x30"),
        ],
        expect(
            "MilvusDown",
            "5m",
            {"job": "milvus-querynode", "instance": "milvus-querynode:9100", **CRITICAL},
        ),
        expect("MilvusAbsent", "10m"),
    ),
    "no Milvus target fires MilvusAbsent": case(
        every_job_up(but="milvus"),
        expect("MilvusAbsent", "4m"),
        expect("MilvusAbsent", "6m", {"job": "milvus", **CRITICAL}),
    ),
    "a stage's error ratio names its job": case(
        [
            *every_job_up(),
            stage_calls("grader", "GraderService", "OK", 90),
            stage_calls("grader", "GraderService", SERVER_FAULT, 10),
            stage_calls("retriever", "RetrieverService", "OK", 100),
        ],
        expect(
            "RagloopStageErrorRatioHigh",
            "15m",
            {"job": "grader", "grpc_service": "ragloop.v1.GraderService", **WARNING},
        ),
    ),
    "the query error ratio names the orchestrator": case(
        [*every_job_up(), query_requests("200", 90), query_requests("503", 10)],
        expect("RagloopQueryErrorRatioHigh", "15m", {"job": "orchestrator", **WARNING}),
    ),
    "no query error ratio without 5xx": case(
        [*every_job_up(), query_requests("200", 90)],
        expect("RagloopQueryErrorRatioHigh", "15m"),
    ),
}


def rules_without_annotations(workdir: Path) -> Path:
    rules = yaml.safe_load(ALERT_RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    path = workdir / "alert-rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


def promtool_test(workdir: Path, *cases: dict[str, Any]) -> str:
    """`promtool test rules` over ``cases``; its output, asserting it passed."""
    tests = {
        "rule_files": [str(rules_without_annotations(workdir))],
        "evaluation_interval": "1m",
        "tests": list(cases),
    }
    path = workdir / "alert-tests.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    checked = ensure_prometheus().promtool_run("test", "rules", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return checked.stdout


@pytest.mark.parametrize("name", CASES)
def test_alert_rules_under_promtool(tmp_path: Path, name: str) -> None:
    promtool_test(tmp_path, CASES[name])


def test_a_wrong_expectation_fails_promtool(tmp_path: Path) -> None:
    """The harness can fail: absent for another job than the missing one is a failure."""
    wrong = case(
        every_job_up(but="grader"),
        expect("RagloopServiceAbsent", "3m", {"job": "rewriter", **CRITICAL}),
    )
    with pytest.raises(AssertionError, match="FAILED"):
        promtool_test(tmp_path, wrong)


def test_every_warning_is_aggregated_by_job() -> None:
    """A rule that sums without `job` would give Alertmanager nothing to match (`equal: [job]`):
    one stage's outage would hold back no warning, or, without the label on either side,
    every one."""
    rules = [r for g in yaml.safe_load(ALERT_RULES.read_text())["groups"] for r in g["rules"]]
    warnings = [r for r in rules if r["labels"]["severity"] == "warning"]
    assert warnings
    for rule in warnings:
        aggregations = rule["expr"].count("sum ")
        assert aggregations and rule["expr"].count("sum by (job") == aggregations, rule["alert"]
