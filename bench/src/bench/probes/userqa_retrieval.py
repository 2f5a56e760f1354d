"""`python -m bench.probes.userqa_retrieval [RUNS] [--docsqa]`: whether the retriever finds the
page that holds each userqa answer (with ``--docsqa``, each answer of the newcomer's questions
over ``docs/``), and the answer's text (every ``must_include`` group, as ``ragloop
eval``'s loss funnel looks for it), without a chat model: minutes, where a run of the loop takes
an hour.

For every answerable question with ``gold_sources``, the retriever's passages at the server's
defaults (mode, first-round similarity threshold) are searched for a passage of a gold page,
at the loop's ``top_k`` and at deeper cut-offs. A follow-up is searched as asked (plain RAG's
way), or, where the runs file records the standalone question ragloop made of it, as that. Given
a ``bench.userqa`` runs file, it splits each system's answers that were not right by whether the
gold page was among the first ``top_k``: wrong or refused *with* the page found is the model's
part; without it, retrieval's.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.comparison.services import shared_milvus
from bench.docsqa import COLLECTION as DOCSQA_COLLECTION
from bench.docsqa import QUESTIONS as DOCSQA_QUESTIONS
from bench.docsqa import docs_corpus
from bench.userqa import DATA, RunsFile, load_corpus
from bench.userqa_systems import COLLECTION, RAGLOOP
from ragloop.cli.evaluation.funnel import Evidence, reach
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

DEEPER = (10, 20)


@dataclass(frozen=True)
class Found:
    """What one search found for a question: the rank (1-based) of the first passage from a
    gold page, None if none; whether the answer's text is in the passages (``funnel.reach``)."""

    rank: int | None
    text: bool | None


async def gold_ranks(
    milvus_uri: str,
    questions: list[EvalQuestion],
    depths: tuple[int, ...],
    collection: str,
    searched: dict[str, str] | None = None,
) -> dict[int, dict[str, Found]]:
    """At each depth, what the search of each question found among that many passages (searched
    at each depth: hybrid fusion may rank the first few differently at another). ``searched``:
    the query to search for a question's id in place of the question (a follow-up's standalone
    question)."""
    policy = server_policy(OrchestratorSettings(), collection)
    retriever = build_retriever(RetrieverSettings(milvus_uri=milvus_uri))
    ranks: dict[int, dict[str, Found]] = {depth: {} for depth in depths}
    try:
        for question in questions:
            gold = set(question.gold_sources)
            for depth in depths:
                found = await retriever.retrieve(
                    (searched or {}).get(question.id, question.question),
                    top_k=depth,
                    similarity_threshold=policy.similarity_threshold_of(1),
                    collection=collection,
                    mode=policy.retrieval_mode,
                )
                sources = [document.source for document in found.documents]
                rank = next(
                    (rank for rank, source in enumerate(sources, start=1) if source in gold), None
                )
                texts = Evidence.ungraded(document.text for document in found.documents)
                ranks[depth][question.id] = Found(rank, reach(question, texts)["read"])
    finally:
        retriever.close()
    return ranks


def found_within(rank: int | None, depth: int) -> bool:
    return rank is not None and rank <= depth


def print_recall(questions: list[EvalQuestion], ranks: dict[int, dict[str, Found]]) -> None:
    """Questions whose gold page, and whose answer's text, was retrieved, by kind, at each depth
    (the text is not counted for a yes-no question whose only group is its yes or no)."""
    kinds = sorted({q.kind for q in questions})
    print("questions with a passage of the gold page (page) and the answer's text (text) among")
    print("the first N retrieved\n")
    print("kind          n   " + "  ".join(f"page@{d:<3} text@{d:<3}" for d in ranks))
    for kind in [*kinds, "all"]:
        mine = [q for q in questions if kind in ("all", q.kind)]
        cells = []
        for depth, at in ranks.items():
            pages = sum(found_within(at[q.id].rank, depth) for q in mine)
            texts = sum(at[q.id].text is True for q in mine)
            cells.append(f"{pages:<8} {texts:<8}")
        print(f"{kind:<12}  {len(mine):<3} " + "  ".join(cells))


def standalone_questions(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Question id to the standalone question ragloop searched, for the follow-ups whose runs
    record one (``ragloop eval`` records it since 2026-11-28)."""
    return {
        row["id"]: row["answer"]["standalone"]
        for row in rows
        if row["system"] == RAGLOOP and row["answer"].get("standalone")
    }


def print_misses(rows: list[dict[str, Any]], found: dict[str, Found], top_k: int) -> None:
    print(f"\nanswers not right, by whether the gold page was among the first {top_k}\n")
    print("system    verdict   page found  not found")
    counts: Counter[tuple[str, str, bool]] = Counter()
    for row in rows:
        if row["id"] in found and row["verdict"] in ("wrong", "missing"):
            counts[row["system"], row["verdict"], found_within(found[row["id"]].rank, top_k)] += 1
    for system, verdict in sorted({(s, v) for s, v, _ in counts}):
        found, lost = counts[system, verdict, True], counts[system, verdict, False]
        print(f"{system:<9} {verdict:<9} {found:<11} {lost}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="?", type=Path, help="a userqa or docsqa runs file")
    parser.add_argument("--data", type=Path, default=DATA, help="userqa's folder")
    parser.add_argument(
        "--docsqa", action="store_true", help="the newcomer's questions over docs/ instead"
    )
    args = parser.parse_args()
    if args.docsqa:
        collection, file = DOCSQA_COLLECTION, DOCSQA_QUESTIONS
        corpus = {collection: docs_corpus()}
    else:
        collection, file = COLLECTION, args.data / "questions.jsonl"
        corpus = {collection: load_corpus(args.data / "corpus.jsonl")}
    questions = [q for q in load_questions(file) if q.answerable and q.gold_sources]
    top_k = server_policy(OrchestratorSettings(), collection).top_k
    rows = RunsFile(args.runs).rows() if args.runs else []
    searched = standalone_questions(rows)
    with shared_milvus(corpus) as milvus_uri:
        ranks = asyncio.run(
            gold_ranks(milvus_uri, questions, (top_k, *DEEPER), collection, searched)
        )
    if searched:
        print(f"{len(searched)} follow-ups searched as ragloop's standalone question\n")
    print_recall(questions, ranks)
    if args.runs:
        print_misses(rows, ranks[top_k], top_k)


if __name__ == "__main__":
    main()
