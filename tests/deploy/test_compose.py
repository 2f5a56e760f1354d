"""deploy/docker-compose.yml, validated and resolved by a real compose implementation (Debian's
docker-compose, no Docker engine needed), against deploy/.env.example as `make up` turns it into
deploy/.env. Every expectation comes from the code or the other deploy files where it can."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from scripts.deploy_files import compose_service_limits
from tests.deploy.compose_helpers import (
    Compose,
    bind_mounts,
    initialized_env,
    raw_compose,
)
from tests.deploy.helpers import (
    COMPOSE_FILE,
    DEPLOY,
    ENV_EXAMPLE,
    INIT_ENV,
    K8S,
    SERVICES,
    STAGES,
    all_settings_variables,
    env_example_unset,
    env_example_values,
    env_file_values,
    grpc_port,
    grpc_port_field,
    settings_variables,
    variable,
)
from tests.deploy.kustomize import find, kustomize
from tests.observability.expressions import scrape_jobs

SECRETS = ("RAGLOOP_API_KEYS", "GRAFANA_ADMIN_PASSWORD", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD")
# MinIO's image default, which Milvus's own compose file keeps.
MINIO_DEFAULT_CREDENTIAL = "minioadmin"
HEALTHCHECK_COMMAND = ["CMD", "python", "-m", "ragloop.core.grpc.healthcheck"]
COMPOSE_SECTION = "# === docker compose"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"
OTLP_HTTP_PORT = "4318"
# Services that keep their state in memory on purpose: Jaeger's all-in-one keeps the newest
# traces (a restart loses them; docs/tracing.md).
IN_MEMORY = {"jaeger"}


@pytest.fixture(scope="module")
def env(env_file: Path) -> dict[str, str]:
    return env_file_values(env_file.read_text())


@pytest.fixture(scope="module")
def config(compose: Compose, env_file: Path) -> dict[str, Any]:
    return compose.config(env_file)


@pytest.fixture(scope="module")
def services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return config["services"]


def one_shot_jobs(services: dict[str, dict[str, Any]]) -> set[str]:
    """Services others wait for to finish (not to be healthy)."""
    return {
        dependency
        for service in services.values()
        for dependency, wait in service.get("depends_on", {}).items()
        if wait["condition"] == "service_completed_successfully"
    }


def published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host address, host port, container port) of each published port."""
    ports = []
    for spec in service.get("ports", []):
        host, host_port, container = spec.removesuffix("/tcp").rsplit(":", 2)
        ports.append((host, int(host_port), int(container)))
    return ports


def interpolated_variables(text: str) -> set[str]:
    return set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", text))


# --- the secrets ----------------------------------------------------------------------------


def test_init_env_fills_the_secrets_once_and_privately(tmp_path: Path) -> None:
    first = initialized_env(tmp_path / "a")
    values = env_file_values(first.read_text())
    assert all(values[secret] for secret in SECRETS)
    assert stat.S_IMODE(first.stat().st_mode) == 0o600
    example = env_example_values()
    assert {k: v for k, v in values.items() if k not in SECRETS} == {
        k: v for k, v in example.items() if k not in SECRETS
    }
    before = first.read_text()
    subprocess.run(["sh", str(tmp_path / "a" / INIT_ENV.name)], check=True, capture_output=True)
    assert first.read_text() == before, "an existing deploy/.env must be kept"
    other = env_file_values(initialized_env(tmp_path / "b").read_text())
    assert all(other[secret] != values[secret] for secret in SECRETS)


def test_init_env_fills_only_the_empty_secrets_of_an_existing_env(tmp_path: Path) -> None:
    """An older deploy/.env keeps the MinIO credentials its volume started with; a secret left
    empty there (a `cp .env.example .env` by hand) is filled."""
    env_file = initialized_env(tmp_path)
    kept = {"MINIO_ROOT_USER": "operator", "MINIO_ROOT_PASSWORD": "chosen-by-hand"}
    lines = []
    for line in env_file.read_text().splitlines():
        name = line.partition("=")[0]
        if name in kept:
            line = f"{name}={kept[name]}"
        elif name == "GRAFANA_ADMIN_PASSWORD":
            line = f"{name}="
        lines.append(line)
    env_file.write_text("\n".join(lines) + "\n")
    subprocess.run(["sh", str(tmp_path / INIT_ENV.name)], check=True, capture_output=True)
    after = env_file_values(env_file.read_text())
    assert {name: after[name] for name in kept} == kept
    assert after["GRAFANA_ADMIN_PASSWORD"]
    before = env_file_values("\n".join(lines))
    assert {k: v for k, v in after.items() if k != "GRAFANA_ADMIN_PASSWORD"} == {
        k: v for k, v in before.items() if k != "GRAFANA_ADMIN_PASSWORD"
    }
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600


