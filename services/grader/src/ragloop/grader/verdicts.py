"""Turn the model's JSON replies into grades."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ragloop.core.domain import Grade

# The confidence of a reply that states a verdict and no confidence (the default prompt asks for
# the verdict alone): the model was not asked to hedge, so its verdict stands as given.
VERDICT_ONLY_CONFIDENCE = 1.0


def parse_verdict(document_id: str, data: dict[str, Any]) -> Grade:
    relevant = data["relevant"]
    if not isinstance(relevant, bool):
        raise TypeError(f"relevant must be a boolean, got {relevant!r}")
    confidence = min(1.0, max(0.0, float(data.get("confidence", VERDICT_ONLY_CONFIDENCE))))
    return Grade(document_id, relevant, confidence, str(data.get("reasoning", "")).strip())


def parse_batch(ids_by_label: dict[str, str], data: dict[str, Any]) -> dict[str, Grade]:
    """Grades by batch label, for the labels answered exactly once with a well-formed verdict.

    A reply without a ``verdicts`` list raises (the caller asks for a repair). A verdict for an
    unknown label is ignored; a label answered twice, or not at all, or with a malformed verdict,
    is left out: the caller grades those documents one by one.
    """
    items = data["verdicts"]
    if not isinstance(items, list):
        raise TypeError("verdicts must be a list")
    entries = [item for item in items if isinstance(item, dict)]
    counts = Counter(str(item.get("id", "")) for item in entries)
    grades: dict[str, Grade] = {}
    for item in entries:
        label = str(item.get("id", ""))
        if label not in ids_by_label or counts[label] != 1:
            continue
        try:
            grades[label] = parse_verdict(ids_by_label[label], item)
        except (KeyError, TypeError, ValueError):
            continue
    return grades
