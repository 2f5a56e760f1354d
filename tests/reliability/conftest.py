"""Fixtures of the fault tests: the five real processes (as `make run` starts them, Milvus Lite
embedded in the retriever) over a scripted chat model, and the session's tally of damage."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloop.local.launcher import STAGES, Stack, StackConfig
from tests.conftest import MODELS_DIR
from tests.reliability.pki import Pki, make_pki
from tests.reliability.scripted_model import ScriptedModel
from tests.reliability.tally import Tally

CORPUS = {
    "notes/cats.md": "Cats sleep up to sixteen hours a day. They groom themselves often.",
    "notes/dogs.md": "Dogs need a walk every day. Most dogs sleep about twelve hours a day.",
    "notes/owls.md": "Owls hunt at night. An owl can turn its head about 270 degrees.",
}
QUESTION = "How long do cats sleep?"
STAGE_TIMEOUT_S = 5  # the orchestrator's longest wait for one stage call
# Stage settings of the fault stack: small chunks and write batches, so that a large file is
# many batches and a crash lands in the middle of one; a short stage timeout and cool-down of
# the breaker; no grade cache and no model retries.
STACK_ENV = {
    "RAGLOOP_CHUNK_SIZE": "300",
    "RAGLOOP_CHUNK_OVERLAP": "50",
    "RAGLOOP_INGEST_BATCH_CHUNKS": "32",
    "RAGLOOP_STAGE_CIRCUIT_COOLDOWN_S": "1",
    "RAGLOOP_STAGE_TIMEOUT_S": str(STAGE_TIMEOUT_S),
    "RAGLOOP_GRADER_CACHE_SIZE": "0",  # every query's grading reaches the model (and a hold)
    "RAGLOOP_MODEL_RETRIES": "0",
    "RAGLOOP_LOG_JSON": "true",
}


@pytest.fixture(scope="session")
def tally() -> Iterator[Tally]:
    found = Tally()
    yield found
    found.write()


@pytest.fixture(scope="package")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Authorities and certificates made with openssl for the TLS tests."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="package")
def scripted_model() -> Iterator[ScriptedModel]:
    with ScriptedModel().serving() as model:
        yield model


@pytest.fixture(scope="package")
def fault_stack(
    scripted_model: ScriptedModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The orchestrator and the four stages as separate processes on free loopback ports, with
    the sample corpus ingested."""
    with scripted_stack(
        scripted_model, tmp_path_factory.mktemp("fault-stack"), dict.fromkeys(STAGES, 0)
    ) as stack:
        yield stack


@contextmanager
def scripted_stack(
    model: ScriptedModel,
    base: Path,
    metrics_ports: dict[str, int],
    *,
    env: dict[str, str] | None = None,
    **settings: Any,
) -> Iterator[Stack]:
    """A stack over the scripted model with the sample corpus ingested; ``env`` is added to
    STACK_ENV, ``settings`` are other StackConfig fields."""
    config = StackConfig.on_free_ports(
        base,
        models_dir=MODELS_DIR,
        metrics_ports=metrics_ports,
        model_url=model.url,
        extra_env={**STACK_ENV, **(env or {})},
        startup_timeout_s=120,
        **settings,
    )
    stack = Stack(config)
    stack.start()
    try:
        documents = [{"source": s, "text": t} for s, t in CORPUS.items()]
        response = httpx.post(
            f"{config.base_url}/v1/documents", json={"documents": documents}, timeout=60
        )
        assert response.status_code == 200, response.text
        yield stack
    finally:
        stack.stop()


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return False


def milvus_lite_path(stack: Stack) -> str:
    return str((stack.config.data_dir / "milvus.db").resolve())
