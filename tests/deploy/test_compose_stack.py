"""The whole compose stack, built and started by testcontainers' DockerCompose where a Docker
engine (with the compose plugin) is reachable; skipped, saying why, where none is. Published
ports are bound to 127.0.0.1 on free ports. It ingests a document and asks about it with the
API key deploy/init-env.sh generated, and checks through Grafana that Prometheus scrapes every
job of deploy/prometheus/prometheus.yml."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
import yaml

from ragloop.local.processes import free_port
from tests.deploy.compose_helpers import initialized_env
from tests.deploy.helpers import COMPOSE_FILE, DEPLOY, env_file_values
from tests.integration.test_milvus_container import docker_engine_problem

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3600)]

READY_TIMEOUT_S = 1800  # the first start builds five images and pulls two models
SCRAPE_TIMEOUT_S = 120
REQUEST_TIMEOUT_S = 600
DOCUMENT = "The ragloop deployment test document says the lighthouse keeper is named Ingrid."


@dataclass(frozen=True)
class Stack:
    url: str
    grafana_url: str
    api_key: str
    grafana_password: str


def compose_plugin_problem() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    result = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=30
    )
    if result.returncode != 0:
        return f"testcontainers drives `docker compose` (v2), which is missing: {result.stderr}"
    return None


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout_s:.0f} s")
        time.sleep(2)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    problem = docker_engine_problem() or compose_plugin_problem()
    if problem is not None:
        pytest.skip(problem)
    from testcontainers.compose import DockerCompose

    env_file = initialized_env(tmp_path_factory.mktemp("deploy"))
    ports = {name: free_port() for name in ("HTTP", "GRPC", "GRAFANA")}
    overrides = {
        "PUBLISH_ADDRESS": "127.0.0.1",
        **{f"PUBLISH_{name}_PORT": str(port) for name, port in ports.items()},
        "COMPOSE_PROJECT_NAME": f"ragloop-test-{os.getpid()}",
    }
    values = {**env_file_values(env_file.read_text()), **overrides}
    env_file.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    compose = DockerCompose(
        context=str(DEPLOY),
        compose_file_name=COMPOSE_FILE.name,
        env_file=str(env_file),
        profiles=[values["COMPOSE_PROFILES"]],
        build=True,
        wait=True,
    )
    with compose:  # `down --volumes` afterwards
        stack = Stack(
            url=f"http://127.0.0.1:{ports['HTTP']}",
            grafana_url=f"http://127.0.0.1:{ports['GRAFANA']}",
            api_key=values["RAGLOOP_API_KEYS"],
            grafana_password=values["GRAFANA_ADMIN_PASSWORD"],
        )
        wait_until(lambda: answers(f"{stack.url}/readyz"), "orchestrator ready", READY_TIMEOUT_S)
        yield stack


def test_the_api_needs_the_key_and_answers_from_an_ingested_document(stack: Stack) -> None:
    question = {"query": "What is the lighthouse keeper's name?", "time_budget_s": 500}
    refused = httpx.post(f"{stack.url}/v1/query", json=question, timeout=30)
    assert refused.status_code == 401
    headers = {"authorization": f"Bearer {stack.api_key}"}
    ingested = httpx.post(
        f"{stack.url}/v1/documents",
        json={"documents": [{"source": "deploy-test.md", "text": DOCUMENT}]},
        headers=headers,
        timeout=REQUEST_TIMEOUT_S,
    )
    assert ingested.status_code == 200, ingested.text
    answer = httpx.post(
        f"{stack.url}/v1/query", json=question, headers=headers, timeout=REQUEST_TIMEOUT_S
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["workflow"]["decision_path"][0] == "retrieve"
    assert body["retrieval"]["total_documents"] >= 1  # Milvus standalone served the passage


def test_grafana_shows_the_dashboards_and_prometheus_scrapes_every_job(stack: Stack) -> None:
    auth = ("admin", stack.grafana_password)
    dashboards = httpx.get(f"{stack.grafana_url}/api/search", auth=auth, timeout=30).json()
    provisioned = {
        json.loads(path.read_text())["uid"]
        for path in (DEPLOY / "grafana" / "dashboards").glob("*.json")
    }
    assert provisioned <= {d["uid"] for d in dashboards if d.get("type") == "dash-db"}
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"] for job in scrape["scrape_configs"]}
    targets_url = f"{stack.grafana_url}/api/datasources/proxy/uid/ragloop-prometheus/api/v1/targets"

    def every_job_up() -> bool:
        reply = httpx.get(targets_url, auth=auth, timeout=30).json()
        health = {t["labels"]["job"]: t["health"] for t in reply["data"]["activeTargets"]}
        return all(health.get(job) == "up" for job in jobs)

    wait_until(every_job_up, "every Prometheus target up", SCRAPE_TIMEOUT_S)
