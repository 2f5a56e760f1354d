"""Real OpenAI clients that no one here wrote — the `openai` SDK (sync, async, streaming,
`extra_body`, `models.list()`, a typed error) and LangChain's `ChatOpenAI` (invoke and stream) —
against the real orchestrator over real HTTP on 127.0.0.1, over the real retriever (Milvus Lite,
ONNX embeddings) and the real grader, rewriter and generator on their gRPC servers, with the
real local chat model. Blocking clients run in a worker thread: the stage servers run on the
test's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tests.service.stack_helpers import rest_over_grpc

MODEL = "ragloop/pets"
NOTES = [
    {"source": "cats.md", "text": "Cats sleep up to sixteen hours a day."},
    {"source": "dogs.md", "text": "Dogs enjoy long walks in the park twice a day."},
]
QUESTION = "How many hours a day do cats sleep?"
# One round: the single passage that holds the answer passes, or the answer is the refusal.
OPTIONS = {"max_rewrite_attempts": 0, "top_k": 2}
TIMEOUT_S = 300


@pytest.fixture
async def url(tmp_path: Path, llama_url: str) -> AsyncIterator[str]:
    async with rest_over_grpc(str(tmp_path / "milvus.db"), llama_url=llama_url) as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            body = {"collection": "pets", "documents": NOTES}
            response = await client.post("/v1/documents", json=body)
            assert response.status_code == 200, response.text
        yield base_url


def assert_cites_the_cats_note(content: str, extras: dict[str, Any]) -> None:
    assert extras["grounded"], content
    assert "[1]" in content
    assert [c["source"] for c in extras["citations"]] == ["cats.md"]


async def test_the_openai_sdk_sync_async_and_streaming(url: str) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", timeout=TIMEOUT_S)
    models = await asyncio.to_thread(client.models.list)
    assert [m.id for m in models.data] == ["ragloop", "ragloop/pets"]

    completion = await asyncio.to_thread(
        client.chat.completions.create,
        model=MODEL,
        messages=[
            {"role": "system", "content": "Answer in one short sentence."},
            {"role": "user", "content": QUESTION},
        ],
        extra_body={"ragloop": OPTIONS},
    )
    content = completion.choices[0].message.content
    print("\nsync:", content)
    extras = completion.model_extra["ragloop"]
    assert_cites_the_cats_note(content, extras)
    assert completion.choices[0].finish_reason == "stop"
    usage = extras["workflow"]["usage"]
    assert completion.usage.prompt_tokens == usage["prompt_tokens"] > 0
    assert completion.usage.completion_tokens == usage["completion_tokens"] > 0

    async_client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", timeout=TIMEOUT_S)
    with pytest.raises(openai.NotFoundError) as unknown:
        await async_client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": QUESTION}]
        )
    assert unknown.value.code == "model_not_found"

    stream = await async_client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ragloop": {**OPTIONS, "progress": True}},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    print("stream:", streamed)
    [last] = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert_cites_the_cats_note(streamed, last.model_extra["ragloop"])
    nodes = [
        c.model_extra["ragloop"].get("node")
        for c in chunks
        if not c.choices and c.usage is None and c.model_extra["ragloop"]["event"] == "node_started"
    ]
    assert nodes[:2] == ["retrieve", "grade"] and nodes[-1] == "generate"
    assert chunks[-1].usage.total_tokens > 0
    # The loop's progress in words, as a reasoning model's thinking, before any content.
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    thinking = [getattr(d, "reasoning_content", None) for d in deltas]
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    words = "".join(t for t in thinking[:first_content] if t)
    print("reasoning:", words)
    assert words.startswith("Searching… ") and " passed.\n" in words
    assert words.endswith("Writing the answer… done.\n")
    assert not any(thinking[first_content:])


async def test_the_openai_sdk_with_a_conversation_answers_the_follow_up(url: str) -> None:
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", timeout=TIMEOUT_S)
    completion = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Answer in one short sentence."},
            {"role": "user", "content": "What do dogs enjoy?"},
            {"role": "assistant", "content": "Dogs enjoy long walks in the park [1]."},
            {"role": "user", "content": "How many times a day do they get them?"},
        ],
        extra_body={"ragloop": OPTIONS},
    )
    content = completion.choices[0].message.content
    extras = completion.model_extra["ragloop"]
    print("\nstandalone:", extras["query"]["standalone"], "| answer:", content)
    # The follow-up was made standalone from the earlier messages, and answered from them.
    assert extras["query"]["original"] == "How many times a day do they get them?"
    assert "dog" in extras["query"]["standalone"].lower()
    workflow = extras["workflow"]
    assert workflow["decision_path"][0] == "contextualize"
    assert extras["grounded"], content
    assert [c["source"] for c in extras["citations"]] == ["dogs.md"]
    # The rewrite's model call is part of the usage: contextualize, grade, generate at least.
    assert workflow["usage"]["model_calls"] >= 3
    assert completion.usage.prompt_tokens == workflow["usage"]["prompt_tokens"]


async def test_langchain_chat_openai_invoke_and_stream(url: str) -> None:
    chat = ChatOpenAI(
        base_url=f"{url}/v1",
        api_key="unused",
        model=MODEL,
        timeout=TIMEOUT_S,
        max_retries=0,
        extra_body={"ragloop": OPTIONS},
    )
    messages = [SystemMessage("Answer in one short sentence."), HumanMessage(QUESTION)]
    message = await asyncio.to_thread(chat.invoke, messages)
    print("\ninvoke:", message.content)
    assert "[1]" in message.content and message.response_metadata["finish_reason"] == "stop"
    assert message.usage_metadata["total_tokens"] > 0

    pieces = await asyncio.to_thread(lambda: list(chat.stream(messages)))
    streamed = "".join(piece.content for piece in pieces)
    print("stream:", streamed)
    assert "[1]" in streamed
