"""How one answer is scored: right, wrong or missing, and what is wrong with its form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ragloop.cli.evaluation.questions import YES_NO_KIND, EvalQuestion
from ragloop.core.answers import (
    cut_off_sentences,
    is_refusal,
    lead_word,
    repeated_sentences,
    without_markers,
)


class Verdict(StrEnum):
    RIGHT = "right"  # +1
    MISSING = "missing"  # 0: an answerable question refused
    WRONG = "wrong"  # -1: an answer that is not right, or an unanswerable question answered


POINTS = {Verdict.RIGHT: 1, Verdict.MISSING: 0, Verdict.WRONG: -1}


@dataclass(frozen=True)
class Scored:
    verdict: Verdict
    refused: bool
    unmatched: tuple[tuple[str, ...], ...]  # the must_include groups the answer misses
    spurious_lead: bool  # yes/no/maybe before an answer to a question that does not ask it
    repeated: tuple[str, ...]  # sentences said twice
    cut_off: tuple[str, ...]  # sentences that stop without closing punctuation


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def comparable(text: str) -> str:
    """``text`` as ``must_include`` is looked for in it: without citation markers, lower case,
    runs of white space collapsed."""
    return _folded(without_markers(text))


def holds(text: str, group: Sequence[str]) -> bool:
    """Whether ``text`` (``comparable``) holds any one of the group's alternatives."""
    return any(_folded(alternative) in text for alternative in group)


def score(question: EvalQuestion, answer: str) -> Scored:
    refused = is_refusal(answer)
    text = comparable(answer)
    unmatched = tuple(group for group in question.must_include if not holds(text, group))
    yes_no = question.kind == YES_NO_KIND
    lead = lead_word(answer)
    if not question.answerable:
        verdict = Verdict.RIGHT if refused else Verdict.WRONG
    elif refused:
        verdict = Verdict.MISSING
    elif unmatched or (yes_no and lead != question.must_include[0][0]):
        verdict = Verdict.WRONG
    else:
        verdict = Verdict.RIGHT
    return Scored(
        verdict,
        refused,
        unmatched,
        spurious_lead=bool(lead) and not yes_no and not refused,
        repeated=tuple(repeated_sentences(answer)),
        cut_off=tuple(cut_off_sentences(answer)) if not refused else (),
    )
