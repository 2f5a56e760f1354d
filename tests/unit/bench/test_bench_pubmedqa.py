"""PubMedQA scoring: the decision an answer leads with, and citation validity."""

from __future__ import annotations

import math

import pytest

from bench.pubmedqa import Outcome, Question, citation_validity, leading_decision
from ragloop.core.domain import Answer, Citation, ModelUsage


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("Yes, mitochondria play a role [1].", "yes"),
        ("No. The trial found no difference [2].", "no"),
        ("Maybe: the evidence is mixed.", "maybe"),
        ("  **YES** — it does.", "yes"),
        ("Noticeably, the rate fell.", None),
        ("The sources do not contain the answer to this question.", None),
        ("Mitochondria play a role; yes.", None),
        ("", None),
    ],
)
def test_leading_decision(answer: str, decision: str | None) -> None:
    assert leading_decision(answer) == decision


def outcome(valid: int, removed: int, *, text: str = "Yes.", pubid: str = "p1") -> Outcome:
    citations = [Citation(n, f"c{n}", f"src{n}", "quote") for n in range(1, valid + 1)]
    answer = Answer(text, citations, bool(citations), removed_citations=list(range(9, 9 + removed)))
    return Outcome(Question(pubid, "Q?", "yes"), answer, "passed", 0, ModelUsage(), 1.0)


def test_citation_validity_is_valid_over_all_cited_passages() -> None:
    assert citation_validity([outcome(3, 1), outcome(1, 0)]) == pytest.approx(4 / 5)
    assert citation_validity([outcome(2, 0)]) == 1.0


def test_citation_validity_without_citations_is_not_a_number() -> None:
    assert math.isnan(citation_validity([outcome(0, 0)]))


def test_an_outcome_knows_its_decision_and_whether_it_cites_its_own_abstract() -> None:
    mine = Outcome(
        Question("p1", "Q?", "no"),
        Answer("No, it does not [1].", [Citation(1, "c1", "p1", "q")], True),
        "passed",
        0,
        ModelUsage(),
        1.0,
    )
    assert (mine.decision, mine.correct, mine.cites_own_abstract) == ("no", True, True)
    failed = Outcome(Question("p2", "Q?", "yes"), None, "failed", 1, ModelUsage(), 2.0)
    assert (failed.decision, failed.correct, failed.valid_citations) == (None, False, 0)
    assert not outcome(1, 0, pubid="p7").cites_own_abstract
