"""Ground truth for the grader on SQuAD 2.0 (issue 23): relevant means *holds the answer*.

Positives: an answerable question with its own paragraph. Negatives, as many: half an
unanswerable question with its own paragraph (on topic, no answer: what a lenient grader passes),
half an answerable question with the most similar other paragraph (by the retriever's embedding
model: what a search puts next to the right one). Questions come from one split's articles
(``bench.answers.squad.SPLIT_ARTICLES``), so the threshold is tuned on dev and reported on report.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.answers.squad import Squad, choose_squad
from ragloop.core.models import Embedder

UNANSWERABLE_OWN = "unanswerable_own"
OTHER_TOP = "other_top"
OWN = "own"


@dataclass(frozen=True)
class SquadPair:
    question: str
    source: str  # the paragraph graded
    relevant: bool
    kind: str  # OWN | UNANSWERABLE_OWN | OTHER_TOP


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def squad_pairs(
    squad: Squad, split: str, count: int, seed: int, embedder: Embedder
) -> list[SquadPair]:
    """``count // 2`` positives and as many negatives (half of each kind), in a seeded order."""
    half = count // 2
    chosen = choose_squad(squad.questions, split, 4 * half, seed)
    answerable = [q for q in chosen if q.answerable]
    unanswerable = [q for q in chosen if not q.answerable]
    positives = answerable[:half]
    other_top = answerable[half : half + half - half // 2]
    pairs = [SquadPair(q.text, q.source, True, OWN) for q in positives]
    pairs += [
        SquadPair(q.text, q.source, False, UNANSWERABLE_OWN) for q in unanswerable[: half // 2]
    ]
    if other_top:
        sources = [d.source for d in squad.corpus]
        paragraphs = embedder.embed([d.text for d in squad.corpus])
        questions = embedder.embed_queries([q.text for q in other_top])
        for question, vector in zip(other_top, questions, strict=True):
            ranked = sorted(
                (i for i, source in enumerate(sources) if source != question.source),
                key=lambda i: _dot(paragraphs[i], vector),
                reverse=True,
            )
            pairs.append(SquadPair(question.text, sources[ranked[0]], False, OTHER_TOP))
    return pairs
