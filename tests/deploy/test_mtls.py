"""Mutual TLS to the stages in the deployment files, off by default: deploy/docker-compose.mtls.yml
laid over the compose file, and the kustomize Component deploy/k8s/mtls. Each is resolved as
compose and kustomize resolve it, then tried: certificates made by the test are put where the
file mounts them (deploy/tls/, the two Secrets), a gRPC server serves with the TLS settings the
file gives each stage, each stage's healthcheck command as the file writes it must pass against
it (and the default plaintext one must not), and the orchestrator's settings must reach it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragloop.core.grpc import healthcheck
from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.core.grpc.tls import client_tls, server_credentials
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.deploy.compose_helpers import Compose, bind_mounts
from tests.deploy.helpers import (
    COMPOSE_FILE,
    DEPLOY,
    ENV_EXAMPLE,
    K8S,
    STAGES,
    env_example_values,
    settings_class,
    settings_variables,
)
from tests.deploy.kustomize import find, kustomize
from tests.reliability.pki import CLIENT, authority

MTLS_COMPOSE = DEPLOY / "docker-compose.mtls.yml"
COMPONENT = K8S / "mtls"
HEALTHCHECK = ["python", "-m", "ragloop.core.grpc.healthcheck"]
# What each Secret holds, as deploy/tls/ holds it for compose: the stages' server certificate,
# and the client certificate the orchestrator and the stages' probes present.
SECRETS = {"ragloop-stage-tls": "stage", "ragloop-stage-client-tls": "client"}
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """deploy/tls/ as docs/deployment.md makes it: stage/ and client/, each with ca.crt, tls.crt
    and tls.key; the server certificate names every stage's service."""
    directory = tmp_path_factory.mktemp("tls")
    ca = authority(directory / "authority", "ragloop")
    issued = {
        "stage": ca.issue("stages", alt_names=",".join(f"DNS:{stage}" for stage in STAGES)),
        "client": ca.issue("orchestrator", usage=CLIENT),
    }
    for name, certificate in issued.items():
        (directory / name).mkdir()
        shutil.copy(ca.cert, directory / name / "ca.crt")
        shutil.copy(certificate.cert, directory / name / "tls.crt")
        shutil.copy(certificate.key, directory / name / "tls.key")
    return directory


def on_host(value: str, mounts: dict[str, Path]) -> str:
    """``value`` with each container path of a mount replaced by the test's directory."""
    for target, source in mounts.items():
        value = value.replace(target, str(source))
    return value


def tls_settings(environment: dict[str, Any], mounts: dict[str, Path]) -> dict[str, str]:
    """The TLS settings among ``environment`` as settings fields, with the test's paths."""
    return {
        var.removeprefix("RAGLOOP_").lower(): on_host(value, mounts)
        for var, value in environment.items()
        if "_TLS_" in var and value
    }


@asynccontextmanager
async def stage_serving(stage: str, settings: dict[str, str]) -> AsyncIterator[str]:
    """A gRPC server with the TLS the stage's settings class reads from ``settings`` (what
    run_service serves with); its address."""
    stage_settings = settings_class(stage)(**settings)
    credentials = server_credentials(
        stage_settings.grpc_tls_cert_file,
        stage_settings.grpc_tls_key_file,
        stage_settings.grpc_tls_client_ca_file,
    )
    assert credentials is not None, f"{stage} serves no TLS"
    spec = ServiceSpec(name=stage, register=lambda server: None, service_names=[])
    running = await start_server(spec, host="127.0.0.1", port=0, credentials=credentials)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(grace=1)


async def probe(command: list[str], address: str, mounts: dict[str, Path]) -> int:
    """The exit code of a healthcheck command of the file, run here against ``address``."""
    assert command[: len(HEALTHCHECK)] == HEALTHCHECK
    args = [on_host(arg, mounts) for arg in command[len(HEALTHCHECK) :]]
    args[args.index("--address") + 1] = address
    return await asyncio.to_thread(healthcheck.main, args)


async def orchestrator_reaches(stage: str, address: str, settings: dict[str, str]) -> bool:
    """Whether an orchestrator with ``settings`` is served by the stage at ``address`` (which
    it would reach by its service name)."""
    orchestrator = OrchestratorSettings(**settings)
    assert orchestrator.stage_tls_cert_file, "the orchestrator presents no client certificate"
    tls = client_tls(
        orchestrator.stage_tls_ca_file,
        stage,
        cert_file=orchestrator.stage_tls_cert_file,
        key_file=orchestrator.stage_tls_key_file,
    )
    return (await asyncio.to_thread(check_health, address, tls=tls)).serving


# --- compose ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mtls_services(compose: Compose, env_file: Path) -> dict[str, Doc]:
    return compose.config(env_file, files=(COMPOSE_FILE, MTLS_COMPOSE))["services"]


@pytest.fixture(scope="module")
def default_services(compose: Compose, env_file: Path) -> dict[str, Doc]:
    return compose.config(env_file)["services"]


