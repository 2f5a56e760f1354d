"""The grader stage: relevance scores from the model's log-probabilities (by default), or
structured model verdicts, per document or in batches. No gRPC here.

For every document, in this order: a retrieval score below the optional floor grades it not
relevant without a model call; a cached verdict for the same (question, document, model, prompt
version) is reused; otherwise the model grades it, alone or with others in a batch. Documents a
batch reply leaves out (missing, duplicated or malformed verdicts) are graded one by one.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import StrEnum

from ragloop.core.domain import Document, Grade, GradingResult, ModelUsage
from ragloop.core.errors import InvalidInput
from ragloop.core.metrics import count_verdict
from ragloop.core.models import ChatModel
from ragloop.core.models.chat import call_usage
from ragloop.core.models.structured import complete_structured
from ragloop.core.validation import at_most, required_text
from ragloop.grader.cache import GradeCache, GradeKey
from ragloop.grader.guard import GuardedText, strip_instructions
from ragloop.grader.prompts import (
    batch_label,
    batch_messages,
    batch_schema,
    grade_messages,
    grade_schema,
    prompt_version,
    score_messages,
)
from ragloop.grader.scores import DEFAULT_RELEVANCE_THRESHOLD, relevance_score
from ragloop.grader.verdicts import parse_batch, parse_verdict

log = logging.getLogger(__name__)

GRADE_MAX_TOKENS = 96
BATCH_MAX_TOKENS_PER_DOCUMENT = 64
INJECTION_NOTE = "instruction-like text in the document was ignored"


class GradingMode(StrEnum):
    # One one-token call per document: the probability of "yes" is the grade's confidence, and
    # the document passes at or above the relevance threshold.
    SCORED = "scored"
    PER_DOCUMENT = "per_document"  # one model call per document, up to `concurrency` at once
    BATCHED = "batched"  # one model call per `batch_size` documents


@dataclass
class GraderCounters:
    """Plain counters since start, for benchmarks and scripts. (The service's metrics count the
    verdicts by kind: ``count_verdict``.)"""

    unparseable: int = 0  # documents graded "not relevant" because no reply parsed
    batch_fallbacks: int = 0  # documents a batch reply left out, graded one by one
    prefiltered: int = 0  # documents below the score floor, never sent to the model
    injections: int = 0  # documents with instruction-like text removed
    sampled: int = 0  # scored without log-probabilities: the sampled yes or no stood as 1 or 0


@dataclass(frozen=True)
class _Pending:
    position: int
    doc: Document
    guarded: GuardedText


class ModelGrader:
    """Implements the ``Grader`` interface with a chat model."""

    def __init__(
        self,
        model: ChatModel,
        *,
        concurrency: int = 1,
        max_documents: int = 50,
        mode: GradingMode = GradingMode.SCORED,
        batch_size: int = 5,
        cache: GradeCache | None = None,
        min_score: float = 0.0,
        reasoning: bool = False,
        relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not 0.0 <= relevance_threshold <= 1.0:
            raise ValueError("relevance_threshold must be in [0, 1]")
        self._model = model
        self._slots = asyncio.Semaphore(concurrency)
        self._max_documents = max_documents
        self._mode = GradingMode(mode)
        self._batch_size = batch_size
        self._min_score = min_score
        self._reasoning = reasoning
        self._relevance_threshold = relevance_threshold
        scored = self._mode is GradingMode.SCORED
        # A cached scored grade holds its verdict at the threshold it was graded with.
        self._prompt_version = prompt_version(reasoning=reasoning, scored=scored) + (
            f"@{relevance_threshold:g}" if scored else ""
        )
        self.cache = cache if cache is not None else GradeCache(0)
        self.counters = GraderCounters()

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        question = required_text(question, "question")
        at_most(documents, self._max_documents, "documents")
        for position, doc in enumerate(documents):
            if not doc.id or not doc.text.strip():
                raise InvalidInput(f"document {position} needs an id and non-empty text")

        grades: dict[int, Grade] = {}
        pending: list[_Pending] = []
        for position, doc in enumerate(documents):
            grade = self._without_model(question, doc)
            if grade is not None:
                grades[position] = grade
                continue
            guarded = strip_instructions(doc.text)
            if guarded.flagged:
                self.counters.injections += 1
                log.warning("instruction-like text removed", extra={"document_id": doc.id})
            if not guarded.has_content:
                count_verdict("instructions_only")
                grades[position] = Grade(doc.id, False, 1.0, f"only {INJECTION_NOTE}")
                continue
            pending.append(_Pending(position, doc, guarded))

        usage = ModelUsage(model=self._model.name)
        if self._mode is GradingMode.BATCHED and len(pending) > 1:
            batches = [
                pending[i : i + self._batch_size] for i in range(0, len(pending), self._batch_size)
            ]
            results = await asyncio.gather(*(self._grade_batch(question, b) for b in batches))
            pending = []
            for batch_grades, left_out, call_usage in results:
                grades.update(batch_grades)
                pending.extend(left_out)
                usage = usage + call_usage
            self.counters.batch_fallbacks += len(pending)
        grade_one = self._score_one if self._mode is GradingMode.SCORED else self._grade_one
        singles = await asyncio.gather(*(grade_one(question, item) for item in pending))
        for item, (grade, call_usage) in zip(pending, singles, strict=True):
            grades[item.position] = grade
            usage = usage + call_usage
        return GradingResult([grades[p] for p in range(len(documents))], usage)

    def _key(self, question: str, doc: Document) -> GradeKey:
        return GradeKey.of(
            question, doc, model=self._model.name, prompt_version=self._prompt_version
        )

    def _without_model(self, question: str, doc: Document) -> Grade | None:
        """A grade that needs no model call: below the score floor, or cached."""
        # A score of exactly 0 means "not from a search" (see Document.score): never filtered.
        if self._min_score > 0 and doc.score != 0 and doc.score < self._min_score:
            self.counters.prefiltered += 1
            count_verdict("below_score_floor")
            reason = (
                f"retrieval similarity {doc.score:.2f} is below the grader's floor "
                f"{self._min_score:.2f}; not sent to the model"
            )
            return Grade(doc.id, False, 1.0, reason)
        cached = self.cache.get(self._key(question, doc))
        if cached is not None:
            count_verdict(_verdict_of(cached))
        return cached

    def _finish(self, question: str, item: _Pending, grade: Grade) -> Grade:
        if item.guarded.flagged:
            reasoning = f"{grade.reasoning} ({INJECTION_NOTE})".strip()
            grade = Grade(grade.document_id, grade.relevant, grade.confidence, reasoning)
        self.cache.put(self._key(question, item.doc), grade)
        count_verdict(_verdict_of(grade))
        return grade

    async def _grade_one(self, question: str, item: _Pending) -> tuple[Grade, ModelUsage]:
        doc = item.doc
        async with self._slots:
            reply = await complete_structured(
                self._model,
                grade_messages(question, item.guarded.text, reasoning=self._reasoning),
                schema=grade_schema(reasoning=self._reasoning),
                parse=lambda data: parse_verdict(doc.id, data),
                max_tokens=GRADE_MAX_TOKENS,
            )
        if reply.value is None:
            # Unparseable twice: not relevant, and say why (never fail the whole request). Not
            # cached: a later round may get a reply that parses.
            self.counters.unparseable += 1
            count_verdict("unparseable")
            grade = Grade(doc.id, False, 0.0, f"grader reply could not be parsed ({reply.error})")
            return grade, reply.usage
        return self._finish(question, item, reply.value), reply.usage

    async def _score_one(self, question: str, item: _Pending) -> tuple[Grade, ModelUsage]:
        doc = item.doc
        async with self._slots:
            reply = await self._model.next_token(score_messages(question, item.guarded.text))
        usage = call_usage(self._model.name, reply)
        score = relevance_score(reply)
        if score is None:
            # Neither yes nor no: not relevant, and say why. Not cached (as _grade_one).
            self.counters.unparseable += 1
            count_verdict("unparseable")
            reason = f"grader reply was neither yes nor no ({reply.text[:40]!r})"
            return Grade(doc.id, False, 0.0, reason), usage
        if score.sampled:
            self.counters.sampled += 1
        # No reason: the score is the grade's confidence, and a reason the rewriter would read
        # ("P 0.31 < 0.5") tells it nothing about the passage.
        relevant = score.probability >= self._relevance_threshold
        grade = Grade(doc.id, relevant, round(score.probability, 4), "")
        return self._finish(question, item, grade), usage

    async def _grade_batch(
        self, question: str, batch: list[_Pending]
    ) -> tuple[dict[int, Grade], list[_Pending], ModelUsage]:
        """Grades by position for the documents the reply covers, and the ones it left out."""
        labels = [batch_label(i) for i in range(len(batch))]
        ids_by_label = {label: item.doc.id for label, item in zip(labels, batch, strict=True)}
        async with self._slots:
            reply = await complete_structured(
                self._model,
                batch_messages(
                    question,
                    [(lbl, it.guarded.text) for lbl, it in zip(labels, batch, strict=True)],
                    reasoning=self._reasoning,
                ),
                schema=batch_schema(labels, reasoning=self._reasoning),
                parse=lambda data: parse_batch(ids_by_label, data),
                max_tokens=BATCH_MAX_TOKENS_PER_DOCUMENT * len(batch),
            )
        by_label = reply.value or {}
        grades: dict[int, Grade] = {}
        left_out: list[_Pending] = []
        for label, item in zip(labels, batch, strict=True):
            if label in by_label:
                grades[item.position] = self._finish(question, item, by_label[label])
            else:
                left_out.append(item)
        if left_out:
            log.info(
                "batch reply left documents out; grading them one by one",
                extra={"left_out": len(left_out), "batch": len(batch), "error": reply.error},
            )
        return grades, left_out, reply.usage


def _verdict_of(grade: Grade) -> str:
    """The verdict metric's label of a grade the model gave (now or when it was cached)."""
    return "relevant" if grade.relevant else "not_relevant"
