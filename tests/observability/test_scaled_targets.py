"""deploy/prometheus/prometheus.yml with a real Prometheus and a real Alertmanager (Debian's
packages, installed when missing) and real grader processes, all on 127.0.0.1.

Compose scrapes each stage by DNS service discovery: Docker's DNS answers a service's name with
one A record per container, and Prometheus makes each address (with the entry's port) its own
target. No DNS server here can answer a name with several loopback addresses, so the test's
configuration is the compose file's with each `dns_sd_configs` entry swapped for the
`file_sd_configs` entry listing what it would resolve to: the replicas' addresses (here one IP,
so each replica on its own port). What DNS discovery itself does is Prometheus's and not proven
here; `promtool` checks that the compose configuration as written parses.

Proven: two replicas of a stage are two series of the stage's job with distinct `instance`
labels whose counters never reset; the PodMonitors' relabelling names the job after the pod's
app.kubernetes.io/name; a replica that stops fires RagloopServiceDown (the rule as deploy/
writes it, `for:` shortened) and Prometheus delivers it to Alertmanager, configured as deploy/
configures it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.names import Stage
from ragloop.core.stage_registry import stage_spec
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok
from tests.apt import apt_install
from tests.conftest import REPO_ROOT
from tests.observability.alertmanager_helpers import (
    ALERTMANAGER_CONFIG,
    WAIT_S,
    running_alertmanager,
    wait_until,
)
from tests.observability.expressions import ALERT_RULES, PROMETHEUS_CONFIG
from tests.observability.prometheus_helpers import (
    Prometheus,
    ensure_prometheus,
    running_prometheus,
)

pytestmark = pytest.mark.observability

POD_MONITORS = REPO_ROOT / "deploy" / "k8s" / "components" / "monitoring" / "pod-monitors.yaml"
GRADER = stage_spec(Stage.GRADER)
SERVICE_DOWN = "RagloopServiceDown"
HEALTH_CHECKS = 'grpc_server_handled_total{job="grader", grpc_method="Check", grpc_code="OK"}'


@dataclass(frozen=True)
class Replica:
    process: ChildProcess
    address: str  # gRPC host:port
    metrics: str  # host:port of /metrics: its scrape target


@contextmanager
def grader_replica(workdir: Path, name: str) -> Iterator[Replica]:
    """A grader process on loopback ports of its own. It calls no model here: only its gRPC
    health service and its /metrics are used."""
    port, metrics_port = free_port(), free_port()
    child = ChildProcess(
        name,
        [sys.executable, "-m", GRADER.module],
        workdir / f"{name}.log",
        {
            "RAGLOOP_BIND_HOST": "127.0.0.1",
            "RAGLOOP_GRADER_PORT": str(port),
            "RAGLOOP_METRICS_PORT": str(metrics_port),
            "RAGLOOP_LLAMACPP_URL": f"http://127.0.0.1:{free_port()}",  # never called
            "RAGLOOP_OTLP_ENDPOINT": "",
        },
    )
    child.start()
    try:
        metrics = f"127.0.0.1:{metrics_port}"
        child.wait_until(lambda: http_ok(f"http://{metrics}/metrics"), timeout_s=WAIT_S)
        yield Replica(child, f"127.0.0.1:{port}", metrics)
    finally:
        child.signal_stop()
        child.wait_stopped(15)


def operator_relabelling() -> list[dict[str, Any]]:
    """The stages' PodMonitor relabelling, in Prometheus's own spelling (as the operator writes
    it into the configuration)."""
    monitor = next(
        d
        for d in yaml.safe_load_all(POD_MONITORS.read_text())
        if d["metadata"]["name"] == "ragloop-stages"
    )
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    spelled = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    return [{spelled.get(k, k): v for k, v in rule.items()} for rule in endpoint["relabelings"]]


def configuration_for(workdir: Path, alertmanager_url: str, targets: Path) -> dict[str, Any]:
    """prometheus.yml as compose runs it, but: the stages' DNS discovery read from files
    (``targets``/<job>.json), every second, rules from a copy whose RagloopServiceDown waits 0 s,
    alerts to ``alertmanager_url``, and a job as the operator builds one from the PodMonitor
    (the pod's labels as kubernetes_sd gives them)."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    rules = re.sub(
        rf"(- alert: {SERVICE_DOWN}\n(?:.*\n)*?\s+for: )\S+", r"\g<1>0s", ALERT_RULES.read_text()
    )
    assert rules != ALERT_RULES.read_text(), f"no `for:` of {SERVICE_DOWN} to shorten"
    (workdir / "alert-rules.yml").write_text(rules)
    config["rule_files"] = [str(workdir / "alert-rules.yml")]
    (alertmanagers,) = config["alerting"]["alertmanagers"]
    alertmanagers["static_configs"] = [{"targets": [alertmanager_url.removeprefix("http://")]}]
    jobs = []
    for job in config["scrape_configs"]:
        if "dns_sd_configs" not in job:
            continue  # the orchestrator, Milvus, Prometheus: none of them runs here
        entries = job.pop("dns_sd_configs")
        assert all(
            entry["type"] == "A" and entry["names"] == [job["job_name"]] for entry in entries
        )
        job["file_sd_configs"] = [
            {"files": [str(targets / f"{job['job_name']}.json")], "refresh_interval": "1s"}
        ]
        jobs.append(job)
    jobs.append(
        {
            "job_name": "ragloop/ragloop-stages",  # the operator's name for the PodMonitor's job
            "file_sd_configs": [{"files": [str(targets / "pods.json")], "refresh_interval": "1s"}],
            "relabel_configs": operator_relabelling(),
        }
    )
    config["scrape_configs"] = jobs
    return config


