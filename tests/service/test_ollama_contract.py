"""Contract test of the Ollama providers.

No real Ollama server can run on this machine (no binary in any registry, no Docker engine), so
this test stands a small HTTP server on 127.0.0.1 in Ollama's place. It checks the exact requests
that ragloop's Ollama wiring (langchain-ollama's ChatOllama and OllamaEmbeddings) sends — model,
messages, JSON-schema ``format``, options, keep_alive — and answers with Ollama's documented
response shapes. It does not prove that a real Ollama grades well; compose runs a real one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from ragloop.core.domain import Document
from ragloop.core.models import make_chat_model, make_embedder
from ragloop.grader.prompts import GRADE_SCHEMA
from ragloop.grader.stage import ModelGrader


class FakeOllama(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, dict]]] = []
    chat_reply = '{"relevant": true, "confidence": 0.9, "reasoning": "states it"}'

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeOllama.requests.append((self.path, body))
        if self.path == "/api/chat":
            chunks = [
                {
                    "model": body["model"],
                    "created_at": "2026-11-22T00:00:00Z",
                    "message": {"role": "assistant", "content": self.chat_reply},
                    "done": False,
                },
                {
                    "model": body["model"],
                    "created_at": "2026-11-22T00:00:01Z",
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": 42,
                    "eval_count": 7,
                },
            ]
            payload = "".join(json.dumps(c) + "\n" for c in chunks).encode()
            content_type = "application/x-ndjson"
        elif self.path == "/api/embed":
            payload = json.dumps(
                {"model": body["model"], "embeddings": [[0.1, 0.2, 0.3] for _ in body["input"]]}
            ).encode()
            content_type = "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ollama_url() -> Iterator[str]:
    FakeOllama.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_grader_over_ollama_sends_the_schema_as_format(ollama_url: str) -> None:
    model = make_chat_model(
        "ollama:qwen2.5:7b-instruct",
        llamacpp_url="http://127.0.0.1:1",
        ollama_url=ollama_url,
        ollama_keep_alive_s=300,
        timeout_s=10,
        ollama_num_ctx=4096,
    )
    result = await ModelGrader(model).grade(
        "Who owns the data directory?", [Document("d1", "The retriever owns it.", "s.md")]
    )

    assert result.grades[0].relevant is True and result.grades[0].confidence == pytest.approx(0.9)
    assert result.usage.prompt_tokens == 42 and result.usage.completion_tokens == 7
    [(path, body)] = FakeOllama.requests
    assert path == "/api/chat"
    assert body["model"] == "qwen2.5:7b-instruct"
    assert body["format"] == GRADE_SCHEMA
    assert body["keep_alive"] == 300
    assert body["options"]["temperature"] == 0.0
    assert body["options"]["num_predict"] == 96
    assert body["options"]["num_ctx"] == 4096
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "<document>\nThe retriever owns it.\n</document>" in body["messages"][1]["content"]


def test_embeddings_over_ollama(ollama_url: str) -> None:
    embedder = make_embedder(
        "ollama:nomic-embed-text", ollama_url=ollama_url, ollama_keep_alive_s=300
    )
    vectors = embedder.embed(["first text", "second text"])

    assert vectors == [[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    assert embedder.dimension == 3
    [(path, body)] = FakeOllama.requests
    assert path == "/api/embed"
    assert body["model"] == "nomic-embed-text"
    assert body["input"] == ["first text", "second text"]
    assert body["keep_alive"] == 300


async def test_ollama_down_is_a_dependency_error() -> None:
    from ragloop.core.errors import DependencyUnavailable
    from ragloop.local.processes import free_port

    model = make_chat_model(
        "ollama:qwen2.5:7b-instruct",
        llamacpp_url="http://127.0.0.1:1",
        ollama_url=f"http://127.0.0.1:{free_port()}",
        ollama_keep_alive_s=300,
        timeout_s=5,
    )
    with pytest.raises(DependencyUnavailable):
        await ModelGrader(model).grade("q", [Document("d1", "text", "s.md")])
