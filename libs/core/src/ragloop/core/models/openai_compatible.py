"""A chat model behind any server speaking OpenAI's ``/chat/completions`` (OpenAI, vLLM, LM
Studio, llama.cpp), and llama.cpp's ``llama-server`` with its extensions (``chat.py`` says what
every provider shares)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any

import httpx

from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models.chat import (
    TOP_LOGPROBS,
    ChatMessage,
    ChatReply,
    TokenReply,
    dependency_errors,
    first_token_logprobs,
    http_timeout,
)
from ragloop.core.models.retry import (
    NO_RETRIES,
    RetryPolicy,
    retry_on_connection_errors,
    retry_stream_on_connection_errors,
)
from ragloop.core.models.sse import sse_json_events


class OpenAICompatibleChatModel:
    """A server speaking OpenAI's ``/chat/completions``: OpenAI, vLLM, LM Studio, llama.cpp.

    ``base_url`` ends where ``/chat/completions`` is appended, usually in ``/v1``. The API key, if
    any, goes in an ``Authorization: Bearer`` header; ``extra_body`` adds server-specific fields.
    """

    def __init__(
        self,
        name: str,
        model: str,
        *,
        base_url: str,
        timeout_s: float,
        api_key: str = "",
        retry: RetryPolicy = NO_RETRIES,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self._name = name
        self._model = model
        self._retry = retry
        self._extra_body = dict(extra_body or {})
        self._url = base_url.rstrip("/")
        self._target = f"chat model at {self._url}"
        self._client = httpx.AsyncClient(
            base_url=self._url,
            headers={"authorization": f"Bearer {api_key}"} if api_key else {},
            timeout=http_timeout(timeout_s),
        )

    @property
    def name(self) -> str:
        return self._name

    def _body(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": 0.0,
            "max_tokens": max_tokens,
            **self._extra_body,
        }
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": json_schema, "strict": True},
            }
        return body

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        payload = await self._post(self._body(messages, json_schema, max_tokens))
        with dependency_errors(self._target):
            text = payload["choices"][0]["message"].get("content") or ""
        return ChatReply(text, *_token_counts(payload.get("usage")))

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON reply of one ``/chat/completions`` call."""
        with dependency_errors(self._target):
            response = await retry_on_connection_errors(
                lambda: self._client.post("/chat/completions", json=body),
                self._retry,
                target=self._url,
            )
            await self._check_status(response)
            payload = response.json()
            if not isinstance(payload, dict):
                raise ValueError("the reply is not a JSON object")
            return payload

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = TOP_LOGPROBS
    ) -> TokenReply:
        body = self._body(messages, None, 1) | {"logprobs": True, "top_logprobs": top_logprobs}
        payload = await self._post(body)
        with dependency_errors(self._target):
            choice = payload["choices"][0]
            text = choice["message"].get("content") or ""
        return TokenReply(text, first_token_logprobs(choice), *_token_counts(payload.get("usage")))

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        body = self._body(messages, json_schema, max_tokens)
        body |= {"stream": True, "stream_options": {"include_usage": True}}
        pieces: list[str] = []
        usage: dict[str, Any] | None = None
        with dependency_errors(self._target):
            events = retry_stream_on_connection_errors(
                lambda: self._events(body), self._retry, target=self._url
            )
            async with aclosing(events):
                async for event in events:
                    usage = event.get("usage") or usage
                    choices = event.get("choices") or [{}]
                    piece = (choices[0].get("delta") or {}).get("content") or ""
                    if piece:
                        pieces.append(piece)
                        yield piece
        yield ChatReply("".join(pieces), *_token_counts(usage))

    async def _events(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        async with self._client.stream("POST", "/chat/completions", json=body) as response:
            await self._check_status(response)
            async for event in sse_json_events(response.aiter_lines()):
                if event.get("error"):
                    raise DependencyUnavailable(f"{self._target} failed: {event['error']}")
                yield event

    async def _check_status(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            await response.aread()
            raise DependencyUnavailable(
                f"{self._target} answered HTTP {response.status_code}: {response.text[:300]}"
            )

    async def aclose(self) -> None:
        await self._client.aclose()


class LlamaCppChatModel(OpenAICompatibleChatModel):
    """llama.cpp's ``llama-server`` at ``base_url`` (without ``/v1``): no key, and two llama.cpp
    extensions — no repetition penalty (it bends JSON), and reuse of the KV cache of a prompt
    prefix shared across calls. The server holds one model and ignores the model name."""

    EXTENSIONS: Mapping[str, Any] = {"repeat_penalty": 1.0, "cache_prompt": True}

    def __init__(
        self, name: str, *, base_url: str, timeout_s: float, retry: RetryPolicy = NO_RETRIES
    ) -> None:
        super().__init__(
            name,
            name.partition(":")[2] or name,
            base_url=f"{base_url.rstrip('/')}/v1",
            timeout_s=timeout_s,
            retry=retry,
            extra_body=self.EXTENSIONS,
        )


def _token_counts(usage: Mapping[str, Any] | None) -> tuple[int, int, int]:
    """Prompt, completion and cached prompt tokens from OpenAI's ``usage`` (the cached ones from
    ``prompt_tokens_details.cached_tokens``, which llama-server and vLLM fill; 0 where absent)."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details") or {}
    return (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0,
    )