@pytest.mark.parametrize("secret", SECRETS)
def test_compose_refuses_to_start_without_a_secret(
    compose: Compose, env_file: Path, secret: str, tmp_path: Path
) -> None:
    lines = [
        f"{secret}=" if line.startswith(f"{secret}=") else line
        for line in env_file.read_text().splitlines()
    ]
    emptied = tmp_path / ".env"
    emptied.write_text("\n".join(lines) + "\n")
    result = compose.run(emptied, "config")
    assert result.returncode != 0
    assert f"set {secret} in deploy/.env" in result.stderr


# --- services, health and start order -------------------------------------------------------


def test_each_ragloop_service_is_built_from_the_dockerfile(
    services: dict[str, dict[str, Any]],
) -> None:
    built = {name: s for name, s in services.items() if "build" in s}
    assert set(built) == set(SERVICES)
    for name, service in built.items():
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert Path(service["build"]["context"]) == COMPOSE_FILE.parent.parent
        assert service["build"]["args"]["SERVICE"] == name
        assert service["image"].startswith(f"ragloop-{name}:")


def test_every_service_has_a_healthcheck_but_the_one_shot_model_pull(
    services: dict[str, dict[str, Any]],
) -> None:
    # The pull job runs once and exits; the stages wait for it to have succeeded instead.
    assert one_shot_jobs(services) == {"ollama-pull"}
    for name, service in services.items():
        if name in one_shot_jobs(services):
            assert "healthcheck" not in service
            assert service["restart"] == "no"
            continue
        check = service.get("healthcheck")
        assert check and not check.get("disable"), f"{name} has no healthcheck"
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name


