"""A follow-up's standalone question without a model: whether a rewrite changed the question,
and the question with its referent in front."""

from __future__ import annotations

import pytest

from ragloop.rewriter.follow_up import same_question, with_referent


@pytest.mark.parametrize(
    ("rewritten", "question"),
    [
        (
            "What does it default to if I leave it unset?",
            "And what does it default to if I leave it unset?",
        ),
        ("which url path do they send it to then", "Which URL path do they send it to then?"),
        ("So,  how do I undo it?", "how do I undo it"),
    ],
)
def test_a_rewrite_that_only_drops_a_joining_word_or_punctuation_is_the_same_question(
    rewritten: str, question: str
) -> None:
    assert same_question(rewritten, question)


def test_a_rewrite_that_names_the_referent_is_another_question() -> None:
    assert not same_question("How do I stop setInterval?", "How do I stop it?")


@pytest.mark.parametrize(
    ("question", "referent", "expected"),
    [
        (
            "And what does it default to if I leave it unset?",
            "storage.tsdb.retention.time",
            "About storage.tsdb.retention.time: what does it default to if I leave it unset?",
        ),
        ("PromQL or it: which?", " remote  write. ", "About remote write: PromQL or it: which?"),
        ("How do I stop setInterval?", "setInterval", "How do I stop setInterval?"),
        ("How do I install  Docker?", "", "How do I install Docker?"),
        ("What happens to the old ones?", "the OLD ones", "What happens to the old ones?"),
    ],
    ids=["put-in-front", "capital-kept", "named-already", "no-referent", "echoed-reference"],
)
def test_the_referent_goes_in_front_only_where_the_question_lacks_it(
    question: str, referent: str, expected: str
) -> None:
    assert with_referent(question, referent) == expected
