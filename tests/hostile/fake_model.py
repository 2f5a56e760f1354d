"""A chat model that answers every stage's prompt with well-formed JSON of the schema it was
given, without a model: for tests that fuzz the services around the model, not the model."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from ragloop.core.models.chat import ChatMessage, ChatReply, TokenReply


class SchemaShapedChatModel:
    """Replies by the JSON schema's fields: a grade (as ``relevant`` says, else relevant when
    the prompt's length is even, so that some passages pass and some do not), a batch of
    grades, a rewrite that is new every time (so the loop does not end on a circular rewrite at
    once), or a one-sentence answer citing the first passage (JSON, or plain text where no
    schema is given: the generator's default format). Records every prompt."""

    name = "fake:schema-shaped"

    def __init__(self, *, relevant: bool | None = None) -> None:
        self.calls = 0
        self.relevant = relevant  # every grade's verdict; None: by the prompt's length
        self.prompts: list[str] = []

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        self.calls += 1
        prompt = "\n".join(m.content for m in messages)
        self.prompts.append(prompt)
        if json_schema is None:
            reply = "The first passage says so. [1]"
        else:
            reply = json.dumps(self._reply(json_schema, prompt))
        return ChatReply(reply, prompt_tokens=len(prompt) // 4, completion_tokens=len(reply) // 4)

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        reply = await self.complete(messages, json_schema=json_schema, max_tokens=max_tokens)
        for start in range(0, len(reply.text), 7):
            yield reply.text[start : start + 7]
        yield reply

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = 10
    ) -> TokenReply:
        """The scored grader's call: yes or no as ``relevant`` says, sure of it."""
        self.calls += 1
        prompt = "\n".join(m.content for m in messages)
        self.prompts.append(prompt)
        relevant = self.relevant if self.relevant is not None else len(prompt) % 2 == 0
        word, other = ("yes", "no") if relevant else ("no", "yes")
        return TokenReply(word, {word: -0.01, other: -6.0}, len(prompt) // 4, 1)

    async def aclose(self) -> None:
        return None

    def _reply(self, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
        fields = schema.get("properties", {})
        relevant = self.relevant if self.relevant is not None else len(prompt) % 2 == 0
        if "relevant" in fields:
            return {"relevant": relevant, "confidence": 0.8, "reasoning": "fake verdict"}
        if "verdicts" in fields:
            labels = fields["verdicts"]["items"]["properties"]["id"]["enum"]
            return {
                "verdicts": [
                    {"id": label, "relevant": relevant, "confidence": 0.7, "reasoning": "fake"}
                    for label in labels
                ]
            }
        if "rewritten_query" in fields:
            return {
                "rewritten_query": f"rewritten query number {self.calls}",
                "reason": "fake rewrite",
                "keywords": ["fake"],
            }
        if "standalone_query" in fields:
            return {"standalone_query": f"standalone question number {self.calls}"}
        if "answerable" in fields:
            sentence = {"source": 1, "text": "The first passage says so."}
            return {"answerable": True, "sentences": [sentence]}
        raise AssertionError(f"no fake reply for a schema with fields {sorted(fields)}")
