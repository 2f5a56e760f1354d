"""Chat model providers: llama.cpp's OpenAI-compatible server and Ollama (via langchain-ollama).

Both take an optional JSON schema that constrains the reply (llama.cpp: ``response_format``
``json_schema``, compiled to a grammar; Ollama: the ``format`` field), so stages get structured
output from small models too. Both retry a refused connection with capped exponential backoff
(``retry.py``); a call that times out raises ``DependencyTimeout`` (gRPC DEADLINE_EXCEEDED) and a
server that cannot be reached ``DependencyUnavailable`` (UNAVAILABLE).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ragloop.core.errors import DependencyTimeout, DependencyUnavailable
from ragloop.core.models.retry import NO_RETRIES, RetryPolicy, retry_on_connection_errors

# Connecting should take well under this even on a busy machine; the rest of the timeout is for
# the model to answer.
CONNECT_TIMEOUT_S = 10.0


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

    def __init__(
        self, name: str, *, base_url: str, timeout_s: float, retry: RetryPolicy = NO_RETRIES
    ) -> None:
        self._name = name
        self._retry = retry
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
        )

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
        target = str(self._client.base_url)
        try:
            response = await retry_on_connection_errors(
                lambda: self._client.post("/v1/chat/completions", json=body),
                self._retry,
                target=target,
            )
        except httpx.ConnectTimeout as exc:
            raise DependencyUnavailable(f"chat model at {target} unreachable: {exc!r}") from exc
        except httpx.TimeoutException as exc:
            raise DependencyTimeout(f"chat model at {target} timed out") from exc
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
        self,
        name: str,
        model: str,
        *,
        base_url: str,
        keep_alive_s: int,
        timeout_s: float,
        num_ctx: int = 0,
        retry: RetryPolicy = NO_RETRIES,
    ) -> None:
        self._name = name
        self._model = model
        self._base_url = base_url
        self._keep_alive_s = keep_alive_s
        self._timeout_s = timeout_s
        self._num_ctx = num_ctx or None  # 0: the model's own default
        self._retry = retry

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
            num_ctx=self._num_ctx,
            format=json_schema,
            client_kwargs={
                "timeout": httpx.Timeout(
                    self._timeout_s, connect=min(self._timeout_s, CONNECT_TIMEOUT_S)
                )
            },
        )

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        from ollama import ResponseError

        client = self._client(json_schema, max_tokens)
        try:
            reply = await retry_on_connection_errors(
                lambda: client.ainvoke([(m.role, m.content) for m in messages]),
                self._retry,
                target=self._base_url,
            )
        except httpx.ConnectTimeout as exc:
            raise DependencyUnavailable(f"Ollama at {self._base_url} unreachable: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise DependencyTimeout(f"Ollama at {self._base_url} timed out") from exc
        except (httpx.HTTPError, ConnectionError) as exc:
            raise DependencyUnavailable(f"Ollama at {self._base_url} unreachable: {exc}") from exc
        except ResponseError as exc:  # e.g. the model is not pulled, or the server failed
            raise DependencyUnavailable(
                f"Ollama at {self._base_url} refused the call (HTTP {exc.status_code}): {exc}"
            ) from exc
        usage = reply.usage_metadata or {}
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        return ChatReply(
            text=text,
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
        )

    async def aclose(self) -> None:
        return None