@pytest.mark.parametrize("name", SERVICES)
def test_ragloop_healthchecks_ask_grpc_health_on_the_service_port(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    service = services[name]
    test = service["healthcheck"]["test"]
    assert test[: len(HEALTHCHECK_COMMAND)] == HEALTHCHECK_COMMAND, "gRPC health, not curl"
    port = int(service["environment"][variable(grpc_port_field(name))])
    assert port == grpc_port(name)
    assert test[test.index("--address") + 1] == f"127.0.0.1:{port}"


def test_services_start_once_what_they_need_is_healthy(
    services: dict[str, dict[str, Any]],
) -> None:
    jobs = one_shot_jobs(services)
    for name, service in services.items():
        for dependency, wait in service.get("depends_on", {}).items():
            expected = "service_completed_successfully" if dependency in jobs else "service_healthy"
            assert wait["condition"] == expected, f"{name} → {dependency}"
    assert set(STAGES) <= set(services["orchestrator"]["depends_on"])
    for name, service in services.items():
        environment = service.get("environment") or {}
        if "RAGLOOP_MILVUS_URI" in environment:
            assert "milvus-standalone" in service["depends_on"], name
        if "RAGLOOP_OLLAMA_URL" in environment:
            assert "ollama-pull" in service["depends_on"], name


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_gets_exactly_the_settings_it_reads(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    given = {var for var in services[name]["environment"] if var.startswith("RAGLOOP_")}
    reads = settings_variables(name)
    assert not reads - given, f"add to {name}'s environment in docker-compose.yml"
    assert not given - reads, f"{name} reads no such setting"


def test_the_orchestrator_knows_the_retrievers_embedding_model(
    services: dict[str, dict[str, Any]],
) -> None:
    """Its similarity thresholds default to that model's (embedding_profiles)."""
    model = services["retriever"]["environment"]["RAGLOOP_EMBEDDING_MODEL"]
    assert services["orchestrator"]["environment"]["RAGLOOP_EMBEDDING_MODEL"] == model
    assert model.startswith("ollama:")


def test_every_variable_the_code_and_compose_read_is_in_env_example() -> None:
    documented = set(env_example_values()) | env_example_unset()
    needed = all_settings_variables() | interpolated_variables(COMPOSE_FILE.read_text())
    missing = sorted(needed - documented)
    assert not missing, f"missing from deploy/.env.example (make settings-docs?): {missing}"


def named_variables(text: str) -> set[str]:
    """The RAGLOOP_* variables ``text`` names; RAGLOOP_<STAGE>_PORT names every stage's."""
    named = set(re.findall(r"RAGLOOP_[A-Z_]+", text))
    for pattern in re.findall(r"RAGLOOP_<STAGE>_[A-Z_]+", text):
        named |= {pattern.replace("<STAGE>", stage.upper()) for stage in STAGES}
    return named


def test_settings_compose_fixes_are_named_in_env_example() -> None:
    """A value written in the compose file wins over .env: .env.example must say so."""
    section = ENV_EXAMPLE.read_text().partition(COMPOSE_SECTION)[2]
    assert section, f"deploy/.env.example has no '{COMPOSE_SECTION}' section"
    fixed = set()
    for name in SERVICES:
        for var, value in raw_compose()["services"][name]["environment"].items():
            if var.startswith("RAGLOOP_") and value is not None and f"${{{var}" not in value:
                fixed.add(var)
    assert fixed, "compose fixes the topology (bind host, addresses, URIs)"
    unnamed = sorted(fixed - named_variables(section))
    assert not unnamed, f"fixed by docker-compose.yml, not named in .env.example: {unnamed}"


def test_the_stages_use_the_models_the_pull_job_pulls(
    services: dict[str, dict[str, Any]], env: dict[str, str]
) -> None:
    chat, embedding = env["OLLAMA_CHAT_MODEL"], env["OLLAMA_EMBEDDING_MODEL"]
    assert set(services["ollama-pull"]["environment"]["MODELS"].split()) == {chat, embedding}
    for name in ("grader", "rewriter", "generator"):
        assert services[name]["environment"]["RAGLOOP_CHAT_MODEL"] == f"ollama:{chat}"
    assert services["retriever"]["environment"]["RAGLOOP_EMBEDDING_MODEL"] == f"ollama:{embedding}"


def test_ollama_runs_on_cpu_or_gpu_by_profile(
    services: dict[str, dict[str, Any]], env: dict[str, str]
) -> None:
    cpu, gpu = services["ollama"], services["ollama-gpu"]
    assert (cpu["profiles"], gpu["profiles"], env["COMPOSE_PROFILES"]) == (["cpu"], ["gpu"], "cpu")
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"capabilities": ["gpu"], "count": "all", "driver": "nvidia"}]
    assert "backend" in cpu["networks"]
    assert gpu["networks"]["backend"]["aliases"] == ["ollama"]  # the stages' RAGLOOP_OLLAMA_URL
    for ollama in (cpu, gpu):
        assert ollama["healthcheck"]["test"] == ["CMD", "ollama", "list"]
        assert ollama["environment"]["OLLAMA_NUM_PARALLEL"] == env["OLLAMA_NUM_PARALLEL"]
        assert ollama["environment"]["OLLAMA_KEEP_ALIVE"] == env["RAGLOOP_OLLAMA_KEEP_ALIVE_S"]
    assert services["grader"]["environment"]["RAGLOOP_OLLAMA_URL"] == "http://ollama:11434"


def test_milvus_reaches_minio_with_the_generated_credentials(
    services: dict[str, dict[str, Any]], env: dict[str, str]
) -> None:
    minio = services["milvus-minio"]["environment"]
    milvus = services["milvus-standalone"]["environment"]
    assert (minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"]) == (
        env["MINIO_ROOT_USER"],
        env["MINIO_ROOT_PASSWORD"],
    )
    assert (milvus["MINIO_ACCESS_KEY_ID"], milvus["MINIO_SECRET_ACCESS_KEY"]) == (
        env["MINIO_ROOT_USER"],
        env["MINIO_ROOT_PASSWORD"],
    )
    assert MINIO_DEFAULT_CREDENTIAL not in {env["MINIO_ROOT_USER"], env["MINIO_ROOT_PASSWORD"]}
    assert MINIO_DEFAULT_CREDENTIAL not in ENV_EXAMPLE.read_text()


