"""Ranking and classification metrics and latency summaries used by the benchmarks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def ndcg_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    """nDCG@k with graded relevance (BEIR's definition: gain = rel, discount = log2(rank + 1))."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    wanted = {doc for doc, rel in relevant.items() if rel > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(q) - 1]


def unique_in_order(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]


@dataclass(frozen=True)
class Classification:
    """Binary verdicts against ground truth (positive = relevant)."""

    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    true_negatives: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> Classification:
        """From (expected, predicted) pairs."""
        counts = {(True, True): 0, (False, True): 0, (True, False): 0, (False, False): 0}
        for expected, predicted in pairs:
            counts[(bool(expected), bool(predicted))] += 1
        return cls(
            counts[(True, True)],
            counts[(False, True)],
            counts[(True, False)],
            counts[(False, False)],
        )

    @property
    def total(self) -> int:
        return (
            self.true_positives + self.false_positives + self.false_negatives + self.true_negatives
        )

    @property
    def precision(self) -> float:
        predicted = self.true_positives + self.false_positives
        return self.true_positives / predicted if predicted else 0.0

    @property
    def recall(self) -> float:
        actual = self.true_positives + self.false_negatives
        return self.true_positives / actual if actual else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def accuracy(self) -> float:
        return (self.true_positives + self.true_negatives) / self.total if self.total else 0.0


def roc_auc(scored: Sequence[tuple[bool, float]]) -> float:
    """Area under the ROC curve of (truly relevant, score) pairs: the chance that a random
    positive scores above a random negative, ties counting half (Mann–Whitney). NaN when either
    class is missing."""
    positives = [score for label, score in scored if label]
    negatives = [score for label, score in scored if not label]
    if not positives or not negatives:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def best_threshold(scored: Sequence[tuple[bool, float]]) -> tuple[float, float]:
    """The score threshold (pass at or above it) with the best F1 on ``scored``, and that F1;
    among equal F1s, the highest threshold (fewer passages reach the generator)."""
    best = (1.0, 0.0)
    for threshold in sorted({score for _, score in scored}):
        f1 = Classification.of((label, score >= threshold) for label, score in scored).f1
        if f1 >= best[1]:
            best = (threshold, f1)
    return best
