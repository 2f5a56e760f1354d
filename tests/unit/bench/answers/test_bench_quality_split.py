"""bench.quality's questions: SQuAD 2.0 read into a corpus of paragraphs, the article split,
balanced seeded samples whose smaller sizes are prefixes of larger ones, and PubMedQA's official
test split for the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.answers.items import SQUAD2, choose_pubmedqa, workload
from bench.answers.squad import choose_squad, parse_squad
from bench.comparison.workload import PUBMEDQA
from bench.pubmedqa import DECISION_INSTRUCTION, Question


def squad_json(articles: int = 12, questions_per_half: int = 3) -> dict[str, Any]:
    """``articles`` articles of two paragraphs; each paragraph with answerable and unanswerable
    questions (ids name the article, paragraph and kind)."""
    data = []
    for a in range(1, articles + 1):
        paragraphs = []
        for p in range(2):
            qas = [
                {
                    "id": f"a{a}p{p}{kind}{i}",
                    "question": f"Question {i} on article {a}?",
                    "answers": [] if kind == "u" else [{"text": f"gold{a}"}, {"text": f"gold{a}"}],
                    "is_impossible": kind == "u",
                }
                for kind in ("a", "u")
                for i in range(questions_per_half)
            ]
            paragraphs.append({"context": f"Article {a}, paragraph {p}: gold{a}.", "qas": qas})
        data.append({"title": f"Title_{a}", "paragraphs": paragraphs})
    return {"version": "v2.0", "data": data}


def test_every_paragraph_is_a_document_named_by_title_and_index() -> None:
    squad = parse_squad(squad_json(articles=2))

    assert [d.source for d in squad.corpus] == ["Title_1#0", "Title_1#1", "Title_2#0", "Title_2#1"]
    first = squad.questions[0]
    assert (first.id, first.article, first.source) == ("a1p0a0", 1, "Title_1#0")
    assert first.answers == ("gold1",)  # repeats removed
    assert first.answerable and not squad.questions[3].answerable


@pytest.mark.parametrize(("split", "articles"), [("dev", range(1, 5)), ("report", range(5, 13))])
def test_a_split_takes_its_own_articles_half_answerable(split: str, articles: range) -> None:
    questions = parse_squad(squad_json()).questions

    chosen = choose_squad(questions, split, 20, seed=13)

    assert {q.article for q in chosen} <= set(articles)
    assert [q.answerable for q in chosen] == [True, False] * 10  # taking turns
    assert len({q.id for q in chosen}) == 20


def test_a_smaller_sample_is_a_prefix_of_a_larger_one_and_the_seed_matters() -> None:
    questions = parse_squad(squad_json()).questions

    large = choose_squad(questions, "report", 40, seed=13)
    small = choose_squad(questions, "report", 10, seed=13)

    assert small == large[:10]
    assert choose_squad(questions, "report", 10, seed=14) != small
    assert [q.answerable for q in choose_squad(questions, "report", 5, seed=13)] == [
        True, False, True, False, True,
    ]  # fmt: skip


def test_pubmedqa_reports_on_the_official_test_split_and_tunes_on_the_rest() -> None:
    questions = [Question(f"{n:03}", f"Q{n}?", "yes") for n in range(20)]
    test_ids = {f"{n:03}" for n in range(0, 20, 2)}

    report = choose_pubmedqa(questions, test_ids, "report", 4, seed=13)
    dev = choose_pubmedqa(questions, test_ids, "dev", 4, seed=13)

    assert {q.pubid for q in report} <= test_ids and len(report) == 4
    assert not {q.pubid for q in dev} & test_ids and len(dev) == 4
    assert choose_pubmedqa(questions, test_ids, "report", 2, seed=13) == report[:2]


def test_the_workload_keeps_the_chosen_questions_own_documents_in_a_limited_corpus(
    tmp_path: Path,
) -> None:
    squad_path = tmp_path / "squad2.json"
    squad_path.write_text(json.dumps(squad_json()))
    rows = {
        f"{n}": {"QUESTION": f"Q{n}?", "CONTEXTS": [f"Abstract {n}."], "final_decision": "no"}
        for n in range(10)
    }
    pubmedqa_path = tmp_path / "ori_pqal.json"
    pubmedqa_path.write_text(json.dumps(rows))
    (tmp_path / "test_ground_truth.json").write_text(json.dumps({"7": "no", "8": "no"}))

    load = workload(
        [SQUAD2, PUBMEDQA],
        "report",
        13,
        {SQUAD2: 4, PUBMEDQA: 1},
        {SQUAD2: squad_path, PUBMEDQA: pubmedqa_path},
        corpus_limit=3,
    )

    squad_items = [i for i in load.items if i.dataset == SQUAD2]
    (pubmedqa_item,) = [i for i in load.items if i.dataset == PUBMEDQA]
    assert [i.answerable for i in squad_items] == [True, False, True, False]
    kept = {d.source for d in load.corpora[SQUAD2]}
    assert {"Title_1#0", "Title_1#1", "Title_2#0"} <= kept
    assert {source for i in squad_items for source in i.relevant} <= kept
    assert pubmedqa_item.id in {"7", "8"} and pubmedqa_item.decision == "no"
    assert pubmedqa_item.instructions == DECISION_INSTRUCTION
    assert pubmedqa_item.id in {d.source for d in load.corpora[PUBMEDQA]}
    assert {(i.split, i.seed) for i in load.items} == {("report", 13)}
    assert squad_items[0].answers and not squad_items[1].answers
