"""`python -m bench.support_sweep`: SQuAD 2.0 accuracy at other support thresholds, from the
runs of ``bench.quality`` that recorded each answer's support figure, without model calls.

An answer whose support is below a threshold counts as the refusal it would have become. Exact
for single-shot and plain RAG; for the loop an approximation (a refusal there is rewritten, and
what the rewrite finds is not in the runs). Answers refused by a higher threshold during the run
cannot be brought back, so sweep runs made with a low threshold
(``RAGLOOP_GENERATOR_SUPPORT_THRESHOLD=0.01``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.answers.items import SQUAD2
from bench.answers.runs import QualityRun, QualityRunsFile
from bench.common import RESULTS_DIR

THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)


@dataclass(frozen=True)
class SweepRow:
    threshold: float
    answerable_right: float
    unanswerable_refused: float
    overall: float
    false_refusals: float


def outcome_at(run: QualityRun, threshold: float) -> tuple[bool, bool]:
    """(right, refused) of ``run``'s answer had answers below ``threshold`` support been refused."""
    answer = run.quality_answer
    support = answer.support if answer else None
    if run.refused or support is None or support >= threshold:
        return run.correct, bool(run.refused)
    return not run.quality_item.answerable, True


def sweep(runs: Iterable[QualityRun], thresholds: Sequence[float]) -> list[SweepRow]:
    """One row a threshold over the answered SQuAD runs of one system."""
    done = [r for r in runs if r.item.dataset == SQUAD2 and r.answered is not None and not r.error]
    answerable = [r for r in done if r.quality_item.answerable]
    unanswerable = [r for r in done if not r.quality_item.answerable]
    rows = []
    for threshold in thresholds:
        right = [outcome_at(r, threshold) for r in answerable]
        refusals = [outcome_at(r, threshold)[1] for r in unanswerable]
        rows.append(
            SweepRow(
                threshold,
                _share(ok for ok, _ in right),
                _share(refusals),
                _share([ok for ok, _ in right] + refusals),
                _share(refused for _, refused in right),
            )
        )
    return rows


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs-file", default=str(RESULTS_DIR / "quality-dev-runs.jsonl.xz"))
    parser.add_argument("--systems", default="single,ragloop")
    args = parser.parse_args()
    runs = QualityRunsFile(Path(args.runs_file)).runs()
    for system in args.systems.split(","):
        mine = [r for r in runs if r.system == system]
        checked = sum(1 for r in mine if r.quality_answer and r.quality_answer.support is not None)
        print(f"\n{system}: {len(mine)} runs, {checked} with a support figure\n")
        print("| threshold | answerable right | unanswerable refused | overall | false refusals |")
        print("|---:|---:|---:|---:|---:|")
        for row in sweep(mine, THRESHOLDS):
            print(
                f"| {row.threshold:.2f} | {row.answerable_right:.3f} | "
                f"{row.unanswerable_refused:.3f} | {row.overall:.3f} | {row.false_refusals:.3f} |"
            )


if __name__ == "__main__":
    main()
