"""Where an answerable question's answer was lost, without a judge: whether the text a right
answer holds (its ``must_include``) was in the passages retrieved, in those that passed grading
and in those handed to the writer, and the first step that lost it (docs/evaluation.md, "Where
answers are lost"). Any system that shows its passages can fill its answers' reach with
``reach``; the passage texts themselves are never kept."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from ragloop.cli.evaluation.questions import YES_NO_KIND, EvalQuestion
from ragloop.cli.evaluation.scoring import Scored, Verdict, comparable, holds
from ragloop.core.names import Refusal

# An answer's reach: for each step, whether the answer's text was in that step's passages (None:
# not known, e.g. a system that does not show them, or a question with no text to look for).
Reach = dict[str, bool | None]
STEPS = ("retrieved", "passed", "read")
# A refusal whose ``refused_by`` the system did not say.
UNKNOWN = "unknown"
BEFORE_WRITING = frozenset({Refusal.NOTHING_PASSED, Refusal.ANSWER_FLOOR, Refusal.OUT_OF_TIME})


class Loss(StrEnum):
    """Where an answerable question's answer was lost, in the order of the loop's steps."""

    NOT_RETRIEVED = "not_retrieved"  # no round retrieved the text
    NOT_PASSED = "not_passed"  # retrieved, but no passage holding it passed grading
    REFUSED_BEFORE_WRITING = "refused_before_writing"  # the loop refused: the writer read nothing
    NOT_READ = "not_read"  # passed, but not in the passages handed to the writer
    REFUSED_AFTER_WRITING = "refused_after_writing"  # the writer or a check after it refused
    WRITTEN_WRONG = "written_wrong"  # an answer that is not right
    ERROR = "error"  # the system failed to answer
    RIGHT = "right"


@dataclass(frozen=True)
class Evidence:
    """The passage texts an answer went through: every passage retrieved in any round, those
    that passed grading in any round, those handed to the writer. None: the system does not
    show that step."""

    retrieved: tuple[str, ...] | None = None
    passed: tuple[str, ...] | None = None
    read: tuple[str, ...] | None = None

    @classmethod
    def ungraded(cls, passages: Iterable[str]) -> Evidence:
        """A system that hands the writer every passage it retrieved (plain RAG): nothing is
        filtered between retrieval and the writer."""
        texts = tuple(passages)
        return cls(retrieved=texts, passed=texts, read=texts)


def _sought(question: EvalQuestion) -> tuple[tuple[str, ...], ...]:
    """The groups a passage can hold: a yes-no question's first group is the answer's lead."""
    groups = question.must_include
    return groups[1:] if question.kind == YES_NO_KIND else groups


def _found(groups: tuple[tuple[str, ...], ...], passages: tuple[str, ...] | None) -> bool | None:
    if passages is None:
        return None
    texts = [comparable(passage) for passage in passages]
    # Each alternative within one passage: a match never spans two.
    return all(any(holds(text, group) for text in texts) for group in groups)


def reach(question: EvalQuestion, evidence: Evidence) -> Reach:
    """Whether every group the answer must hold (a yes-no question's lead aside) is in the
    passages of each step, each group by any one of its alternatives, compared as answers are.
    All None for an unanswerable question or one with no text to look for."""
    groups = _sought(question)
    if not question.answerable or not groups:
        return dict.fromkeys(STEPS)
    return {step: _found(groups, getattr(evidence, step)) for step in STEPS}


def loss(
    question: EvalQuestion, scored: Scored, reach: Mapping[str, bool | None], refused_by: str
) -> Loss | None:
    """The first step that lost the answer of an answerable question (None for an unanswerable
    one). A step whose reach is unknown loses nothing. A refusal before writing comes before
    ``not_read``: the writer was handed nothing because of it."""
    if not question.answerable:
        return None
    if scored.verdict is Verdict.RIGHT:
        return Loss.RIGHT
    if reach.get("retrieved") is False:
        return Loss.NOT_RETRIEVED
    if reach.get("passed") is False:
        return Loss.NOT_PASSED
    if scored.refused and refused_by in BEFORE_WRITING:
        return Loss.REFUSED_BEFORE_WRITING
    if reach.get("read") is False:
        return Loss.NOT_READ
    return Loss.REFUSED_AFTER_WRITING if scored.refused else Loss.WRITTEN_WRONG
