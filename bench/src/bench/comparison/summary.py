"""The comparison's figures, as one flat dict (``bench/results/compare.json``): per system
(``…_ragloop``, ``…_baseline``, ``…_ragloop_inprocess``), the ratios between them and the targets
of issue 9."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.baseline.graph import NODES
from bench.comparison.evidence import mean_precision
from bench.comparison.runs import QueryRun
from bench.comparison.systems import BASELINE, RAGLOOP, RAGLOOP_INPROCESS
from bench.comparison.workload import PUBMEDQA, SCIFACT
from bench.metrics import percentile
from ragloop.core.domain import ModelUsage

Figures = dict[str, Any]
MODEL_NODES = ("grade", "rewrite", "generate")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _latency_percentile(seconds: Sequence[float], percent: float) -> float | None:
    return _round(percentile(seconds, percent) if seconds else None, 2)


def system_figures(system: str, runs: Sequence[QueryRun]) -> Figures:
    """Per-query means and latency percentiles of one system; failed runs are counted, and left
    out of everything but the evidence recall (which they lower: they handed over nothing)."""
    done = [run for run in runs if run.answered is not None]
    answered = [run.answered for run in done if run.answered is not None]
    seconds = [run.seconds for run in done]

    def mean(value: Callable[[QueryRun], float]) -> float | None:
        return _round(_mean([value(run) for run in done]))

    figures: Figures = {
        "runs": len(runs),
        "failed": len(runs) - len(done),
        "latency_p50_s": _latency_percentile(seconds, 50),
        "latency_p95_s": _latency_percentile(seconds, 95),
        "model_calls_per_query": _round(_mean([a.usage.calls for a in answered]), 2),
        "prompt_tokens_per_query": _round(_mean([a.usage.prompt_tokens for a in answered]), 1),
        "completion_tokens_per_query": _round(
            _mean([a.usage.completion_tokens for a in answered]), 1
        ),
        "server_prompt_tokens_evaluated_per_query": mean(lambda r: r.server.prompt_tokens),
        "server_prompt_tokens_sent_per_query": mean(lambda r: r.server.sent_prompt_tokens),
        "server_completion_tokens_per_query": mean(lambda r: r.server.completion_tokens),
        "model_seconds_per_query": mean(lambda r: r.server.model_seconds),
        "rewrites_per_query": _round(_mean([a.rewrites for a in answered]), 2),
        "cpu_seconds_per_query": mean(lambda r: sum(r.cpu_seconds.values())),
    }
    for node in NODES:
        figures[f"{node}_seconds_per_query"] = mean(lambda r, n=node: _node_seconds(r, n))
    for node in MODEL_NODES:
        figures[f"{node}_model_calls_per_query"] = mean(lambda r, n=node: _node_usage(r, n).calls)
        figures[f"{node}_prompt_tokens_per_query"] = mean(
            lambda r, n=node: _node_usage(r, n).prompt_tokens
        )
        figures[f"{node}_completion_tokens_per_query"] = mean(
            lambda r, n=node: _node_usage(r, n).completion_tokens
        )
    figures["other_seconds_per_query"] = mean(
        lambda r: r.seconds - sum(_node_seconds(r, n) for n in NODES)
    )
    processes = {name for run in done for name in run.cpu_seconds}
    if len(processes) > 1:
        for process in sorted(processes):
            figures[f"cpu_seconds_per_query_{process}"] = mean(
                lambda r, p=process: r.cpu_seconds.get(p, 0.0)
            )
    for dataset in (SCIFACT, PUBMEDQA, None):
        of_dataset = [r for r in runs if dataset is None or r.item.dataset == dataset]
        suffix = f"_{dataset}" if dataset else ""
        precision = mean_precision(r.precision for r in of_dataset)
        figures[f"evidence_precision{suffix}"] = _round(precision)
        figures[f"evidence_recall{suffix}"] = _round(_mean([r.recall for r in of_dataset]))
        figures[f"no_evidence_share{suffix}"] = _round(
            _mean([float(r.precision is None) for r in of_dataset])
        )
        if dataset:  # the two sets' questions differ in cost; their mix is in the overall figures
            figures |= _dataset_cost_figures([r for r in done if r.item.dataset == dataset], suffix)
    pubmedqa = [r for r in runs if r.item.dataset == PUBMEDQA]
    figures["pubmedqa_decision_accuracy"] = _round(_mean([float(r.correct) for r in pubmedqa]))
    figures["pubmedqa_decided_share"] = _round(
        _mean([float(r.decision is not None) for r in pubmedqa])
    )
    figures["usage_matches_server_share"] = _round(
        _mean([float(_usage_matches_server(r)) for r in done])
    )
    return {f"{name}_{system}": value for name, value in figures.items()}


def _dataset_cost_figures(done: Sequence[QueryRun], suffix: str) -> Figures:
    """Latency p50 and prompt tokens per query of one data set's answered runs."""
    seconds = [run.seconds for run in done]
    prompt_tokens = [run.answered.usage.prompt_tokens for run in done if run.answered]
    return {
        f"latency_p50_s{suffix}": _latency_percentile(seconds, 50),
        f"prompt_tokens_per_query{suffix}": _round(_mean(prompt_tokens), 1),
    }


