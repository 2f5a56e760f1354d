"""The OpenAI-compatible API (/v1/chat/completions, /v1/models) over real HTTP on 127.0.0.1,
through the `openai` SDK and raw HTTP: the real retriever (Milvus Lite, ONNX embeddings) and the
real grader, rewriter and generator over a fake chat model, each on its real gRPC server
(deterministic; the same clients against the real model: test_openai_clients.py). Every refusal
in OpenAI's error shape with OpenAI's status codes, the SDK's typed exceptions, keys, tenants,
the rate limit, body size, stages that are down; ragloop's own routes keep their shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import SecretStr

from tests.hostile.stacks import rest_over_fake_model, rest_with_stages_down

QUESTION = [{"role": "user", "content": "How long do cats sleep?"}]
CATS = {"source": "cats.md", "text": "Cats sleep up to sixteen hours a day."}
ADMIN = "admin-key-0123456789abcdef"
ACME = "acme-key-0123456789abcdef"


def sdk(url: str, key: str = "unused", **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, **options)


async def ingest(url: str, collection: str, *, key: str = "", tenant: str = "") -> None:
    body: dict[str, Any] = {"collection": collection, "documents": [CATS]}
    if tenant:
        body["tenant"] = tenant
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        response = await client.post("/v1/documents", json=body, headers=headers)
    assert response.status_code == 200, response.text


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    """The API with the cats note in collection `pets`."""
    async with rest_over_fake_model(str(tmp_path / "milvus.db")) as base_url:
        await ingest(base_url, "pets")
        yield base_url


def assert_openai_error(response: httpx.Response, status: int, kind: str, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"]
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert (error["type"], error["code"]) == (kind, code), error
    assert error["message"]
    return error


async def test_the_sdk_lists_the_models_and_answers_with_citations(url: str) -> None:
    client = sdk(url)
    models = await asyncio.to_thread(client.models.list)
    assert [m.id for m in models.data] == ["ragloop", "ragloop/pets"]
    assert (await asyncio.to_thread(client.models.retrieve, "ragloop/pets")).id == "ragloop/pets"
    with pytest.raises(openai.NotFoundError) as missing:
        await asyncio.to_thread(client.models.retrieve, "ragloop/birds")
    assert missing.value.code == "model_not_found"

    completion = await asyncio.to_thread(
        client.chat.completions.create,
        model="ragloop/pets",
        messages=QUESTION,
        extra_body={"ragloop": {"max_rewrite_attempts": 0, "top_k": 3}},
    )
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-") and completion.model == "ragloop/pets"
    [choice] = completion.choices
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    extras = completion.model_extra["ragloop"]
    assert choice.message.content
    assert {c["source"] for c in extras["citations"]} <= {"cats.md"}
    usage = extras["workflow"]["usage"]
    assert completion.usage.prompt_tokens == usage["prompt_tokens"] > 0
    assert completion.usage.total_tokens == usage["prompt_tokens"] + usage["completion_tokens"]
    # The collection the model named was searched: the cats note is in `pets` only.
    assert [d["source"] for d in extras["retrieval"]["documents"]] == ["cats.md"]


async def test_a_stream_through_the_sdk_and_as_sent(url: str) -> None:
    client = sdk(url)
    answered = await asyncio.to_thread(
        client.chat.completions.create, model="ragloop/pets", messages=QUESTION
    )

    def stream() -> list[Any]:
        return list(
            client.chat.completions.create(
                model="ragloop/pets",
                messages=QUESTION,
                stream=True,
                stream_options={"include_usage": True},
                extra_body={"ragloop": {"progress": True}},
            )
        )

    chunks = await asyncio.to_thread(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    progress = [c.model_extra["ragloop"] for c in chunks if not c.choices and c.usage is None]
    events = [(p["event"], p.get("node")) for p in progress]
    assert events[:2] == [("node_started", "retrieve"), ("node_finished", "retrieve")]
    assert ("node_finished", "generate") in events and ("token", None) in events
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == answered.choices[0].message.content
    [last] = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert last.choices[0].finish_reason == "stop"
    assert last.model_extra["ragloop"]["citations"] == answered.model_extra["ragloop"]["citations"]
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert len({c.id for c in chunks}) == 1

    async with httpx.AsyncClient(base_url=url, timeout=60) as raw:
        body = {"model": "ragloop", "messages": QUESTION, "stream": True}
        response = await raw.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in response.text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    sent = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(chunk["choices"] for chunk in sent)  # no progress or usage chunk: not asked for
    assert not any("usage" in chunk for chunk in sent)


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"messages": [{"role": "system", "content": "Be brief."}]}, "messages", "no user message"),
        ({"messages": [{"role": "user", "content": ""}]}, "messages[0].content", "no text"),
        ({"messages": [{"role": "tool", "content": "42"}]}, "messages[0].role", "'user'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content",
            "'image_url' are not supported",
        ),
        ({"messages": QUESTION, "n": 3}, "n", "n must be 1"),
        ({"messages": [{"role": "user", "content": "x" * 5000}]}, "messages", "at most 4000"),
        ({"messages": QUESTION * 300}, "messages", "at most 256 items"),
        ({"messages": "hello"}, "messages", "valid list"),
        ({"messages": QUESTION, "ragloop": {"top_k": 99}}, "ragloop.top_k", "less than or equal"),
        ({"messages": QUESTION, "ragloop": {"colection": "x"}}, "ragloop.colection", "Extra"),
        (
            {"model": "ragloop/pets", "messages": QUESTION, "ragloop": {"collection": "kb"}},
            "ragloop.collection",
            "name the collection once",
        ),
    ],
)
async def test_bad_input_is_a_400_in_openai_shape(
    url: str, body: dict[str, Any], param: str, says: str
) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        response = await client.post("/v1/chat/completions", json={"model": "ragloop"} | body)
    error = assert_openai_error(response, 400, "invalid_request_error", "invalid_request")
    assert error["param"] == param and says in error["message"], error


async def test_unreadable_bodies_and_unknown_models(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        broken = await client.post(
            "/v1/chat/completions",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        latin1 = await client.post(
            "/v1/chat/completions",
            content=b'{"x": "\xe9"}',
            headers={"content-type": "application/json"},
        )
        gpt = await client.post(
            "/v1/chat/completions", json={"model": "gpt-4o", "messages": QUESTION}
        )
        birds = await client.post(
            "/v1/chat/completions", json={"model": "ragloop/birds", "messages": QUESTION}
        )
        # A line break in a model's id reaches the route (no bare 404 in FastAPI's shape).
        odd = await client.get("/v1/models/ragloop/pets%0Acats")
        # Other routes keep ragloop's own shape.
        query = await client.post("/v1/query", json={"query": ""})
    assert_openai_error(broken, 400, "invalid_request_error", "invalid_request")
    assert_openai_error(latin1, 400, "invalid_request_error", "unreadable_body")
    for response in (gpt, birds, odd):
        error = assert_openai_error(response, 404, "invalid_request_error", "model_not_found")
        assert error["param"] == "model"
    assert query.status_code == 422 and "detail" in query.json()

    with pytest.raises(openai.BadRequestError) as bad:
        await asyncio.to_thread(
            sdk(url).chat.completions.create,
            model="ragloop",
            messages=[{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
        )
    assert bad.value.status_code == 400 and bad.value.param == "messages[0].content"


async def test_fields_openai_clients_send_that_ragloop_does_not_use_are_ignored(url: str) -> None:
    body = {
        "model": "ragloop",
        "messages": [{"role": "user", "content": "How long do cats sleep?", "name": "ann"}],
        "temperature": 0.2,
        "max_tokens": 20,
        "top_p": 0.9,
        "seed": 7,
        "user": "ann",
        "response_format": {"type": "text"},
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "ragloop": {"collection": "pets", "max_rewrite_attempts": 0},
    }
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["ragloop"]["retrieval"]["documents"][0]["source"] == "cats.md"


async def test_keys_tenants_and_the_rate_limit(tmp_path: Path) -> None:
    keys = SecretStr(f"{ADMIN},{ACME} tenant=acme")
    async with rest_over_fake_model(str(tmp_path / "m.db"), api_keys=keys) as url:
        await ingest(url, "pets", key=ADMIN, tenant="acme")
        with pytest.raises(openai.AuthenticationError) as unknown:
            await asyncio.to_thread(sdk(url, "not-a-key").models.list)
        assert unknown.value.body["type"] == "authentication_error"
        assert unknown.value.response.headers["www-authenticate"].startswith("Bearer")

        acme = sdk(url, ACME)
        with pytest.raises(openai.PermissionDeniedError) as other_tenant:
            await asyncio.to_thread(
                acme.chat.completions.create,
                model="ragloop/pets",
                messages=QUESTION,
                extra_body={"ragloop": {"tenant": "globex"}},
            )
        assert other_tenant.value.code == "forbidden"
        assert "bound to tenant 'acme'" in other_tenant.value.message
        # The key's own tenant when the request names none: the note ingested there is found.
        own = await asyncio.to_thread(
            acme.chat.completions.create,
            model="ragloop/pets",
            messages=QUESTION,
            extra_body={"ragloop": {"max_rewrite_attempts": 0}},
        )
        found = own.model_extra["ragloop"]["retrieval"]["documents"]
        assert [d["source"] for d in found] == ["cats.md"]

    with rest_with_stages_down(
        rate_limit_per_minute=1, rate_limit_burst=1, max_request_bytes=4096
    ) as client:
        url = str(client.base_url)
        too_large = client.post(
            "/v1/chat/completions",
            json={"model": "ragloop", "messages": [{"role": "user", "content": "x" * 5000}]},
        )
        assert_openai_error(too_large, 413, "invalid_request_error", "payload_too_large")
        with pytest.raises(openai.RateLimitError) as limited:
            sdk(url).chat.completions.create(model="ragloop", messages=QUESTION)
        assert limited.value.response.headers["retry-after"].isdigit()
        assert limited.value.body["type"] == "rate_limit_error"


def test_stages_that_are_down_are_a_503_or_an_error_event() -> None:
    with rest_with_stages_down() as client:
        url = str(client.base_url)
        answer = client.post(
            "/v1/chat/completions", json={"model": "ragloop", "messages": QUESTION}
        )
        error = assert_openai_error(answer, 503, "server_error", "stage_unavailable")
        assert "retriever" in error["message"]
        models = client.get("/v1/models")
        assert_openai_error(models, 503, "server_error", "stage_unavailable")
        with pytest.raises(openai.InternalServerError):
            sdk(url).models.list()
        # A stream has answered 200 before the loop runs: the failure is its last event, which
        # the SDK raises.
        stream = sdk(url).chat.completions.create(model="ragloop", messages=QUESTION, stream=True)
        with pytest.raises(openai.APIError, match="retriever"):
            list(stream)
