"""bench.quality's scoring: SQuAD's normalisation and gold-answer match, refusals (the same rule
for every system), and the exact McNemar test."""

from __future__ import annotations

import pytest

from bench.answers.scoring import holds_answer, is_refusal, mcnemar_p, normalise, squad_correct
from ragloop.core.answers import NO_ANSWER


def test_normalisation_is_squads() -> None:
    assert normalise("The  Wars of Religion!") == "wars of religion"
    assert normalise("An apple, a pear & THE end.") == "apple pear end"
    assert normalise("U.S.-born") == "usborn"  # punctuation goes, as in the official script


def test_a_gold_answer_matches_on_whole_words_after_normalisation() -> None:
    assert holds_answer("They left because of the Wars of Religion [1].", ["wars of religion"])
    assert holds_answer("Nine nations [2].", ["a dozen", "nine nations"])
    assert not holds_answer("In 1973 [1].", ["1"])  # the marker and part of a number are no match
    assert not holds_answer("Frenchmen settled there.", ["French"])
    assert not holds_answer("Anything at all.", ["", "the"])  # empty once normalised


@pytest.mark.parametrize(
    "answer",
    [
        NO_ANSWER,
        "",
        "   ",
        "I don't know.",
        "I do not know the answer to that.",
        "I don\u2019t know.",
        "The provided context does not mention who founded the city.",
        "The sources don't say when the treaty was signed.",
        "The passages do not contain information about the tentacles.",
        "There is not enough information in the context to answer.",
        "The context provides insufficient information.",
        "I cannot answer this question from the documents.",
        "I can't answer that.",
        "I am unable to determine the number from the sources.",
        "The year is not mentioned.",
        "There is no information about London's immigrants.",
        "No answer can be given.",
    ],
)
def test_refusals_are_recognised(answer: str) -> None:
    assert is_refusal(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The Huguenots were not welcome in France after 1685 [1].",
        "Ctenophores do not contain nematocysts; their tentacles carry colloblasts [2].",
        "Article 102 does not mention mergers; it prohibits abuse of a dominant position [1].",
        "The Huguenots were unable to return to France [1].",
        "No, the engine does not need a condenser.",
        "Yes. The study found no difference in outcomes [1].",
        "Nine nations share the Amazon basin [1].",
    ],
)
def test_answers_that_merely_say_not_are_no_refusals(answer: str) -> None:
    assert not is_refusal(answer)


def test_answerable_questions_need_the_answer_and_unanswerable_ones_a_refusal() -> None:
    golds = ["France"]
    assert squad_correct("Normandy is in France [1].", golds, answerable=True)
    assert not squad_correct("Normandy is in Spain [1].", golds, answerable=True)
    # A refusal that happens to name the gold answer is still a refusal.
    assert not squad_correct("The sources do not say whether France is meant.", golds, True)
    assert squad_correct(NO_ANSWER, [], answerable=False)
    assert not squad_correct("The Normans did, in 911 [1].", [], answerable=False)


def test_mcnemar_is_the_exact_two_sided_binomial_on_the_discordant_pairs() -> None:
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(3, 3) == 1.0
    assert mcnemar_p(5, 0) == pytest.approx(2 / 32)  # 0.0625
    assert mcnemar_p(0, 5) == mcnemar_p(5, 0)
    assert mcnemar_p(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 4096)  # 0.03857
    assert mcnemar_p(1, 0) == 1.0  # capped


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("Fort Coligny was founded in 1555, before Charlesfort (1562) [1][2].", True),
        ("Charlesfort, founded in 1562, came after Fort Coligny [2].", False),
        ("Charlesfort [2].", False),
        ("It was Fort Coligny.", True),
    ],
)
def test_a_comparison_is_right_when_it_names_the_gold_candidate_first(
    answer: str, right: bool
) -> None:
    assert squad_correct(answer, ("Fort Coligny",), True, wrong=("Charlesfort",)) is right