def compose_mounts(service: Doc, tls_dir: Path) -> dict[str, Path]:
    """The service's certificate mounts, each from deploy/tls/NAME, pointed at the test's."""
    mounts = {}
    for target, source in bind_mounts(service).items():
        assert source.parent == DEPLOY / "tls", f"{source}: certificates come from deploy/tls/"
        mounts[target] = tls_dir / source.name
    return mounts


def test_compose_mtls_is_off_until_env_names_the_file() -> None:
    assert "COMPOSE_FILE" not in env_example_values()
    assert f"# COMPOSE_FILE={COMPOSE_FILE.name}:{MTLS_COMPOSE.name}" in ENV_EXAMPLE.read_text()
    assert "deploy/tls/" in (DEPLOY.parent / ".gitignore").read_text().splitlines()


@pytest.mark.parametrize("stage", STAGES)
async def test_compose_healthchecks_pass_with_mutual_tls_on(
    mtls_services: dict[str, Doc], default_services: dict[str, Doc], tls_dir: Path, stage: str
) -> None:
    service, orchestrator = mtls_services[stage], mtls_services["orchestrator"]
    mounts = compose_mounts(service, tls_dir)
    command = service["healthcheck"]["test"]
    assert command[0] == "CMD"
    async with stage_serving(stage, tls_settings(service["environment"], mounts)) as address:
        assert await probe(command[1:], address, mounts) == healthcheck.HEALTHY
        plaintext = default_services[stage]["healthcheck"]["test"][1:]
        assert await probe(plaintext, address, mounts) == healthcheck.UNHEALTHY
        settings = tls_settings(orchestrator["environment"], compose_mounts(orchestrator, tls_dir))
        assert await orchestrator_reaches(stage, address, settings)


@pytest.mark.parametrize("name", [*STAGES, "orchestrator"])
def test_compose_mtls_services_still_get_only_settings_they_read(
    mtls_services: dict[str, Doc], name: str
) -> None:
    given = {var for var in mtls_services[name]["environment"] if var.startswith("RAGLOOP_")}
    assert given == settings_variables(name)


# --- Kubernetes ------------------------------------------------------------------------------


@cache
def rendered() -> tuple[Doc, ...]:
    """deploy/k8s with the Component, as `kubectl kustomize` renders an overlay listing it."""
    return kustomize(K8S, (COMPONENT,))


def k8s_object(kind: str, name: str) -> Doc:
    return find(rendered(), kind, name)


def pod_mounts(deployment: Doc, tls_dir: Path) -> dict[str, Path]:
    """The pod's Secret mounts, each pointed at the test's copy of that Secret."""
    pod = deployment["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    (container,) = pod["containers"]
    return {
        mount["mountPath"]: tls_dir / SECRETS[secrets[mount["name"]]]
        for mount in container["volumeMounts"]
        if mount["name"] in secrets
    }


def test_the_component_leaves_the_default_manifests_alone() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "components" not in kustomization, "mutual TLS is opt-in"
    assert "# components: [mtls]" in (K8S / "kustomization.yaml").read_text()


def test_the_rendered_manifests_match_the_kubernetes_schema() -> None:
    validator = pytest.importorskip("kubernetes_validate")
    for document in rendered():
        validator.validate(document, "1.30.0", strict=True)
    assert not [d for d in rendered() if d["kind"] == "Secret"], "the operator makes the Secrets"


@pytest.mark.parametrize("stage", STAGES)
async def test_k8s_probes_pass_with_mutual_tls_on(tls_dir: Path, stage: str) -> None:
    deployment = k8s_object("Deployment", stage)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    mounts = pod_mounts(deployment, tls_dir)
    settings = k8s_object("ConfigMap", "ragloop-settings")["data"]
    probes = [container[p] for p in ("startupProbe", "readinessProbe", "livenessProbe")]
    assert not [p for p in probes if "grpc" in p], "the kubelet's gRPC probe speaks no TLS"
    async with stage_serving(stage, tls_settings(settings, mounts)) as address:
        for check in probes:
            assert await probe(check["exec"]["command"], address, mounts) == healthcheck.HEALTHY
        orchestrator_mounts = pod_mounts(k8s_object("Deployment", "orchestrator"), tls_dir)
        assert await orchestrator_reaches(
            stage, address, tls_settings(settings, orchestrator_mounts)
        )


@pytest.mark.parametrize("name", [*STAGES, "orchestrator"])
def test_the_certificate_secrets_are_mounted_whole_so_renewals_reach_the_pods(name: str) -> None:
    """The kubelet updates a Secret's files in a running pod only in a whole-volume mount (not
    with subPath); the processes then read them again (docs/deployment.md, mutual TLS)."""
    pod = k8s_object("Deployment", name)["spec"]["template"]["spec"]
    secrets = {v["name"] for v in pod["volumes"] if "secret" in v}
    (container,) = pod["containers"]
    mounts = [m for m in container["volumeMounts"] if m["name"] in secrets]
    assert mounts and not [m for m in mounts if "subPath" in m], mounts
