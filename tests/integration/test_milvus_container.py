"""The retriever's hybrid path (BM25 + dense) against the official Milvus standalone image
(embedded etcd, local storage) run by testcontainers, where a Docker engine is reachable;
skipped, saying why, where none is. Override the image with ``RAGLOOP_MILVUS_IMAGE``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from docker.errors import DockerException
from requests.exceptions import RequestException

from ragloop.v1 import retriever_pb2
from tests.service.retriever_helpers import ingest, retrieve, retriever_stub, source, sources

pytestmark = pytest.mark.milvus_server

IMAGE = os.environ.get("RAGLOOP_MILVUS_IMAGE", "milvusdb/milvus:v2.5.26")
DOCKER_PING_TIMEOUT_S = 5
STARTUP_TIMEOUT_S = 300

CODE = "The deployment failed with error XQ-7731 after the nightly build."
KITTENS = "Kittens play with yarn and sleep in warm places during the afternoon."
DOGS = "Dogs are loyal companions that enjoy long walks in the park."
BREAD = "Sourdough bread rises thanks to wild yeast in the starter."


def docker_engine_problem() -> str | None:
    """Why no Docker engine is reachable (None when one answers a ping), found the way
    testcontainers finds it and bounded by a short timeout."""
    from testcontainers.core.docker_client import DockerClient, get_docker_host

    where = get_docker_host() or "the default socket unix:///var/run/docker.sock"
    try:
        client = DockerClient(timeout=DOCKER_PING_TIMEOUT_S)
        try:
            client.client.ping()
        finally:
            client.client.close()
    except (DockerException, RequestException, OSError) as exc:
        return (
            f"no Docker engine reachable at {where} (testcontainers' Docker client could not "
            f"ping it within {DOCKER_PING_TIMEOUT_S} s: {exc})"
        )
    return None


@pytest.fixture(scope="module")
def milvus_container_uri() -> Iterator[str]:
    problem = docker_engine_problem()
    if problem is not None:
        pytest.skip(problem)
    from testcontainers.community.milvus import MilvusContainer
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    container = MilvusContainer(IMAGE)
    health = HttpWaitStrategy(container.healthcheck_port, "/healthz")
    container.waiting_for(health.with_startup_timeout(STARTUP_TIMEOUT_S))
    for port in (container.port, container.healthcheck_port):
        container.ports[str(port)] = ("127.0.0.1", None)  # a random port on loopback only
    with container:
        yield f"http://127.0.0.1:{container.get_exposed_port(container.port)}"


async def test_hybrid_retrieval_with_bm25_tenants_and_stemming(milvus_container_uri: str) -> None:
    async with retriever_stub(milvus_container_uri) as stub:
        docs = [source("code.md", CODE), source("kittens.md", KITTENS), source("dogs.md", DOGS)]
        await ingest(stub, *docs, source("bread.md", BREAD))
        described = await stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest())
        assert (described.full_text, described.tenants, described.chunk_count) == (True, True, 4)

        sparse = await retrieve(stub, "XQ-7731", mode="sparse")
        assert sources(sparse) == ["code.md"]
        hybrid = await retrieve(stub, "XQ-7731", top_k=2, mode="hybrid")
        assert sources(hybrid)[0] == "code.md"
        assert hybrid.mode == retriever_pb2.RETRIEVAL_MODE_HYBRID
        default = await retrieve(stub, "young cats napping", top_k=1)
        assert default.mode == retriever_pb2.RETRIEVAL_MODE_HYBRID
        assert sources(default) == ["kittens.md"]
        # A server stems English: "deployments failing" shares no word with the passage.
        stemmed = await retrieve(stub, "deployments failing", mode="sparse")
        assert sources(stemmed) == ["code.md"]

        await ingest(stub, source("notes.md", "Kittens nap after lunch."), tenant="acme")
        acme = await retrieve(stub, "kittens", top_k=5, mode="hybrid", tenant="acme")
        assert sources(acme) == ["notes.md"]
        deleted = await stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="code.md"))
        assert deleted.chunks_deleted == 1
        assert list((await retrieve(stub, "XQ-7731", mode="sparse")).documents) == []
