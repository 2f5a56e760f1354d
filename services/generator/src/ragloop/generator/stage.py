"""The generator stage. No gRPC here."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing

from ragloop.core.domain import Answer, AnswerDelta, Document, ModelUsage
from ragloop.core.models import ChatMessage, ChatModel
from ragloop.core.models.structured import (
    StructuredReply,
    complete_structured,
    stream_structured,
)
from ragloop.core.validation import (
    MAX_ANSWER_INSTRUCTIONS_CHARS,
    at_most,
    optional_text,
    required_text,
)
from ragloop.generator.answer_stream import AnswerTextStream
from ragloop.generator.citations import compose_answer, plain_text
from ragloop.generator.draft import DraftAnswer, parse_draft
from ragloop.generator.prompts import ANSWER_SCHEMA, NO_ANSWER, generate_messages

log = logging.getLogger(__name__)


class ModelGenerator:
    """Implements the ``Generator`` interface with a chat model."""

    def __init__(self, model: ChatModel, *, max_tokens: int = 384, max_documents: int = 20) -> None:
        self._model = model
        self._max_tokens = max_tokens
        self._max_documents = max_documents

    async def generate(
        self, question: str, documents: list[Document], instructions: str = ""
    ) -> Answer:
        """The answer to ``question`` from ``documents`` only, citing them, written as the user's
        ``instructions`` ask where they agree with that ("" for none)."""
        messages = self._checked_messages(question, documents, instructions)
        if not documents:
            return self._nothing_passed()
        reply = await complete_structured(
            self._model,
            messages,
            schema=ANSWER_SCHEMA,
            parse=parse_draft,
            max_tokens=self._max_tokens,
        )
        return self._answer(reply, documents)

    async def generate_stream(
        self, question: str, documents: list[Document], instructions: str = ""
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        """``generate``, streamed: ``AnswerDelta`` pieces of the answer's text as the model writes
        them, then the ``Answer`` that ``generate`` returns.

        Joined since the last delta with ``restart``, the deltas' texts equal the answer's text
        by ``plain_text``. Where the streamed text turns out not to be the answer — a reply that
        had to be repaired streams again, a refusal replaces what was written — a delta with
        ``restart`` says so before the new text.
        """
        messages = self._checked_messages(question, documents, instructions)
        if not documents:
            answer = self._nothing_passed()
            yield AnswerDelta(answer.text)
            yield answer
            return
        shown = ""  # the text the deltas built so far
        attempt, text_stream, restart = -1, AnswerTextStream(), False
        reply: StructuredReply[DraftAnswer] | None = None
        events = stream_structured(
            self._model,
            messages,
            schema=ANSWER_SCHEMA,
            parse=parse_draft,
            max_tokens=self._max_tokens,
        )
        async with aclosing(events):
            async for event in events:
                if isinstance(event, StructuredReply):
                    reply = event
                    continue
                if event.attempt != attempt:  # a new reply: its text starts afresh
                    attempt, text_stream, restart = event.attempt, AnswerTextStream(), bool(shown)
                if text := text_stream.feed(event.text):
                    yield AnswerDelta(text, restart)
                    shown = text if restart else shown + text
                    restart = False
        assert reply is not None, "stream_structured always ends with its reply"
        answer = self._answer(reply, documents)
        if plain_text(shown) != plain_text(answer.text):
            yield AnswerDelta(answer.text, restart=bool(shown))
        yield answer

    def _checked_messages(
        self, question: str, documents: list[Document], instructions: str
    ) -> list[ChatMessage]:
        """The prompt of a valid request; InvalidInput saying what is wrong with another."""
        question = required_text(question, "question")
        instructions = optional_text(
            instructions, "answer_instructions", max_chars=MAX_ANSWER_INSTRUCTIONS_CHARS
        )
        at_most(documents, self._max_documents, "documents")
        return generate_messages(question, documents, instructions)

    def _nothing_passed(self) -> Answer:
        # Nothing passed grading: say so rather than let the model invent an answer.
        return Answer(NO_ANSWER, [], grounded=False, usage=ModelUsage(model=self._model.name))

    def _answer(self, reply: StructuredReply[DraftAnswer], documents: list[Document]) -> Answer:
        draft = reply.value
        checked = compose_answer(draft, documents) if draft and draft.answerable else None
        if checked is None or not checked.text:  # no sentences, or citation markers only
            return Answer(NO_ANSWER, [], grounded=False, usage=reply.usage)
        if checked.removed_citations:
            log.warning(
                "citations to no given passage removed",
                extra={"removed": checked.removed_citations, "passages": len(documents)},
            )
        return Answer(
            checked.text,
            checked.citations,
            # An answer that cites no given passage cannot be checked against the sources.
            grounded=bool(checked.citations),
            usage=reply.usage,
            removed_citations=checked.removed_citations,
            uncited_sentences=checked.uncited_sentences,
            hallucination_risk=checked.hallucination_risk,
        )
