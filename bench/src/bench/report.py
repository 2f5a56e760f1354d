"""The model benchmark's Markdown tables, the figures for models.json, and the targets."""

from __future__ import annotations

import math
import statistics
from typing import Any

from bench.grading import Accuracy, ModeCost, Workload
from bench.metrics import Classification
from bench.pubmedqa import DECISION_INSTRUCTION, Outcome, citation_validity
from ragloop.grader.stage import GradingMode, ModelGrader

DECISION_DESIGN = (
    '\nThe decision: the generator gets the question with the instructions "{instruction}" '
    "(only the generator: retrieval, grading and rewriting see the question as asked), and the "
    "answer's first word is the decision. No extra model call, and the figure is what a user "
    "reads; an answer that does not start with yes/no/maybe (or says the sources lack the "
    "answer) counts as wrong."
)
COST_DESIGN = (
    "Round 1 grades each query's top {top} passages from hybrid retrieval (the retriever's "
    "default). Round 2 stands in for the round after a rewrite: the same question (the loop "
    "grades against the original question) with the top {top} passages of dense retrieval, "
    "{repeated:.0%} of which round 1 already graded. A real rewrite's overlap depends on the "
    "rewrite; this one is fixed and cached, so every mode grades the same passages. Round 1 runs "
    "once per mode (its cache starts empty, so it is the same work with or without cache); "
    "round 2 runs twice, on the grader that graded round 1 (cache) and on one with the cache "
    "off. Figures are per query, both rounds together; F1 is round 1 against the qrels "
    "(a passage of a judged abstract counts relevant), a rough check only."
)


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[object]]) -> None:
    print()
    print(_row(*header))
    print(_row(*["---"] * len(header)))
    for row in rows:
        print(_row(*row))


def accuracy_table(runs: dict[str, Accuracy], pairs: str = "SciFact pairs") -> None:
    first = next(iter(runs.values())).classification
    positives = first.true_positives + first.false_negatives
    negatives = first.total - positives
    _table(
        [
            f"grader, {pairs} ({positives} relevant + {negatives} hard negatives)",
            "ROC AUC",
            "precision",
            "recall",
            "F1",
            "accuracy",
            "model calls",
            "prompt tokens",
            "s per pair",
        ],
        [
            [
                label,
                f"{run.roc_auc:.3f}",
                f"{run.classification.precision:.3f}",
                f"{run.classification.recall:.3f}",
                f"{run.classification.f1:.3f}",
                f"{run.classification.accuracy:.3f}",
                run.usage.calls,
                f"{run.usage.prompt_tokens:,}",
                f"{run.seconds / max(run.classification.total, 1):.1f}",
            ]
            for label, run in runs.items()
        ],
    )


def accuracy_figures(run: Accuracy, suffix: str, dataset: str = "scifact") -> dict[str, float]:
    c = run.classification
    return {
        f"grader_precision_{dataset}{suffix}": round(c.precision, 4),
        f"grader_recall_{dataset}{suffix}": round(c.recall, 4),
        f"grader_f1_{dataset}{suffix}": round(c.f1, 4),
        f"grader_roc_auc_{dataset}{suffix}": round(run.roc_auc, 4),
        f"grader_seconds_per_pair_{dataset}{suffix}": round(run.seconds / max(c.total, 1), 2),
    }


def cost_table(costs: list[ModeCost], workload: Workload) -> dict[str, float]:
    queries = len(workload.queries)
    top = max(len(passages) for passages in workload.first.values())
    print("\n" + COST_DESIGN.format(top=top, repeated=workload.repeated_share))
    rows: list[list[object]] = []
    figures: dict[str, float] = {}
    prompt: dict[tuple[GradingMode, bool], float] = {}
    for cost in costs:
        f1 = Classification.of(cost.first.verdicts).f1
        for cached in (False, True):
            row = cost.per_query(cached=cached, queries=queries)
            prompt[(cost.mode, cached)] = row.prompt_tokens
            label = f"{cost.mode}_{'cache' if cached else 'no_cache'}"
            rows.append(
                [
                    f"{cost.mode.replace('_', '-')}, {'cache' if cached else 'no cache'}",
                    f"{row.calls:.1f}",
                    f"{row.prompt_tokens:,.0f}",
                    f"{row.completion_tokens:,.0f}",
                    f"{row.first_round_s:.1f}",
                    f"{row.second_round_s:.1f}",
                    row.cache_hits,
                    f"{f1:.3f}",
                ]
            )
            figures[f"grading_prompt_tokens_per_query_{label}"] = round(row.prompt_tokens, 1)
            figures[f"grading_completion_tokens_per_query_{label}"] = round(
                row.completion_tokens, 1
            )
            figures[f"grading_model_calls_per_query_{label}"] = round(row.calls, 2)
            figures[f"grading_round2_seconds_per_query_{label}"] = round(row.second_round_s, 2)
        figures[f"grading_round1_seconds_per_query_{cost.mode}"] = round(
            cost.first.seconds / queries, 2
        )
        figures[f"grader_f1_round1_vs_qrels_{cost.mode}"] = round(f1, 4)
    _table(
        [
            f"grading cost, {queries} SciFact queries × 2 rounds",
            "model calls/query",
            "prompt tokens/query",
            "completion tokens/query",
            "round 1 s/query",
            "round 2 s/query",
            "cache hits",
            "F1 vs qrels (round 1)",
        ],
        rows,
    )
    baseline = prompt[(GradingMode.PER_DOCUMENT, False)]
    ratio = prompt[(GradingMode.BATCHED, True)] / baseline if baseline else math.nan
    figures["batched_cached_prompt_token_ratio"] = round(ratio, 4)
    figures["grading_round2_repeated_share"] = round(workload.repeated_share, 4)
    per_document, batched = ([g for _, g in cost.first.verdicts] for cost in costs)
    agreement = sum(a == b for a, b in zip(per_document, batched, strict=True)) / len(batched)
    figures["grading_round1_mode_agreement"] = round(agreement, 4)
    print(f"\nper-document and batched verdicts agree on {agreement:.1%} of round-1 passages")
    return figures