def test_milvus_is_standalone_2_5_or_newer(services: dict[str, dict[str, Any]]) -> None:
    milvus = services["milvus-standalone"]
    version = re.search(r":v(\d+)\.(\d+)", milvus["image"])
    assert version and tuple(map(int, version.groups())) >= (2, 5), "BM25 needs Milvus 2.5"
    assert milvus["command"] == ["milvus", "run", "standalone"]
    assert services["retriever"]["environment"]["RAGLOOP_MILVUS_URI"].startswith(
        "http://milvus-standalone:"
    )


# --- exposure -------------------------------------------------------------------------------


def test_only_the_orchestrator_and_grafana_are_published(
    services: dict[str, dict[str, Any]], env: dict[str, str]
) -> None:
    ports = {name: published(s) for name, s in services.items() if s.get("ports")}
    assert set(ports) == {"orchestrator", "grafana"}
    orchestrator = services["orchestrator"]["environment"]
    allowed = {
        "orchestrator": {
            int(orchestrator["RAGLOOP_HTTP_PORT"]),
            int(orchestrator["RAGLOOP_ORCHESTRATOR_GRPC_PORT"]),
        },
        "grafana": {3000},
    }
    for name, specs in ports.items():
        assert {container for _, _, container in specs} == allowed[name]
        assert {host for host, _, _ in specs} == {env["PUBLISH_ADDRESS"]}


