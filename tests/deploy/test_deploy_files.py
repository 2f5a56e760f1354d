"""The stages' parts of the deployment files are what `make deploy-files` writes from the stage
registry (scripts/deploy_files.py): committed as generated, and a new registry row reaches every
one of them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragloop.core.names import Stage
from ragloop.core.stage_registry import STAGE_SPECS, stage_spec
from scripts import deploy_files
from tests.deploy.helpers import COMPOSE_FILE, DEPLOY, K8S


def test_the_committed_files_are_what_make_deploy_files_writes() -> None:
    for path, text in deploy_files.generated().items():
        assert path.read_text() == text, f"{path.relative_to(DEPLOY)}: run `make deploy-files`"
    assert not deploy_files.stale_manifests(), "run `make deploy-files`"


def test_each_generated_manifest_says_so() -> None:
    for spec in STAGE_SPECS:
        head = (K8S / f"{spec.name}.yaml").read_text().splitlines()[:2]
        assert head[0].startswith(deploy_files.GENERATED_MANIFEST)
        assert "make deploy-files" in head[0] and "not this file" in head[1]


@dataclass(frozen=True)
class FakeSpec:
    """A registry row of a stage that does not exist: the rewriter's service under a new name."""

    name: str
    port: int
    metrics_port: int

    @property
    def port_setting(self) -> str:
        return "rewriter_port"

    @property
    def address_setting(self) -> str:
        return f"{self.name}_address"

    @property
    def settings_class(self) -> type:
        return stage_spec(Stage.REWRITER).settings_class

    @property
    def grpc_services(self) -> list[str]:
        return ["ragloop.v1.RerankerService"]


@pytest.fixture
def with_a_reranker(monkeypatch: pytest.MonkeyPatch) -> dict[Path, str]:
    reranker = FakeSpec("reranker", 50055, 9105)
    monkeypatch.setattr(deploy_files, "STAGE_SPECS", (*STAGE_SPECS, reranker))
    monkeypatch.setattr(deploy_files, "role", lambda spec: f"the {spec.name}")
    return deploy_files.generated()


def test_a_new_registry_row_reaches_every_deployment_file(with_a_reranker: dict[Path, str]) -> None:
    files = {path.relative_to(DEPLOY).as_posix(): text for path, text in with_a_reranker.items()}
    compose = yaml.safe_load(files["docker-compose.yml"])["services"]
    reranker = compose["reranker"]
    assert reranker["build"]["args"]["SERVICE"] == "reranker"
    assert reranker["expose"] == ["50055", "9105"]
    assert reranker["environment"]["RAGLOOP_REWRITER_REASONING"] is None  # its own settings
    assert "ollama-pull" in reranker["depends_on"]  # a chat stage waits for the models
    assert reranker["deploy"]["resources"]["limits"]["memory"] == "1g"  # a model stage's
    orchestrator = compose["orchestrator"]
    assert orchestrator["environment"]["RAGLOOP_RERANKER_ADDRESS"] == "dns:///reranker:50055"
    assert "reranker" in orchestrator["depends_on"]

    manifest = list(yaml.safe_load_all(files["k8s/reranker.yaml"]))
    assert {d["kind"] for d in manifest} >= {"Deployment", "Service", "HorizontalPodAutoscaler"}
    kustomization = yaml.safe_load(files["k8s/kustomization.yaml"])
    assert "reranker.yaml" in kustomization["resources"]
    overlay = yaml.safe_load(files["k8s-overlays/example/kustomization.yaml"])
    assert "ragloop-reranker" in {image["name"] for image in overlay["images"]}
    assert "RAGLOOP_RERANKER_ADDRESS=dns:///reranker:50055\n" in files["k8s/settings.env"]

    mtls = yaml.safe_load(files["docker-compose.mtls.yml"])["services"]["reranker"]
    assert mtls["healthcheck"]["test"][-2:] == ["--tls-server-name", "reranker"]
    component = yaml.safe_load(files["k8s/mtls/kustomization.yaml"])
    patched = [yaml.safe_load(p["patch"])["metadata"]["name"] for p in component["patches"]]
    assert "reranker" in patched

    jobs = yaml.safe_load(files["prometheus/prometheus.yml"])["scrape_configs"]
    reranker_job = {"names": ["reranker"], "type": "A", "port": 9105, "refresh_interval": "15s"}
    assert {"job_name": "reranker", "dns_sd_configs": [reranker_job]} in jobs
    rules = {r["alert"]: r["expr"] for r in _alert_rules(files["prometheus/alert-rules.yml"])}
    assert "|reranker" in rules["RagloopServiceDown"]
    assert rules["RagloopServiceAbsent"].endswith(' or absent(up{job="reranker"})')
    operator_rule = yaml.safe_load(files["k8s/components/monitoring/prometheus-rule.yaml"])
    assert "|reranker" in operator_rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert "RerankerService" in rules["RagloopModelStageLatencyHigh"]
    dashboard = json.loads(files["grafana/dashboards/ragloop-stages.json"])
    assert "|reranker" in json.dumps(dashboard)


