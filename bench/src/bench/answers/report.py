"""The Markdown tables of ``bench/results/quality.json`` (so a results file can be rendered
again: ``python -m bench.quality --report-only``)."""

from __future__ import annotations

from typing import Any

from bench.answers.summary import Figures
from bench.answers.systems import BASELINE, PLAIN, RAGLOOP, SINGLE

TITLES = (
    (RAGLOOP, "ragloop (corrective loop)"),
    (SINGLE, "ragloop single-shot (no rewrite)"),
    (PLAIN, "plain RAG (top_k to the generator)"),
    (BASELINE, "LangGraph baseline"),
)
COLUMNS = (
    ("SQuAD answerable", "squad2_answerable_accuracy"),
    ("SQuAD unanswerable", "squad2_unanswerable_accuracy"),
    ("SQuAD overall", "squad2_accuracy"),
    ("false refusals", "squad2_false_refusal"),
    ("two-hop", "multihop_accuracy"),
    ("two-hop both passed", "multihop_both_passed"),
    ("PubMedQA accuracy", "pubmedqa_decision_accuracy"),
    ("PubMedQA decided", "pubmedqa_decided_share"),
    ("citation validity", "citation_validity"),
    ("rewrite share", "rewrite_share"),
    ("p50 s", "p50_latency_s"),
    ("model calls", "model_calls_per_query"),
    ("prompt tokens", "prompt_tokens_per_query"),
    ("runs (failed)", "runs"),
)


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _cell(figures: Figures, key: str, system: str) -> str:
    if key == "runs":
        return f"{_format(figures.get(f'runs_{system}'))} ({figures.get(f'failed_{system}', 0)})"
    return _format(figures.get(f"{key}_{system}"))


def systems_table(figures: Figures) -> str:
    """A row a system with runs; a column a figure that some of them have (a run of some data
    sets leaves the others' columns out)."""
    systems = [(system, title) for system, title in TITLES if figures.get(f"runs_{system}")]
    columns = [
        (name, key)
        for name, key in COLUMNS
        if any(figures.get(f"{key}_{system}") is not None for system, _ in systems)
    ]
    lines = [
        "| system | " + " | ".join(name for name, _ in columns) + " |",
        "|---" + "|---:" * len(columns) + "|",
    ]
    for system, title in systems:
        cells = [_cell(figures, key, system) for _, key in columns]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def loop_lines(figures: Figures) -> str:
    if not figures.get("loop_vs_single_questions"):
        return "ragloop vs single-shot: no question answered by both."
    f = {key: _format(value) for key, value in figures.items()}
    return (
        f"ragloop vs single-shot on the {f['loop_vs_single_questions']} questions every system "
        f"answered: ragloop right and single-shot wrong on **{f['loop_vs_single_wins']}**, the "
        f"reverse on **{f['loop_vs_single_losses']}** (exact McNemar p = {f['loop_vs_single_p']}; "
        f"loop worse on {f['loop_worse_share']} of them; without a rewrite, so that the "
        f"difference is the model server's, {f['loop_vs_single_wins_unrewritten']} of the wins "
        f"and {f['loop_vs_single_losses_unrewritten']} of the losses); "
        f"{f['rewrites_turned_right']} wrong "
        f"single-shot answers turned right after a rewrite. Of the "
        f"{f['loop_recovery_questions']} answerable SQuAD questions whose round 1 passed no "
        f"passage holding a gold answer, ragloop answered {f['loop_recovery_share']} right (a "
        f"later round passed one for {f['loop_recovery_evidence_share']})."
    )


def render(figures: Figures) -> str:
    header = (
        f"Answer quality on {figures.get('date')} ({figures.get('machine')}), model "
        f"{figures.get('model')}. Questions: {figures.get('split')}. Command: "
        f"`{figures.get('command')}`."
    )
    shares = (
        "Shares of the answered runs; p50 s is end to end (single-shot's is comparable only "
        "when it ran apart from ragloop: run together, it follows ragloop on each question, "
        "whose grades the grader's cache then holds); model calls as each system counts them; "
        "prompt tokens as the llama-server evaluated them (after its prefix cache), per query."
    )
    return "\n\n".join([header, systems_table(figures), shares, loop_lines(figures)])
