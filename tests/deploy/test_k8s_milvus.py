"""Milvus on Kubernetes, closed to everyone but the retriever (issue 56): the NetworkPolicies of
deploy/k8s as `kubectl kustomize` renders them, and deploy/k8s/milvus-values.yaml, which turns
authorization on and takes every credential from a Secret.

No Helm here: the chart is not rendered. The pod labels the policies select are those the charts'
templates write (zilliztech/milvus-helm 4.2: Milvus's `milvus.matchLabels`, Bitnami etcd's
`common.labels.matchLabels`, its MinIO chart's and Apache Pulsar's `app`/`release`), written down
in CHART_POD_LABELS below; that they match a real install is not verified here
(docs/deployment.md, "What was verified")."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
import yaml

from scripts.deploy_files import MONITORING_SELECTOR
from tests.deploy.helpers import K8S, SERVICES, settings_variables
from tests.deploy.kustomize import Doc, find, kustomize

MILVUS_VALUES = K8S / "milvus-values.yaml"
COMPONENTS = tuple(
    K8S / path for path in ("components/ollama-cpu", "components/monitoring", "mtls")
)
MILVUS_GRPC_PORT = 19530
MILVUS_METRICS_PORT = 9091
# The message queues the chart can install, by their values key; each enabled one needs a policy.
MESSAGE_QUEUES = ("pulsarv3", "pulsar", "kafka", "woodpecker")
# What the chart's own Milvus components read from a Secret (Milvus takes an environment variable
# for each configuration key: MINIO_ACCESS_KEY_ID is minio.accessKeyID).
MINIO_VARIABLES = {"MINIO_ACCESS_KEY_ID": "accesskey", "MINIO_SECRET_ACCESS_KEY": "secretkey"}
ROOT_PASSWORD_VARIABLE = "COMMON_SECURITY_DEFAULTROOTPASSWORD"
# The components of Milvus in cluster mode (chart 4.2, Milvus 2.5).
CLUSTER_COMPONENTS = ("proxy", "queryNode", "dataNode", "indexNode", "mixCoordinator")
SECRET_NAME = re.compile(r"TOKEN|PASSWORD|SECRET|API_KEY|ACCESS_KEY", re.IGNORECASE)


@cache
def values() -> dict[str, Any]:
    return yaml.safe_load(MILVUS_VALUES.read_text())


@cache
def release() -> str:
    """The Helm release name, from the install command the values file documents."""
    found = re.search(r"helm upgrade --install (\S+) milvus/milvus", MILVUS_VALUES.read_text())
    assert found, "milvus-values.yaml documents its install command"
    return found[1]


def chart_pod_labels(dependency: str) -> dict[str, str]:
    """The labels every pod of ``dependency`` carries, as the chart's templates write them."""
    by_release = {
        "milvus": {"app.kubernetes.io/name": "milvus", "app.kubernetes.io/instance": release()},
        "etcd": {"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": release()},
        "minio": {"app": "minio", "release": release()},
        "pulsarv3": {"app": "pulsarv3", "release": release()},  # the chart's nameOverride
    }
    if dependency not in by_release:
        raise AssertionError(f"{dependency} is enabled in milvus-values.yaml and has no policy")
    return by_release[dependency]


def enabled_dependencies() -> list[str]:
    """What the values install beside Milvus: etcd and MinIO unless turned off, and the queue."""
    chart_defaults = {"etcd": True, "minio": True, "pulsarv3": True}
    return [
        name
        for name in ("etcd", "minio", *MESSAGE_QUEUES)
        if values().get(name, {}).get("enabled", chart_defaults.get(name, False))
    ]


@cache
def rendered() -> tuple[Doc, ...]:
    return kustomize(K8S, COMPONENTS)


def policies() -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in rendered() if d["kind"] == "NetworkPolicy"}


def policy_for(labels: dict[str, str]) -> Doc:
    (found,) = [
        p for p in policies().values() if p["spec"]["podSelector"] == {"matchLabels": labels}
    ]
    assert found["spec"]["policyTypes"] == ["Ingress"]
    return found


def admits_port(rule: Doc, port: int) -> bool:
    """A rule without ports admits every port."""
    return "ports" not in rule or any(p["port"] == port for p in rule["ports"])


def peer_selectors(rule: Doc) -> list[Doc]:
    """The pod selectors of a rule's sources (a namespace-wide or IP source fails)."""
    peers = rule.get("from")
    assert peers, f"{rule} admits every source"
    for peer in peers:
        assert set(peer) == {"podSelector"}, f"{peer}: only pods of this namespace"
    return [peer["podSelector"] for peer in peers]


def test_the_release_is_the_milvus_the_settings_name() -> None:
    settings = find(kustomize(K8S), "ConfigMap", "ragloop-settings")["data"]
    assert settings["RAGLOOP_MILVUS_URI"] == f"http://{release()}:{MILVUS_GRPC_PORT}"


