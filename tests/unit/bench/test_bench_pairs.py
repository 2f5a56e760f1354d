"""Choosing the grader's SciFact pairs: balanced, hard negatives, deterministic for a seed."""

from __future__ import annotations

from collections import Counter

from bench.common import seeded_prefix
from bench.grader_pairs import Pair, group_by_query, select_pairs

QRELS = {
    "q1": {"d1": 1},
    "q2": {"d2": 1, "d3": 1},
    "q3": {"d4": 1},
    "q4": {"d9": 1},  # no ranking for q4: never chosen
}
RANKINGS = {
    "q1": ["x1", "d1", "x2", "x3"],
    "q2": ["d3", "y1", "d2", "y2"],
    "q3": ["d4", "z1"],
}


def test_half_judged_half_best_ranked_unjudged_of_the_same_query() -> None:
    pairs = select_pairs(QRELS, RANKINGS, count=8, seed=1)
    positives = [p for p in pairs if p.relevant]
    negatives = [p for p in pairs if not p.relevant]
    assert len(positives) == len(negatives) == 4
    assert {(p.query_id, p.document_id) for p in positives} == {
        ("q1", "d1"),
        ("q2", "d2"),
        ("q2", "d3"),
        ("q3", "d4"),
    }
    # q2 has two judged documents, so its two best unjudged ones, in rank order.
    assert sorted(p.document_id for p in negatives if p.query_id == "q2") == ["y1", "y2"]
    assert {p.document_id for p in negatives if p.query_id == "q1"} == {"x1"}
    assert {p.document_id for p in negatives if p.query_id == "q3"} == {"z1"}


def test_each_positive_is_followed_by_a_negative_of_its_query() -> None:
    pairs = select_pairs(QRELS, RANKINGS, count=8, seed=5)
    for positive, negative in zip(pairs[::2], pairs[1::2], strict=True):
        assert positive.relevant and not negative.relevant
        assert positive.query_id == negative.query_id
        assert negative.document_id not in QRELS[negative.query_id]


def test_same_seed_same_pairs_other_seed_other_sample() -> None:
    many_qrels = {f"q{i}": {f"d{i}": 1} for i in range(50)}
    many_rankings = {f"q{i}": [f"n{i}", f"d{i}"] for i in range(50)}
    first = select_pairs(many_qrels, many_rankings, count=20, seed=7)
    assert first == select_pairs(many_qrels, many_rankings, count=20, seed=7)
    assert first != select_pairs(many_qrels, many_rankings, count=20, seed=8)
    assert len(first) == 20


def test_a_query_without_unjudged_documents_left_drops_its_positive_too() -> None:
    pairs = select_pairs({"q1": {"d1": 1, "d2": 1}}, {"q1": ["d1", "d2", "n1"]}, count=4, seed=0)
    assert Counter(p.relevant for p in pairs) == {True: 1, False: 1}
    assert Pair("q1", "n1", False) in pairs


def test_count_larger_than_the_judged_pairs_takes_them_all() -> None:
    pairs = select_pairs(QRELS, RANKINGS, count=1000, seed=3)
    assert len(pairs) == 8


def test_groups_keep_every_pair_of_a_query_together_in_a_seeded_order() -> None:
    pairs = select_pairs(QRELS, RANKINGS, count=8, seed=2)
    groups = group_by_query(pairs, seed=4)
    assert sorted(groups) == ["q1", "q2", "q3"]
    assert sorted(len(g) for g in groups.values()) == [2, 2, 4]
    assert Counter(p for g in groups.values() for p in g) == Counter(pairs)
    assert groups == group_by_query(pairs, seed=4)


def test_a_smaller_count_chooses_a_prefix_of_a_larger_one() -> None:
    items = [f"id{i}" for i in range(40)]
    assert seeded_prefix(items, 10, seed=9) == seeded_prefix(items, 30, seed=9)[:10]
    assert seeded_prefix(items, 10, seed=9) == seeded_prefix(reversed(items), 10, seed=9)
    assert seeded_prefix(items, 10, seed=9) != seeded_prefix(items, 10, seed=10)
