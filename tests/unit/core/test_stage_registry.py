"""The stage registry and what is built from it rather than spelled out per stage: the stages'
settings, the orchestrator's address settings and its remote clients."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from ragloop.core.names import Stage
from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import STAGE_SPECS, StageSpec, stage_spec
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages import calls, remote
from ragloop.orchestrator.stages.clients import REMOTE_CLIENTS
from ragloop.orchestrator.stages.remote import remote_stages


def test_every_stage_has_one_row_with_ports_of_its_own() -> None:
    assert [spec.name for spec in STAGE_SPECS] == list(Stage)
    for ports in ([s.port for s in STAGE_SPECS], [s.metrics_port for s in STAGE_SPECS]):
        assert len(set(ports)) == len(ports)
    assert stage_spec("grader") is stage_spec(Stage.GRADER)


@pytest.mark.parametrize("spec", STAGE_SPECS, ids=str)
def test_each_stage_reads_its_port_and_serves_its_service(spec: StageSpec) -> None:
    field = spec.settings_class.model_fields[spec.port_setting]
    assert field.default == spec.port
    assert spec.grpc_services == [f"ragloop.v1.{spec.name.capitalize()}Service"]
    assert spec.stub.__name__ == f"{spec.name.capitalize()}ServiceStub"


def test_the_orchestrator_has_an_address_setting_per_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = OrchestratorSettings()
    for spec in STAGE_SPECS:
        assert defaults.stage_address(spec.name) == f"127.0.0.1:{spec.port}"
        monkeypatch.setenv(setting_variable(spec.address_setting), f"{spec.name}:1")
    configured = OrchestratorSettings()
    assert [configured.stage_address(s.name) for s in STAGE_SPECS] == [
        f"{s.name}:1" for s in STAGE_SPECS
    ]


def test_every_stage_has_a_client_and_a_place_in_the_loop() -> None:
    assert set(REMOTE_CLIENTS) == set(Stage)
    assert all(client.stage is stage for stage, client in REMOTE_CLIENTS.items())
    # remote_stages() passes each stage's client by its name.
    assert {f.name for f in fields(LoopStages)} == set(Stage)


async def test_remote_stages_builds_each_client_on_its_own_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[str] = []

    def open_stage_channel(address: str, **options: Any) -> calls.StageChannel:
        opened.append(address)
        return calls.open_stage_channel(address, **options)

    monkeypatch.setattr(remote, "open_stage_channel", open_stage_channel)
    settings = OrchestratorSettings(
        **{spec.address_setting: f"{spec.name}:{spec.port}" for spec in STAGE_SPECS},
        ingest_timeout_s=99,
    )
    stages = remote_stages(settings)
    try:
        assert opened == [f"{spec.name}:{spec.port}" for spec in STAGE_SPECS]
        assert list(stages.health_checks) == list(Stage)
        for spec in STAGE_SPECS:
            assert isinstance(getattr(stages, spec.name), REMOTE_CLIENTS[spec.name])
        assert stages.ingestor is stages.retriever
        assert stages.retriever._ingest_timeout_s == 99
    finally:
        await stages.close()
