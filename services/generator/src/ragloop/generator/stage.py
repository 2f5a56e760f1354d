"""The generator stage. No gRPC here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragloop.core.domain import Answer, Citation, Document, ModelUsage
from ragloop.core.models import ChatModel
from ragloop.core.models.structured import complete_structured
from ragloop.core.validation import at_most, required_text
from ragloop.generator.citations import best_quote
from ragloop.generator.prompts import ANSWER_SCHEMA, NO_ANSWER, generate_messages


@dataclass(frozen=True)
class AnswerSentence:
    source: int  # 1-based number of the passage, as shown to the model
    text: str


@dataclass(frozen=True)
class DraftAnswer:
    answerable: bool
    sentences: list[AnswerSentence]


def parse_draft(data: dict[str, Any]) -> DraftAnswer:
    answerable = data["answerable"]
    if not isinstance(answerable, bool):
        raise TypeError(f"answerable must be a boolean, got {answerable!r}")
    sentences = [
        AnswerSentence(int(item["source"]), " ".join(str(item["text"]).split()))
        for item in data["sentences"]
    ]
    return DraftAnswer(answerable, [s for s in sentences if s.text])


def compose_answer(draft: DraftAnswer, documents: list[Document]) -> tuple[str, list[Citation]]:
    """Join the sentences with citation markers; a sentence naming no given passage keeps no
    marker and cites nothing."""
    parts: list[str] = []
    claims: dict[int, list[str]] = {}
    for sentence in draft.sentences:
        if 1 <= sentence.source <= len(documents):
            parts.append(f"{sentence.text} [{sentence.source}]")
            claims.setdefault(sentence.source, []).append(sentence.text)
        else:
            parts.append(sentence.text)
    citations = []
    for number, texts in claims.items():
        doc = documents[number - 1]
        citations.append(
            Citation(number, doc.id, doc.source, best_quote(doc.text, " ".join(texts)))
        )
    return " ".join(parts), citations


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
        text, citations = compose_answer(draft, documents)
        # An answer that cites no given passage cannot be checked against the sources.
        return Answer(text, citations, grounded=bool(citations), usage=reply.usage)
