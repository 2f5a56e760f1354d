"""The checks of a written answer: one scored call asks whether its text answers the question at
all (the answer-match check), another whether the passages it cites state it (the support check);
an answer either finds wanting becomes the honest refusal. Why, with the measurements:
docs/decisions/0008-answer-support-check.md, 0019-answer-match-check.md.
"""

from __future__ import annotations

from ragloop.core.domain import Answer, Document

# The one refusal of a written answer: by right minus wrong on userqa with the two-hop guard held,
# for plain-text answers checked against every passage they were written from (decision 0027),
# the check asked as the writer's conversation continued (0.6 refused a right two-hop bridge
# there; decision 0030); 0: off.
DEFAULT_SUPPORT_THRESHOLD = 0.55
# Off: on plain-text answers its figure separated nothing on userqa, and above 0.2 it refused
# right two-hop bridges (decision 0027; it was calibrated for JSON sentences, 0019).
DEFAULT_ANSWER_MATCH_THRESHOLD = 0.0


def cited_documents(answer: Answer, documents: list[Document]) -> list[Document]:
    """The passages the answer cites, each once, in the order first cited."""
    numbers = dict.fromkeys(citation.number for citation in answer.citations)
    return [documents[number - 1] for number in numbers if 1 <= number <= len(documents)]
