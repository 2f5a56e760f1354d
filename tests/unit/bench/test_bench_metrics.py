"""The benchmark's classification metrics: precision, recall, F1 from (expected, predicted)."""

from __future__ import annotations

import pytest

from bench.metrics import Classification


def test_counts_each_cell_of_the_confusion_matrix() -> None:
    pairs = [(True, True), (True, True), (False, True), (True, False), (False, False)]
    result = Classification.of(pairs)
    assert (result.true_positives, result.false_positives) == (2, 1)
    assert (result.false_negatives, result.true_negatives) == (1, 1)
    assert result.total == 5


def test_precision_recall_f1_and_accuracy() -> None:
    # 3 relevant: 2 found; 4 predicted relevant: 2 right.
    pairs = [(True, True)] * 2 + [(True, False)] + [(False, True)] * 2 + [(False, False)] * 5
    result = Classification.of(pairs)
    assert result.precision == pytest.approx(2 / 4)
    assert result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3))
    assert result.accuracy == pytest.approx(7 / 10)


def test_perfect_verdicts_score_one() -> None:
    result = Classification.of([(True, True), (False, False)])
    assert (result.precision, result.recall, result.f1, result.accuracy) == (1.0, 1.0, 1.0, 1.0)


def test_no_positive_prediction_gives_zero_not_a_division_error() -> None:
    result = Classification.of([(True, False), (False, False)])
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)
    assert Classification.of([]).accuracy == 0.0
