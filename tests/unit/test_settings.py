"""Settings come from RAGLOOP_* variables when created, and every one of them is documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ragloop.core.stage_registry import STAGE_SPECS
from ragloop.grader.settings import GraderSettings
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.settings import RetrieverSettings

ROOT = Path(__file__).resolve().parents[2]
ALL_SETTINGS = [*(spec.settings_class for spec in STAGE_SPECS), OrchestratorSettings]


def test_values_come_from_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOP_TOP_K", "7")
    monkeypatch.setenv("RAGLOOP_CHAT_MODEL", "ollama:qwen2.5:7b-instruct")
    assert OrchestratorSettings().top_k == 7
    assert GraderSettings().chat_model == "ollama:qwen2.5:7b-instruct"


def test_invalid_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOP_TOP_K", "0")
    with pytest.raises(ValidationError):
        OrchestratorSettings()
    with pytest.raises(ValidationError, match="chunk_overlap"):
        RetrieverSettings(chunk_size=200, chunk_overlap=200)


@pytest.mark.parametrize("settings_type", ALL_SETTINGS)
def test_every_setting_is_in_env_example_and_configuration_doc(settings_type: type) -> None:
    env_example = (ROOT / "deploy" / ".env.example").read_text()
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    for name in settings_type.model_fields:
        variable = f"RAGLOOP_{name.upper()}"
        assert f"{variable}=" in env_example, f"{variable} missing from deploy/.env.example"
        assert variable in configuration, f"{variable} missing from docs/configuration.md's table"
