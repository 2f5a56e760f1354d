"""The rewriter stage. No gRPC here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragloop.core.domain import (
    GradedDocument,
    ModelUsage,
    Rewrite,
    RewriteAttempt,
    StandaloneQuery,
    Turn,
)
from ragloop.core.errors import InvalidInput
from ragloop.core.models import ChatMessage, ChatModel
from ragloop.core.models.structured import StructuredReply, complete_structured
from ragloop.core.text import normalize_query
from ragloop.core.validation import MAX_QUERY_CHARS, history_turns, required_text
from ragloop.rewriter.follow_up import same_question, with_referent
from ragloop.rewriter.prompts import (
    MAX_KEYWORDS,
    REFERENT_CHARS,
    REFERENT_SCHEMA,
    STANDALONE_SCHEMA,
    referent_messages,
    retry_messages,
    rewrite_messages,
    rewrite_schema,
    standalone_messages,
    tried_queries,
)


def parse_rewrite(data: dict[str, Any]) -> Rewrite:
    query = " ".join(str(data["rewritten_query"]).split())
    if not query:
        raise ValueError("rewritten_query is empty")
    keywords = [str(k).strip() for k in data.get("keywords", []) if str(k).strip()]
    reason = str(data.get("reason", "")).strip()
    return Rewrite(query=query, reason=reason, keywords=keywords[:MAX_KEYWORDS])


# A reply names a referent (at most REFERENT_CHARS) and a question; the schema closes it earlier.
FOLLOW_UP_MAX_TOKENS = 160


def parse_standalone(data: dict[str, Any]) -> str:
    return _usable_question(str(data["standalone_query"]))


def parse_referent(data: dict[str, Any]) -> str:
    """The standalone question, with what the follow-up refers to in front where the model named
    it but left it out of the question."""
    referent = str(data["refers_to"])[:REFERENT_CHARS]
    return _usable_question(with_referent(str(data["standalone_query"]), referent))


def _usable_question(text: str) -> str:
    query = " ".join(text.split())
    if not query:
        raise ValueError("standalone_query is empty")
    # A provider that ignores the schema's maxLength may ramble; the loop's stages take at most
    # MAX_QUERY_CHARS of question.
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"standalone_query is longer than {MAX_QUERY_CHARS} characters")
    return query


class ModelRewriter:
    """Implements the ``Rewriter`` interface with a chat model.

    A rewrite that repeats a query already tried is asked for once more, with a short request that
    lists the queries tried (``retry_messages``); if the model repeats itself again the repeated
    query is returned as is and the loop stops on it (circular rewrite).
    """

    def __init__(self, model: ChatModel, *, reasoning: bool = False) -> None:
        self._model = model
        self._reasoning = reasoning
        self._schema = rewrite_schema(reasoning=reasoning)

    async def rewrite(
        self,
        original_query: str,
        current_query: str,
        failed: list[GradedDocument],
        history: list[RewriteAttempt],
    ) -> Rewrite:
        original_query = required_text(original_query, "original_query")
        current_query = required_text(current_query or original_query, "current_query")
        tried_in_order = tried_queries(original_query, current_query, history)
        tried = {normalize_query(q) for q in tried_in_order}

        messages: list[ChatMessage] = rewrite_messages(
            original_query, current_query, failed, history, reasoning=self._reasoning
        )
        usage = ModelUsage(model=self._model.name)
        for _ in range(2):
            reply = await complete_structured(
                self._model, messages, schema=self._schema, parse=parse_rewrite, max_tokens=160
            )
            usage = usage + reply.usage
            if reply.value is None:
                reason = f"rewriter reply could not be parsed ({reply.error}); kept the query"
                return Rewrite(current_query, reason, [], usage)
            if normalize_query(reply.value.query) not in tried:
                return Rewrite(reply.value.query, reply.value.reason, reply.value.keywords, usage)
            messages = retry_messages(original_query, tried_in_order, reasoning=self._reasoning)
        return Rewrite(reply.value.query, reply.value.reason, reply.value.keywords, usage)

    async def standalone(self, history: list[Turn], question: str) -> StandaloneQuery:
        """``question``, a follow-up in the conversation ``history`` (oldest first), rewritten to
        stand alone: one model call (two when its reply must be repaired). A reply that repeats
        the question is followed by a call that names what the question refers to first
        (``referent_messages``). A reply that cannot be used leaves the question as asked."""
        question = required_text(question, "question")
        if not history:
            raise InvalidInput(
                "history must hold at least one turn (a first question stands alone)"
            )
        history_turns([(turn.role, turn.content) for turn in history])
        reply = await self._follow_up_reply(
            standalone_messages(history, question), STANDALONE_SCHEMA, parse_standalone
        )
        if reply.value is None or not same_question(reply.value, question):
            return StandaloneQuery(reply.value or question, reply.usage)
        named = await self._follow_up_reply(
            referent_messages(history, question), REFERENT_SCHEMA, parse_referent
        )
        return StandaloneQuery(named.value or reply.value, reply.usage + named.usage)

    async def _follow_up_reply(
        self,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        parse: Callable[[dict[str, Any]], str],
    ) -> StructuredReply[str]:
        return await complete_structured(
            self._model, messages, schema=schema, parse=parse, max_tokens=FOLLOW_UP_MAX_TOKENS
        )
