"""The grader stage: relevance scores from the model's log-probabilities (by default), or
structured model verdicts, per document or in batches (``ModelJudge``), inside what every grader
gets (``layers.py``: validation, score floor, cache, injection guard). No gRPC here.

Documents a batch reply leaves out (missing, duplicated or malformed verdicts) are graded one by
one.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from enum import StrEnum

from ragloop.core.domain import Document, Grade, GradingResult, ModelUsage
from ragloop.core.metrics import count_verdict
from ragloop.core.models import ChatModel
from ragloop.core.models.chat import call_usage
from ragloop.core.models.structured import complete_structured
from ragloop.grader.cache import GradeCache
from ragloop.grader.layers import safeguarded, verdict_of
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


class GradingMode(StrEnum):
    # One one-token call per document: the probability of "yes" is the grade's confidence, and
    # the document passes at or above the relevance threshold.
    SCORED = "scored"
    PER_DOCUMENT = "per_document"  # one model call per document, up to `concurrency` at once
    BATCHED = "batched"  # one model call per `batch_size` documents


@dataclass
class JudgeCounters:
    """What the model judge counted since start, for benchmarks and scripts. (The service's
    metrics count the verdicts by kind: ``count_verdict``.)"""

    unparseable: int = 0  # documents graded "not relevant" because no reply parsed
    batch_fallbacks: int = 0  # documents a batch reply left out, graded one by one
    sampled: int = 0  # scored without log-probabilities: the sampled yes or no stood as 1 or 0


@dataclass
class GraderCounters(JudgeCounters):
    """The judge's counters and what the layers around it counted."""

    prefiltered: int = 0  # documents below the score floor, never sent to the model
    injections: int = 0  # documents with instruction-like text removed


@dataclass(frozen=True)
class _Pending:
    position: int
    doc: Document


class ModelJudge:
    """Grades the documents it is given with a chat model, nothing else (``ModelGrader`` adds
    what every grader gets: ``layers.py``)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        concurrency: int = 1,
        mode: GradingMode = GradingMode.SCORED,
        batch_size: int = 5,
        reasoning: bool = False,
        relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not 0.0 <= relevance_threshold <= 1.0:
            raise ValueError("relevance_threshold must be in [0, 1]")
        self._model = model
        self._slots = asyncio.Semaphore(concurrency)
        self._mode = GradingMode(mode)
        self._batch_size = batch_size
        self._reasoning = reasoning
        self._relevance_threshold = relevance_threshold
        self.counters = JudgeCounters()

    @property
    def version(self) -> str:
        """What its verdicts depend on besides the question and document: the model, the prompt
        and, for scored grades, the threshold they were judged at."""
        scored = self._mode is GradingMode.SCORED
        prompt = prompt_version(reasoning=self._reasoning, scored=scored)
        threshold = f"@{self._relevance_threshold:g}" if scored else ""
        return f"{self._model.name}/{prompt}{threshold}"

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        grades: dict[int, Grade] = {}
        provisional: set[str] = set()
        pending = [_Pending(position, doc) for position, doc in enumerate(documents)]
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
        singles = await asyncio.gather(*(grade_one(question, item.doc) for item in pending))
        for item, (grade, call_usage, parsed) in zip(pending, singles, strict=True):
            grades[item.position] = grade
            usage = usage + call_usage
            if not parsed:
                provisional.add(grade.document_id)
        ordered = [grades[p] for p in range(len(documents))]
        return GradingResult(ordered, usage, frozenset(provisional))

    def _verdict(self, grade: Grade) -> Grade:
        count_verdict(verdict_of(grade))
        return grade

    def _unparseable(self, doc: Document, reason: str) -> Grade:
        # Not relevant, and say why (never fail the whole request); provisional, so not cached:
        # a later round may get a reply that parses.
        self.counters.unparseable += 1
        count_verdict("unparseable")
        return Grade(doc.id, False, 0.0, reason)

    async def _grade_one(self, question: str, doc: Document) -> tuple[Grade, ModelUsage, bool]:
        async with self._slots:
            reply = await complete_structured(
                self._model,
                grade_messages(question, doc.text, reasoning=self._reasoning),
                schema=grade_schema(reasoning=self._reasoning),
                parse=lambda data: parse_verdict(doc.id, data),
                max_tokens=GRADE_MAX_TOKENS,
            )
        if reply.value is None:  # unparseable twice
            reason = f"grader reply could not be parsed ({reply.error})"
            return self._unparseable(doc, reason), reply.usage, False
        return self._verdict(reply.value), reply.usage, True

    async def _score_one(self, question: str, doc: Document) -> tuple[Grade, ModelUsage, bool]:
        async with self._slots:
            reply = await self._model.next_token(score_messages(question, doc.text))
        usage = call_usage(self._model.name, reply)
        score = relevance_score(reply)
        if score is None:
            reason = f"grader reply was neither yes nor no ({reply.text[:40]!r})"
            return self._unparseable(doc, reason), usage, False
        if score.sampled:
            self.counters.sampled += 1
        # No reason: the score is the grade's confidence, and a reason the rewriter would read
        # ("P 0.31 < 0.5") tells it nothing about the passage.
        relevant = score.probability >= self._relevance_threshold
        return self._verdict(Grade(doc.id, relevant, round(score.probability, 4), "")), usage, True

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
                    [(lbl, it.doc.text) for lbl, it in zip(labels, batch, strict=True)],
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
                grades[item.position] = self._verdict(by_label[label])
            else:
                left_out.append(item)
        if left_out:
            log.info(
                "batch reply left documents out; grading them one by one",
                extra={"left_out": len(left_out), "batch": len(batch), "error": reply.error},
            )
        return grades, left_out, reply.usage


class ModelGrader:
    """Implements the ``Grader`` interface with a chat model (``ModelJudge``) inside what every
    grader gets (``layers.safeguarded``: validation, score floor, cache, injection guard)."""

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
        self.judge = ModelJudge(
            model,
            concurrency=concurrency,
            mode=mode,
            batch_size=batch_size,
            reasoning=reasoning,
            relevance_threshold=relevance_threshold,
        )
        self._layers = safeguarded(
            self.judge,
            version=self.judge.version,
            cache=cache,
            max_documents=max_documents,
            min_score=min_score,
        )
        self.cache = self._layers.cached.cache

    @property
    def counters(self) -> GraderCounters:
        return GraderCounters(
            **asdict(self.judge.counters),
            prefiltered=self._layers.floor.prefiltered,
            injections=self._layers.guarded.injections,
        )

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        return await self._layers.grade(question, documents)
