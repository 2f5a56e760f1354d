"""The checks of a written answer: one scored call asks whether its text answers the question at
all (the answer-match check), another whether the passages it cites state it (the support check);
an answer either finds wanting becomes the honest refusal. Why, with the measurements:
docs/decisions/0008-answer-support-check.md, 0019-answer-match-check.md.
"""

from __future__ import annotations

from ragloop.core.domain import Answer, Document

# Calibrated on SQuAD 2.0 and two-hop dev questions with the default model, with the orchestrator
# filling the generator's context (docs/decisions/0008, 0013); 0: off.
DEFAULT_SUPPORT_THRESHOLD = 0.4
# Calibrated on SQuAD 2.0 and two-hop dev questions with the default model (docs/decisions/0019);
# 0: off.
DEFAULT_ANSWER_MATCH_THRESHOLD = 0.2


def cited_documents(answer: Answer, documents: list[Document]) -> list[Document]:
    """The passages the answer cites, each once, in the order first cited."""
    numbers = dict.fromkeys(citation.number for citation in answer.citations)
    return [documents[number - 1] for number in numbers if 1 <= number <= len(documents)]
