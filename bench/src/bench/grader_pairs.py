"""Ground truth for the grader: SciFact (claim, abstract) pairs, half judged relevant, half hard
negatives (the best-ranked abstracts nobody judged for the same claim)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    query_id: str
    document_id: str
    relevant: bool


def select_pairs(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    count: int,
    seed: int,
) -> list[Pair]:
    """``count // 2`` judged pairs drawn at random (seeded), each followed by a negative for the
    same query: the best-ranked document not judged for it and not chosen yet.

    Balanced by construction: a judged pair whose query's ranking holds no such document left is
    dropped with its negative. Judged SciFact documents are sparse, so a few "negatives" may in
    truth be relevant; that lowers measured precision, never recall.
    """
    judged = sorted(
        (query, doc)
        for query, docs in qrels.items()
        if query in rankings
        for doc, relevance in docs.items()
        if relevance > 0
    )
    positives = random.Random(seed).sample(judged, min(count // 2, len(judged)))
    taken: dict[str, set[str]] = {}
    pairs: list[Pair] = []
    for query, doc in positives:
        used = taken.setdefault(query, set())
        negative = next(
            (d for d in rankings[query] if d not in qrels[query] and d not in used), None
        )
        if negative is None:
            continue
        used.add(negative)
        pairs += [Pair(query, doc, True), Pair(query, negative, False)]
    return pairs


def group_by_query(pairs: Sequence[Pair], seed: int) -> dict[str, list[Pair]]:
    """The pairs of each query together, in a seeded order (so that a batch never has its
    relevant document always first), queries in order of first appearance."""
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.query_id, []).append(pair)
    rng = random.Random(seed)
    for group in groups.values():
        rng.shuffle(group)
    return groups
