"""An Ollama chat model, via langchain-ollama, with a one-token call through the ``ollama``
client for its log-probabilities (``chat.py`` says what every provider shares)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import aclosing, contextmanager
from typing import Any

from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models.chat import (
    TOP_LOGPROBS,
    ChatMessage,
    ChatReply,
    TokenReply,
    dependency_errors,
    first_token_candidates,
    http_timeout,
)
from ragloop.core.models.retry import (
    NO_RETRIES,
    RetryPolicy,
    retry_on_connection_errors,
    retry_stream_on_connection_errors,
)


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
        self._num_ctx = num_ctx  # 0: the model's own default
        self._retry = retry

    @property
    def name(self) -> str:
        return self._name

    def _options(self, max_tokens: int) -> dict[str, Any]:
        """Ollama's sampling options for every call (langchain-ollama's fields of the same
        names)."""
        options: dict[str, Any] = {
            "temperature": 0.0,
            "num_predict": max_tokens,
            "repeat_penalty": 1.0,
        }
        if self._num_ctx:
            options["num_ctx"] = self._num_ctx
        return options

    def _client(self, json_schema: dict[str, Any] | None, max_tokens: int) -> Any:
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=self._model,
            base_url=self._base_url,
            keep_alive=self._keep_alive_s,
            format=json_schema,
            client_kwargs={"timeout": http_timeout(self._timeout_s)},
            **self._options(max_tokens),
        )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        from ollama import ResponseError

        target = f"Ollama at {self._base_url}"
        with dependency_errors(target):
            try:
                yield
            except ResponseError as exc:  # e.g. the model is not pulled, or the server failed
                raise DependencyUnavailable(
                    f"{target} refused the call (HTTP {exc.status_code}): {exc}"
                ) from exc

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        client = self._client(json_schema, max_tokens)
        with self._errors():
            reply = await retry_on_connection_errors(
                lambda: client.ainvoke(_as_tuples(messages)), self._retry, target=self._base_url
            )
        usage = reply.usage_metadata or {}
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        return ChatReply(text, *_token_counts(usage))

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = TOP_LOGPROBS
    ) -> TokenReply:
        """One token through Ollama's own chat API, asking for its log-probabilities (Ollama
        0.12.11 and later give them; an older server leaves them out, and the sampled token is
        all there is: docs/models.md)."""
        from ollama import AsyncClient

        client = AsyncClient(host=self._base_url, timeout=http_timeout(self._timeout_s))

        async def call() -> Any:
            return await client.chat(
                self._model,
                messages=[{"role": m.role, "content": m.content} for m in messages],
                options=self._options(1),
                keep_alive=self._keep_alive_s,
                logprobs=True,
                top_logprobs=top_logprobs,
            )

        try:
            with self._errors():
                reply = await retry_on_connection_errors(call, self._retry, target=self._base_url)
        finally:
            await client.close()
        tokens = [entry.model_dump() for entry in reply.logprobs or ()]
        return TokenReply(
            reply.message.content or "",
            first_token_candidates(tokens),
            int(reply.prompt_eval_count or 0),
            int(reply.eval_count or 0),
        )

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        client = self._client(json_schema, max_tokens)
        pieces: list[str] = []
        usage: Mapping[str, Any] = {}
        with self._errors():
            chunks = retry_stream_on_connection_errors(
                lambda: client.astream(_as_tuples(messages)), self._retry, target=self._base_url
            )
            async with aclosing(chunks):
                async for chunk in chunks:
                    usage = chunk.usage_metadata or usage  # on the last chunk only
                    if isinstance(chunk.content, str) and chunk.content:
                        pieces.append(chunk.content)
                        yield chunk.content
        yield ChatReply("".join(pieces), *_token_counts(usage))

    async def aclose(self) -> None:
        return None


def _as_tuples(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def _token_counts(usage: Mapping[str, Any]) -> tuple[int, int, int]:
    """Prompt, completion and cached prompt tokens from LangChain's ``usage_metadata`` (Ollama
    reports no cached tokens today; ``input_token_details.cache_read`` where it does)."""
    details = usage.get("input_token_details") or {}
    return (
        int(usage.get("input_tokens", 0)),
        int(usage.get("output_tokens", 0)),
        int(details.get("cache_read", 0) or 0),
    )