def test_milvus_and_every_dependency_it_installs_have_a_network_policy() -> None:
    for dependency in ("milvus", *enabled_dependencies()):
        policy_for(chart_pod_labels(dependency))
    assert "pulsarv3" in enabled_dependencies()  # what the values choose today


def test_only_the_retriever_and_milvus_itself_reach_milvus_grpc_port() -> None:
    milvus = chart_pod_labels("milvus")
    rules = policy_for(milvus)["spec"]["ingress"]
    grpc_peers = [
        selector["matchLabels"]
        for rule in rules
        if admits_port(rule, MILVUS_GRPC_PORT)
        for selector in peer_selectors(rule)
    ]
    retriever = {"app.kubernetes.io/name": "retriever"}
    assert sorted(grpc_peers, key=str) == sorted([milvus, retriever], key=str)
    # That selector is the retriever's pods and no other workload's ...
    workloads = [d for d in rendered() if d["kind"] in ("Deployment", "StatefulSet")]
    selected = [
        w["metadata"]["name"]
        for w in workloads
        if retriever.items() <= w["spec"]["template"]["metadata"]["labels"].items()
    ]
    assert selected == ["retriever"]
    # ... the one service that reads Milvus's address.
    assert [s for s in SERVICES if "RAGLOOP_MILVUS_URI" in settings_variables(s)] == ["retriever"]
    # The cluster (Prometheus) reaches the metrics port and nothing else.
    open_rules = [r for r in rules if any("namespaceSelector" in p for p in r.get("from", []))]
    assert [r["ports"] for r in open_rules] == [[{"port": MILVUS_METRICS_PORT}]]


@pytest.mark.parametrize("dependency", enabled_dependencies())
def test_a_dependency_admits_milvus_and_its_own_pods_only(dependency: str) -> None:
    own = chart_pod_labels(dependency)
    allowed = [chart_pod_labels("milvus"), own]
    for rule in policy_for(own)["spec"]["ingress"]:
        for selector in peer_selectors(rule):
            if "matchExpressions" in selector:  # Pulsar's initialisation Jobs, by their names
                (job,) = selector["matchExpressions"]
                assert dependency == "pulsarv3" and job["key"] == "batch.kubernetes.io/job-name"
                assert all(name.startswith(f"{release()}-pulsarv3-") for name in job["values"])
            else:
                assert selector["matchLabels"] in allowed, f"{dependency}: {selector}"


def test_milvus_values_turn_authorization_on() -> None:
    user = yaml.safe_load(values()["extraConfigFiles"]["user.yaml"])
    assert user["common"]["security"]["authorizationEnabled"] is True


def secret_ref(component: str, variable: str) -> dict[str, str]:
    (entry,) = [e for e in values()[component]["extraEnv"] if e["name"] == variable]
    assert "value" not in entry, f"{component}: {variable} written in the values"
    return entry["valueFrom"]["secretKeyRef"]


@pytest.mark.parametrize("component", CLUSTER_COMPONENTS)
def test_each_milvus_component_reads_minio_and_root_credentials_from_secrets(
    component: str,
) -> None:
    minio_secret = values()["minio"]["existingSecret"]
    for variable, key in MINIO_VARIABLES.items():
        assert secret_ref(component, variable) == {"name": minio_secret, "key": key}
    # The root password sits in the Secret whose token the retriever sends.
    retriever = find(kustomize(K8S), "Deployment", "retriever")
    (container,) = retriever["spec"]["template"]["spec"]["containers"]
    token = {e["name"]: e for e in container["env"]}["RAGLOOP_MILVUS_TOKEN"]
    token_secret = token["valueFrom"]["secretKeyRef"]["name"]
    assert secret_ref(component, ROOT_PASSWORD_VARIABLE)["name"] == token_secret


def test_no_credential_is_written_in_the_milvus_values() -> None:
    minio = values()["minio"]
    assert minio["existingSecret"]
    # Empty, the chart writes no key into Milvus's ConfigMap (config.tpl: minio.accessKeyID).
    assert (minio["accessKey"], minio["secretKey"]) == ("", "")
    assert "minioadmin" not in MILVUS_VALUES.read_text()
    for component in CLUSTER_COMPONENTS:
        for entry in values()[component].get("extraEnv", []):
            if SECRET_NAME.search(entry["name"]):
                assert "value" not in entry, f"{component}: {entry['name']}"


def test_no_config_map_holds_secret_material() -> None:
    for config_map in (d for d in rendered() if d["kind"] == "ConfigMap"):
        for key, value in (config_map.get("data") or {}).items():
            if SECRET_NAME.search(key):
                assert not value, f"{config_map['metadata']['name']}: {key} has a value"
            assert "minioadmin" not in str(value)


def test_milvus_service_monitor_carries_the_monitoring_selector() -> None:
    """Milvus's ServiceMonitor (its chart's) is selected by the same label as ragloop's
    PodMonitors and rules, one definition: MONITORING_SELECTOR."""
    service_monitor = values()["metrics"]["serviceMonitor"]
    assert service_monitor["enabled"] is True
    assert service_monitor["additionalLabels"] == MONITORING_SELECTOR
