"""The baseline's model calls: LangChain's ChatOpenAI on the llama-server's OpenAI-compatible API,
with the same sampling and length limits as ragloop's stages, and its token accounting read
from the server's ``usage`` fields (LangChain's ``response_metadata["token_usage"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import httpx
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI

from ragloop.core.domain import ModelUsage
from ragloop.core.models.openai_compatible import LlamaCppChatModel
from ragloop.generator.settings import GeneratorSettings
from ragloop.grader.stage import GRADE_MAX_TOKENS

REWRITE_MAX_TOKENS = 160  # ragloop.rewriter.stage's limit
TEMPERATURE = 0.0  # as every ragloop chat model


class GradeVerdict(TypedDict):
    """Whether one retrieved document is relevant to the question."""

    # A TypedDict rather than a pydantic model: LangChain then parses the reply itself, so a
    # reply that is not the JSON asked for is a parsing error beside the raw reply (and its token
    # counts), not an exception of the OpenAI client.
    binary_score: Annotated[
        Literal["yes", "no"], ..., "'yes' if the document is relevant to the question, else 'no'"
    ]


@dataclass(frozen=True)
class BaselineChat:
    """The three model roles. ``grader`` answers ``{"raw": AIMessage, "parsed": GradeVerdict |
    None, "parsing_error": …}`` (``with_structured_output(…, include_raw=True)``); the others
    answer an ``AIMessage``."""

    grader: Runnable[list[BaseMessage], dict[str, Any]]
    rewriter: Runnable[list[BaseMessage], BaseMessage]
    generator: Runnable[list[BaseMessage], BaseMessage]


def openai_chat(
    base_url: str,
    model: str,
    *,
    timeout_s: float,
    extra_body: Mapping[str, Any] = LlamaCppChatModel.EXTENSIONS,
    http_async_client: httpx.AsyncClient | None = None,
) -> BaselineChat:
    """ChatOpenAI at ``base_url`` (ending in ``/v1``). ``extra_body`` defaults to the llama.cpp
    options ragloop sends (no repetition penalty, prompt-prefix cache), so both systems sample
    alike."""

    def chat(max_tokens: int) -> ChatOpenAI:
        return ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key="unused",  # type: ignore[arg-type]  # llama-server needs none
            temperature=TEMPERATURE,
            max_tokens=max_tokens,  # type: ignore[call-arg]
            timeout=timeout_s,
            extra_body=dict(extra_body),
            http_async_client=http_async_client,
        )

    return BaselineChat(
        grader=chat(GRADE_MAX_TOKENS).with_structured_output(
            GradeVerdict, method="json_schema", include_raw=True
        ),
        rewriter=chat(REWRITE_MAX_TOKENS),
        generator=chat(GeneratorSettings().generator_max_tokens),
    )


def usage_of(message: BaseMessage) -> ModelUsage:
    """One model call and the tokens the server reported for it."""
    usage = message.response_metadata.get("token_usage") or {}
    return ModelUsage(
        calls=1,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )
