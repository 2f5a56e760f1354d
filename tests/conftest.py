"""Fixtures shared by the service and integration tests: the real local chat model server and
the real embedding model. Everything listens on 127.0.0.1 only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloop.local.model_server import model_server_command
from ragloop.local.models import QWEN_CODER_1_5B, ensure_model
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = Path(os.environ.get("RAGLOOP_MODELS_DIR", REPO_ROOT / ".models"))


@pytest.fixture(scope="session")
def model_path() -> Path:
    return ensure_model(QWEN_CODER_1_5B, MODELS_DIR)


@pytest.fixture(scope="session")
def llama_url(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama.cpp server with the real chat model, for the whole session."""
    port = free_port()
    child = ChildProcess(
        "model-server",
        model_server_command(
            model_path, host="127.0.0.1", port=port, threads=os.cpu_count() or 2, context=8192
        ),
        tmp_path_factory.mktemp("logs") / "model-server.log",
    )
    child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_until(lambda: http_ok(f"{url}/health"), timeout_s=120)
        yield url
    finally:
        child.signal_stop()
        child.wait_stopped(10)


@pytest.fixture(scope="session")
def embedder():
    from ragloop.core.models.embeddings import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()
