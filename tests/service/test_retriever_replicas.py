"""Read-your-writes across retriever replicas: two retriever processes share one Milvus server,
as the Kubernetes Deployment's pods do, and a write on one is seen by the other's very next read
(every read is Strong: docs/decisions/0023-read-your-writes-across-replicas.md). On Milvus Lite's
TCP server and on a real Milvus 2.3.5 standalone server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import grpc
import pytest

from ragloop.core.names import Stage
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc
from tests.stage_process import SERVING, stage_process, wait_for_health

COLLECTION = "replicas"
ROUNDS = 5  # a write, then the other replica's read, again and again: one miss fails
STARTUP_S = 120


@pytest.fixture(params=["milvus_server", "milvus_235_uri"])
def milvus(request: pytest.FixtureRequest) -> str:
    """Milvus Lite's TCP server, or Milvus 2.3.5: the http URI both replicas use."""
    return str(request.getfixturevalue(request.param))


@pytest.fixture
def replicas(
    milvus: str, tmp_path: Path
) -> Iterator[list[retriever_pb2_grpc.RetrieverServiceStub]]:
    env = {"RAGLOOP_MILVUS_URI": milvus, "RAGLOOP_SHUTDOWN_GRACE_S": "5"}
    with ExitStack() as stack:
        stubs = []
        for _ in range(2):
            child, address = stack.enter_context(stage_process(Stage.RETRIEVER, tmp_path, env))
            wait_for_health(child, address, lambda status: status == SERVING, STARTUP_S)
            channel = stack.enter_context(grpc.insecure_channel(address))
            stubs.append(retriever_pb2_grpc.RetrieverServiceStub(channel))
        yield stubs
        stubs[0].DropCollection(retriever_pb2.DropCollectionRequest(collection=COLLECTION))


def found_sources(stub: retriever_pb2_grpc.RetrieverServiceStub, query: str) -> list[str]:
    reply = stub.Retrieve(
        retriever_pb2.RetrieveRequest(
            query=query, top_k=10, similarity_threshold=0.0, collection=COLLECTION
        ),
        timeout=30,
    )
    return [d.source for d in reply.documents]


def chunk_count(stub: retriever_pb2_grpc.RetrieverServiceStub) -> int:
    request = retriever_pb2.DescribeCollectionRequest(collection=COLLECTION)
    return stub.DescribeCollection(request, timeout=30).chunk_count


def test_a_write_on_one_replica_is_read_by_the_other_at_once(
    replicas: list[retriever_pb2_grpc.RetrieverServiceStub],
) -> None:
    writer, reader = replicas
    for n in range(ROUNDS):
        name = f"planet-{n}.md"
        text = f"Planet number {n} has {n + 2} moons and a thin atmosphere of neon."
        document = retriever_pb2.SourceDocument(source=name, text=text)
        writer.IngestDocuments(
            retriever_pb2.IngestDocumentsRequest(collection=COLLECTION, documents=[document]),
            timeout=60,
        )
        assert name in found_sources(reader, f"How many moons has planet number {n}?"), n
        assert chunk_count(reader) == 1

        deleted = writer.DeleteSource(
            retriever_pb2.DeleteSourceRequest(collection=COLLECTION, source=name), timeout=30
        )
        assert deleted.chunks_deleted == 1
        assert name not in found_sources(reader, f"How many moons has planet number {n}?"), n
        assert chunk_count(reader) == 0
