"""A real Prometheus for tests: Debian's package (installed when missing), run on 127.0.0.1 with
a scrape configuration derived from deploy/prometheus/prometheus.yml."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from ragloop.local.processes import ChildProcess
from ragloop.local.readiness import http_ok
from tests.apt import apt_install
from tests.observability.expressions import ALERT_RULES, PROMETHEUS_CONFIG


@dataclass(frozen=True)
class PrometheusTools:
    prometheus: str
    promtool: str

    def promtool_run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.promtool, *args], input=stdin, capture_output=True, text=True, timeout=60
        )


def ensure_prometheus() -> PrometheusTools:
    """`prometheus` and `promtool`, installing Debian's package when they are missing; skips
    (saying why) only when no installation is possible."""
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        apt_install("prometheus", "prometheus")
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not (prometheus and promtool):
        pytest.fail("Debian's prometheus package installed no prometheus/promtool on PATH")
    return PrometheusTools(prometheus, promtool)


def scrape_config_for(targets: dict[str, str], *, scrape_interval: str = "1s") -> dict[str, Any]:
    """deploy/prometheus/prometheus.yml with each job's targets replaced by ``targets[job]``
    (host:port on 127.0.0.1) and the alert rules loaded from deploy/ by absolute path."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    if jobs != set(targets):
        raise ValueError(f"{PROMETHEUS_CONFIG.name} has jobs {sorted(jobs)}, not {sorted(targets)}")
    config["global"] = {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval}
    config["rule_files"] = [str(ALERT_RULES)]
    for job in config["scrape_configs"]:
        job.pop("dns_sd_configs", None)  # the compose services' names resolve nowhere here
        job["static_configs"] = [{"targets": [targets[job["job_name"]]]}]
    config.pop("alerting", None)  # no Alertmanager unless a test starts one
    return config


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, promql: str) -> dict[str, Any]:
        """The API's JSON answer, whether the query succeeded or not."""
        reply = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=30)
        return reply.json()

    def series(self, promql: str) -> list[dict[str, Any]]:
        answer = self.query(promql)
        if answer["status"] != "success":
            raise AssertionError(f"{promql}: {answer.get('error')}")
        return answer["data"]["result"]

    def target_health(self) -> dict[str, str]:
        """Job to health (up, down, unknown) of every active target."""
        reply = httpx.get(f"{self.url}/api/v1/targets", timeout=10).json()
        return {t["labels"]["job"]: t["health"] for t in reply["data"]["activeTargets"]}

    def wait_until(self, condition: Callable[[], bool], what: str, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"Prometheus: {what} not within {timeout_s:.0f} s")
            time.sleep(0.5)


@contextmanager
def running_prometheus(
    tools: PrometheusTools, config: dict[str, Any], port: int, workdir: Path
) -> Iterator[Prometheus]:
    """Prometheus on 127.0.0.1:port with this configuration, its data under ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config))
    child = ChildProcess(
        "prometheus",
        [
            tools.prometheus,
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        workdir / "prometheus.log",
    )
    child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_until(lambda: http_ok(f"{url}/-/ready"), timeout_s=60)
        yield Prometheus(url)
    finally:
        child.signal_stop()
        child.wait_stopped(10)
