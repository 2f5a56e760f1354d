"""The five ragloop processes started with the RAGLOOP_* environment deploy/docker-compose.yml
gives each of them, as `docker-compose config` resolves it with deploy/.env as `make up` writes
it: a setting compose passes and a service rejects fails here, not at a user's site.

Only what names another container is swapped for its local equivalent (no Docker, Ollama or
Milvus standalone runs here):

- addresses and ports: every service binds 127.0.0.1 on free ports (compose's fixed ones may be
  taken by other stacks on this machine), the orchestrator reaches each stage on its port, and
  metrics ports are free ones;
- Milvus: `milvus-lite server` on a loopback port for `milvus-standalone:19530`;
- the models: compose asks Ollama (`ollama:<chat model>`, `ollama:nomic-embed-text`), for which
  no server exists here, so the chat model becomes the local llama-server's
  (`llamacpp:qwen2.5-coder-1.5b-instruct`, `RAGLOOP_LLAMACPP_URL`) and the embedding model the
  local all-MiniLM-L6-v2 (`local:all-minilm-l6-v2`, for the retriever and the orchestrator
  alike). `RAGLOOP_OLLAMA_URL` points at a loopback port nothing listens on, so a stray Ollama
  call fails at once;
- traces: `RAGLOOP_OTLP_ENDPOINT` (compose's Jaeger) is emptied.

Everything else — the API key init-env.sh generated, log format, grace, limits, every value
deploy/.env passes through — is compose's.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ragloop.core.names import Stage, values
from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import STAGE_SPECS
from ragloop.local.milvus_lite_server import serving_milvus_lite
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import grpc_serving, http_ok
from tests.apt import apt_install
from tests.deploy.compose_helpers import Compose, initialized_env

pytestmark = pytest.mark.integration

STAGES = values(Stage)
SERVICES = (*STAGES, "orchestrator")
STARTUP_S = 180
LOCAL_CHAT_MODEL = f"llamacpp:{QWEN_CODER_1_5B.name}"
LOCAL_EMBEDDING_MODEL = "local:all-minilm-l6-v2"


@dataclass(frozen=True)
class Local:
    """The endpoints that stand in for compose's containers."""

    milvus_uri: str
    llama_url: str
    stage_ports: dict[str, int]
    http_port: int
    grpc_port: int


def compose_environment(tmp_path: Path) -> dict[str, dict[str, str]]:
    """The RAGLOOP_* variables compose gives each ragloop service (unset ones left out)."""
    compose = Compose(apt_install("docker-compose", "docker-compose"))
    services = compose.config(initialized_env(tmp_path / "deploy"))["services"]
    return {
        name: {
            var: str(value)
            for var, value in (services[name].get("environment") or {}).items()
            if var.startswith("RAGLOOP_") and value is not None
        }
        for name in SERVICES
    }


def swapped(service: str, env: dict[str, str], local: Local) -> dict[str, str]:
    """``env`` with the endpoints of compose's containers swapped for ``local``'s."""
    out = dict(env, RAGLOOP_BIND_HOST="127.0.0.1", RAGLOOP_METRICS_PORT=str(free_port()))
    for spec in STAGE_SPECS:
        for variable, value in (
            (setting_variable(spec.port_setting), str(local.stage_ports[spec.name])),
            (setting_variable(spec.address_setting), f"127.0.0.1:{local.stage_ports[spec.name]}"),
        ):
            if variable in out:
                out[variable] = value
    fixed = {
        "RAGLOOP_HTTP_PORT": str(local.http_port),
        "RAGLOOP_ORCHESTRATOR_GRPC_PORT": str(local.grpc_port),
        "RAGLOOP_MILVUS_URI": local.milvus_uri,
        "RAGLOOP_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "RAGLOOP_LLAMACPP_URL": local.llama_url,
        "RAGLOOP_OTLP_ENDPOINT": "",
    }
    out |= {var: value for var, value in fixed.items() if var in out}
    if out.get("RAGLOOP_CHAT_MODEL", "").startswith("ollama:"):
        out["RAGLOOP_CHAT_MODEL"] = LOCAL_CHAT_MODEL
        out["RAGLOOP_LLAMACPP_URL"] = local.llama_url
    if out.get("RAGLOOP_EMBEDDING_MODEL", "").startswith("ollama:"):
        out["RAGLOOP_EMBEDDING_MODEL"] = LOCAL_EMBEDDING_MODEL
    hosts = "|".join(re.escape(s) for s in (*SERVICES, "ollama", "milvus-standalone", "jaeger"))
    left = {var: v for var, v in out.items() if re.search(rf"(^|//|/)({hosts})(:|$)", v)}
    assert not left, f"{service}: a compose address this test does not swap yet: {left}"
    return out


