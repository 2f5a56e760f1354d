"""deploy/k8s/ offline, as `kubectl kustomize` renders it: every document against the Kubernetes
schema (kubernetes-validate, where installed), and how the documents fit together and with the
code: probes on the ports the services serve, HPAs and PDBs for every Deployment, Services and an
Ingress that reach real ports, settings that exist, the model tier on its own, Milvus from its
official chart."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
import yaml

from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from scripts.deploy_files import EXAMPLE_OVERLAY
from tests.deploy.helpers import (
    COMPOSE_FILE,
    K8S,
    SERVICES,
    STAGES,
    all_settings_variables,
    default,
    grpc_port,
)
from tests.deploy.kustomize import find, kustomize, render

KUSTOMIZATION = K8S / "kustomization.yaml"
MILVUS_VALUES = K8S / "milvus-values.yaml"
KUBERNETES_VERSION = "1.30.0"  # the oldest supported: gRPC probes, autoscaling/v2, policy/v1
Doc = dict[str, Any]


@cache
def kustomization() -> Doc:
    return yaml.safe_load(KUSTOMIZATION.read_text())


@cache
def documents() -> tuple[Doc, ...]:
    return kustomize(K8S)


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


def settings_map() -> Doc:
    """The ConfigMap ragloop-settings, generated with a hash in its name."""
    return find(documents(), "ConfigMap", "ragloop-settings")


def settings() -> dict[str, str]:
    return settings_map()["data"]


def reads_settings(environment: list[Doc]) -> bool:
    return {"configMapRef": {"name": settings_map()["metadata"]["name"]}} in environment


def service_port(host_port: str) -> tuple[Doc, int]:
    """The Service an address names, and the port it asks for (which the Service must have)."""
    host, port = re.sub(r"^\w+:///?", "", host_port).rsplit(":", 1)
    service = of_kind("Service")[host]
    assert int(port) in {p["port"] for p in service["spec"]["ports"]}, host_port
    return service, int(port)


def test_kustomization_applies_every_manifest_once() -> None:
    manifests = {p.name for p in K8S.glob("*.yaml")} - {KUSTOMIZATION.name, MILVUS_VALUES.name}
    assert sorted(kustomization()["resources"]) == sorted(manifests)
    (generated,) = kustomization()["configMapGenerator"]
    assert generated == {"name": "ragloop-settings", "envs": ["settings.env"]}
    keys = [(d["kind"], d["metadata"]["name"]) for d in documents()]
    assert len(keys) == len(set(keys))


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
    assert reads_settings(spec["envFrom"])
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
    assert backends and all(
        b == {"name": "orchestrator", "port": {"name": "http"}} for b in backends
    )
    service = of_kind("Service")["orchestrator"]
    http = next(p for p in service["spec"]["ports"] if p["name"] == "http")
    assert http["port"] == default("orchestrator", "http_port")
    assert ingress["spec"]["tls"], "the API key travels in a header: TLS only"
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"  # SSE
    secret_sources = [s for s in container(of_kind("Deployment")["orchestrator"])["envFrom"]]
    assert {"secretRef": {"name": "ragloop-api-keys"}} in secret_sources  # not optional
    assert not of_kind("Secret"), "secrets are created by the operator, never committed"


def ingress_routes(ingress: Doc, path: str) -> bool:
    """Whether the Ingress sends ``path`` to a backend, as Kubernetes defines its path types:
    Exact the whole path, Prefix whole path elements."""
    elements = [e for e in path.split("/") if e]
    for rule in ingress["spec"]["rules"]:
        for route in rule["http"]["paths"]:
            if route["pathType"] == "Exact" and route["path"] == path:
                return True
            prefix = [e for e in route["path"].split("/") if e]
            if route["pathType"] == "Prefix" and elements[: len(prefix)] == prefix:
                return True
    return False


def flat_routes(found: list[Any]) -> list[Any]:
    """The routes, those of included routers among them (FastAPI keeps an included router
    whole, as ``original_router``; the routers here have no prefix)."""
    flat = []
    for route in found:
        included = getattr(route, "original_router", None)
        flat += flat_routes(included.routes) if included is not None else [route]
    return flat


def app_paths() -> dict[str, str]:
    """A request path for every route the orchestrator's REST app serves, by its route."""
    paths = {}
    for route in flat_routes(create_app(OrchestratorSettings()).routes):
        sample = re.sub(r"\{[^}]+\}", "x", route.path)
        paths[route.path] = sample if hasattr(route, "endpoint") else f"{sample}/page.js"  # Mount
    return paths


