"""The real processes, started as `make run` starts them (each stage and the orchestrator its
own process; the chat model a fake OpenAI-compatible server in this test, so no model runs):
every port listens on 127.0.0.1 only by default, and no secret — an API key of the REST API,
the OpenAI-compatible server's key — appears in any process's log, at log level DEBUG, after
requests with the key, with a wrong key and without one."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator

import httpx
import pytest

from bench.local_http import serving_http
from tests.hostile.processes import STAGES, Processes, listening_addresses, start_processes
from tests.service.test_openai_provider import FakeOpenAI, reset_fake_openai

API_KEY = "hostile-rest-key-6b1f0c2e9d8a4b7f"
OPENAI_KEY = "sk-hostile-openai-3e5d7c9b1a2f4e6d"


@pytest.fixture(scope="module")
def openai_url() -> Iterator[str]:
    reset_fake_openai()
    with serving_http(FakeOpenAI) as url:
        yield url


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory, openai_url: str) -> Iterator[Processes]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("RAGLOOP_BIND_HOST", raising=False)  # the default is what is tested
        base = tmp_path_factory.mktemp("processes")
        env = {
            "RAGLOOP_LOG_LEVEL": "DEBUG",
            "RAGLOOP_API_KEYS": API_KEY,
            "RAGLOOP_CHAT_MODEL": "openai:fake-model",
            "RAGLOOP_OPENAI_URL": f"{openai_url}/v1",
            "RAGLOOP_OPENAI_API_KEY": OPENAI_KEY,
            "RAGLOOP_MILVUS_URI": str(base / "milvus.db"),
        }
        FakeOpenAI.api_key = OPENAI_KEY  # refuses calls without it: the key must reach it
        running = Processes()
        try:
            running = start_processes(base / "logs", env)
            yield running
        finally:
            running.stop()


def test_every_port_listens_on_loopback_only_by_default(processes: Processes) -> None:
    for name, port in processes.ports.items():
        assert listening_addresses(port) == {"127.0.0.1"}, name
    elsewhere = non_loopback_address()
    if elsewhere is None:
        return  # no other interface to try; /proc/net/tcp said enough
    for name, port in processes.ports.items():
        with pytest.raises(ConnectionRefusedError), socket.socket() as sock:
            sock.settimeout(5)
            sock.connect((elsewhere, port))
        assert name


def non_loopback_address() -> str | None:
    """This machine's address on its default route, if it has one that is not loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.255", 9))  # TEST-NET-1: nothing is sent over UDP connect
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_no_secret_appears_in_any_log(processes: Processes) -> None:
    url = processes.base_url
    with httpx.Client(base_url=url, timeout=120) as client:
        keyed = {"authorization": f"Bearer {API_KEY}"}
        document = {"source": "cats.md", "text": "Cats sleep up to sixteen hours a day."}
        ingested = client.post("/v1/documents", json={"documents": [document]}, headers=keyed)
        assert ingested.status_code == 200, ingested.text
        question = {"query": "How long do cats sleep?", "max_rewrite_attempts": 0}
        answered = client.post("/v1/query", json=question, headers=keyed)
        assert answered.status_code == 200, answered.text
        streamed = client.post("/v1/query/stream", json=question, headers=keyed)
        assert streamed.status_code == 200, streamed.text
        assert client.post("/v1/query", json=question).status_code == 401
        wrong = {"authorization": f"Bearer {API_KEY}x"}
        assert client.post("/v1/query", json=question, headers=wrong).status_code == 401
        metrics = client.get("/metrics").text

    # The model server was called with its key: the secret was in use, not merely configured.
    keys_sent = {headers.get("authorization") for _, headers, _ in FakeOpenAI.requests}
    assert keys_sent == {f"Bearer {OPENAI_KEY}"}
    logs = processes.logs()
    assert set(logs) == {*STAGES, "orchestrator"}
    # Keys are logged, by the first 8 hex characters of their sha256 only.
    assert hashlib.sha256(API_KEY.encode()).hexdigest()[:8] in logs["orchestrator"]
    assert "request with an unknown API key refused" in logs["orchestrator"]
    for secret in (API_KEY, OPENAI_KEY):
        for name, text in logs.items():
            assert secret not in text, f"{name}'s log holds a secret"
        assert secret not in metrics
