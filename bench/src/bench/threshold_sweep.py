"""`python -m bench.threshold_sweep`: accuracy at other thresholds, from the runs of
``bench.quality``, without model calls.

- SQuAD 2.0 and two-hop questions, the orchestrator's answer floor and the generator's two
  checks: round 1's grades and every answer's support and answer-match figures are in the runs;
  an answer whose round 1 passed nothing at the floor, or whose figure is below a check's
  threshold, counts as the refusal it would have become. Answers refused by a higher floor or
  threshold during the run cannot be brought back, so sweep runs made with all three nearly off
  (``RAGLOOP_ANSWER_MIN_CONFIDENCE=0.5 RAGLOOP_GENERATOR_SUPPORT_THRESHOLD=0.01
  RAGLOOP_GENERATOR_ANSWER_MATCH_THRESHOLD=0.01``). A request for a
  decision (``leads.requested_decision``: instructions that name the first words, a question that
  names two candidates or asks yes or no) is exempt from both guards, as in the loop.
- PubMedQA and the lead's yes-threshold: every decision's P(yes) is in the runs; at a threshold
  the answer begins with the word ``leads.chosen_lead`` picks at that threshold.

Exact for single-shot and plain RAG; for the loop an approximation (a refusal there is rewritten,
and what the rewrite finds is not in the runs).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.answers.items import MULTIHOP, SQUAD2
from bench.answers.runs import QualityRun, QualityRunsFile
from bench.answers.summary import share
from bench.common import RESULTS_DIR
from bench.comparison.workload import PUBMEDQA
from ragloop.core.leads import requested_decision
from ragloop.generator.leads import YES, chosen_lead
from ragloop.generator.support import DEFAULT_SUPPORT_THRESHOLD
from ragloop.orchestrator.policy.defaults import DEFAULT_ANSWER_MIN_CONFIDENCE

SUPPORT_THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)
ANSWER_FLOORS = (0.0, 0.55, 0.6, 0.65, 0.7)
ANSWER_MATCH_THRESHOLDS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
LEAD_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.01)


@dataclass(frozen=True)
class SupportRow:  # shares, None where there is no question to count
    threshold: float
    answerable_right: float | None
    unanswerable_refused: float | None
    overall: float | None
    false_refusals: float | None
    floor: float = 0.0
    two_hop_right: float | None = None
    match_threshold: float = 0.0
    score: float | None = None  # right − wrong over SQuAD (issue 47's objective)
    two_hop_score: float | None = None


@dataclass(frozen=True)
class LeadRow:
    threshold: float
    accuracy: float | None
    yes_share: float | None


def outcome_at(
    run: QualityRun, threshold: float, floor: float = 0.0, match_threshold: float = 0.0
) -> tuple[bool, bool]:
    """(right, refused) of ``run``'s answer had answers below ``threshold`` support or below
    ``match_threshold`` answer match, and those whose round 1 passed no passage of at least
    ``floor`` confidence, been refused."""
    if requested_decision(run.item.instructions, run.item.text):
        return run.correct, bool(run.refused)  # a decision: no guard applies (0012, 0014, 0016)
    answer = run.quality_answer
    best = answer.rounds[0].best_passed_confidence if answer and answer.rounds else None
    below = (
        floor > 0 and best is not None and best < floor,
        _below(answer.support if answer else None, threshold),
        _below(answer.answer_match if answer else None, match_threshold),
    )
    if not run.refused and any(below):
        return not run.quality_item.answerable, True
    return run.correct, bool(run.refused)


def truthfulness(outcomes: Sequence[tuple[bool, bool]]) -> float | None:
    """Right +1, refused 0, wrong −1 over (right, refused) outcomes (docs/corrective-loop.md)."""
    if not outcomes:
        return None
    wrong = sum(1 for right, refused in outcomes if not right and not refused)
    return (sum(1 for right, _ in outcomes if right) - wrong) / len(outcomes)


def _below(figure: float | None, threshold: float) -> bool:
    """Whether a check refuses at ``threshold``; an unchecked answer (no figure) stands."""
    return figure is not None and figure < threshold


def _done(runs: Iterable[QualityRun], dataset: str) -> list[QualityRun]:
    return [r for r in runs if r.item.dataset == dataset and r.answered is not None and not r.error]


def support_sweep(
    runs: Iterable[QualityRun],
    thresholds: Sequence[float],
    floors: Sequence[float] = (0.0,),
    match_thresholds: Sequence[float] = (0.0,),
) -> list[SupportRow]:
    """One row a (floor, support threshold, answer-match threshold) over the answered SQuAD and
    two-hop runs of one system; SQuAD's figures in the first columns, two-hop accuracy apart."""
    runs = list(runs)
    done = _done(runs, SQUAD2)
    two_hop = _done(runs, MULTIHOP)
    answerable = [r for r in done if r.quality_item.answerable]
    unanswerable = [r for r in done if not r.quality_item.answerable]
    rows = []
    for floor in floors:
        for threshold in thresholds:
            for match in match_thresholds:
                right = [outcome_at(r, threshold, floor, match) for r in answerable]
                unanswered = [outcome_at(r, threshold, floor, match) for r in unanswerable]
                refusals = [refused for _, refused in unanswered]
                hops = [outcome_at(r, threshold, floor, match) for r in two_hop]
                rows.append(
                    SupportRow(
                        threshold,
                        share(ok for ok, _ in right),
                        share(refusals),
                        share([ok for ok, _ in right] + refusals),
                        share(refused for _, refused in right),
                        floor,
                        share(ok for ok, _ in hops),
                        match,
                        truthfulness(right + unanswered),
                        truthfulness(hops),
                    )
                )
    return rows


