"""The citation check's fields survive the trip through GenerateAnswerResponse."""

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
    )

    message = answer_to_proto(answer)

    assert list(message.removed_citations) == [4, 7]
    assert (message.uncited_sentences, message.hallucination_risk) == (1, 0.5)
    assert answer_from_proto(message) == answer
