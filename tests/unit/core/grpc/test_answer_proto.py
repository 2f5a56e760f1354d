"""The citation, answer-match and support checks' fields survive the trip through
GenerateAnswerResponse."""

from __future__ import annotations

from ragloop.core.domain import Answer, Citation, ModelUsage
from ragloop.core.grpc.convert import answer_from_proto, answer_to_proto


def test_answer_round_trips_with_its_citation_check() -> None:
    answer = Answer(
        "X. [1] Y.",
        [Citation(1, "d1", "x.md", "X.")],
        grounded=True,
        usage=ModelUsage("m", 1, 10, 3),
        removed_citations=[4, 7],
        uncited_sentences=1,
        hallucination_risk=0.5,
        support=0.75,
        answer_match=0.625,
        lead_probabilities={"yes": 0.25, "no": 0.75},
    )

    message = answer_to_proto(answer)

    assert list(message.removed_citations) == [4, 7]
    assert (message.uncited_sentences, message.hallucination_risk) == (1, 0.5)
    assert (message.support, message.answer_match) == (0.75, 0.625)
    assert answer_from_proto(message) == answer


def test_an_unchecked_answer_has_no_check_figures_rather_than_zero() -> None:
    message = answer_to_proto(Answer("X. [1]", [Citation(1, "d1", "x.md", "X.")], grounded=True))

    assert not message.HasField("support") and not message.HasField("answer_match")
    back = answer_from_proto(message)
    assert back.support is None and back.answer_match is None
