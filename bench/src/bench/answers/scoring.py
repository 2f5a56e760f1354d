"""How an answer is scored, the same for every system: SQuAD's normalisation, whether an answer
holds a gold answer, whether it refuses, and the exact McNemar test of two systems' paired
right/wrong outcomes.

An answer's citation markers ("[2]") are dropped before it is normalised (ragloop's and plain RAG's
answers carry them, the baseline's do not), so that a marker never counts as a number the answer
states. A gold answer matches on whole words of the normalised answer: "1" is not found in "1973".
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable

from ragloop.core.answers import is_refusal, without_markers

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """SQuAD's official normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _first_position(text: str, names: Iterable[str]) -> int | None:
    """Where the first of ``names``, normalised, stands in ``text`` normalised (on word
    boundaries); None when none does."""
    padded = f" {normalise(without_markers(text))} "
    found = [padded.find(f" {name} ") for name in map(normalise, names) if name]
    return min((at for at in found if at >= 0), default=None)


def holds_answer(text: str, answers: Iterable[str]) -> bool:
    """Some gold answer, normalised, stands in ``text`` normalised (on word boundaries)."""
    return _first_position(text, answers) is not None


def squad_correct(
    answer: str, answers: Iterable[str], answerable: bool, wrong: Iterable[str] = ()
) -> bool:
    """Answerable: not a refusal, and a gold answer stands in it before any ``wrong`` one (a
    comparison's other candidate, which the question names too). Unanswerable: a refusal."""
    if is_refusal(answer):
        return not answerable
    gold = _first_position(answer, answers)
    other = _first_position(answer, wrong)
    return answerable and gold is not None and (other is None or gold < other)


def mcnemar_p(wins: int, losses: int) -> float:
    """Exact two-sided McNemar test: the binomial probability, at p = ½, of a split of the
    ``wins + losses`` discordant pairs at least as uneven as this one (1 when there are none)."""
    discordant = wins + losses
    if not discordant:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2**discordant)
