"""bench.quality's two-hop part: the hand-written items (well formed, 92 dev and 42 report), samples
that are seeded prefixes of one split, questions that search the SQuAD collection (whose smoke
corpus keeps both their paragraphs), answers scored by their gold answers, and the figures of both
hops."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from bench.answers.items import COLLECTIONS, MULTIHOP, SQUAD2, QualityItem, workload
from bench.answers.multihop import MULTIHOP_ITEMS, choose_multihop, load_multihop
from bench.answers.report import render
from bench.answers.runs import RoundInfo
from bench.answers.squad import SPLIT_ARTICLES, paragraph_source
from bench.answers.summary import quality_figures
from bench.common import SHARED_DATA
from ragloop.core.answers import NO_ANSWER
from ragloop.core.leads import question_choices
from tests.unit.bench.answers.test_bench_quality_runs import quality_run
from tests.unit.bench.answers.test_bench_quality_split import squad_json

SQUAD_FILE = SHARED_DATA / "squad2" / "squad2-dev-subset.json"


# Per split: how many bridge and how many comparison questions it holds.
COUNTS = {"dev": {"bridge": 40, "comparison": 52}, "report": {"bridge": 20, "comparison": 22}}
# Per split: how many of its comparisons ask yes or no (the others name both candidates).
YES_NO = {"dev": 32, "report": 12}
# How a yes/no question begins.
AUXILIARY = re.compile(r"(?:Are|Is|Was|Were|Do|Does|Did|Has|Have|Had|Can|Could) ")


def names(text: str, candidate: str) -> bool:
    """The question names the candidate, as whole words."""
    return re.search(rf"(?<!\w){re.escape(candidate)}(?!\w)", text) is not None


def test_the_items_are_ninety_two_dev_and_forty_two_report_two_hop_questions() -> None:
    questions = load_multihop()

    assert set(COUNTS) == set(SPLIT_ARTICLES)
    for split, kinds in COUNTS.items():
        in_split = [q for q in questions if q.split == split]
        total = sum(kinds.values())
        assert len(in_split) == total
        assert [q.id for q in in_split] == [f"{split}-{n:02}" for n in range(1, total + 1)]
        for kind, count in kinds.items():
            assert sum(q.kind == kind for q in in_split) == count, (split, kind)
    for q in questions:
        assert len(set(q.sources)) == 2 and q.kind in {"bridge", "comparison"}
        assert q.answers and all(a.strip() for a in q.answers)


def test_half_the_comparisons_of_a_split_name_the_right_candidate_second() -> None:
    # Else an answer that lists both candidates in the question's order is mostly scored right.
    # Only the comparisons that name both candidates: a yes/no question names neither.
    for split in SPLIT_ARTICLES:
        comparisons = [q for q in load_multihop() if q.split == split and q.kind == "comparison"]
        named = [
            q for q in comparisons if names(q.text, q.answers[0]) and names(q.text, q.wrong[0])
        ]
        second = [q for q in named if q.text.find(q.answers[0]) > q.text.find(q.wrong[0])]
        assert len(named) == COUNTS[split]["comparison"] - YES_NO[split]
        assert 2 * len(second) == len(named)


def test_half_the_yes_no_comparisons_of_a_split_answer_yes() -> None:
    # Else an answer that always says yes (or always no) is mostly scored right.
    for split in SPLIT_ARTICLES:
        in_split = [q for q in load_multihop() if q.split == split]
        yes_no = [q for q in in_split if q.answers in {("yes",), ("no",)}]
        yes = [q for q in yes_no if q.answers == ("yes",)]
        assert len(yes_no) == YES_NO[split] and 2 * len(yes) == len(yes_no)
        for q in yes_no:
            assert q.kind == "comparison", q.id
            assert set(q.answers + q.wrong) == {"yes", "no"}, q.id
            # Asked as a yes/no question, naming no candidates to choose between.
            assert AUXILIARY.match(q.text) and question_choices(q.text) == (), q.id


@pytest.mark.skipif(not SQUAD_FILE.exists(), reason="../shared/data (development machines only)")
def test_every_item_quotes_two_paragraphs_of_its_own_articles() -> None:
    data = json.loads(SQUAD_FILE.read_text())
    articles = {
        paragraph_source(entry["title"], index): (number, paragraph["context"])
        for number, entry in enumerate(data["data"], start=1)
        for index, paragraph in enumerate(entry["paragraphs"])
    }
    raw = {item["id"]: item for item in json.loads(MULTIHOP_ITEMS.read_text())["items"]}

    for q in load_multihop():
        first, last = SPLIT_ARTICLES[q.split]
        for source, quote in zip(q.sources, raw[q.id]["evidence"], strict=True):
            article, context = articles[source]
            assert first <= article <= last, q.id
            assert quote in context, q.id


def test_a_sample_is_a_seeded_prefix_of_one_split() -> None:
    questions = load_multihop()

    large = choose_multihop(questions, "dev", 20, seed=13)
    small = choose_multihop(questions, "dev", 5, seed=13)

    assert small == large[:5] and {q.split for q in large} == {"dev"}
    assert choose_multihop(questions, "dev", 5, seed=14) != small
    whole = choose_multihop(questions, "report", 0, seed=13)  # 0: the whole split
    assert len(whole) == sum(COUNTS["report"].values())


def multihop_file(tmp_path: Path) -> Path:
    items = [
        {
            "id": f"{split}-{n:02}",
            "split": split,
            "type": "bridge",
            "question": f"Which {split} thing {n}?",
            "answers": [f"gold{n}"],
            "sources": [f"Title_{article}#0", f"Title_{article}#1"],
            "evidence": ["", ""],
        }
        for split, article in (("dev", 2), ("report", 9))
        for n in range(1, 4)
    ]
    path = tmp_path / "multihop.json"
    path.write_text(json.dumps({"items": items}))
    return path


def test_two_hop_questions_search_the_squad_paragraphs_and_keep_both_in_a_smoke_corpus(
    tmp_path: Path,
) -> None:
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps(squad_json()))
    paths = {SQUAD2: squad, MULTIHOP: multihop_file(tmp_path)}

    load = workload([MULTIHOP], "report", 13, {MULTIHOP: 2}, paths, corpus_limit=1)

    assert [item.dataset for item in load.items] == [MULTIHOP, MULTIHOP]
    assert all(item.answerable and item.split == "report" for item in load.items)
    assert COLLECTIONS[MULTIHOP] == SQUAD2 and list(load.corpora) == [SQUAD2]
    assert [d.source for d in load.corpora[SQUAD2]] == ["Title_1#0", "Title_9#0", "Title_9#1"]


HOP = QualityItem(
    MULTIHOP,
    "report-01",
    "Who?",
    frozenset({"A#1", "A#2"}),
    answers=("Denis Papin",),
    answerable=True,
    split="report",
    seed=13,
)


def hop_round(number: int, sources: tuple[str, ...], passed: tuple[str, ...]) -> RoundInfo:
    ids = tuple(f"c{number}{i}" for i in range(len(sources)))
    passed_ids = tuple(i for i, s in zip(ids, sources, strict=True) if s in passed)
    return RoundInfo(number, "q", ids, sources, (), passed_ids)


def test_two_hop_figures_count_right_answers_and_both_paragraphs_found() -> None:
    second = replace(HOP, id="report-02")
    runs = [
        # Round 1 found the first hop; the rewrite found and passed the second.
        quality_run(
            "ragloop",
            HOP,
            "It was Denis Papin [1].",
            rewrites=1,
            rounds=(hop_round(1, ("A#1", "B#0"), ("A#1",)), hop_round(2, ("A#2",), ("A#2",))),
        ),
        # Both retrieved, one passed; refused.
        quality_run(
            "ragloop",
            second,
            NO_ANSWER,
            citations=(0, 0),
            rounds=(hop_round(1, ("A#1", "A#2"), ("A#1",)),),
        ),
        quality_run("baseline", HOP, "papin", citations=None),
        quality_run("baseline", second, "Thomas Newcomen", citations=None),
    ]

    f = quality_figures(runs)

    assert f["multihop_accuracy_ragloop"] == 0.5 and f["multihop_refusal_ragloop"] == 0.5
    assert f["multihop_both_retrieved_ragloop"] == 1.0
    assert f["multihop_both_passed_ragloop"] == 0.5
    assert f["multihop_both_given_ragloop"] == 1.0  # quality_run hands both to the generator
    assert f["multihop_accuracy_baseline"] == 0.0  # "Denis Papin" is not in "papin"
    assert f["multihop_both_passed_baseline"] is None  # no rounds to tell
    assert f["multihop_questions"] == 2 and f["common_questions_multihop"] == 2
    assert "multihop report items, 2 (seed 13)" in f["split"]
    table = render(f | {"date": "2026-11-26"})
    assert "two-hop both passed" in table and "SQuAD overall" not in table
