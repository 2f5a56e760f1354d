"""What every grader gets, whatever grades: each a ``Grader`` that wraps another.

``safeguarded`` stacks them: the request is validated; a document whose retrieval score is below
the floor is graded not relevant without going further; a grade cached for the same question,
document text and grader version is reused; instruction-like text is removed before the inner
grader sees a document (``guard.py``). A grader that is not a model gets all of it for free.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from ragloop.core.domain import Document, Grade, GradingResult
from ragloop.core.errors import InvalidInput
from ragloop.core.metrics import count_verdict
from ragloop.core.stages import Grader
from ragloop.core.validation import at_most, required_text
from ragloop.grader.cache import GradeCache, GradeKey
from ragloop.grader.guard import strip_instructions

log = logging.getLogger(__name__)

INJECTION_NOTE = "instruction-like text in the document was ignored"


def verdict_of(grade: Grade) -> str:
    """The verdict metric's label of a grade a grader gave (now or when it was cached)."""
    return "relevant" if grade.relevant else "not_relevant"


async def _grade_the_rest(
    inner: Grader, question: str, documents: list[Document], decided: dict[int, Grade]
) -> GradingResult:
    """The grades of ``documents`` in order: ``decided`` ones by position, the rest from one call
    of ``inner`` (made even with none left, so that the result names the inner grader's model)."""
    rest = [doc for position, doc in enumerate(documents) if position not in decided]
    result = await inner.grade(question, rest)
    graded = iter(result.grades)
    grades = [decided[p] if p in decided else next(graded) for p in range(len(documents))]
    return GradingResult(grades, result.usage, result.provisional)


@dataclass
class Validated:
    """Refuses what no grader should see: an empty question, too many documents, a document
    without an id or text (InvalidInput, a 400 / INVALID_ARGUMENT saying which)."""

    inner: Grader
    max_documents: int = 50

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        question = required_text(question, "question")
        at_most(documents, self.max_documents, "documents")
        for position, doc in enumerate(documents):
            if not doc.id or not doc.text.strip():
                raise InvalidInput(f"document {position} needs an id and non-empty text")
        return await self.inner.grade(question, documents)


@dataclass
class ScoreFloor:
    """Grades a document whose retrieval score is below ``min_score`` not relevant, without the
    inner grader (0: off). A score of exactly 0 means "not from a search" (Document.score) and
    is never filtered."""

    inner: Grader
    min_score: float = 0.0
    prefiltered: int = 0  # documents graded here since start

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        below: dict[int, Grade] = {}
        for position, doc in enumerate(documents):
            if self.min_score > 0 and doc.score != 0 and doc.score < self.min_score:
                count_verdict("below_score_floor")
                reason = (
                    f"retrieval similarity {doc.score:.2f} is below the grader's floor "
                    f"{self.min_score:.2f}; not sent to the model"
                )
                below[position] = Grade(doc.id, False, 1.0, reason)
        self.prefiltered += len(below)
        return await _grade_the_rest(self.inner, question, documents, below)


@dataclass
class Cached:
    """Reuses the grade of the same question and document text by the same grader ``version``
    (its model and prompt; a changed grader never gets an old verdict). Provisional grades are
    not kept."""

    inner: Grader
    cache: GradeCache
    version: str

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        keys = [self._key(question, doc) for doc in documents]
        hits: dict[int, Grade] = {}
        for position, key in enumerate(keys):
            if (cached := self.cache.get(key)) is not None:
                count_verdict(verdict_of(cached))
                hits[position] = cached
        result = await _grade_the_rest(self.inner, question, documents, hits)
        for position, (key, grade) in enumerate(zip(keys, result.grades, strict=True)):
            if position not in hits and grade.document_id not in result.provisional:
                self.cache.put(key, grade)
        return result

    def _key(self, question: str, doc: Document) -> GradeKey:
        return GradeKey.of(question, doc, version=self.version)


@dataclass
class InjectionGuarded:
    """Removes instruction-like text before the inner grader sees a document, and says so in the
    grade's reasoning; a document with nothing else is not relevant without the inner grader."""

    inner: Grader
    injections: int = 0  # documents with instruction-like text removed, since start

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        flagged: set[int] = set()
        only_instructions: dict[int, Grade] = {}
        shown: list[Document] = []
        for position, doc in enumerate(documents):
            guarded = strip_instructions(doc.text)
            if guarded.flagged:
                flagged.add(position)
                log.warning("instruction-like text removed", extra={"document_id": doc.id})
            if not guarded.has_content:
                count_verdict("instructions_only")
                only_instructions[position] = Grade(doc.id, False, 1.0, f"only {INJECTION_NOTE}")
            shown.append(replace(doc, text=guarded.text) if guarded.flagged else doc)
        self.injections += len(flagged)
        result = await _grade_the_rest(self.inner, question, shown, only_instructions)
        grades = [
            _noted(grade) if p in flagged and p not in only_instructions else grade
            for p, grade in enumerate(result.grades)
        ]
        # Not worth keeping: found again without a model call, and counted as what they are.
        provisional = result.provisional | {g.document_id for g in only_instructions.values()}
        return GradingResult(grades, result.usage, provisional)


def _noted(grade: Grade) -> Grade:
    return replace(grade, reasoning=f"{grade.reasoning} ({INJECTION_NOTE})".strip())


@dataclass
class Safeguarded:
    """``inner`` inside every layer above; its parts kept for their counters."""

    validated: Validated
    floor: ScoreFloor
    cached: Cached
    guarded: InjectionGuarded

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        return await self.validated.grade(question, documents)


def safeguarded(
    inner: Grader,
    *,
    version: str,
    cache: GradeCache | None = None,
    max_documents: int = 50,
    min_score: float = 0.0,
) -> Safeguarded:
    guarded = InjectionGuarded(inner)
    cached = Cached(guarded, cache if cache is not None else GradeCache(0), version)
    floor = ScoreFloor(cached, min_score)
    return Safeguarded(Validated(floor, max_documents), floor, cached, guarded)
