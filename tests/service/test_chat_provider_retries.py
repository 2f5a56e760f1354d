"""Every chat provider retries a refused connection with backoff, over real HTTP on 127.0.0.1: the
model server comes up only after the first attempt was refused, and the call still succeeds — a
streamed call too, since nothing had been streamed before the connection was made."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import langchain_ollama  # noqa: F401  imported up front: its import alone outlasts the delay below
import pytest

from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models import ChatMessage, ChatModel, ChatReply, make_chat_model
from ragloop.core.models.retry import RetryPolicy
from ragloop.local.processes import free_port
from tests.service.test_ollama_contract import FakeOllama
from tests.service.test_openai_provider import FakeOpenAI, reset_fake_openai

FAKES: dict[str, type[BaseHTTPRequestHandler]] = {
    "llamacpp:qwen": FakeOpenAI,
    "openai:gpt-4o-mini": FakeOpenAI,
    "ollama:qwen2.5:7b-instruct": FakeOllama,
}


def start_later(handler: type[BaseHTTPRequestHandler], port: int, delay_s: float) -> list:
    """Serve ``handler`` on ``port`` from ``delay_s`` seconds on; returns a holder of the server."""
    holder: list[ThreadingHTTPServer] = []

    def run() -> None:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        holder.append(server)
        server.serve_forever()

    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()
    return holder


def chat_model(ref: str, url: str, retry: RetryPolicy | None = None) -> ChatModel:
    return make_chat_model(
        ref,
        llamacpp_url=url,
        ollama_url=url,
        openai_url=f"{url}/v1",
        ollama_keep_alive_s=60,
        timeout_s=5,
        retry=retry or RetryPolicy(retries=0),
    )


async def ask(model: ChatModel, stream: bool) -> ChatReply:
    messages = [ChatMessage("user", "hi")]
    if not stream:
        return await model.complete(messages, max_tokens=8)
    items = [item async for item in model.stream(messages, max_tokens=8)]
    assert isinstance(items[-1], ChatReply)
    return items[-1]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("ref", list(FAKES))
async def test_a_server_that_comes_up_late_is_reached_by_a_retry(ref: str, stream: bool) -> None:
    reset_fake_openai()
    port = free_port()
    model = chat_model(
        ref, f"http://127.0.0.1:{port}", RetryPolicy(retries=4, backoff_s=0.4, max_backoff_s=1.0)
    )
    holder = start_later(FAKES[ref], port, 0.2)
    try:
        reply = await ask(model, stream)
    finally:
        await model.aclose()
        for server in holder:
            server.shutdown()
            server.server_close()
    assert json.loads(reply.text)["relevant"] is True


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("ref", list(FAKES))
async def test_without_retries_a_refused_connection_is_unavailable_at_once(
    ref: str, stream: bool
) -> None:
    model = chat_model(ref, f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(DependencyUnavailable, match="unreachable"):
            await ask(model, stream)
    finally:
        await model.aclose()
