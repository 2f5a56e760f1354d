"""The queries both systems answer, with what judges their evidence, and the corpora they search.

SciFact: test claims chosen with the seed (as ``bench.models`` chooses them), judged against
the test qrels. PubMedQA: questions chosen with the seed (``bench.pubmedqa``), judged against
their own abstract and the experts' yes/no/maybe. Every system gets the same text and the same
instructions for the answer: a PubMedQA question comes as asked, with the instruction to begin
the answer with the decision beside it, which only the generator reads (ragloop's
``answer_instructions``; the baseline's generate prompt).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.common import seeded_prefix
from bench.pubmedqa import DECISION_INSTRUCTION, Question
from bench.scifact import SciFact
from ragloop.core.domain import SourceDocument

SCIFACT = "scifact"
PUBMEDQA = "pubmedqa"


@dataclass(frozen=True)
class WorkItem:
    dataset: str  # SCIFACT | PUBMEDQA, also the collection searched
    id: str  # SciFact query id or PubMed id
    text: str  # what every system is asked
    relevant: frozenset[str]  # the sources judged relevant
    decision: str | None = None  # PubMedQA: the experts' yes / no / maybe
    instructions: str = ""  # how the answer should be written; for the generator only


def scifact_items(data: SciFact, count: int, seed: int, *, skip: int = 0) -> list[WorkItem]:
    """``count`` claims after the first ``skip`` of the seeded order (so the throughput runs
    use claims the latency runs did not, and no cache has seen)."""
    chosen = seeded_prefix(data.queries, skip + count, seed)[skip:]
    return [
        WorkItem(
            SCIFACT,
            query_id,
            data.queries[query_id],
            frozenset(doc for doc, rel in data.qrels[query_id].items() if rel > 0),
        )
        for query_id in chosen
    ]


def pubmedqa_items(questions: list[Question]) -> list[WorkItem]:
    return [
        WorkItem(
            PUBMEDQA,
            question.pubid,
            question.text,
            frozenset({question.pubid}),
            question.decision,
            instructions=DECISION_INSTRUCTION,
        )
        for question in questions
    ]


def limited_corpus(
    corpus: list[SourceDocument], limit: int, keep: set[str]
) -> list[SourceDocument]:
    """For smoke runs: the first ``limit`` documents and every document in ``keep``."""
    if not limit:
        return corpus
    return [d for i, d in enumerate(corpus) if i < limit or d.source in keep]
