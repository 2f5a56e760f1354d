"""What every chat model provider shares: messages and replies, the ``ChatModel`` protocol,
timeouts, the errors gRPC codes are mapped from, a call's usage and the first token's
log-probabilities. The providers: any OpenAI-compatible server, llama.cpp's ``llama-server`` among
them (``openai_compatible.py``), and Ollama (``ollama.py``).

All take an optional JSON schema that constrains the reply (OpenAI-compatible: ``response_format``
``json_schema``, which llama.cpp compiles to a grammar; Ollama: the ``format`` field), so stages get
structured output from small models too. Each answers in one piece (``complete``) or streams
(``stream``). All retry a refused connection with capped exponential backoff (``retry.py``) —
a stream only until its first piece arrived; a call that times out raises ``DependencyTimeout``
(gRPC DEADLINE_EXCEEDED) and a server that cannot be reached ``DependencyUnavailable``
(UNAVAILABLE). While streaming, the timeout bounds the wait for each next piece of the reply.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ragloop.core.domain import ModelUsage
from ragloop.core.errors import DependencyTimeout, DependencyUnavailable

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
    cached_prompt_tokens: int = 0  # of prompt_tokens, those the server took from its prompt cache


@dataclass(frozen=True)
class TokenReply:
    """The model's first reply token, and the log-probabilities of its likeliest candidates by
    token text (``None`` where the provider gives none, or gave them in a shape not understood).
    """

    text: str
    top_logprobs: Mapping[str, float] | None
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int = 0


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
        cached_prompt_tokens=reply.cached_prompt_tokens,
    )


def first_token_logprobs(choice: Mapping[str, Any]) -> dict[str, float] | None:
    """The top log-probabilities of a reply's first token by token text, from OpenAI's shape
    (``choice.logprobs.content[0].top_logprobs[*].{token, logprob}``); None when absent or
    malformed."""
    try:
        return first_token_candidates(choice["logprobs"]["content"])
    except (KeyError, TypeError):
        return None


def first_token_candidates(tokens: Any) -> dict[str, float] | None:
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
