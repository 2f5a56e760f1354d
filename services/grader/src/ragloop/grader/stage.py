"""The grader stage: one structured model verdict per document. No gRPC here."""

from __future__ import annotations

import asyncio
from typing import Any

from ragloop.core.domain import Document, Grade, GradingResult, ModelUsage
from ragloop.core.errors import InvalidInput
from ragloop.core.models import ChatModel
from ragloop.core.models.structured import complete_structured
from ragloop.core.validation import at_most, required_text
from ragloop.grader.prompts import GRADE_SCHEMA, grade_messages


def parse_verdict(document_id: str, data: dict[str, Any]) -> Grade:
    relevant = data["relevant"]
    if not isinstance(relevant, bool):
        raise TypeError(f"relevant must be a boolean, got {relevant!r}")
    confidence = min(1.0, max(0.0, float(data.get("confidence", 0.5))))
    return Grade(document_id, relevant, confidence, str(data.get("reasoning", "")).strip())


class ModelGrader:
    """Implements the ``Grader`` interface with a chat model."""

    def __init__(self, model: ChatModel, *, concurrency: int = 1, max_documents: int = 50) -> None:
        self._model = model
        self._slots = asyncio.Semaphore(concurrency)
        self._max_documents = max_documents

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        question = required_text(question, "question")
        at_most(documents, self._max_documents, "documents")
        for position, doc in enumerate(documents):
            if not doc.id or not doc.text.strip():
                raise InvalidInput(f"document {position} needs an id and non-empty text")
        results = await asyncio.gather(*(self._grade_one(question, doc) for doc in documents))
        usage = ModelUsage(model=self._model.name)
        for _, call_usage in results:
            usage = usage + call_usage
        return GradingResult([grade for grade, _ in results], usage)

    async def _grade_one(self, question: str, doc: Document) -> tuple[Grade, ModelUsage]:
        async with self._slots:
            reply = await complete_structured(
                self._model,
                grade_messages(question, doc.text),
                schema=GRADE_SCHEMA,
                parse=lambda data: parse_verdict(doc.id, data),
                max_tokens=96,
            )
        if reply.value is None:
            # Unparseable twice: not relevant, and say why (never fail the whole request).
            grade = Grade(doc.id, False, 0.0, f"grader reply could not be parsed ({reply.error})")
            return grade, reply.usage
        return reply.value, reply.usage