def _node_seconds(run: QueryRun, node: str) -> float:
    return run.answered.node_seconds.get(node, 0.0) if run.answered else 0.0


def _node_usage(run: QueryRun, node: str) -> ModelUsage:
    return run.answered.node_usage.get(node, ModelUsage()) if run.answered else ModelUsage()


def _usage_matches_server(run: QueryRun) -> bool:
    """The system's own token counts equal what the llama-server counted for the query."""
    usage = run.answered.usage if run.answered else None
    return (
        usage is not None
        and usage.completion_tokens == round(run.server.completion_tokens)
        and usage.prompt_tokens == round(run.server.sent_prompt_tokens)
    )


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, 4)


def comparison_figures(runs: Sequence[QueryRun]) -> Figures:
    """Every system's figures, the ratios ragloop / baseline and gRPC / in-process."""
    figures: Figures = {}
    for system in (RAGLOOP, BASELINE, RAGLOOP_INPROCESS):
        own = [run for run in runs if run.system == system]
        if own:
            figures |= system_figures(system, own)
    ratios = {
        "prompt_token_ratio_vs_baseline": "prompt_tokens_per_query",
        "evaluated_prompt_token_ratio_vs_baseline": "server_prompt_tokens_evaluated_per_query",
        "p50_latency_ratio_vs_baseline": "latency_p50_s",
    }
    for name, measure in ratios.items():
        ratio = _ratio(figures.get(f"{measure}_{RAGLOOP}"), figures.get(f"{measure}_{BASELINE}"))
        if ratio is not None:  # a run of other parts leaves the figure of an earlier run
            figures[name] = ratio
    figures |= boundary_figures(runs)
    return figures


def boundary_figures(runs: Sequence[QueryRun]) -> Figures:
    """The cost of the gRPC boundary: the same loop over gRPC vs in-process, on the same items.

    ``grpc_overhead_ratio``: p50 end-to-end latency over gRPC ÷ in-process. Both include the
    model's time, which varies between two runs of one query far more than the boundary costs,
    so ``grpc_overhead_ms_p50`` compares what is left without it: per item, (latency − the
    llama-server's compute time) over gRPC minus the same in-process, the median over items;
    ``grpc_overhead_share_p50`` is that ÷ the p50 latency over gRPC.
    """
    remote = {r.item: r for r in runs if r.system == RAGLOOP and r.answered}
    local = {r.item: r for r in runs if r.system == RAGLOOP_INPROCESS and r.answered}
    paired = [(remote[item], local[item]) for item in remote if item in local]
    if not paired:
        return {}
    remote_p50 = percentile([r.seconds for r, _ in paired], 50)
    local_p50 = percentile([r.seconds for _, r in paired], 50)
    overhead = statistics.median(
        grpc.non_model_seconds - inproc.non_model_seconds for grpc, inproc in paired
    )
    same_path = sum(1 for grpc, inproc in paired if _path(grpc) == _path(inproc))
    return {
        "grpc_overhead_ratio": _ratio(remote_p50, local_p50),
        "grpc_overhead_ms_p50": round(overhead * 1000, 1),
        "grpc_overhead_share_p50": _ratio(overhead, remote_p50),
        "grpc_overhead_pairs": len(paired),
        "grpc_overhead_same_path_pairs": same_path,
    }