def test_published_ports_stay_on_this_host_unless_widened(
    compose: Compose, env_file: Path, services: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    hosts = {host for s in services.values() for host, _, _ in published(s)}
    assert hosts == {"127.0.0.1"}, "published on loopback by default (.env.example)"
    widened = tmp_path / ".env"
    widened.write_text(
        re.sub(r"^PUBLISH_ADDRESS=.*$", "PUBLISH_ADDRESS=0.0.0.0", env_file.read_text(), flags=re.M)
    )
    wide = compose.config(widened)["services"]
    assert {host for s in wide.values() for host, _, _ in published(s)} == {"0.0.0.0"}


def test_stages_milvus_and_prometheus_stay_on_the_internal_network(
    config: dict[str, Any],
) -> None:
    internal = {name for name, net in config["networks"].items() if (net or {}).get("internal")}
    assert internal == {"backend"}
    outside = {
        name for name, service in config["services"].items() if set(service["networks"]) - internal
    }
    # Published (orchestrator, Grafana), downloading models (Ollama) or notifying (Alertmanager).
    assert outside == {"orchestrator", "grafana", "ollama", "ollama-gpu", "alertmanager"}


# --- limits ---------------------------------------------------------------------------------


def test_every_service_has_the_cpu_and_memory_limits_of_its_definition(
    services: dict[str, dict[str, Any]],
) -> None:
    defined = compose_service_limits()
    assert set(defined) == set(services), "limits for each service, none for a gone one"
    for name, service in services.items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits")
        assert limits, f"{name} has no limits"
        assert float(limits["cpus"]) == defined[name].cpus, name
        assert limits["memory"] == defined[name].memory, name


def gibibytes(quantity: str) -> float:
    """A Kubernetes (Mi, Gi) or Docker (m, g) memory quantity, in GiB."""
    number, unit = re.fullmatch(r"(\d+)([mMgG])i?", quantity).groups()
    return int(number) / (1024 if unit in "mM" else 1)


# Compose services and the Kubernetes workload of the same server.
KUBERNETES_WORKLOADS = {
    **{name: ("Deployment", name) for name in SERVICES},
    "jaeger": ("StatefulSet", "jaeger"),
    "ollama-gpu": ("StatefulSet", "ollama"),  # the base's model tier has a GPU per pod
}


@pytest.fixture(scope="module")
def k8s_base() -> tuple[dict[str, Any], ...]:
    return kustomize(K8S)


@pytest.mark.parametrize("name", KUBERNETES_WORKLOADS)
def test_compose_gives_a_service_the_memory_its_kubernetes_pods_have(
    services: dict[str, dict[str, Any]], k8s_base: tuple[dict[str, Any], ...], name: str
) -> None:
    workload = find(k8s_base, *KUBERNETES_WORKLOADS[name])
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    memory = services[name]["deploy"]["resources"]["limits"]["memory"]
    assert gibibytes(memory) == gibibytes(container["resources"]["limits"]["memory"])


# --- observability --------------------------------------------------------------------------


def test_prometheus_scrapes_every_service_that_serves_metrics(
    services: dict[str, dict[str, Any]],
) -> None:
    targets = {target for job in scrape_jobs().values() for target in job}
    expected = {f"{stage}:{DEFAULT_METRICS_PORTS[stage]}" for stage in STAGES}
    for stage in STAGES:
        assert services[stage]["environment"]["RAGLOOP_METRICS_PORT"] == "auto"
        assert str(DEFAULT_METRICS_PORTS[stage]) in services[stage]["expose"]
    expected.add(f"orchestrator:{services['orchestrator']['environment']['RAGLOOP_HTTP_PORT']}")
    milvus_health = " ".join(services["milvus-standalone"]["healthcheck"]["test"])
    milvus_metrics_port = re.search(r"localhost:(\d+)/healthz", milvus_health).group(1)
    expected.add(f"milvus-standalone:{milvus_metrics_port}")  # /metrics beside /healthz
    assert expected <= targets
    hosts = {target.rsplit(":", 1)[0] for target in targets}
    assert hosts <= {*services, "localhost"}, "scrape targets must be compose services"


def test_prometheus_loads_its_config_and_alert_rules(services: dict[str, dict[str, Any]]) -> None:
    prometheus = services["prometheus"]
    config_path = next(
        arg.split("=", 1)[1] for arg in prometheus["command"] if arg.startswith("--config.file=")
    )
    mounted = bind_mounts(prometheus)
    config_dir = str(Path(config_path).parent)
    assert mounted[config_dir] == PROMETHEUS_CONFIG.parent
    rule_files = yaml.safe_load(PROMETHEUS_CONFIG.read_text())["rule_files"]
    assert rule_files and all((PROMETHEUS_CONFIG.parent / rule).is_file() for rule in rule_files)


def test_grafana_gets_its_datasource_and_dashboards(services: dict[str, dict[str, Any]]) -> None:
    grafana = services["grafana"]
    mounted = bind_mounts(grafana)
    assert mounted["/etc/grafana/provisioning"] == GRAFANA_PROVISIONING
    provider = yaml.safe_load((GRAFANA_PROVISIONING / "dashboards" / "ragloop.yml").read_text())
    dashboards_path = provider["providers"][0]["options"]["path"]
    assert mounted[dashboards_path] == DEPLOY / "grafana" / "dashboards"
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (DEPLOY / "grafana" / "dashboards" / Path(home).name).is_file()
    datasource = yaml.safe_load(
        (GRAFANA_PROVISIONING / "datasources" / "prometheus.yml").read_text()
    )["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    assert "prometheus" in grafana["depends_on"]
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"]


def test_every_service_exports_its_traces_to_jaeger(services: dict[str, dict[str, Any]]) -> None:
    jaeger = services["jaeger"]
    for name in SERVICES:
        endpoint = urlsplit(services[name]["environment"]["RAGLOOP_OTLP_ENDPOINT"])
        assert (endpoint.hostname, str(endpoint.port)) == ("jaeger", OTLP_HTTP_PORT), name
        assert set(services[name]["networks"]) & set(jaeger["networks"]), name
    assert OTLP_HTTP_PORT in jaeger["expose"]
    datasource = yaml.safe_load((GRAFANA_PROVISIONING / "datasources" / "jaeger.yml").read_text())
    query = urlsplit(datasource["datasources"][0]["url"])
    assert query.hostname == "jaeger" and str(query.port) in jaeger["expose"]
    assert "jaeger" in services["grafana"]["depends_on"]
    assert "--enable-feature=exemplar-storage" in services["prometheus"]["command"]


def test_state_lives_in_named_volumes(config: dict[str, Any]) -> None:
    named = set(config["volumes"])
    for name, service in config["services"].items():
        if "build" in service or name in one_shot_jobs(config["services"]):
            continue  # stateless
        if name in IN_MEMORY:
            continue
        sources = {volume.split(":")[0] for volume in service.get("volumes", [])}
        assert sources & named, f"{name} keeps its data in no named volume"
