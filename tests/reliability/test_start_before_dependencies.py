"""A retriever started before its embedding model server (Kubernetes starts it while Ollama's
init container still pulls the model): it binds its port, reports NOT_SERVING, refuses calls
with UNAVAILABLE naming the model server, asks again with backoff, and serves once the model
answers. Real processes: the retriever (``python -m ragloop.retriever``, embedded Milvus Lite)
and, standing in for Ollama, a small HTTP server in this test that answers Ollama's
embeddings API; nothing listens on its port until the test starts it."""

from __future__ import annotations

import hashlib
import json
import math
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import grpc
import pytest

from bench.local_http import send_reply, serving_http
from ragloop.core.grpc.server import LIVENESS_SERVICE
from ragloop.core.names import Stage
from ragloop.local.processes import free_port
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc
from tests.stage_process import (
    NOT_SERVING,
    SERVING,
    health,
    stage_process,
    wait_for_health,
)

DIMENSION = 32
MODEL = "fake-embed"


def embedding(text: str) -> list[float]:
    """A unit vector from the text's words (hashed into DIMENSION buckets): texts that share
    words are near, so a search finds the passage that shares the query's words."""
    vector = [0.0] * DIMENSION
    for word in text.lower().split():
        vector[hashlib.sha256(word.strip(".,?!").encode()).digest()[0] % DIMENSION] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeOllamaEmbeddings(BaseHTTPRequestHandler):
    """Ollama's ``POST /api/embed``: ``{"model", "input": [texts]}`` → ``{"embeddings"}``."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path != "/api/embed":
            self.send_error(404)
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        payload = json.dumps(
            {"model": body["model"], "embeddings": [embedding(t) for t in texts]}
        ).encode()
        send_reply(self, 200, payload, "application/json")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: one line a request would drown the test's output."""


def retrieve(address: str, query: str) -> retriever_pb2.RetrieveResponse:
    with grpc.insecure_channel(address) as channel:
        return retriever_pb2_grpc.RetrieverServiceStub(channel).Retrieve(
            retriever_pb2.RetrieveRequest(query=query, top_k=3, similarity_threshold=0.0),
            timeout=30,
        )


def test_the_retriever_waits_for_its_embedding_model_and_serves_once_it_answers(
    tmp_path: Path,
) -> None:
    model_port = free_port()  # nothing listens here yet
    env = {
        "RAGLOOP_MILVUS_URI": str(tmp_path / "milvus.db"),
        "RAGLOOP_EMBEDDING_MODEL": f"ollama:{MODEL}",
        "RAGLOOP_OLLAMA_URL": f"http://127.0.0.1:{model_port}",
    }
    with stage_process(Stage.RETRIEVER, tmp_path, env) as (retriever, address):
        # Bound and answering health at once, not ready, and not crashing.
        wait_for_health(retriever, address, lambda status: status == NOT_SERVING, timeout_s=60)
        assert health(address, LIVENESS_SERVICE) == SERVING  # alive: no restart while it waits
        with pytest.raises(grpc.RpcError) as refused:
            retrieve(address, "cats")
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
        details = refused.value.details()
        assert "retriever is not ready" in details, details
        assert f"ollama:{MODEL}" in details and f"127.0.0.1:{model_port}" in details, details
        assert retriever.running

        with serving_http(FakeOllamaEmbeddings, port=model_port):
            # The backoff is capped at 15 s: a bounded wait covers a few attempts.
            wait_for_health(retriever, address, lambda status: status == SERVING, timeout_s=90)
            with grpc.insecure_channel(address) as channel:
                stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
                documents = [
                    retriever_pb2.SourceDocument(source="cats.md", text="Cats sleep all day."),
                    retriever_pb2.SourceDocument(source="owls.md", text="Owls hunt at night."),
                ]
                reply = stub.IngestDocuments(
                    retriever_pb2.IngestDocumentsRequest(documents=documents), timeout=60
                )
                assert reply.chunks_written == 2
            found = retrieve(address, "When do owls hunt?")
            assert found.documents[0].source == "owls.md"
            assert found.embedding_model == f"ollama:{MODEL}"
