"""deploy/k8s as `kubectl kustomize` renders it: the namespace outside the base (so that
`kubectl delete -k deploy/k8s` cannot delete Milvus's data), the optional Components for a
cluster without GPUs and for the Prometheus Operator, and what must hold in the base with every
combination of the Components: no secret in a ConfigMap, Ollama pulling only Ollama's models,
admission within the model tier's slots, settings that roll the pods when they change."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from scripts.deploy_files import ALERT_RULES, K8S_SECRETS, MONITORING_SELECTOR, ragloop_jobs
from tests.conftest import REPO_ROOT
from tests.deploy.helpers import K8S, SERVICES, settings_class, settings_variables
from tests.deploy.kustomize import (
    Doc,
    combination_id,
    combinations,
    find,
    kustomize,
    render,
)

NAMESPACE = "ragloop"
OLLAMA_CPU = K8S / "components" / "ollama-cpu"
MONITORING = K8S / "components" / "monitoring"
KUBERNETES_VERSION = "1.30.0"
OPERATOR_KINDS = {"PodMonitor", "PrometheusRule"}  # CRDs: no schema in kubernetes-validate


def validate(documents: tuple[Doc, ...]) -> None:
    validator = pytest.importorskip("kubernetes_validate")
    for document in documents:
        if document["kind"] not in OPERATOR_KINDS:
            validator.validate(document, KUBERNETES_VERSION, strict=True)


def test_deleting_the_base_cannot_delete_the_namespace() -> None:
    """`kubectl delete -k deploy/k8s` deletes what `kubectl kustomize deploy/k8s` lists: the
    Namespace, and with it the Milvus release and its volumes, must not be among them."""
    base = kustomize(K8S)
    assert not [d for d in base if d["kind"] == "Namespace"]
    assert {d["metadata"].get("namespace") for d in base} == {NAMESPACE}
    (namespace,) = kustomize(K8S / "namespace")
    assert (namespace["kind"], namespace["metadata"]["name"]) == ("Namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def ollama_resources(documents: tuple[Doc, ...]) -> Doc:
    (container,) = find(documents, "StatefulSet", "ollama")["spec"]["template"]["spec"][
        "containers"
    ]
    return container


def test_the_cpu_component_asks_for_no_gpu() -> None:
    base = kustomize(K8S)
    assert "nvidia.com/gpu" in yaml.safe_dump_all(base)  # the default is the GPU tier
    cpu = kustomize(K8S, (OLLAMA_CPU,))
    validate(cpu)
    assert "nvidia.com/gpu" not in yaml.safe_dump_all(cpu)
    container = ollama_resources(cpu)
    assert container["resources"]["requests"]["cpu"]
    parallel = {e["name"]: e for e in container["env"]}["OLLAMA_NUM_PARALLEL"]["value"]
    settings = find(cpu, "ConfigMap", "ragloop-settings")["data"]
    assert parallel == settings["RAGLOOP_GRADER_CONCURRENCY"] == "1"
    assert (
        settings["RAGLOOP_CHAT_MODEL"]
        != find(base, "ConfigMap", "ragloop-settings")["data"]["RAGLOOP_CHAT_MODEL"]
    )


def test_pod_monitors_scrape_every_service_under_the_job_the_dashboards_name() -> None:
    rendered = kustomize(K8S, (MONITORING,))
    validate(rendered)
    monitors = [d for d in rendered if d["kind"] == "PodMonitor"]
    jobs = set(re.search(r'"(.*)"', ragloop_jobs("")).group(1).split("|"))
    assert jobs == set(SERVICES)
    scraped: set[str] = set()
    for monitor in monitors:
        assert monitor["metadata"]["namespace"] == NAMESPACE
        selector = monitor["spec"]["selector"]["matchLabels"]
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        # The operator would name the job "<namespace>/<PodMonitor>"; the relabelling names it
        # after the pod's app.kubernetes.io/name (tests/observability proves the rule on a real
        # Prometheus).
        assert {
            "sourceLabels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
            "targetLabel": "job",
        } in endpoint["relabelings"]
        for deployment in (d for d in rendered if d["kind"] == "Deployment"):
            pod = deployment["spec"]["template"]
            if selector.items() <= pod["metadata"]["labels"].items():
                (container,) = pod["spec"]["containers"]
                ports = {p["name"]: p["containerPort"] for p in container["ports"]}
                assert endpoint["port"] in ports, deployment["metadata"]["name"]
                assert (
                    str(ports[endpoint["port"]])
                    == pod["metadata"]["annotations"]["prometheus.io/port"]
                )
                scraped.add(pod["metadata"]["labels"]["app.kubernetes.io/name"])
    assert scraped == jobs


def test_the_prometheus_rule_holds_the_alert_rules() -> None:
    rendered = kustomize(K8S, (MONITORING,))
    rule = find(rendered, "PrometheusRule", "ragloop")
    assert rule["spec"] == yaml.safe_load(ALERT_RULES.read_text())


COMBINATIONS = pytest.mark.parametrize("components", combinations(), ids=combination_id)
DEPLOYMENT_DOC = REPO_ROOT / "docs" / "deployment.md"


def secret_variables() -> set[str]:
    """Every setting that is a secret: typed SecretStr by its service, or read from a Secret."""
    typed = {
        f"RAGLOOP_{name.upper()}"
        for service in SERVICES
        for name, field in settings_class(service).model_fields.items()
        if field.annotation is SecretStr
    }
    return typed | set(K8S_SECRETS)


@COMBINATIONS
def test_no_secret_lands_in_a_config_map(components: tuple[Path, ...]) -> None:
    rendered = kustomize(K8S, components)
    secrets = secret_variables()
    assert {"RAGLOOP_API_KEYS", "RAGLOOP_OPENAI_API_KEY", "RAGLOOP_MILVUS_TOKEN"} <= secrets
    for config_map in (d for d in rendered if d["kind"] == "ConfigMap"):
        assert not secrets & set(config_map.get("data", {})), config_map["metadata"]["name"]
    for deployment in (d for d in rendered if d["kind"] == "Deployment"):
        service = deployment["metadata"]["name"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        from_secrets = {
            e["name"]: e["valueFrom"]["secretKeyRef"]
            for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})
        }
        for variable in sorted(set(K8S_SECRETS) & settings_variables(service)):
            ref = K8S_SECRETS[variable]
            expected = {"name": ref.secret, "key": ref.key, "optional": ref.optional}
            assert from_secrets[variable] == expected


def pulled_models(rendered: tuple[Doc, ...]) -> list[str]:
    """What the Ollama pods' init container pulls with the rendered settings: the line of its
    script that chooses them, run by a real shell with the environment the pod would get."""
    (init,) = find(rendered, "StatefulSet", "ollama")["spec"]["template"]["spec"]["initContainers"]
    settings = find(rendered, "ConfigMap", "ragloop-settings")
    environment = {}
    for variable in init["env"]:
        reference = variable["valueFrom"]["configMapKeyRef"]
        assert reference["name"] == settings["metadata"]["name"]
        environment[variable["name"]] = settings["data"][reference["key"]]
    (choose,) = [line for line in init["args"][0].splitlines() if line.startswith("pull=")]
    shell = shutil.which("sh")
    assert shell is not None
    result = subprocess.run(
        [shell, "-c", f"{choose}\nprintf '%s\\n' $pull"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split()


@COMBINATIONS
def test_ollama_pulls_the_configured_ollama_models(components: tuple[Path, ...]) -> None:
    rendered = kustomize(K8S, components)
    data = find(rendered, "ConfigMap", "ragloop-settings")["data"]
    models = [data["RAGLOOP_EMBEDDING_MODEL"], data["RAGLOOP_CHAT_MODEL"]]
    assert pulled_models(rendered) == [m.removeprefix("ollama:") for m in models]


def documented_vllm_overlay() -> str:
    """The overlay docs/deployment.md gives for chat on vLLM (the YAML block after its title)."""
    text = DEPLOYMENT_DOC.read_text()
    section = text[text.index("**vLLM instead of Ollama for chat.**") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert match, "docs/deployment.md: no overlay for vLLM"
    return match[1]


def test_the_documented_vllm_overlay_pulls_only_the_embedding_model(tmp_path: Path) -> None:
    """The overlay as the docs give it, in deploy/k8s-overlays/vllm beside a copy of the base."""
    shutil.copytree(K8S, tmp_path / "k8s")
    overlay = tmp_path / "k8s-overlays" / "vllm"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(documented_vllm_overlay())
    rendered = render(overlay)
    data = find(rendered, "ConfigMap", "ragloop-settings")["data"]
    assert data["RAGLOOP_CHAT_MODEL"].startswith("openai:")
    assert data["RAGLOOP_OPENAI_URL"].endswith("/v1")
    assert pulled_models(rendered) == [data["RAGLOOP_EMBEDDING_MODEL"].removeprefix("ollama:")]


@COMBINATIONS
def test_the_orchestrators_admit_within_the_model_tiers_slots(
    components: tuple[Path, ...],
) -> None:
    rendered = kustomize(K8S, components)
    ollama = find(rendered, "StatefulSet", "ollama")
    (server,) = ollama["spec"]["template"]["spec"]["containers"]
    parallel = int({e["name"]: e for e in server["env"]}["OLLAMA_NUM_PARALLEL"]["value"])
    data = find(rendered, "ConfigMap", "ragloop-settings")["data"]
    assert int(data["RAGLOOP_GRADER_CONCURRENCY"]) == parallel
    scaler = find(rendered, "HorizontalPodAutoscaler", "orchestrator")["spec"]
    per_pod = int(data["RAGLOOP_MAX_INFLIGHT_QUERIES"])
    assert scaler["maxReplicas"] * per_pod <= ollama["spec"]["replicas"] * parallel


def test_a_settings_edit_renames_the_config_map_and_rolls_the_pods(tmp_path: Path) -> None:
    base = tmp_path / "k8s"
    shutil.copytree(K8S, base)
    before = kustomize(base)
    settings = base / "settings.env"
    settings.write_text(
        settings.read_text().replace("RAGLOOP_LOG_JSON=true", "RAGLOOP_LOG_JSON=false")
    )
    after = kustomize(base)
    old, new = (
        find(r, "ConfigMap", "ragloop-settings")["metadata"]["name"] for r in (before, after)
    )
    assert old != new
    for deployment in (d for d in after if d["kind"] == "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        references = [
            s["configMapRef"]["name"] for s in container["envFrom"] if "configMapRef" in s
        ]
        assert references == [new], deployment["metadata"]["name"]  # a new pod template: a rollout


def test_the_operator_objects_carry_kube_prometheus_stacks_selector_label() -> None:
    rendered = kustomize(K8S, (MONITORING,))
    operated = [d for d in rendered if d["kind"] in OPERATOR_KINDS]
    assert {d["kind"] for d in operated} == OPERATOR_KINDS
    for document in operated:
        assert MONITORING_SELECTOR.items() <= document["metadata"]["labels"].items()
