"""Fixtures shared by the service and integration tests: the real local chat model server and
the real embedding model. Everything listens on 127.0.0.1 only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloop.local.model_server import serving_model
from ragloop.local.models import QWEN_CODER_1_5B, ensure_model

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = Path(os.environ.get("RAGLOOP_MODELS_DIR", REPO_ROOT / ".models"))


@pytest.fixture(scope="session")
def model_path() -> Path:
    return ensure_model(QWEN_CODER_1_5B, MODELS_DIR)


@pytest.fixture(scope="session")
def llama_url(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama.cpp server with the real chat model, for the whole session."""
    log_path = tmp_path_factory.mktemp("logs") / "model-server.log"
    with serving_model(model_path, log_path) as served:
        yield served.url


@pytest.fixture(scope="session")
def embedder():
    from ragloop.core.models.embeddings import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()