def resolve(targets: Path, job: str, replicas: list[Replica], **labels: str) -> None:
    """What discovery finds for ``job``: one target per replica."""
    listed = [{"targets": [r.metrics for r in replicas], "labels": labels}] if replicas else []
    (targets / f"{job}.json").write_text(json.dumps(listed))


@dataclass(frozen=True)
class Scraped:
    prometheus: Prometheus
    alertmanager: str
    targets: Path
    replicas: tuple[Replica, Replica]
    workdir: Path


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    tools = ensure_prometheus()
    workdir = tmp_path_factory.mktemp("scaled")
    targets = workdir / "targets"
    targets.mkdir()
    with ExitStack() as stack:
        replicas = (
            stack.enter_context(grader_replica(workdir, "grader")),
            stack.enter_context(grader_replica(workdir, "grader-2")),
        )
        alertmanager = stack.enter_context(running_alertmanager(workdir))
        for job in ("retriever", "grader", "rewriter", "generator", "pods"):
            resolve(targets, job, [])
        resolve(targets, GRADER.name, list(replicas))
        config = configuration_for(workdir, alertmanager, targets)
        prometheus = stack.enter_context(
            running_prometheus(tools, config, free_port(), workdir / "prometheus")
        )
        yield Scraped(prometheus, alertmanager, targets, replicas, workdir)


def by_instance(prometheus: Prometheus, promql: str) -> dict[str, float]:
    return {s["metric"]["instance"]: float(s["value"][1]) for s in prometheus.series(promql)}