@dataclass(frozen=True)
class Started:
    base_url: str
    api_key: str
    children: dict[str, ChildProcess]


@pytest.fixture(scope="module")
def started(
    tmp_path_factory: pytest.TempPathFactory, llama_url: str
) -> Iterator[tuple[Started, dict[str, dict[str, str]]]]:
    tmp_path = tmp_path_factory.mktemp("compose-env")
    environments = compose_environment(tmp_path)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        for var in [v for v in os.environ if v.startswith("RAGLOOP_")]:
            patch.delenv(var)  # the processes get compose's environment, not this shell's
        milvus = stack.enter_context(
            serving_milvus_lite(tmp_path / "milvus", tmp_path / "milvus.log", timeout_s=60)
        )
        local = Local(milvus, llama_url, {s: free_port() for s in STAGES}, free_port(), free_port())
        given = {name: swapped(name, environments[name], local) for name in SERVICES}
        children: dict[str, ChildProcess] = {}
        for name in SERVICES:
            module = "ragloop.orchestrator" if name == "orchestrator" else f"ragloop.{name}"
            child = ChildProcess(
                name, [sys.executable, "-m", module], tmp_path / f"{name}.log", given[name]
            )
            child.start()
            stack.callback(child.wait_stopped, 20)
            stack.callback(child.signal_stop)
            children[name] = child
        for stage in STAGES:
            address = f"127.0.0.1:{local.stage_ports[stage]}"
            children[stage].wait_until(lambda a=address: grpc_serving(a), timeout_s=STARTUP_S)
        base_url = f"http://127.0.0.1:{local.http_port}"
        children["orchestrator"].wait_until(
            lambda: http_ok(f"{base_url}/readyz"), timeout_s=STARTUP_S
        )
        api_key = environments["orchestrator"]["RAGLOOP_API_KEYS"]
        yield Started(base_url, api_key, children), given


def test_compose_gives_the_services_settings_they_accept_and_they_answer(
    started: tuple[Started, dict[str, dict[str, str]]],
) -> None:
    stack, given = started
    # What compose decides and the processes ran with (not swapped): a key, JSON logs.
    assert stack.api_key and given["orchestrator"]["RAGLOOP_API_KEYS"] == stack.api_key
    refused = httpx.post(f"{stack.base_url}/v1/query", json={"query": "x"}, timeout=30)
    assert refused.status_code == 401, "compose publishes the API: it must require the key"
    headers = {"authorization": f"Bearer {stack.api_key}"}
    document = {
        "source": "storage.md",
        "text": "The retriever owns the Milvus Lite data directory; no other process opens it.",
    }
    ingested = httpx.post(
        f"{stack.base_url}/v1/documents",
        json={"documents": [document]},
        headers=headers,
        timeout=300,
    )
    assert ingested.status_code == 200, ingested.text
    answer = httpx.post(
        f"{stack.base_url}/v1/query",
        json={
            "query": "Which process owns the Milvus Lite data directory?",
            "max_rewrite_attempts": 0,
            "top_k": 3,
        },
        headers=headers,
        timeout=400,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["answer"].strip()
    assert body["workflow"]["decision_path"][:2] == ["retrieve", "grade"]
    assert all(child.running for child in stack.children.values()), {
        name: child.exit_status for name, child in stack.children.items()
    }
