"""The LangGraph baseline of bench.compare: its routing, and a whole run through LangChain's
ChatOpenAI against a scripted OpenAI-compatible server (httpx's MockTransport: no network)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bench.baseline import BaselineRag, openai_chat, route_after_grading
from bench.baseline.graph import merge_relevant
from bench.baseline.prompts import GENERATOR_SYSTEM, REWRITER_SYSTEM
from ragloop.core.domain import Document
from ragloop.orchestrator.loop.corrective import LoopPolicy
from tests.unit.fakes import ScriptedRetriever, doc


@pytest.mark.parametrize(
    ("round_passed", "rewrites", "max_rewrites", "route"),
    [
        (True, 0, 3, "generate"),
        (False, 0, 3, "rewrite"),
        (False, 2, 3, "rewrite"),
        (False, 3, 3, "generate"),
        (True, 3, 3, "generate"),
        (False, 0, 0, "generate"),
    ],
)
def test_the_baseline_rewrites_until_a_round_passes_or_rewrites_run_out(
    round_passed: bool, rewrites: int, max_rewrites: int, route: str
) -> None:
    assert route_after_grading(round_passed, rewrites, max_rewrites) == route


def test_relevant_documents_of_later_rounds_are_added_once() -> None:
    a, b, c = doc("a"), doc("b"), doc("c")
    assert [d.id for d in merge_relevant([a, b], [b, c, c])] == ["a", "b", "c"]


Reply = tuple[str, int, int]  # text, prompt tokens, completion tokens


class ScriptedServer:
    """An OpenAI-compatible chat server: grades (requests with a response_format) say yes when
    the document holds "RELEVANT"; rewrites and answers come from the given functions."""

    def __init__(self, rewrite: Callable[[int], str], *, grade_reply: str | None = None) -> None:
        self.rewrite = rewrite
        self.grade_reply = grade_reply  # instead of the yes/no verdict
        self.requests: list[dict[str, Any]] = []

    def role(self, body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        if "response_format" in body:
            return "grader"
        return {REWRITER_SYSTEM: "rewriter", GENERATOR_SYSTEM: "generator"}[system]

    def reply(self, body: dict[str, Any]) -> Reply:
        role = self.role(body)
        user = body["messages"][1]["content"]
        if role == "grader":
            verdict = "yes" if "RELEVANT" in user else "no"
            return self.grade_reply or json.dumps({"binary_score": verdict}), 100, 7
        if role == "rewriter":
            rewrites = sum(1 for r in self.requests if self.role(r) == "rewriter")
            return self.rewrite(rewrites), 50, 9
        return "The answer.", 300, 20

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text, prompt, completion = self.reply(body)
        self.requests.append(body)
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
        )

    def roles(self) -> list[str]:
        return [self.role(body) for body in self.requests]


def baseline(
    server: ScriptedServer, retriever: ScriptedRetriever, *, max_rewrites: int = 3
) -> BaselineRag:
    client = httpx.AsyncClient(transport=httpx.MockTransport(server.handle))
    chat = openai_chat("http://model.test/v1", "m", timeout_s=5, http_async_client=client)
    policy = LoopPolicy(
        top_k=3, similarity_threshold=0.25, max_rewrite_attempts=max_rewrites, collection="kb"
    )
    return BaselineRag(retriever, chat, policy)


def relevant(doc_id: str) -> Document:
    return doc(doc_id, f"RELEVANT passage {doc_id}.")


async def test_a_round_whose_documents_all_pass_is_answered_at_once() -> None:
    server = ScriptedServer(lambda n: f"query {n}")
    retriever = ScriptedRetriever({"Q?": [relevant("a"), relevant("b")]})

    result = await baseline(server, retriever).run("Q?")

    assert result.decision_path == ["retrieve", "grade", "generate"]
    assert server.roles() == ["grader", "grader", "generator"]
    assert [d.id for d in result.generation_documents] == ["a", "b"]
    assert result.answer == "The answer."
    # Every call counted, with the tokens the server reported.
    assert (result.usage.calls, result.usage.prompt_tokens, result.usage.completion_tokens) == (
        3,
        100 + 100 + 300,
        7 + 7 + 20,
    )
    assert set(result.node_seconds) == {"retrieve", "grade", "generate"}
    assert {node: u.prompt_tokens for node, u in result.node_usage.items()} == {
        "retrieve": 0,
        "grade": 200,
        "generate": 300,
    }
    call = retriever.calls[0]
    assert (call.top_k, call.similarity_threshold, call.collection) == (3, 0.25, "kb")


async def test_a_failing_document_rewrites_the_query_until_the_rewrites_run_out() -> None:
    server = ScriptedServer(lambda n: f'"query {n + 1}"')
    retriever = ScriptedRetriever(
        {
            "Q?": [relevant("a"), doc("x")],
            "query 1": [relevant("a"), relevant("b"), doc("y")],
            "query 2": [doc("z")],
        }
    )

    result = await baseline(server, retriever, max_rewrites=2).run("Q?")

    assert retriever.queries == ["Q?", "query 1", "query 2"]
    assert result.decision_path == [
        *["retrieve", "grade", "rewrite"] * 2,
        *["retrieve", "grade", "generate"],
    ]
    assert result.rewrites == 2
    # Relevant documents of every round, each once; graded against the question as asked.
    assert [d.id for d in result.generation_documents] == ["a", "b"]
    grades = [r for r in server.requests if "response_format" in r]
    assert len(grades) == 2 + 3 + 1
    assert all("User question: Q?" in r["messages"][1]["content"] for r in grades)
    assert result.usage.calls == 6 + 2 + 1
    assert result.usage.prompt_tokens == 6 * 100 + 2 * 50 + 300


async def test_an_unparseable_verdict_counts_as_not_relevant() -> None:
    server = ScriptedServer(lambda n: f"query {n + 1}", grade_reply="not json")
    retriever = ScriptedRetriever({"Q?": [relevant("a")]})

    result = await baseline(server, retriever, max_rewrites=0).run("Q?")

    assert result.decision_path == ["retrieve", "grade", "generate"]
    assert result.generation_documents == []
    assert result.usage.calls == 2


async def test_the_baseline_samples_like_ragloop_stages() -> None:
    """No handicap: temperature 0, ragloop's length limit for each role and llama.cpp options."""
    server = ScriptedServer(lambda n: "query 1")
    retriever = ScriptedRetriever({"Q?": [doc("x")], "query 1": [relevant("a")]})

    await baseline(server, retriever, max_rewrites=1).run("Q?")

    # LangChain sends OpenAI's newer name of max_tokens (llama-server reads both).
    limits = {server.role(body): body["max_completion_tokens"] for body in server.requests}
    assert limits == {"grader": 96, "rewriter": 160, "generator": 384}
    for body in server.requests:
        assert body["temperature"] == 0.0
        assert (body["repeat_penalty"], body["cache_prompt"]) == (1.0, True)
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["binary_score"]["enum"] == ["yes", "no"]


async def test_instructions_for_the_answer_reach_the_generate_prompt_only() -> None:
    server = ScriptedServer(lambda n: "query 1")
    retriever = ScriptedRetriever({"Q?": [doc("x")], "query 1": [relevant("a")]})

    await baseline(server, retriever, max_rewrites=1).run("Q?", "Answer in French.")

    prompts = {server.role(body): body["messages"][1]["content"] for body in server.requests}
    assert prompts["generator"].startswith(
        "Question: Q?\nHow to write the answer: Answer in French.\n\nContext:\n"
    )
    assert "French" not in prompts["grader"] + prompts["rewriter"]
    assert retriever.queries == ["Q?", "query 1"]


async def test_without_instructions_the_generate_prompt_is_question_context_answer() -> None:
    server = ScriptedServer(lambda n: "query 1")
    retriever = ScriptedRetriever({"Q?": [relevant("a")]})

    await baseline(server, retriever).run("Q?")

    generate = [body for body in server.requests if server.role(body) == "generator"]
    assert generate[0]["messages"][1]["content"] == (
        "Question: Q?\n\nContext:\nRELEVANT passage a.\n\nAnswer:"
    )
