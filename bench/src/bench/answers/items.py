"""The questions of a split, as the items every system answers, and the corpora they search.

SQuAD 2.0: ``squad.choose_squad``; dev = articles 1–4, report = articles 5–12. Two-hop questions
(``multihop``): those of the same articles, searching the SQuAD paragraphs. PubMedQA: report =
a seeded prefix of the official test split (the ids of ``test_ground_truth.json``, beside the PQA-L
file), dev = a seeded prefix of the other 500 labelled questions. A PubMedQA question comes as
asked, with ``DECISION_INSTRUCTION`` for the generator only (``bench.comparison.workload``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from bench.answers.multihop import MultiHopQuestion, choose_multihop, load_multihop
from bench.answers.squad import SPLIT_ARTICLES, SquadQuestion, choose_squad, load_squad
from bench.comparison.workload import PUBMEDQA, WorkItem, limited_corpus, pubmedqa_items
from bench.pubmedqa import Question, choose_questions, load_pubmedqa
from ragloop.core.domain import SourceDocument

SQUAD2 = "squad2"  # the data set, and the collection its paragraphs are in
MULTIHOP = "multihop"
DATASETS = (SQUAD2, MULTIHOP, PUBMEDQA)
COLLECTIONS = {SQUAD2: SQUAD2, MULTIHOP: SQUAD2, PUBMEDQA: PUBMEDQA}  # what each data set searches
ANSWER_SPANS = (SQUAD2, MULTIHOP)  # the data sets scored by gold answers, not by a decision
SPLITS = tuple(SPLIT_ARTICLES)
TEST_IDS_FILE = "test_ground_truth.json"  # PubMedQA's official test split, beside ori_pqal.json


@dataclass(frozen=True)
class QualityItem(WorkItem):
    """A question with what scores its answer: the gold answers and whether it has one
    (``answerable`` None for PubMedQA, scored by ``decision``), and the split and seed that
    chose it."""

    answers: tuple[str, ...] = ()
    answerable: bool | None = None
    wrong: tuple[str, ...] = ()  # a comparison's other candidate: right only after a gold answer
    split: str = ""
    seed: int = 0


def gold_answers(item: WorkItem) -> tuple[str, ...]:
    """SQuAD's answers of a ``QualityItem``; none for another item (a warm-up question)."""
    return item.answers if isinstance(item, QualityItem) else ()


def squad_items(questions: list[SquadQuestion], split: str, seed: int) -> list[QualityItem]:
    return [
        QualityItem(
            SQUAD2,
            q.id,
            q.text,
            frozenset({q.source}),
            answers=q.answers,
            answerable=q.answerable,
            split=split,
            seed=seed,
        )
        for q in questions
    ]


def multihop_items(questions: list[MultiHopQuestion], split: str, seed: int) -> list[QualityItem]:
    return [
        QualityItem(
            MULTIHOP,
            q.id,
            q.text,
            frozenset(q.sources),
            answers=q.answers,
            answerable=True,
            wrong=q.wrong,
            split=split,
            seed=seed,
        )
        for q in questions
    ]


def choose_pubmedqa(
    questions: list[Question], test_ids: set[str], split: str, count: int, seed: int
) -> list[Question]:
    """Report: ``count`` of the official test split; dev: ``count`` of the other questions."""
    in_split = [q for q in questions if (q.pubid in test_ids) == (split == "report")]
    return choose_questions(in_split, count, seed)


def with_split(items: list[WorkItem], split: str, seed: int) -> list[QualityItem]:
    return [
        QualityItem(**{f.name: getattr(item, f.name) for f in fields(item)}, split=split, seed=seed)
        for item in items
    ]


@dataclass(frozen=True)
class Workload:
    items: list[QualityItem]  # SQuAD's first, then the two-hop ones, then PubMedQA's
    corpora: dict[str, list[SourceDocument]]  # by collection


def workload(
    datasets: list[str],
    split: str,
    seed: int,
    counts: dict[str, int],  # questions by data set
    paths: dict[str, Path],  # the SQuAD JSON, the two-hop items and ori_pqal.json, by data set
    corpus_limit: int = 0,  # smoke runs: the first so many documents, and the questions' own
) -> Workload:
    items: list[QualityItem] = []
    corpora: dict[str, list[SourceDocument]] = {}
    if SQUAD2 in datasets or MULTIHOP in datasets:
        squad = load_squad(paths[SQUAD2])
        if SQUAD2 in datasets:
            chosen = choose_squad(squad.questions, split, counts[SQUAD2], seed)
            items += squad_items(chosen, split, seed)
        if MULTIHOP in datasets:
            hops = choose_multihop(load_multihop(paths[MULTIHOP]), split, counts[MULTIHOP], seed)
            items += multihop_items(hops, split, seed)
        keep = {source for item in items for source in item.relevant}
        corpora[SQUAD2] = limited_corpus(squad.corpus, corpus_limit, keep)
    if PUBMEDQA in datasets:
        path = paths[PUBMEDQA]
        corpus, questions = load_pubmedqa(path)
        test_ids = set(json.loads(path.with_name(TEST_IDS_FILE).read_text()))
        chosen_pubmedqa = choose_pubmedqa(questions, test_ids, split, counts[PUBMEDQA], seed)
        keep = {q.pubid for q in chosen_pubmedqa}
        corpora[PUBMEDQA] = limited_corpus(corpus, corpus_limit, keep)
        items += with_split(pubmedqa_items(chosen_pubmedqa), split, seed)
    return Workload(items, corpora)
