"""One llama-server at a time for the model benchmarks, started the way ``make run`` starts it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import ROOT
from ragloop.local.model_server import MODEL_SLOTS, serving_model
from ragloop.local.models import SplitModel, ensure_model

MODELS_DIR = Path(os.environ.get("RAGLOOP_MODELS_DIR", ROOT / ".models"))
CONTEXT_TOKENS = 8192  # as `make run`: five abstracts in one batched grading call fit


@contextmanager
def llama_server(model: SplitModel, log_dir: Path, slots: int = MODEL_SLOTS) -> Iterator[str]:
    """Serve ``model`` on a free 127.0.0.1 port with ``slots`` requests at once; yield its base
    URL; stop it on exit."""
    path = ensure_model(model, MODELS_DIR)
    log = log_dir / f"{model.name}.log"
    with serving_model(path, log, context=CONTEXT_TOKENS, slots=slots) as served:
        yield served.url