def test_the_compose_configurations_are_valid() -> None:
    tools = ensure_prometheus()
    checked = tools.promtool_run("check", "config", str(PROMETHEUS_CONFIG))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    (alerting,) = config["alerting"]["alertmanagers"]
    assert alerting["static_configs"] == [{"targets": ["alertmanager:9093"]}]
    discovered = {j["job_name"]: j for j in config["scrape_configs"] if "dns_sd_configs" in j}
    assert GRADER.name in discovered
    for name, job in discovered.items():
        (entry,) = job["dns_sd_configs"]
        assert entry["names"] == [name] and entry["type"] == "A"
        assert entry["port"] == stage_spec(name).metrics_port
    amtool = apt_install("prometheus-alertmanager", "amtool")
    checked = subprocess.run(
        [amtool, "check-config", str(ALERTMANAGER_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_replica_is_its_own_series_and_its_counters_never_reset(scraped: Scraped) -> None:
    prometheus, (first, second) = scraped.prometheus, scraped.replicas
    mine = {first.metrics, second.metrics}

    def both_up() -> bool:
        up = by_instance(prometheus, 'up{job="grader"}')
        return all(up.get(instance) == 1 for instance in mine)

    wait_until(both_up, "both grader replicas scraped as job grader")
    calls = ((first, 12), (second, 3))  # different counts: interleaved, they would reset
    for replica, count in calls:
        for _ in range(count):
            check_health(replica.address, timeout_s=5)

    def counted() -> bool:
        seen = by_instance(prometheus, HEALTH_CHECKS)
        return all(seen.get(r.metrics, 0) >= count for r, count in calls)

    wait_until(counted, "each replica's health-check count in its own series")

    def scraped_often() -> bool:
        scrapes = by_instance(prometheus, 'count_over_time(up{job="grader"}[1m])')
        return all(scrapes.get(instance, 0) >= 5 for instance in mine)

    wait_until(scraped_often, "five scrapes of each replica")
    seen = by_instance(prometheus, HEALTH_CHECKS)
    assert seen[first.metrics] != seen[second.metrics]
    resets = by_instance(prometheus, f"resets({HEALTH_CHECKS}[1m])")
    assert {instance: resets[instance] for instance in mine} == dict.fromkeys(mine, 0.0)


def test_the_pod_monitor_relabelling_names_the_job_after_the_service(scraped: Scraped) -> None:
    first = scraped.replicas[0]
    resolve(
        scraped.targets,
        "pods",
        [first],
        __meta_kubernetes_pod_label_app_kubernetes_io_name=GRADER.name,
        via="podmonitor",  # keeps these series apart from the compose job's
    )
    wait_until(
        lambda: (
            by_instance(scraped.prometheus, 'up{job="grader", via="podmonitor"}')
            == {first.metrics: 1.0}
        ),
        "the PodMonitor's target scraped as job grader",
    )
    assert not scraped.prometheus.series('up{job="ragloop/ragloop-stages"}')


def service_down_alerts(alertmanager: str) -> list[dict[str, str]]:
    """The labels of every RagloopServiceDown alert Alertmanager holds."""
    alerts = httpx.get(f"{alertmanager}/api/v2/alerts", timeout=10).json()
    return [a["labels"] for a in alerts if a["labels"]["alertname"] == SERVICE_DOWN]


def test_a_replica_that_stops_fires_an_alert_that_reaches_alertmanager(scraped: Scraped) -> None:
    with grader_replica(scraped.workdir, "grader-3") as third:
        resolve(scraped.targets, GRADER.name, [*scraped.replicas, third])
        wait_until(
            lambda: by_instance(scraped.prometheus, 'up{job="grader"}').get(third.metrics) == 1,
            "the third replica scraped",
        )
        assert not service_down_alerts(scraped.alertmanager)
        third.process.signal_stop()
        third.process.wait_stopped(15)

        def delivered() -> bool:
            return any(
                labels.get("job") == GRADER.name
                and labels.get("instance") == third.metrics
                and labels.get("severity") == "critical"
                for labels in service_down_alerts(scraped.alertmanager)
            )

        wait_until(delivered, f"{SERVICE_DOWN} for the stopped replica in Alertmanager")
        running = by_instance(scraped.prometheus, 'up{job="grader"}')
        assert running[scraped.replicas[0].metrics] == running[scraped.replicas[1].metrics] == 1
    resolve(scraped.targets, GRADER.name, list(scraped.replicas))
