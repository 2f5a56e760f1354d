"""The generator stage. No gRPC here."""

from __future__ import annotations

import logging

from ragloop.core.domain import Answer, Document, ModelUsage
from ragloop.core.models import ChatModel
from ragloop.core.models.structured import complete_structured
from ragloop.core.validation import at_most, required_text
from ragloop.generator.citations import compose_answer
from ragloop.generator.draft import parse_draft
from ragloop.generator.prompts import ANSWER_SCHEMA, NO_ANSWER, generate_messages

log = logging.getLogger(__name__)


class ModelGenerator:
    """Implements the ``Generator`` interface with a chat model."""

    def __init__(self, model: ChatModel, *, max_tokens: int = 384, max_documents: int = 20) -> None:
        self._model = model
        self._max_tokens = max_tokens
        self._max_documents = max_documents

    async def generate(self, question: str, documents: list[Document]) -> Answer:
        question = required_text(question, "question")
        at_most(documents, self._max_documents, "documents")
        if not documents:
            # Nothing passed grading: say so rather than let the model invent an answer.
            return Answer(NO_ANSWER, [], grounded=False, usage=ModelUsage(model=self._model.name))
        reply = await complete_structured(
            self._model,
            generate_messages(question, documents),
            schema=ANSWER_SCHEMA,
            parse=parse_draft,
            max_tokens=self._max_tokens,
        )
        draft = reply.value
        if draft is None or not draft.answerable or not draft.sentences:
            return Answer(NO_ANSWER, [], grounded=False, usage=reply.usage)
        checked = compose_answer(draft, documents)
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
