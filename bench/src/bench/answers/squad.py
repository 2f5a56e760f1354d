"""SQuAD 2.0 (``../shared/data/squad2``: the first 12 articles of the dev set): every paragraph a
document of the corpus, every question asked of the whole corpus; about half of them have no answer
in it (``is_impossible``), each built to look answerable from a nearby paragraph.

Articles are split for tuning and reporting (``SPLIT_ARTICLES``), so that figures are never
fitted to the questions they are reported on. From a split, a balanced sample: half answerable,
half unanswerable, each half a seeded prefix, so a smaller sample is a prefix of a larger one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

from bench.common import seeded_prefix
from ragloop.core.domain import SourceDocument

# Articles (from 1, in the file's order) of each split, first and last.
SPLIT_ARTICLES = {"dev": (1, 4), "report": (5, 12)}


@dataclass(frozen=True)
class SquadQuestion:
    id: str
    text: str
    answers: tuple[str, ...]  # the annotators' answers, repeats removed; empty: unanswerable
    answerable: bool
    article: int  # from 1, in the file's order
    source: str  # the paragraph the question was written from


@dataclass(frozen=True)
class Squad:
    corpus: list[SourceDocument]  # every paragraph of every article
    questions: list[SquadQuestion]


def paragraph_source(title: str, index: int) -> str:
    """A paragraph's name: the article's title and its index in the article, from 0."""
    return f"{title}#{index}"


def parse_squad(data: Mapping[str, Any]) -> Squad:
    """The corpus and questions of a SQuAD v2 JSON document."""
    corpus: list[SourceDocument] = []
    questions: list[SquadQuestion] = []
    for article, entry in enumerate(data["data"], start=1):
        for index, paragraph in enumerate(entry["paragraphs"]):
            source = paragraph_source(entry["title"], index)
            corpus.append(SourceDocument(source=source, text=paragraph["context"]))
            for qa in paragraph["qas"]:
                answers = tuple(dict.fromkeys(a["text"] for a in qa["answers"]))
                answerable = not qa.get("is_impossible", False)
                questions.append(
                    SquadQuestion(qa["id"], qa["question"], answers, answerable, article, source)
                )
    return Squad(corpus, questions)


def load_squad(path: Path) -> Squad:
    return parse_squad(json.loads(path.read_text()))


def choose_squad(
    questions: list[SquadQuestion], split: str, count: int, seed: int
) -> list[SquadQuestion]:
    """``count`` questions of the split's articles: ``count - count // 2`` answerable and
    ``count // 2`` unanswerable, each a seeded prefix, taking turns (so that a run cut short is
    still about balanced)."""
    first, last = SPLIT_ARTICLES[split]
    in_split = [q for q in questions if first <= q.article <= last]
    answerable = [q for q in in_split if q.answerable]
    unanswerable = [q for q in in_split if not q.answerable]

    def by_id(question: SquadQuestion) -> str:
        return question.id

    turns = zip_longest(
        seeded_prefix(answerable, count - count // 2, seed, key=by_id),
        seeded_prefix(unanswerable, count // 2, seed, key=by_id),
    )
    return [q for pair in turns for q in pair if q is not None]