def lead_sweep(runs: Iterable[QualityRun], thresholds: Sequence[float]) -> list[LeadRow]:
    """One row a yes-threshold over the PubMedQA runs of one system whose lead was scored
    between yes and no (the others keep their recorded decision)."""
    done = _done(runs, PUBMEDQA)
    rows = []
    for threshold in thresholds:
        decisions = [(r, _decision_at(r, threshold)) for r in done]
        rows.append(
            LeadRow(
                threshold,
                share(decision == r.item.decision for r, decision in decisions),
                share(decision == YES for _, decision in decisions),
            )
        )
    return rows


def _decision_at(run: QualityRun, threshold: float) -> str | None:
    """The lead the generator would choose at ``threshold``; the recorded one without scores."""
    answer = run.quality_answer
    if answer is None or not answer.lead_probabilities:
        return run.decision
    return chosen_lead(answer.lead_probabilities, threshold)


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _print_support_rows(rows: Sequence[SupportRow]) -> None:
    print(
        "| answer floor | support threshold | answer-match threshold | answerable right "
        "| unanswerable refused | overall | false refusals | score | two-hop right "
        "| two-hop score |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        shares = (row.answerable_right, row.unanswerable_refused, row.overall, row.false_refusals)
        scores = (row.score, row.two_hop_right, row.two_hop_score)
        cells = " | ".join(_cell(v) for v in (*shares, *scores))
        print(f"| {row.floor:.2f} | {row.threshold:.2f} | {row.match_threshold:.2f} | {cells} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs-file", default=str(RESULTS_DIR / "quality-dev-runs.jsonl.xz"))
    parser.add_argument("--systems", default="single,ragloop")
    args = parser.parse_args()
    runs = QualityRunsFile(Path(args.runs_file)).runs()
    for system in args.systems.split(","):
        mine = [r for r in runs if r.system == system]
        answers = [r.quality_answer for r in mine if r.quality_answer]
        supported = sum(1 for a in answers if a.support is not None)
        matched = sum(1 for a in answers if a.answer_match is not None)
        scored = sum(1 for a in answers if a.lead_probabilities)
        graded = sum(1 for a in answers if a.rounds)  # enough for the floor alone
        print(
            f"\n{system}: {len(mine)} runs, {supported} with a support figure, {matched} with an "
            f"answer-match figure, {scored} with a scored lead\n"
        )
        if supported or graded:
            _print_support_rows(support_sweep(mine, SUPPORT_THRESHOLDS, ANSWER_FLOORS))
        if matched:
            print("\nthe answer-match threshold at the default floor and support threshold:\n")
            _print_support_rows(
                support_sweep(
                    mine,
                    (DEFAULT_SUPPORT_THRESHOLD,),
                    (DEFAULT_ANSWER_MIN_CONFIDENCE,),
                    ANSWER_MATCH_THRESHOLDS,
                )
            )
        if scored:
            print("\n| lead yes-threshold | PubMedQA accuracy | yes share |")
            print("|---:|---:|---:|")
            for lead in lead_sweep(mine, LEAD_THRESHOLDS):
                print(
                    f"| {lead.threshold:.2f} | {_cell(lead.accuracy)} | {_cell(lead.yes_share)} |"
                )


if __name__ == "__main__":
    main()
