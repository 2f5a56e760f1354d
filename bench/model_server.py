"""One llama-server at a time for the model benchmarks, started the way ``make run`` starts it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import ROOT
from ragloop.local.model_server import model_server_command
from ragloop.local.models import SplitModel, ensure_model
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok

MODELS_DIR = Path(os.environ.get("RAGLOOP_MODELS_DIR", ROOT / ".models"))
CONTEXT_TOKENS = 8192  # as `make run`: five abstracts in one batched grading call fit


@contextmanager
def llama_server(model: SplitModel, log_dir: Path) -> Iterator[str]:
    """Serve ``model`` on a free 127.0.0.1 port; yield its base URL; stop it on exit."""
    path = ensure_model(model, MODELS_DIR)
    port = free_port()
    child = ChildProcess(
        "model-server",
        model_server_command(
            path, host="127.0.0.1", port=port, threads=os.cpu_count() or 2, context=CONTEXT_TOKENS
        ),
        log_dir / f"{model.name}.log",
    )
    child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_until(lambda: http_ok(f"{url}/health"), timeout_s=180)
        yield url
    finally:
        child.signal_stop()
        child.wait_stopped(10)
