"""deploy/k8s/ offline: every document against the Kubernetes schema (kubernetes-validate, where
installed), and how the documents fit together and with the code: probes on the ports the
services serve, HPAs and PDBs for every Deployment, Services and an Ingress that reach real
ports, settings that exist, the model tier on its own, Milvus from its official chart."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
import yaml

from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from ragloop.orchestrator.application.requests import QueryRequest
from tests.deploy.helpers import (
    K8S,
    SERVICES,
    STAGES,
    all_settings_variables,
    default,
    grpc_port,
)

KUSTOMIZATION = K8S / "kustomization.yaml"
MILVUS_VALUES = K8S / "milvus-values.yaml"
KUBERNETES_VERSION = "1.30.0"  # the oldest supported: gRPC probes, autoscaling/v2, policy/v1
Doc = dict[str, Any]


@cache
def kustomization() -> Doc:
    return yaml.safe_load(KUSTOMIZATION.read_text())


@cache
def documents() -> tuple[Doc, ...]:
    return tuple(
        document
        for resource in kustomization()["resources"]
        for document in yaml.safe_load_all((K8S / resource).read_text())
        if document
    )


def of_kind(kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in documents() if d["kind"] == kind}


def workloads() -> dict[str, Doc]:
    return {**of_kind("Deployment"), **of_kind("StatefulSet")}


def pod(workload: Doc) -> Doc:
    return workload["spec"]["template"]


def container(workload: Doc) -> Doc:
    (only,) = pod(workload)["spec"]["containers"]
    return only


def ports(workload: Doc) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container(workload)["ports"]}


def selects(selector: dict[str, str], workload: Doc) -> bool:
    return selector.items() <= pod(workload)["metadata"]["labels"].items()


def settings() -> dict[str, str]:
    return of_kind("ConfigMap")["ragloop-settings"]["data"]


def service_port(host_port: str) -> tuple[Doc, int]:
    """The Service an address names, and the port it asks for (which the Service must have)."""
    host, port = re.sub(r"^\w+:///?", "", host_port).rsplit(":", 1)
    service = of_kind("Service")[host]
    assert int(port) in {p["port"] for p in service["spec"]["ports"]}, host_port
    return service, int(port)


def test_kustomization_applies_every_manifest_once() -> None:
    manifests = {p.name for p in K8S.glob("*.yaml")} - {KUSTOMIZATION.name, MILVUS_VALUES.name}
    assert sorted(kustomization()["resources"]) == sorted(manifests)
    keys = [(d["kind"], d["metadata"]["name"]) for d in documents()]
    assert len(keys) == len(set(keys))
    images = {image["name"] for image in kustomization()["images"]}
    assert images == {f"ragloop-{service}" for service in SERVICES}


def test_every_document_matches_the_kubernetes_schema() -> None:
    validator = pytest.importorskip(
        "kubernetes_validate",
        reason="kubernetes-validate is not installed (the dev group should hold it)",
    )
    for document in documents():
        validator.validate(document, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_is_a_hardened_deployment_ready_on_grpc_health(service: str) -> None:
    deployment = of_kind("Deployment")[service]
    spec = container(deployment)
    assert spec["image"] == f"ragloop-{service}"
    assert ports(deployment)["grpc"] == grpc_port(service)
    assert spec["readinessProbe"]["grpc"]["port"] == grpc_port(service)  # the kubelet's gRPC probe
    assert "livenessProbe" in spec
    assert {"configMapRef": {"name": "ragloop-settings"}} in spec["envFrom"]
    security = pod(deployment)["spec"]["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] != 0
    assert spec["securityContext"]["readOnlyRootFilesystem"]
    assert not spec["securityContext"]["allowPrivilegeEscalation"]
    metrics_port = ports(deployment).get("metrics") or ports(deployment)["http"]
    annotations = pod(deployment)["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(metrics_port)
    if service in STAGES:
        assert metrics_port == DEFAULT_METRICS_PORTS[service]  # RAGLOOP_METRICS_PORT=auto


def test_every_deployment_has_an_autoscaler_and_a_disruption_budget() -> None:
    autoscalers = {
        h["spec"]["scaleTargetRef"]["name"]: h for h in of_kind("HorizontalPodAutoscaler").values()
    }
    budgets = list(of_kind("PodDisruptionBudget").values())
    for name, deployment in of_kind("Deployment").items():
        scaler = autoscalers[name]
        assert scaler["spec"]["scaleTargetRef"]["kind"] == "Deployment"
        assert "replicas" not in deployment["spec"], f"{name}: the HPA owns the replica count"
        minimum = scaler["spec"]["minReplicas"]
        assert 2 <= minimum <= scaler["spec"]["maxReplicas"]
        (budget,) = [
            b for b in budgets if selects(b["spec"]["selector"]["matchLabels"], deployment)
        ]
        assert budget["spec"]["minAvailable"] < minimum, f"{name}: a node could never drain"


def test_services_reach_pods_on_ports_they_have() -> None:
    for name, service in of_kind("Service").items():
        selector = service["spec"]["selector"]
        targets = [w for w in workloads().values() if selects(selector, w)]
        assert len(targets) == 1, f"Service {name} selects {len(targets)} workloads"
        named = ports(targets[0])
        for port in service["spec"]["ports"]:
            target = port["targetPort"]
            assert target in named or target in named.values(), f"{name}: {target}"


def test_the_orchestrator_is_reached_through_its_service_and_an_ingress() -> None:
    (ingress,) = of_kind("Ingress").values()
    backends = [
        path["backend"]["service"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends == [{"name": "orchestrator", "port": {"name": "http"}}]
    service = of_kind("Service")["orchestrator"]
    http = next(p for p in service["spec"]["ports"] if p["name"] == "http")
    assert http["port"] == default("orchestrator", "http_port")
    assert ingress["spec"]["tls"], "the API key travels in a header: TLS only"
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"  # SSE
    longest_budget = next(
        m.le for m in QueryRequest.model_fields["time_budget_s"].metadata if hasattr(m, "le")
    )
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > longest_budget
    secret_sources = [s for s in container(of_kind("Deployment")["orchestrator"])["envFrom"]]
    assert {"secretRef": {"name": "ragloop-api-keys"}} in secret_sources  # not optional
    assert not of_kind("Secret"), "secrets are created by the operator, never committed"


def test_settings_exist_and_name_the_cluster_services() -> None:
    data = settings()
    unknown = sorted(set(data) - all_settings_variables())
    assert not unknown, f"no service reads {unknown}"
    for stage in STAGES:
        address = data[f"RAGLOOP_{stage.upper()}_ADDRESS"]
        service, port = service_port(address)
        assert port == grpc_port(stage)
        # Resolved to every ready pod, which the orchestrator balances its calls over.
        assert address.startswith("dns:///") and service["spec"]["clusterIP"] == "None"
    ollama, _ = service_port(data["RAGLOOP_OLLAMA_URL"])
    assert ollama["metadata"]["labels"]["app.kubernetes.io/component"] == "model"
    assert data["RAGLOOP_MILVUS_URI"] == "http://milvus:19530"  # the Helm release `milvus`
    assert data["RAGLOOP_CHAT_MODEL"].startswith("ollama:")
    assert data["RAGLOOP_EMBEDDING_MODEL"].startswith("ollama:")


def test_every_ragloop_pod_exports_its_traces_to_jaeger() -> None:
    jaeger, port = service_port(settings()["RAGLOOP_OTLP_ENDPOINT"])
    otlp = next(p for p in jaeger["spec"]["ports"] if p["port"] == port)
    (rule,) = [
        r
        for r in of_kind("NetworkPolicy")["traces"]["spec"]["ingress"]
        if {"port": otlp["name"]} in r["ports"]
    ]
    (allowed,) = rule["from"]
    for service in SERVICES:
        labels = pod(of_kind("Deployment")[service])["metadata"]["labels"]
        assert all(
            labels.get(e["key"]) in e["values"] for e in allowed["podSelector"]["matchExpressions"]
        ), f"{service} may not reach Jaeger"


def test_the_model_tier_is_a_separately_scaled_workload() -> None:
    ollama = of_kind("StatefulSet")["ollama"]
    assert ollama["spec"]["replicas"] >= 2
    spec = container(ollama)
    assert spec["resources"]["limits"]["nvidia.com/gpu"] == 1
    environment = {e["name"]: e for e in spec["env"]}
    parallel = int(environment["OLLAMA_NUM_PARALLEL"]["value"])
    assert int(settings()["RAGLOOP_GRADER_CONCURRENCY"]) == parallel
    keep_alive = environment["OLLAMA_KEEP_ALIVE"]["valueFrom"]["configMapKeyRef"]["key"]
    assert keep_alive in settings()
    (pull,) = pod(ollama)["spec"]["initContainers"]
    assert {"configMapRef": {"name": "ragloop-settings"}} in pull["envFrom"]
    script = " ".join(pull["args"])
    assert "RAGLOOP_CHAT_MODEL#ollama:" in script and "RAGLOOP_EMBEDDING_MODEL#ollama:" in script
    assert any(
        selects(b["spec"]["selector"]["matchLabels"], ollama)
        for b in of_kind("PodDisruptionBudget").values()
    )


def test_network_policies_admit_stage_calls_from_the_orchestrator_only() -> None:
    policies = of_kind("NetworkPolicy")
    stages = policies["stages"]
    for stage in STAGES:
        assert selects(stages["spec"]["podSelector"]["matchLabels"], of_kind("Deployment")[stage])
    grpc_rules = [r for r in stages["spec"]["ingress"] if {"port": "grpc"} in r["ports"]]
    assert grpc_rules == [
        {
            "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "orchestrator"}}}],
            "ports": [{"port": "grpc"}],
        }
    ]
    model = policies["model-tier"]
    assert selects(model["spec"]["podSelector"]["matchLabels"], of_kind("StatefulSet")["ollama"])
    (rule,) = model["spec"]["ingress"]
    assert rule["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/component": "stage"}}}
    ]


def test_milvus_runs_in_cluster_mode_from_its_official_chart() -> None:
    values = yaml.safe_load(MILVUS_VALUES.read_text())
    assert values["cluster"]["enabled"] is True
    version = re.fullmatch(r"v(\d+)\.(\d+)\.\d+", values["image"]["all"]["tag"])
    assert version and tuple(map(int, version.groups())) >= (2, 5), "BM25 needs Milvus 2.5"
    assert values["metrics"]["enabled"] is True
    install = MILVUS_VALUES.read_text()
    assert "helm upgrade --install milvus milvus/milvus --version" in install
    images = [c["image"] for w in workloads().values() for c in pod(w)["spec"]["containers"]]
    assert not [image for image in images if "milvus" in image], "no home-made Milvus"
