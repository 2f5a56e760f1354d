"""The figures of ``bench/results/quality.json``, computed from every run in the runs file: per
system (``…_ragloop``, ``…_single``, ``…_plain``, ``…_baseline``; null where it has no runs, so a
figure of a system no longer in the file does not linger), then ragloop against single-shot on the
questions every system present answered, and which questions they were (``split``).

Failed runs are counted (``failed_*``) and left out of everything else; the next invocation makes
them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bench.answers.items import MULTIHOP, SQUAD2
from bench.answers.runs import QualityRun
from bench.answers.scoring import mcnemar_p
from bench.answers.squad import SPLIT_ARTICLES
from bench.answers.systems import RAGLOOP, SINGLE, SYSTEMS
from bench.comparison.workload import PUBMEDQA
from bench.metrics import percentile
from ragloop.core.domain import ModelUsage

Figures = dict[str, Any]
QuestionKey = tuple[str, str]  # data set, question id
PUBMEDQA_SPLITS = {"report": "official test split", "dev": "the 500 outside the test split"}


def share(flags: Iterable[bool]) -> float | None:
    """The share of true flags, to 4 places; None when there are none."""
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else None


def _mean(values: Sequence[float], digits: int) -> float | None:
    return round(sum(values) / len(values), digits) if values else None


def answered(runs: Iterable[QualityRun]) -> list[QualityRun]:
    return [run for run in runs if run.answered is not None and not run.error]


def _squad(runs: Iterable[QualityRun], answerable: bool | None = None) -> list[QualityRun]:
    return [
        run
        for run in runs
        if run.item.dataset == SQUAD2
        and (answerable is None or run.quality_item.answerable == answerable)
    ]


def citation_validity(runs: Iterable[QualityRun]) -> float | None:
    """Valid citations ÷ (valid + removed) over the answers; None for a system without them."""
    counts = [
        (a.citations, a.removed_citations)
        for a in (run.quality_answer for run in runs)
        if a is not None and a.citations is not None and a.removed_citations is not None
    ]
    valid = sum(c for c, _ in counts)
    total = valid + sum(r for _, r in counts)
    return round(valid / total, 4) if total else None


def multihop_figures(runs: Sequence[QualityRun]) -> Figures:
    """Two-hop questions: right answers, refusals, and how often both paragraphs were retrieved
    (systems that report their rounds), passed grading (those that grade) and reached the
    generator."""
    hops = [run for run in runs if run.item.dataset == MULTIHOP]
    with_rounds = [run for run in hops if run.quality_answer and run.quality_answer.rounds]
    graded = [
        run for run in with_rounds if any(r.passed is not None for r in run.quality_answer.rounds)
    ]
    return {
        "multihop_accuracy": share(run.correct for run in hops),
        "multihop_refusal": share(bool(run.refused) for run in hops),
        "multihop_both_retrieved": share(
            run.item.relevant <= run.retrieved_sources for run in with_rounds
        ),
        "multihop_both_passed": share(run.item.relevant <= run.passed_sources for run in graded),
        "multihop_both_given": share(
            run.item.relevant <= set(run.answered.evidence) for run in hops if run.answered
        ),
    }


def system_figures(system: str, runs: Sequence[QualityRun]) -> Figures:
    done = answered(runs)
    seconds = [run.seconds for run in done]
    pubmedqa = [run for run in done if run.item.dataset == PUBMEDQA]

    def per_query(value: Callable[[QualityRun], float], digits: int) -> float | None:
        return _mean([value(run) for run in done], digits)

    figures: Figures = {
        "runs": len(runs),
        "failed": len(runs) - len(done),
        "squad2_accuracy": share(run.correct for run in _squad(done)),
        "squad2_answerable_accuracy": share(run.correct for run in _squad(done, True)),
        "squad2_unanswerable_accuracy": share(run.correct for run in _squad(done, False)),
        "squad2_unanswerable_refusal": share(bool(run.refused) for run in _squad(done, False)),
        "squad2_false_refusal": share(bool(run.refused) for run in _squad(done, True)),
        **multihop_figures(done),
        "pubmedqa_decision_accuracy": share(run.correct for run in pubmedqa),
        "pubmedqa_decided_share": share(run.decision is not None for run in pubmedqa),
        "citation_validity": citation_validity(done),
        "rewrite_share": share(run.rewrote for run in done),
        "p50_latency_s": round(percentile(seconds, 50), 2) if seconds else None,
        "model_calls_per_query": per_query(lambda r: _usage(r).calls, 2),
        "prompt_tokens_per_query": per_query(lambda r: r.server.prompt_tokens, 1),
        "system_prompt_tokens_per_query": per_query(lambda r: _usage(r).prompt_tokens, 1),
        "completion_tokens_per_query": per_query(lambda r: r.server.completion_tokens, 1),
    }
    return {f"{name}_{system}": value for name, value in figures.items()}


def _usage(run: QualityRun) -> ModelUsage:
    assert run.answered is not None
    return run.answered.usage


def common_questions(runs: Sequence[QualityRun]) -> set[QuestionKey]:
    """The questions that every system with runs of their data set answered (failed runs are
    not answers)."""
    present: dict[str, set[str]] = {}
    for run in runs:
        present.setdefault(run.item.dataset, set()).add(run.system)
    by_question: dict[QuestionKey, set[str]] = {}
    for run in answered(runs):
        by_question.setdefault((run.item.dataset, run.item.id), set()).add(run.system)
    return {key for key, systems in by_question.items() if systems >= present[key[0]]}


def loop_figures(runs: Sequence[QualityRun]) -> Figures:
    """ragloop against single-shot on the common questions (None without both)."""
    common = common_questions(runs)
    by_system = {
        system: {
            (r.item.dataset, r.item.id): r
            for r in answered(runs)
            if r.system == system and (r.item.dataset, r.item.id) in common
        }
        for system in (RAGLOOP, SINGLE)
    }
    loop, single = by_system[RAGLOOP], by_system[SINGLE]
    pairs = [(loop[key], single[key]) for key in sorted(loop.keys() & single.keys())]
    wins = sum(1 for ours, theirs in pairs if ours.correct and not theirs.correct)
    losses = sum(1 for ours, theirs in pairs if theirs.correct and not ours.correct)
    turned = [
        ours for ours, theirs in pairs if ours.correct and not theirs.correct and ours.rewrote
    ]
    # Without a rewrite ragloop ran single-shot's rounds: a difference there is the model server's
    # (llama-server's prompt cache changes the logits of a prompt whose prefix it holds).
    unrewritten = [
        ours for ours, theirs in pairs if ours.correct != theirs.correct and not ours.rewrote
    ]
    # Answerable SQuAD questions whose round 1 passed no passage holding a gold answer.
    missed = [run for run in loop.values() if run.round1_answer_bearing_passed is False]
    paired = bool(pairs)
    return {
        "loop_vs_single_questions": len(pairs),
        "loop_vs_single_wins": wins if paired else None,
        "loop_vs_single_losses": losses if paired else None,
        "loop_vs_single_p": round(mcnemar_p(wins, losses), 4) if paired else None,
        "loop_worse_share": round(losses / len(pairs), 4) if paired else None,
        "rewrites_turned_right": len(turned) if paired else None,
        "loop_vs_single_wins_unrewritten": (
            sum(1 for ours in unrewritten if ours.correct) if paired else None
        ),
        "loop_vs_single_losses_unrewritten": (
            sum(1 for ours in unrewritten if not ours.correct) if paired else None
        ),
        "loop_recovery_questions": len(missed),
        "loop_recovery_share": share(run.correct for run in missed),
        "loop_recovery_evidence_share": share(run.later_answer_bearing_passed for run in missed),
    }


def count_figures(runs: Sequence[QualityRun]) -> Figures:
    """Distinct questions in the runs file, and how many every system present answered."""
    common = common_questions(runs)
    squad = {run.item.id: run.quality_item.answerable for run in _squad(runs)}
    return {
        "squad2_answerable_questions": sum(1 for a in squad.values() if a),
        "squad2_unanswerable_questions": sum(1 for a in squad.values() if not a),
        "multihop_questions": len({r.item.id for r in runs if r.item.dataset == MULTIHOP}),
        "pubmedqa_questions": len({r.item.id for r in runs if r.item.dataset == PUBMEDQA}),
        "common_questions_squad2": sum(1 for dataset, _ in common if dataset == SQUAD2),
        "common_questions_multihop": sum(1 for dataset, _ in common if dataset == MULTIHOP),
        "common_questions_pubmedqa": sum(1 for dataset, _ in common if dataset == PUBMEDQA),
    }


def split_description(runs: Sequence[QualityRun]) -> str:
    """Which questions the runs are of, e.g. "report: squad2 articles 5-12, 100 answerable + 100
    unanswerable (seed 13); pubmedqa official test split, 50 (seed 13)"; one such part per split
    and seed when the file mixes them."""
    parts = []
    for split, seed in sorted({(r.quality_item.split, r.quality_item.seed) for r in runs}):
        own = [r for r in runs if (r.quality_item.split, r.quality_item.seed) == (split, seed)]
        counts = count_figures(own)
        described = []
        if counts["squad2_answerable_questions"] or counts["squad2_unanswerable_questions"]:
            first, last = SPLIT_ARTICLES.get(split, (0, 0))
            described.append(
                f"squad2 articles {first}-{last}, {counts['squad2_answerable_questions']} "
                f"answerable + {counts['squad2_unanswerable_questions']} unanswerable (seed {seed})"
            )
        if counts["multihop_questions"]:
            count = counts["multihop_questions"]
            described.append(f"multihop {split} items, {count} (seed {seed})")
        if counts["pubmedqa_questions"]:
            which = PUBMEDQA_SPLITS.get(split, split)
            described.append(f"pubmedqa {which}, {counts['pubmedqa_questions']} (seed {seed})")
        parts.append(f"{split}: " + "; ".join(described))
    return " | ".join(parts)


def quality_figures(runs: Sequence[QualityRun]) -> Figures:
    figures: Figures = {}
    for system in SYSTEMS:
        figures |= system_figures(system, [run for run in runs if run.system == system])
    return figures | loop_figures(runs) | count_figures(runs) | {"split": split_description(runs)}