def pubmedqa_table(
    outcomes: list[Outcome], requested: int, grader: ModelGrader
) -> dict[str, float]:
    count = len(outcomes)
    undecided = sum(o.decision is None for o in outcomes)
    accuracy = sum(o.correct for o in outcomes) / count
    validity = citation_validity(outcomes)
    cited = sum(o.valid_citations + o.removed_citations for o in outcomes)
    answered = [o for o in outcomes if o.valid_citations]
    own = sum(o.cites_own_abstract for o in answered) / len(answered) if answered else math.nan
    seconds = [o.seconds for o in outcomes]
    rewrites = statistics.fmean(o.rewrites for o in outcomes)
    calls = statistics.fmean(o.usage.calls for o in outcomes)
    prompt = statistics.fmean(o.usage.prompt_tokens for o in outcomes)
    completion = statistics.fmean(o.usage.completion_tokens for o in outcomes)
    outcome_counts = ", ".join(
        f"{name} {sum(o.outcome == name for o in outcomes)}"
        for name in sorted({o.outcome for o in outcomes})
    )
    print(DECISION_DESIGN.format(instruction=DECISION_INSTRUCTION))
    _table(
        [f"PubMedQA, {count} of {requested} questions (seeded order), whole loop", "value"],
        [
            ["decision accuracy (yes/no/maybe = final_decision)", f"{accuracy:.3f}"],
            ["answers without a decision", undecided],
            ["citation validity (valid ÷ all cited passages)", f"{validity:.3f} of {cited}"],
            ["answers citing the question's own abstract", f"{own:.3f} of {len(answered)}"],
            ["outcomes", outcome_counts],
            ["rewrites per question", f"{rewrites:.2f}"],
            ["model calls per question", f"{calls:.1f}"],
            ["prompt / completion tokens per question", f"{prompt:,.0f} / {completion:,.0f}"],
            ["grade cache hits", grader.cache.hits],
            [
                "seconds per question (mean / max)",
                f"{statistics.fmean(seconds):.1f} / {max(seconds):.1f}",
            ],
        ],
    )
    return {
        "pubmedqa_questions": count,
        "pubmedqa_questions_requested": requested,
        "pubmedqa_decision_accuracy": round(accuracy, 4),
        "pubmedqa_no_decision": undecided,
        "citation_validity": round(validity, 4),
        "pubmedqa_cites_own_abstract": round(own, 4),
        "pubmedqa_rewrites_per_question": round(rewrites, 3),
        "pubmedqa_model_calls_per_question": round(calls, 2),
        "pubmedqa_prompt_tokens_per_question": round(prompt, 1),
        "pubmedqa_seconds_per_question": round(statistics.fmean(seconds), 1),
        "pubmedqa_failed_requests": sum(o.outcome == "failed" for o in outcomes),
    }


def _check(results: dict[str, Any], key: str, test: Any) -> str:
    value = results.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not measured"
    return "met" if test(value) else "NOT met"


def _all_met(results: dict[str, Any], checks: list[tuple[str, Any]]) -> str:
    states = [_check(results, key, test) for key, test in checks]
    if "not measured" in states:
        return "not measured"
    return "met" if all(state == "met" for state in states) else "NOT met"


def summary(results: dict[str, Any], seconds: dict[str, float]) -> None:
    def shown(key: str) -> str:
        value = results.get(key)
        return "—" if value is None else str(value)

    cost_target = _all_met(
        results,
        [
            ("batched_cached_prompt_token_ratio", lambda v: v <= 0.5),
            ("grader_f1_drop_batched", lambda v: v <= 0.03),
        ],
    )
    _table(
        ["figure", "value", "target", "target met"],
        [
            [
                "grader F1, SciFact, default model",
                shown("grader_f1_scifact"),
                "≥ 0.80",
                _check(results, "grader_f1_scifact", lambda v: v >= 0.80),
            ],
            ["grader F1, SciFact, 0.5B model", shown("grader_f1_scifact_small_model"), "—", "—"],
            [
                "batched+cached ÷ per-document prompt tokens",
                shown("batched_cached_prompt_token_ratio"),
                "≤ 0.50",
                cost_target,
            ],
            ["grader F1 drop, batched", shown("grader_f1_drop_batched"), "≤ 0.03", cost_target],
            [
                "malformed-output failures",
                shown("malformed_output_failures"),
                "0",
                _check(results, "malformed_output_failures", lambda v: v == 0),
            ],
            ["batched grading fallbacks", shown("grader_batch_fallbacks"), "—", "—"],
            ["PubMedQA decision accuracy", shown("pubmedqa_decision_accuracy"), "—", "—"],
            [
                "citation validity",
                shown("citation_validity"),
                "≥ 0.95",
                _check(results, "citation_validity", lambda v: v >= 0.95),
            ],
        ],
    )
    _table(["part", "seconds"], [[part, f"{s:.0f}"] for part, s in seconds.items()])
