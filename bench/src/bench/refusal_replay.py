"""The loop's refusal bars replayed on answers made with every bar off
(``RAGLOOP_ANSWER_MIN_CONFIDENCE=0``, the generator's check thresholds at a tiny figure so that
the checks run and refuse nothing): each answer carries its best passed grade and its checks'
figures, so one run gives the right, wrong and missing counts of any set of bars, and the bars
are chosen by the score (docs/decisions/0025, 0027)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import product

from ragloop.cli.evaluation.report import figures
from ragloop.cli.evaluation.runner import EvalRecord
from ragloop.cli.evaluation.scoring import score
from ragloop.core.answers import NO_ANSWER
from ragloop.core.leads import requested_decision
from ragloop.core.names import Refusal


@dataclass(frozen=True)
class Bars:
    """The loop's answer floor (on the best passed grade) and the generator's two check
    thresholds; 0 is no bar."""

    floor: float = 0.0
    answer_match: float = 0.0
    support: float = 0.0

    def label(self) -> str:
        return f"floor {self.floor}, match {self.answer_match}, support {self.support}"


def _refusal(record: EvalRecord, bars: Bars) -> Refusal | None:
    """The bar that refuses the record's answer, None where every bar passes. The floor does not
    refuse a decision the question asks for, and no check weighs one (as in the loop)."""
    checks = record.answer.checks
    if requested_decision("", record.question.question):
        return None
    best = checks.get("best_confidence")
    if best is not None and best < bars.floor:
        return Refusal.ANSWER_FLOOR
    match = checks.get("answer_match")
    if match is not None and match < bars.answer_match:
        return Refusal.ANSWER_MATCH
    support = checks.get("support")
    if support is not None and support < bars.support:
        return Refusal.SUPPORT
    return None


def with_bars(record: EvalRecord, bars: Bars) -> EvalRecord:
    """The record as ``bars`` would have left it: the refusal where a bar refuses it."""
    refusal = _refusal(record, bars)
    if refusal is None or record.answer.refused_by:
        return record
    refused = replace(record.answer, text=NO_ANSWER, refused_by=refusal.value)
    return EvalRecord(record.question, refused, score(record.question, NO_ANSWER), record.error)


FLOORS = (0.0, 0.5, 0.55, 0.6, 0.65, 0.7)
CHECK_BARS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def sweep(
    records: Sequence[EvalRecord],
    floors: Iterable[float] = FLOORS,
    matches: Iterable[float] = CHECK_BARS,
    supports: Iterable[float] = CHECK_BARS,
    *,
    best: int = 10,
) -> str:
    """Right, wrong, missing and the score of each set of bars, the ``best`` by score (then by
    right answers, then the lowest bars) first."""
    rows = []
    for floor, match, support in product(floors, matches, supports):
        bars = Bars(floor, match, support)
        f = figures([with_bars(r, bars) for r in records])
        rows.append((f["score"], f["right"], -floor - match - support, bars, f))
    rows.sort(key=lambda row: row[:3], reverse=True)
    lines = ["floor  match  support  right  wrong  missing  score"]
    for *_, bars, f in rows[:best]:
        lines.append(
            f"{bars.floor:<5}  {bars.answer_match:<5}  {bars.support:<7}  {f['right']:<5}  "
            f"{f['wrong']:<5}  {f['missing']:<7}  {f['score']:+.3f}"
        )
    return "\n".join(lines)