def test_the_ingress_routes_only_the_paths_users_call() -> None:
    """The API (/v1/…, the OpenAI-compatible routes among them) and the page (/, /static/…)
    pass; the rest of what the app serves, which needs no key (metrics, health, readiness, the
    API docs), does not."""
    (ingress,) = of_kind("Ingress").values()
    paths = app_paths()
    public = {t for t in paths if t.startswith("/v1/") or t in {"/", "/static"}}
    assert {"/v1/query", "/v1/chat/completions", "/v1/models", "/static"} <= public
    assert {"/metrics", "/healthz", "/readyz", "/docs", "/openapi.json"} <= set(paths) - public
    for template, path in paths.items():
        assert ingress_routes(ingress, path) == (template in public), template


def test_the_grace_covers_the_longest_work_a_request_can_be_granted() -> None:
    """A rollout cuts no query nor ingest: each process gets, after its drain, a grace at least
    the longest budget a query may ask for and the ingest deadline; Kubernetes and compose wait
    for both before killing it, and the Ingress waits as long for an answer."""
    longest_query = next(
        m.le for m in QueryRequest.model_fields["time_budget_s"].metadata if hasattr(m, "le")
    )
    longest_ingest = OrchestratorSettings.model_fields["ingest_timeout_s"].default
    drain = int(settings()["RAGLOOP_SHUTDOWN_DRAIN_S"])
    grace = int(settings()["RAGLOOP_SHUTDOWN_GRACE_S"])
    assert grace >= max(longest_query, longest_ingest)
    for name, workload in of_kind("Deployment").items():
        assert pod(workload)["spec"]["terminationGracePeriodSeconds"] > drain + grace, name
    (ingress,) = of_kind("Ingress").values()
    for way in ("read", "send"):
        timeout = ingress["metadata"]["annotations"][
            f"nginx.ingress.kubernetes.io/proxy-{way}-timeout"
        ]
        assert int(timeout) > grace
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    assert int(compose["x-common-settings"]["RAGLOOP_SHUTDOWN_GRACE_S"]) == grace
    assert int(compose["x-ragloop"]["stop_grace_period"].removesuffix("s")) > drain + grace


def test_the_orchestrators_admit_no_more_queries_than_the_model_tier_has_slots() -> None:
    ollama = of_kind("StatefulSet")["ollama"]
    parallel = {e["name"]: e for e in container(ollama)["env"]}["OLLAMA_NUM_PARALLEL"]["value"]
    slots = ollama["spec"]["replicas"] * int(parallel)
    scaler = of_kind("HorizontalPodAutoscaler")["orchestrator"]["spec"]
    per_pod = int(settings()["RAGLOOP_MAX_INFLIGHT_QUERIES"])
    assert scaler["maxReplicas"] * per_pod <= slots
    assert scaler["minReplicas"] * per_pod * 2 >= slots, "the minimum leaves the tier idle"


def test_a_release_names_its_images_in_an_overlay_not_the_base() -> None:
    assert "images" not in kustomization(), "a tag in the base is every release's"
    images = {
        c["image"]
        for d in render(EXAMPLE_OVERLAY.parent)
        if d["kind"] == "Deployment"
        for c in pod(d)["spec"]["containers"]
    }
    assert images == {f"registry.example.com/ragloop/{s}:RELEASE" for s in SERVICES}


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
    keys = {e["valueFrom"]["configMapKeyRef"]["key"] for e in pull["env"]}
    assert keys == {
        "RAGLOOP_CHAT_MODEL",
        "RAGLOOP_EMBEDDING_MODEL",
    }  # what it pulls: test_k8s_components
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
