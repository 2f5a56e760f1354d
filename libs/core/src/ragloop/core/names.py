"""The names every process and face of ragloop shares — stages, loop nodes, loop outcomes,
retrieval modes — defined once. The REST schema's enums, the proto mapping tables, the metric
label sets and the web page's constants are built from (or tested against) these."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """The four stage services, in the order a query meets them."""

    RETRIEVER = "retriever"
    GRADER = "grader"
    REWRITER = "rewriter"
    GENERATOR = "generator"


class LoopNode(StrEnum):
    """The corrective loop's steps, each done by one stage (the rewriter does two)."""

    RETRIEVE = "retrieve"
    GRADE = "grade"
    REWRITE = "rewrite"
    GENERATE = "generate"
    CONTEXTUALIZE = "contextualize"  # a follow-up question made standalone, before round 1

    @property
    def stage(self) -> Stage:
        return _STAGE_OF_NODE[self]


_STAGE_OF_NODE = {
    LoopNode.RETRIEVE: Stage.RETRIEVER,
    LoopNode.GRADE: Stage.GRADER,
    LoopNode.REWRITE: Stage.REWRITER,
    LoopNode.GENERATE: Stage.GENERATOR,
    LoopNode.CONTEXTUALIZE: Stage.REWRITER,
}


class Outcome(StrEnum):
    """Why the loop stopped looking and answered."""

    PASSED = "passed"  # a round's pass rate reached the threshold
    MAX_ATTEMPTS = "max_attempts"  # rewrites used up; answered from the best passed documents
    CIRCULAR_REWRITE = "circular_rewrite"  # the rewriter repeated an earlier query
    NO_NEW_DOCUMENTS = "no_new_documents"  # a rewritten query found only passages seen before
    BUDGET_EXHAUSTED = "budget_exhausted"  # the time budget ran out before another round


class Refusal(StrEnum):
    """What refused an answer: the loop before any answer was written, or a step after."""

    NOTHING_PASSED = "nothing_passed"  # no passage passed grading in any round
    ANSWER_FLOOR = "answer_floor"  # the best passed grade is below the answer floor
    OUT_OF_TIME = "out_of_time"  # the time budget ran out before an answer was written
    WRITER = "writer"  # the writer replied that the passages do not hold the answer
    RESTATED = "restated"  # the written answer only restates the question
    UNSOURCED_NAME = "unsourced_name"  # the answer names a flag, setting or path no passage names
    ANSWER_MATCH = "answer_match"  # the answer-match check: the text does not answer the question
    SUPPORT = "support"  # the support check: the cited passages do not state the answer
    AFTER_REFUSAL = "after_refusal"  # a second answer below the loop's bar after a refusal


class RetrievalMode(StrEnum):
    DENSE = "dense"  # embeddings
    SPARSE = "sparse"  # BM25 keywords
    HYBRID = "hybrid"  # both, fused


def values(names: type[StrEnum]) -> tuple[str, ...]:
    """The plain string values of ``names``, in definition order."""
    return tuple(member.value for member in names)
