"""The generator stage. No gRPC here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragloop.core.domain import Answer, Document, ModelUsage
from ragloop.core.models import ChatModel
from ragloop.core.models.structured import complete_structured
from ragloop.core.text import normalize_query
from ragloop.core.validation import at_most, required_text
from ragloop.generator.citations import extract_citations
from ragloop.generator.prompts import (
    ANSWER_SCHEMA,
    MODEL_NO_ANSWER,
    NO_ANSWER,
    generate_messages,
)


@dataclass(frozen=True)
class DraftAnswer:
    source_numbers: list[int]
    text: str


def parse_draft(data: dict[str, Any]) -> DraftAnswer:
    numbers = [int(n) for n in data["source_numbers"]]
    return DraftAnswer(numbers, str(data["answer"]).strip())


def says_no_answer(text: str) -> bool:
    normalized = normalize_query(text)
    return not normalized or normalized in {
        normalize_query(MODEL_NO_ANSWER),
        normalize_query(NO_ANSWER),
    }


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
        if draft is None or says_no_answer(draft.text):
            return Answer(NO_ANSWER, [], grounded=False, usage=reply.usage)
        citations = extract_citations(draft.text, documents, declared=draft.source_numbers)
        # An answer that cites no given passage cannot be checked against the sources.
        return Answer(draft.text, citations, grounded=bool(citations), usage=reply.usage)
