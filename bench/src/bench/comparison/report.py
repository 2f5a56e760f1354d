"""The comparison's Markdown tables, from its flat figures (so a results file can be rendered
again: ``python -m bench.compare --report-only``)."""

from __future__ import annotations

from typing import Any

from bench.comparison.summary import MODEL_NODES, TARGETS, Figures
from bench.comparison.systems import BASELINE, RAGLOOP, RAGLOOP_INPROCESS

COLUMNS = ((RAGLOOP, "ragloop (5 processes, gRPC)"), (BASELINE, "LangGraph baseline"))
INPROCESS_COLUMN = (RAGLOOP_INPROCESS, "ragloop in-process")


def _by_node(label: str, key: str) -> list[tuple[str, str]]:
    return [(f"· {node} {label}", f"{node}_{key}") for node in MODEL_NODES]


ROWS = (
    ("queries run (failed)", "runs"),
    ("latency p50, s", "latency_p50_s"),
    ("latency p95, s", "latency_p95_s"),
    ("· latency p50, SciFact, s", "latency_p50_s_scifact"),
    ("· latency p50, PubMedQA, s", "latency_p50_s_pubmedqa"),
    ("· retrieve, s/query", "retrieve_seconds_per_query"),
    ("· grade, s/query", "grade_seconds_per_query"),
    ("· rewrite, s/query", "rewrite_seconds_per_query"),
    ("· generate, s/query", "generate_seconds_per_query"),
    ("· other (loop, transport), s/query", "other_seconds_per_query"),
    ("model calls/query", "model_calls_per_query"),
    *_by_node("model calls/query", "model_calls_per_query"),
    ("prompt tokens/query (usage)", "prompt_tokens_per_query"),
    *_by_node("prompt tokens/query", "prompt_tokens_per_query"),
    ("· SciFact prompt tokens/query", "prompt_tokens_per_query_scifact"),
    ("· PubMedQA prompt tokens/query", "prompt_tokens_per_query_pubmedqa"),
    ("prompt tokens evaluated/query (server, after prefix cache)",
     "server_prompt_tokens_evaluated_per_query"),
    ("completion tokens/query", "completion_tokens_per_query"),
    *_by_node("completion tokens/query", "completion_tokens_per_query"),
    ("model compute, s/query (server)", "model_seconds_per_query"),
    ("rewrites/query", "rewrites_per_query"),
    ("evidence precision, SciFact", "evidence_precision_scifact"),
    ("evidence recall, SciFact", "evidence_recall_scifact"),
    ("evidence precision, PubMedQA", "evidence_precision_pubmedqa"),
    ("evidence recall, PubMedQA", "evidence_recall_pubmedqa"),
    ("evidence precision, all", "evidence_precision"),
    ("evidence recall, all", "evidence_recall"),
    ("queries with no evidence", "no_evidence_share"),
    ("PubMedQA decision accuracy", "pubmedqa_decision_accuracy"),
    ("· PubMedQA answers that begin with a decision", "pubmedqa_decided_share"),
    ("CPU s/query, own processes (not the model)", "cpu_seconds_per_query"),
    ("· orchestrator CPU s/query", "cpu_seconds_per_query_orchestrator"),
    ("token counts equal the server's", "usage_matches_server_share"),
)  # fmt: skip


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _cell(figures: Figures, key: str, system: str) -> str:
    if key == "runs":
        runs = figures.get(f"runs_{system}")
        return "–" if runs is None else f"{runs} ({figures.get(f'failed_{system}', 0)})"
    return _format(figures.get(f"{key}_{system}"))


def main_table(figures: Figures) -> str:
    columns = list(COLUMNS)
    if f"runs_{RAGLOOP_INPROCESS}" in figures:
        columns.append(INPROCESS_COLUMN)
    header = ["", *(title for _, title in columns), "ragloop ÷ baseline"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for label, key in ROWS:
        cells = [_cell(figures, key, system) for system, _ in columns]
        ours, theirs = figures.get(f"{key}_{RAGLOOP}"), figures.get(f"{key}_{BASELINE}")
        numeric = isinstance(ours, int | float) and isinstance(theirs, int | float)
        ratio = _format(round(ours / theirs, 3)) if numeric and theirs and key != "runs" else ""
        lines.append("| " + " | ".join([label, *cells, ratio]) + " |")
    return "\n".join(lines)


def throughput_table(figures: Figures, clients: list[int]) -> str:
    lines = [
        "| queries/minute | " + " | ".join(f"{n} client{'s' * (n > 1)}" for n in clients) + " |",
        "|---" + "|---:" * len(clients) + "|",
    ]
    for system, title in COLUMNS:
        cells = []
        for n in clients:
            rate = figures.get(f"throughput_per_minute_{system}_c{n}")
            failed = figures.get(f"throughput_failed_{system}_c{n}")
            cells.append(_format(rate) + (f" ({failed} failed)" if failed else ""))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def boundary_lines(figures: Figures) -> str:
    if figures.get("grpc_overhead_ratio") is None:
        return "gRPC boundary: not measured (part `overhead` not run)."
    return (
        f"gRPC boundary, {figures['grpc_overhead_pairs']} queries run both ways "
        f"({figures['grpc_overhead_same_path_pairs']} took the same path): p50 latency over gRPC "
        f"÷ in-process **{_format(figures['grpc_overhead_ratio'])}**; latency without the model's "
        f"compute time, gRPC − in-process, median **{_format(figures['grpc_overhead_ms_p50'])} "
        f"ms** = **{_format(_percent(figures['grpc_overhead_share_p50']))}%** of the p50 latency."
    )


def idle_line(figures: Figures) -> str:
    shares = {
        key.removeprefix("idle_cpu_share_"): value
        for key, value in sorted(figures.items())
        if key.startswith("idle_cpu_share_") and value is not None
    }
    if not shares:
        return ""
    listed = ", ".join(f"{name} {_format(_percent(share))}%" for name, share in shares.items())
    return f"CPU while idle (share of one core, also in every query's CPU time): {listed}."


def _percent(share: float | None) -> float | None:
    return None if share is None else round(100 * share, 2)


def targets_table(figures: Figures) -> str:
    lines = ["| target (issue 9) | met |", "|---|---|"]
    lines += [f"| {t.description} | {_format(figures.get(t.key))} |" for t in TARGETS]
    return "\n".join(lines)


def render(figures: Figures, clients: list[int]) -> str:
    header = (
        f"Comparison on {figures.get('date')} ({figures.get('machine')}): "
        f"{figures.get('scifact_queries', 0)} SciFact claims, "
        f"{figures.get('pubmedqa_questions', 0)} PubMedQA questions, "
        f"model {figures.get('model')}."
    )
    return "\n\n".join(
        [
            header,
            main_table(figures),
            throughput_table(figures, clients),
            boundary_lines(figures),
            idle_line(figures),
            targets_table(figures),
        ]
    )
