"""deploy/k8s as `kubectl kustomize` renders it: the namespace outside the base (so that
`kubectl delete -k deploy/k8s` cannot delete Milvus's data), and the optional Components for a
cluster without GPUs and for the Prometheus Operator."""

from __future__ import annotations

import re

import pytest
import yaml

from scripts.deploy_files import ALERT_RULES, ragloop_jobs
from tests.deploy.helpers import K8S, SERVICES
from tests.deploy.kustomize import Doc, find, kustomize

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