def test_a_region_without_its_markers_is_refused(tmp_path: Path) -> None:
    text = COMPOSE_FILE.read_text().replace("# end stage-addresses", "# the end")
    with pytest.raises(ValueError, match="stage-addresses"):
        deploy_files.with_regions_filled(COMPOSE_FILE, text)


def _alert_rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


@pytest.mark.parametrize(
    ("tier", "per_pod", "replicas"),
    [
        (deploy_files.GPU_TIER, 2, (2, 4)),  # 2 Ollama pods × 4 slots
        (deploy_files.CPU_TIER, 1, (2, 2)),  # 2 × 1
        (deploy_files.ModelTier(replicas=4, parallel=4), 4, (2, 4)),
        (deploy_files.ModelTier(replicas=3, parallel=1), 1, (2, 3)),
    ],
)
def test_admission_follows_from_the_model_tiers_slots(
    tier: deploy_files.ModelTier, per_pod: int, replicas: tuple[int, int]
) -> None:
    """All the orchestrator pods the HPA may run, each full, hold no more queries than the tier
    has slots; at its minimum at least half of them."""
    admission = deploy_files.Admission(tier)
    assert (admission.per_pod, (admission.min_replicas, admission.max_replicas)) == (
        per_pod,
        replicas,
    )
    assert admission.max_replicas * admission.per_pod <= tier.slots
    assert 2 * admission.min_replicas * admission.per_pod >= tier.slots


def test_a_tier_with_fewer_slots_than_orchestrator_pods_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer slots"):
        deploy_files.Admission(deploy_files.ModelTier(replicas=1, parallel=1))


def test_the_files_carry_the_generated_admission_and_grace() -> None:
    settings = (K8S / "settings.env").read_text()
    admission = deploy_files.Admission(deploy_files.GPU_TIER)
    assert f"RAGLOOP_MAX_INFLIGHT_QUERIES={admission.per_pod}\n" in settings
    assert f"RAGLOOP_SHUTDOWN_GRACE_S={deploy_files.SHUTDOWN.grace_s}\n" in settings
    assert deploy_files.SHUTDOWN.grace_s >= deploy_files.longest_query_budget_s() == 600
    assert deploy_files.SHUTDOWN.grace_s >= deploy_files.longest_ingest_s() == 3600


DEPLOYMENT_DOC = DEPLOY.parent / "docs" / "deployment.md"


def test_the_deployment_docs_name_only_files_that_exist() -> None:
    named = set(re.findall(r"`(deploy/[\w./-]*\w/?)", DEPLOYMENT_DOC.read_text()))
    # What the user makes: certificates, deploy/.env, an overlay of their own.
    named = {
        p
        for p in named
        if not p.startswith(("deploy/tls", "deploy/.env", "deploy/k8s-overlays/prod"))
    }
    assert "deploy/k8s-overlays/example" in named
    missing = sorted(path for path in named if not (DEPLOY.parent / path).exists())
    assert not missing, f"docs/deployment.md names {missing}"


def test_the_deployment_docs_give_the_generated_timings() -> None:
    text = DEPLOYMENT_DOC.read_text()
    section = text[text.index("## Draining on shutdown") :]
    shutdown = deploy_files.SHUTDOWN
    for figure in (shutdown.grace_s, shutdown.kill_after_s, shutdown.proxy_timeout_s):
        assert f"({figure:,} s)" in section, figure
