"""Contract test of the Ollama providers.

No real Ollama server can run on this machine (no binary in any registry, no Docker engine), so
this test stands a small HTTP server on 127.0.0.1 in Ollama's place. It checks the exact requests
that ragloop's Ollama wiring (langchain-ollama's ChatOllama and OllamaEmbeddings, the ``ollama``
client for one-token calls) sends — model, messages, JSON-schema ``format``, options, keep_alive,
streaming, log-probabilities — and answers with Ollama's documented response shapes, streamed as
NDJSON pieces as Ollama streams them, with the top-level ``logprobs`` list of Ollama 0.12.11 and
later when asked (or without it, as an older server). It does not prove that a real Ollama grades
well; compose runs a real one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from bench.local_http import serving_http
from ragloop.core.domain import Answer, AnswerDelta, Document
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models import ChatMessage, ChatModel, ChatReply, make_chat_model, make_embedder
from ragloop.generator.prompts import ANSWER_SCHEMA
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from ragloop.grader.prompts import GRADE_SCHEMA
from ragloop.grader.stage import GradingMode, ModelGrader
from tests.service.retriever_helpers import ingest, retrieve, retriever_stub, source

GRADE_REPLY = '{"relevant": true, "confidence": 0.9, "reasoning": "states it"}'


class FakeOllama(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, dict]]] = []
    chat_reply: ClassVar[str] = GRADE_REPLY
    piece_chars: ClassVar[int] = 6  # a streamed reply comes in pieces of this many characters
    # The first token's likeliest candidates, given when a request asks (Ollama 0.12.11 and
    # later); None: an older Ollama, which leaves them out.
    top_logprobs: ClassVar[dict[str, float] | None] = None
    model_pulled: ClassVar[bool] = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeOllama.requests.append((self.path, body))
        if not self.model_pulled:  # Ollama's answer: 404 and a JSON error
            error = json.dumps({"error": f"model '{body['model']}' not found"}).encode()
            self._send(404, error, "application/json")
            return
        if self.path == "/api/chat":
            payload, content_type = self._chat(body)
        elif self.path == "/api/embed":
            payload = json.dumps(
                {"model": body["model"], "embeddings": [[0.1, 0.2, 0.3] for _ in body["input"]]}
            ).encode()
            content_type = "application/json"
        else:
            self.send_error(404)
            return
        self._send(200, payload, content_type)

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _chat(self, body: dict) -> tuple[bytes, str]:
        """Ollama's chat reply: one object, or (``"stream": true``, Ollama's default) NDJSON
        message pieces, then a last object with ``done`` and the token counts."""
        model, reply = body["model"], self.chat_reply

        def message(content: str, **fields: object) -> dict:
            return {
                "model": model,
                "created_at": "2026-11-22T00:00:00Z",
                "message": {"role": "assistant", "content": content},
                **fields,
            }

        done: dict[str, object] = {
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 42,
            "eval_count": 7,
        }
        if body.get("logprobs") and self.top_logprobs is not None:
            candidates = [{"token": t, "logprob": lp} for t, lp in self.top_logprobs.items()]
            done["logprobs"] = [candidates[0] | {"top_logprobs": candidates}]
        if not body.get("stream", True):
            return json.dumps(message(reply, **done)).encode(), "application/json"
        step = self.piece_chars
        chunks = [message(reply[i : i + step], done=False) for i in range(0, len(reply), step)]
        chunks.append(message("", **done))
        return "".join(json.dumps(c) + "\n" for c in chunks).encode(), "application/x-ndjson"

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ollama_url() -> Iterator[str]:
    FakeOllama.requests, FakeOllama.chat_reply = [], GRADE_REPLY
    FakeOllama.top_logprobs, FakeOllama.model_pulled = None, True
    with serving_http(FakeOllama) as url:
        yield url


def ollama_model(url: str) -> ChatModel:
    return make_chat_model(
        "ollama:qwen2.5:7b-instruct",
        llamacpp_url="http://127.0.0.1:1",
        ollama_url=url,
        ollama_keep_alive_s=300,
        timeout_s=10,
        ollama_num_ctx=4096,
    )


async def test_grader_over_ollama_sends_the_schema_as_format(ollama_url: str) -> None:
    model = ollama_model(ollama_url)
    result = await ModelGrader(model, mode=GradingMode.PER_DOCUMENT).grade(
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


async def test_the_scored_grader_over_ollama_reads_p_yes_from_its_log_probabilities(
    ollama_url: str,
) -> None:
    FakeOllama.chat_reply = "Yes"
    FakeOllama.top_logprobs = {"Yes": math.log(0.6), "No": math.log(0.3), "yes": math.log(0.05)}

    result = await ModelGrader(ollama_model(ollama_url)).grade(
        "Who owns the data directory?", [Document("d1", "The retriever owns it.", "s.md")]
    )

    (grade,) = result.grades
    assert grade.relevant and grade.confidence == pytest.approx(0.65 / 0.95, abs=1e-3)
    [(path, body)] = FakeOllama.requests
    assert path == "/api/chat" and body["model"] == "qwen2.5:7b-instruct"
    assert (body["logprobs"], body["top_logprobs"], body["keep_alive"]) == (True, 10, 300)
    assert body["options"]["num_predict"] == 1 and body["options"]["num_ctx"] == 4096
    assert body["options"]["temperature"] == 0.0 and not body.get("format")


async def test_an_ollama_without_log_probabilities_leaves_the_sampled_word(
    ollama_url: str,
) -> None:
    FakeOllama.chat_reply = "no"  # an Ollama before 0.12.11: no logprobs in its reply

    result = await ModelGrader(ollama_model(ollama_url)).grade(
        "Who owns the data directory?", [Document("d1", "The sky is blue.", "s.md")]
    )

    (grade,) = result.grades
    assert not grade.relevant and grade.confidence == 0.0
    assert FakeOllama.requests[0][1]["logprobs"] is True


async def test_a_model_ollama_has_not_pulled_is_a_dependency_error(ollama_url: str) -> None:
    FakeOllama.model_pulled = False

    with pytest.raises(DependencyUnavailable, match=r"HTTP 404.*not found"):
        await ollama_model(ollama_url).next_token([ChatMessage("user", "Is it?")])


async def test_a_streamed_chat_reply_arrives_in_pieces_then_whole(ollama_url: str) -> None:
    items = [
        item
        async for item in ollama_model(ollama_url).stream(
            [ChatMessage("user", "hi")], json_schema=GRADE_SCHEMA, max_tokens=32
        )
    ]

    *pieces, final = items
    assert len(pieces) > 1 and "".join(pieces) == GRADE_REPLY
    assert final == ChatReply(GRADE_REPLY, 42, 7)
    [(path, body)] = FakeOllama.requests
    assert path == "/api/chat"
    assert body["stream"] is True
    assert body["format"] == GRADE_SCHEMA
    assert body["keep_alive"] == 300
    assert (body["options"]["num_predict"], body["options"]["num_ctx"]) == (32, 4096)


async def test_generator_streams_its_answer_over_ollama(ollama_url: str) -> None:
    FakeOllama.chat_reply = json.dumps(
        {"answerable": True, "sentences": [{"source": 1, "text": "The retriever owns it."}]}
    )
    documents = [Document("d1", "The retriever owns the data directory.", "s.md")]
    events = [
        event
        async for event in ModelGenerator(
            ollama_model(ollama_url), answer_format=AnswerFormat.JSON, answer_match_threshold=0.2
        ).generate_stream("Who owns the data directory?", documents)
    ]

    *deltas, answer = events
    assert len(deltas) > 1 and all(isinstance(d, AnswerDelta) and not d.restart for d in deltas)
    assert "".join(d.text for d in deltas) == "The retriever owns it."
    assert isinstance(answer, Answer) and answer.text == "The retriever owns it. [1]"
    # The answer, then its answer-match and support checks: one token each, without a schema,
    # from an Ollama that gives no log-probabilities. The fake's reply to them is neither yes
    # nor no, so the answer stands.
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (126, 21)
    [(_, body), (_, match), (_, support)] = FakeOllama.requests
    assert body["format"] == ANSWER_SCHEMA and body["stream"] is True
    for check in (match, support):
        assert check["options"]["num_predict"] == 1 and not check.get("format")
    assert "Sentence: The retriever owns it.\nQuestion:" in match["messages"][-1]["content"]
    assert "Answer: The retriever owns it.\n" in support["messages"][-1]["content"]
    assert "<document>" not in match["messages"][-1]["content"]
    assert answer.answer_match is None and answer.support is None


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
    # nomic-embed-text's task prefix for passages (embedding_profiles)
    assert body["input"] == ["search_document: first text", "search_document: second text"]
    assert body["keep_alive"] == 300


async def test_the_retriever_embeds_queries_and_chunks_with_the_models_prefixes(
    ollama_url: str, tmp_path: Path
) -> None:
    """The real retriever service, as compose configures it (nomic-embed-text over Ollama), on
    Milvus Lite: what it ingests reaches Ollama as "search_document: …", what it is asked as
    "search_query: …"."""
    settings = {"embedding_model": "ollama:nomic-embed-text", "ollama_url": ollama_url}
    async with retriever_stub(str(tmp_path / "milvus.db"), **settings) as stub:
        FakeOllama.requests.clear()  # the dimension probe and the warm-up
        await ingest(stub, source("owner.md", "The retriever owns the data directory."))
        await retrieve(stub, "Who owns the data directory?", mode="dense")
    inputs = [
        text for path, body in FakeOllama.requests if path == "/api/embed" for text in body["input"]
    ]
    assert inputs == [
        "search_document: The retriever owns the data directory.",
        "search_query: Who owns the data directory?",
    ]


async def test_ollama_down_is_a_dependency_error() -> None:
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
