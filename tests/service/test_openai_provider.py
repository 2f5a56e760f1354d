"""Contract test of the OpenAI-compatible chat provider (``openai:``, and ``llamacpp:`` built on
it) over real HTTP: a small server on 127.0.0.1 in the place of OpenAI/vLLM/LM Studio checks the
bearer key, answers in OpenAI's shapes — one JSON body, or server-sent events when asked to
stream — and records each request, so the tests see the model name, the JSON-schema
``response_format`` and the streaming options that were sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from bench.local_http import serving_http
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models import ChatMessage, ChatReply, make_chat_model
from ragloop.core.models.chat import ChatModel
from ragloop.core.models.openai_compatible import LlamaCppChatModel
from ragloop.grader.prompts import GRADE_SCHEMA

API_KEY = "sk-test-123"
GRADE_REPLY = '{"relevant": true, "confidence": 0.9, "reasoning": "states it"}'


class FakeOpenAI(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` as OpenAI answers it. Class attributes script it."""

    requests: ClassVar[list[tuple[str, dict[str, str], dict[str, Any]]]] = []
    api_key: ClassVar[str] = ""  # when set, a request without this bearer key gets HTTP 401
    reply: ClassVar[str] = GRADE_REPLY
    piece_chars: ClassVar[int] = 5
    # When set, the stream pauses before the piece that reaches character ``hold_at`` of the reply
    # until the test sets it; whether it was set in time (instead of the wait ending after 10 s)
    # lands in ``released``.
    hold: ClassVar[threading.Event | None] = None
    hold_at: ClassVar[int] = 0
    released: ClassVar[list[bool]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeOpenAI.requests.append(
            (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
        elif self.api_key and self.headers.get("authorization") != f"Bearer {self.api_key}":
            self._json(401, {"error": {"message": "Incorrect API key provided"}})
        elif body.get("stream"):
            self._stream(body)
        else:
            self._json(
                200,
                {
                    "model": body["model"],
                    "choices": [{"message": {"role": "assistant", "content": self.reply}}],
                    "usage": {
                        "prompt_tokens": 42,
                        "completion_tokens": 7,
                        "prompt_tokens_details": {"cached_tokens": 30},
                    },
                },
            )

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()  # no length: the stream ends when the connection closes

        def send(event: dict[str, Any] | str) -> None:
            data = event if isinstance(event, str) else json.dumps(event)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        send(chunk({"role": "assistant", "content": None}))
        pieces = [
            self.reply[i : i + self.piece_chars]
            for i in range(0, len(self.reply), self.piece_chars)
        ]
        sent = 0
        for piece in pieces:
            if self.hold is not None and sent <= self.hold_at < sent + len(piece):
                FakeOpenAI.released.append(self.hold.wait(timeout=10))
            send(chunk({"content": piece}))
            sent += len(piece)
        send(chunk({}, finish="stop"))
        if body.get("stream_options", {}).get("include_usage"):
            usage = {
                "prompt_tokens": 42,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 30},
            }
            send({"choices": [], "usage": usage})
        send("[DONE]")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def openai_url() -> Iterator[str]:
    """A FakeOpenAI server on 127.0.0.1 with its script reset; its base URL (without /v1)."""
    reset_fake_openai()
    with serving_http(FakeOpenAI) as url:
        try:
            yield url
        finally:
            if FakeOpenAI.hold is not None:
                FakeOpenAI.hold.set()
    reset_fake_openai()


def reset_fake_openai() -> None:
    FakeOpenAI.requests, FakeOpenAI.released = [], []
    FakeOpenAI.api_key, FakeOpenAI.hold, FakeOpenAI.hold_at = "", None, 0
    FakeOpenAI.reply = GRADE_REPLY


def chat_model(ref: str, url: str, *, api_key: str = "") -> ChatModel:
    return make_chat_model(
        ref,
        llamacpp_url=url,
        ollama_url="http://127.0.0.1:1",
        ollama_keep_alive_s=60,
        timeout_s=10,
        openai_url=f"{url}/v1",
        openai_api_key=api_key,
    )


async def collect(model: ChatModel, **options: Any) -> tuple[list[str], ChatReply]:
    *pieces, final = [item async for item in model.stream([ChatMessage("user", "hi")], **options)]
    assert all(isinstance(p, str) for p in pieces) and isinstance(final, ChatReply)
    return pieces, final  # type: ignore[return-value]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_openai_sends_the_key_model_and_schema(openai_url: str, stream: bool) -> None:
    FakeOpenAI.api_key = API_KEY
    model = chat_model("openai:gpt-4o-mini", openai_url, api_key=API_KEY)
    try:
        if stream:
            pieces, reply = await collect(model, json_schema=GRADE_SCHEMA, max_tokens=96)
            assert len(pieces) > 1 and "".join(pieces) == FakeOpenAI.reply
        else:
            reply = await model.complete(
                [ChatMessage("user", "hi")], json_schema=GRADE_SCHEMA, max_tokens=96
            )
    finally:
        await model.aclose()

    assert reply == ChatReply(FakeOpenAI.reply, 42, 7, cached_prompt_tokens=30)
    [(path, headers, body)] = FakeOpenAI.requests
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 96 and body["temperature"] == 0.0
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": GRADE_SCHEMA, "strict": True},
    }
    assert "repeat_penalty" not in body and "cache_prompt" not in body  # llama.cpp's own
    if stream:
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert "stream" not in body


async def test_llamacpp_is_the_openai_provider_without_a_key(openai_url: str) -> None:
    model = chat_model("llamacpp:qwen2.5-coder-1.5b-instruct", openai_url, api_key=API_KEY)
    try:
        assert isinstance(model, LlamaCppChatModel)
        _, reply = await collect(model, max_tokens=8)
    finally:
        await model.aclose()

    assert reply.text == FakeOpenAI.reply
    [(path, headers, body)] = FakeOpenAI.requests
    assert path == "/v1/chat/completions"
    assert "authorization" not in headers
    assert body["model"] == "qwen2.5-coder-1.5b-instruct"
    assert (body["repeat_penalty"], body["cache_prompt"]) == (1.0, True)
    assert "response_format" not in body


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_rejected_key_is_unavailable_with_the_servers_reason(
    openai_url: str, stream: bool
) -> None:
    FakeOpenAI.api_key = API_KEY
    model = chat_model("openai:gpt-4o-mini", openai_url, api_key="sk-wrong")
    try:
        with pytest.raises(DependencyUnavailable, match=r"HTTP 401.*Incorrect API key"):
            if stream:
                await collect(model)
            else:
                await model.complete([ChatMessage("user", "hi")])
    finally:
        await model.aclose()
