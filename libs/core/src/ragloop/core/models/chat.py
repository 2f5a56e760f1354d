"""Chat model providers: llama.cpp's OpenAI-compatible server and Ollama (via langchain-ollama).

Both take an optional JSON schema that constrains the reply (llama.cpp: ``response_format``
``json_schema``, compiled to a grammar; Ollama: the ``format`` field), so stages get structured
output from small models too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ragloop.core.errors import DependencyTimeout, DependencyUnavailable


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


class ChatModel(Protocol):
    @property
    def name(self) -> str: ...

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply: ...

    async def aclose(self) -> None: ...


class LlamaCppChatModel:
    """A llama.cpp ``llama-server`` (or any OpenAI-compatible server) at ``base_url``."""

    def __init__(self, name: str, *, base_url: str, timeout_s: float) -> None:
        self._name = name
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout_s)

    @property
    def name(self) -> str:
        return self._name

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": 0.0,
            "max_tokens": max_tokens,
            # llama.cpp extensions: no repetition penalty (it bends JSON), reuse the KV cache of
            # a shared prompt prefix across calls.
            "repeat_penalty": 1.0,
            "cache_prompt": True,
        }
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": json_schema, "strict": True},
            }
        try:
            response = await self._client.post("/v1/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise DependencyTimeout(f"chat model at {self._client.base_url} timed out") from exc
        except httpx.HTTPError as exc:
            raise DependencyUnavailable(
                f"chat model at {self._client.base_url} unreachable: {exc!r}"
            ) from exc
        if response.status_code != 200:
            raise DependencyUnavailable(
                f"chat model at {self._client.base_url} answered HTTP {response.status_code}: "
                f"{response.text[:300]}"
            )
        payload = response.json()
        usage = payload.get("usage") or {}
        return ChatReply(
            text=payload["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )

    async def aclose(self) -> None:
        await self._client.aclose()


class OllamaChatModel:
    """An Ollama chat model through ``langchain_ollama.ChatOllama``."""

    def __init__(
        self, name: str, model: str, *, base_url: str, keep_alive_s: int, timeout_s: float
    ) -> None:
        self._name = name
        self._model = model
        self._base_url = base_url
        self._keep_alive_s = keep_alive_s
        self._timeout_s = timeout_s

    @property
    def name(self) -> str:
        return self._name

    def _client(self, json_schema: dict[str, Any] | None, max_tokens: int) -> Any:
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=self._model,
            base_url=self._base_url,
            temperature=0.0,
            num_predict=max_tokens,
            repeat_penalty=1.0,
            keep_alive=self._keep_alive_s,
            format=json_schema,
            client_kwargs={"timeout": self._timeout_s},
        )

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        client = self._client(json_schema, max_tokens)
        try:
            reply = await client.ainvoke([(m.role, m.content) for m in messages])
        except httpx.TimeoutException as exc:
            raise DependencyTimeout(f"Ollama at {self._base_url} timed out") from exc
        except (httpx.HTTPError, ConnectionError) as exc:
            raise DependencyUnavailable(f"Ollama at {self._base_url} unreachable: {exc}") from exc
        usage = reply.usage_metadata or {}
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        return ChatReply(
            text=text,
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
        )

    async def aclose(self) -> None:
        return None
