"""The slots `make run` starts llama-server with, and the grader asking as many model calls at
once (unless RAGLOOP_GRADER_CONCURRENCY says otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloop.local.launcher import Stack, StackConfig
from ragloop.local.model_server import MODEL_SLOTS, model_server_command


def test_make_run_starts_llama_server_with_the_default_slots() -> None:
    assert StackConfig().model_slots == MODEL_SLOTS
    command = model_server_command(Path("m.gguf"), host="h", port=1, threads=2, context=4096)
    assert command[command.index("--parallel") + 1] == str(MODEL_SLOTS)


def test_the_grader_asks_as_many_calls_at_once_as_there_are_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAGLOOP_GRADER_CONCURRENCY", raising=False)
    assert Stack(StackConfig(model_slots=4))._service_env()["RAGLOOP_GRADER_CONCURRENCY"] == "4"
    monkeypatch.setenv("RAGLOOP_GRADER_CONCURRENCY", "2")
    assert Stack(StackConfig(model_slots=4))._service_env()["RAGLOOP_GRADER_CONCURRENCY"] == "2"
