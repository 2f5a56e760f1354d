"""A chat model that records its calls in the model-call metrics of the stage that makes them.

A stage wraps its model once, where it is built (``MeteredChatModel(model, stage="grader")``), and
its logic stays free of metrics: every call's latency and tokens, or its failure, is recorded
here; ``structured.py`` counts the replies that do not parse.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ragloop.core.metrics import (
    count_model_failure,
    count_parse_failure,
    init_model_series,
    observe_model_call,
)
from ragloop.core.models.chat import TOP_LOGPROBS, ChatMessage, ChatModel, ChatReply, TokenReply


class MeteredChatModel:
    """``model`` as called by ``stage`` (one of the catalog's STAGES), with its calls measured.

    A call that returns (or a stream that delivers its final ``ChatReply``) is a successful call:
    its time from start to reply and its tokens are observed. A call that raises is a failure,
    by reason. A cancelled call, or a stream its reader closed early, is neither. Creating one
    creates the stage's model series at zero, so a fresh stage exports them before its first call.
    """

    def __init__(self, model: ChatModel, *, stage: str) -> None:
        init_model_series(stage, model.name)  # refuses a stage outside the closed set
        self._model = model
        self.stage = stage

    @property
    def name(self) -> str:
        return self._model.name

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        started = time.perf_counter()
        try:
            reply = await self._model.complete(
                messages, json_schema=json_schema, max_tokens=max_tokens
            )
        except Exception as exc:
            count_model_failure(self.stage, self.name, exc)
            raise
        self._observe(reply, started)
        return reply

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        started = time.perf_counter()
        pieces = self._model.stream(messages, json_schema=json_schema, max_tokens=max_tokens)
        try:
            async with aclosing(pieces):
                async for item in pieces:
                    if isinstance(item, ChatReply):
                        self._observe(item, started)
                    yield item
        except Exception as exc:  # GeneratorExit (closed early) and cancellation pass by
            count_model_failure(self.stage, self.name, exc)
            raise

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = TOP_LOGPROBS
    ) -> TokenReply:
        started = time.perf_counter()
        try:
            reply = await self._model.next_token(messages, top_logprobs=top_logprobs)
        except Exception as exc:
            count_model_failure(self.stage, self.name, exc)
            raise
        self._observe(reply, started)
        return reply

    def count_parse_failure(self) -> None:
        """A reply of this model that was not the requested JSON (``structured.py`` calls this)."""
        count_parse_failure(self.stage, self.name)

    async def aclose(self) -> None:
        await self._model.aclose()

    def _observe(self, reply: ChatReply | TokenReply, started: float) -> None:
        observe_model_call(
            self.stage,
            self.name,
            time.perf_counter() - started,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
        )
