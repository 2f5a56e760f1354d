"""One llama-server at a time for the model benchmarks, started the way ``make run`` starts it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import ROOT
from ragloop.local.model_server import serving_model
from ragloop.local.models import SplitModel, ensure_model

MODELS_DIR = Path(os.environ.get("RAGLOOP_MODELS_DIR", ROOT / ".models"))
CONTEXT_TOKENS = 8192  # as `make run`: five abstracts in one batched grading call fit


@contextmanager
def llama_server(model: SplitModel, log_dir: Path) -> Iterator[str]:
    """Serve ``model`` on a free 127.0.0.1 port; yield its base URL; stop it on exit."""
    path = ensure_model(model, MODELS_DIR)
    with serving_model(path, log_dir / f"{model.name}.log", context=CONTEXT_TOKENS) as served:
        yield served.url
