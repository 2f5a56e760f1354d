"""Chat model providers: any OpenAI-compatible server (llama.cpp's ``llama-server`` among them)
and Ollama (via langchain-ollama; a one-token call through the ``ollama`` client, for its
log-probabilities).

All take an optional JSON schema that constrains the reply (OpenAI-compatible: ``response_format``
``json_schema``, which llama.cpp compiles to a grammar; Ollama: the ``format`` field), so stages get
structured output from small models too. Each answers in one piece (``complete``) or streams
(``stream``). All retry a refused connection with capped exponential backoff (``retry.py``) —
a stream only until its first piece arrived; a call that times out raises ``DependencyTimeout``
(gRPC DEADLINE_EXCEEDED) and a server that cannot be reached ``DependencyUnavailable``
(UNAVAILABLE). While streaming, the timeout bounds the wait for each next piece of the reply.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ragloop.core.domain import ModelUsage
from ragloop.core.errors import DependencyTimeout, DependencyUnavailable
from ragloop.core.models.retry import (
    NO_RETRIES,
    RetryPolicy,
    retry_on_connection_errors,
    retry_stream_on_connection_errors,
)
from ragloop.core.models.sse import sse_json_events

# Connecting should take well under this even on a busy machine; the rest of the timeout is for
# the model to answer.
CONNECT_TIMEOUT_S = 10.0
# Candidates asked for with a one-token reply: enough for "yes"/"Yes"/" yes" and the "no"s.
TOP_LOGPROBS = 10


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class TokenReply:
    """The model's first reply token, and the log-probabilities of its likeliest candidates by
    token text (``None`` where the provider gives none, or gave them in a shape not understood).
    """

    text: str
    top_logprobs: Mapping[str, float] | None
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

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        """The reply's text pieces (``str``) as the model writes them, then one ``ChatReply``
        with the whole text and the usage: what ``complete`` would have returned."""
        ...

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = TOP_LOGPROBS
    ) -> TokenReply:
        """One completion token, with the log-probabilities of the ``top_logprobs`` likeliest
        where the provider offers them."""
        ...

    async def aclose(self) -> None: ...


def http_timeout(timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))


@contextmanager
def dependency_errors(target: str) -> Iterator[None]:
    """Turn what an HTTP model client raises into the errors that gRPC codes are mapped from."""
    try:
        yield
    except httpx.ConnectTimeout as exc:
        raise DependencyUnavailable(f"{target} unreachable: {exc!r}") from exc
    except httpx.TimeoutException as exc:
        raise DependencyTimeout(f"{target} timed out") from exc
    except (httpx.HTTPError, ConnectionError) as exc:
        raise DependencyUnavailable(f"{target} unreachable: {exc!r}") from exc
    except (KeyError, IndexError, ValueError) as exc:  # ValueError: JSON that does not parse
        raise DependencyUnavailable(f"{target} sent a malformed reply: {exc!r}") from exc


def call_usage(model: str, reply: ChatReply | TokenReply) -> ModelUsage:
    """What one model call that gave ``reply`` cost."""
    return ModelUsage(
        model=model,
        calls=1,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
    )


def first_token_logprobs(choice: Mapping[str, Any]) -> dict[str, float] | None:
    """The top log-probabilities of a reply's first token by token text, from OpenAI's shape
    (``choice.logprobs.content[0].top_logprobs[*].{token, logprob}``); None when absent or
    malformed."""
    try:
        return _first_token_candidates(choice["logprobs"]["content"])
    except (KeyError, TypeError):
        return None


def _first_token_candidates(tokens: Any) -> dict[str, float] | None:
    """``tokens[0].top_logprobs[*].{token, logprob}`` by token text, the shape OpenAI's
    ``logprobs.content`` and Ollama's ``logprobs`` share; None when absent or malformed. Tokens
    that print the same keep their likelier candidate."""
    try:
        candidates = tokens[0]["top_logprobs"]
        found: dict[str, float] = {}
        for candidate in candidates:
            token, logprob = str(candidate["token"]), float(candidate["logprob"])
            if logprob == logprob and logprob <= 0:  # not NaN, and a log of a probability
                found[token] = max(logprob, found.get(token, logprob))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return found or None


def _token_counts(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    usage = usage or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


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
        return ChatReply(
            text, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        )

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
            _first_token_candidates(tokens),
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
        yield ChatReply(
            "".join(pieces), int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        )

    async def aclose(self) -> None:
        return None


def _as_tuples(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]