def _path(run: QueryRun) -> list[str]:
    return run.answered.decision_path if run.answered else []


@dataclass(frozen=True)
class Throughput:
    system: str
    clients: int
    completed: int
    failed: int
    seconds: float

    @property
    def per_minute(self) -> float:
        return 60 * self.completed / self.seconds if self.seconds else 0.0


def throughput_figures(results: Sequence[Throughput]) -> Figures:
    figures: Figures = {}
    for result in results:
        key = f"{result.system}_c{result.clients}"
        figures[f"throughput_per_minute_{key}"] = round(result.per_minute, 3)
        figures[f"throughput_failed_{key}"] = result.failed
    return figures


@dataclass(frozen=True)
class Target:
    key: str  # in the results: True, False, or None when not measured
    description: str
    met: Callable[[Figures], bool | None]


TARGETS = (
    Target(
        "target_prompt_tokens",
        "prompt tokens ≤ 0.5× the baseline's",
        lambda f: _at_most(f.get("prompt_token_ratio_vs_baseline"), 0.5),
    ),
    Target(
        "target_evidence_precision",
        "evidence precision ≥ the baseline's",
        lambda f: _at_least(
            f.get(f"evidence_precision_{RAGLOOP}"), f.get(f"evidence_precision_{BASELINE}")
        ),
    ),
    Target(
        "target_evidence_recall",
        "evidence recall ≥ the baseline's − 0.02",
        lambda f: _at_least(
            f.get(f"evidence_recall_{RAGLOOP}"), _minus(f.get(f"evidence_recall_{BASELINE}"), 0.02)
        ),
    ),
    Target(
        "target_p50_latency",
        "p50 latency ≤ 0.7× the baseline's",
        lambda f: _at_most(f.get("p50_latency_ratio_vs_baseline"), 0.7),
    ),
    Target(
        "target_grpc_overhead",
        "gRPC boundary ≤ 5% of p50 latency",
        lambda f: _at_most(f.get("grpc_overhead_share_p50"), 0.05),
    ),
)


def _at_most(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def _at_least(value: float | None, limit: float | None) -> bool | None:
    return None if value is None or limit is None else value >= limit


def _minus(value: float | None, amount: float) -> float | None:
    return None if value is None else value - amount


def target_figures(figures: Figures) -> Figures:
    return {target.key: target.met(figures) for target in TARGETS}


# Figures an invocation measures outside the runs file (idle CPU, throughput) and what describes
# it; everything else in compare.json is computed from the runs file and the targets.
_INVOCATION_KEYS = frozenset(
    {"date", "machine", "model", "seconds_last_invocation", "command", "settings_changed"}
)
_INVOCATION_PREFIXES = ("idle_cpu_share_", "throughput_")


def merged_results(previous: Figures, invocation: Figures, from_runs: Figures) -> Figures:
    """compare.json after an invocation: the previous file's invocation figures that this one did
    not measure, this invocation's, the runs file's figures and the targets. Run figures of the
    previous file are dropped, so a system whose runs left the runs file leaves the results too."""
    kept = {
        key: value
        for key, value in previous.items()
        if key in _INVOCATION_KEYS or key.startswith(_INVOCATION_PREFIXES)
    }
    merged = kept | invocation | from_runs
    return merged | target_figures(merged)
