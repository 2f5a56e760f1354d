"""Throughput with one and with two grader replicas in front of two llama-servers
(``make bench-balancing``).

For each grader count the launcher starts the stack on free loopback ports as ``make run
REPLICAS=grader=N MODEL_SERVERS=2`` does: two llama-servers sharing the model threads (one each
on two cores), the grader's replica i calling server i mod 2, one replica of every other stage
(on the first server). Three docs/ pages are ingested, then ``--clients`` clients query through
the real orchestrator without pause for ``--duration-s`` (the queries in flight then are waited
for). Recorded: answered queries per second, p50/p95 latency, errors, and the grader calls each
replica served (its own ``grpc_server_started_total``). Queries retrieve 3 passages and are not
rewritten, answers are cut to 48 tokens and the grade cache is off, so that every query grades
and a run holds tens of queries (two runs take about 8 minutes on 2 cores).

A table is printed; the figures go flat into bench/results/balancing.json (date, machine, command).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, ROOT, machine, write_results
from bench.reliability import add_load_arguments, load_phase
from ragloop.local.launcher import Stack, StackConfig, process_name
from ragloop.local.models import DEFAULT_MODEL, MODELS
from ragloop.local.processes import free_port

RESULTS = RESULTS_DIR / "balancing.json"
MODEL_SERVERS = 2
GRADER_COUNTS = (1, 2)
CORPUS = ("docs/architecture.md", "docs/reliability.md", "docs/storage.md")
QUERY_OPTIONS = {"top_k": 3, "max_rewrite_attempts": 0}
STACK_ENV = {
    "RAGLOOP_LOG_LEVEL": "WARNING",
    "RAGLOOP_GRADER_CACHE_SIZE": "0",  # the questions repeat: every grade reaches a model
    "RAGLOOP_GENERATOR_ANSWER_FORMAT": "text",
    "RAGLOOP_GENERATOR_MAX_TOKENS": "48",
}


def run(args: argparse.Namespace, graders: int, work: Path) -> dict[str, Any]:
    """One stack with ``graders`` grader replicas under load: its figures, prefixed."""
    names = [process_name("grader", i) for i in range(graders)]
    corpus = work / "corpus"
    for page in CORPUS:
        (corpus / page).parent.mkdir(parents=True, exist_ok=True)
        (corpus / page).write_text((ROOT / page).read_text())
    config = StackConfig.on_free_ports(
        work,
        models_dir=Path(os.environ.get("RAGLOOP_MODELS_DIR", ROOT / ".models")),
        metrics_ports={"retriever": 0, "rewriter": 0, "generator": 0}
        | {name: free_port() for name in names},
        chat_model=MODELS[args.model],
        model_servers=MODEL_SERVERS,
        replicas={"grader": graders},
        extra_env=STACK_ENV,
    )
    stack = Stack(config)
    stack.start()
    try:
        print(f"{graders} grader replica(s): {stack.ingest_directory(corpus)} chunks", flush=True)
        before = [stack.served_calls(name)[0] for name in names]
        load = load_phase(stack, args.clients, args.duration_s, args.budget_s, QUERY_OPTIONS)
        after = [stack.served_calls(name)[0] for name in names]
    finally:
        stack.stop()
    prefix = f"graders_{graders}"
    return {
        f"{prefix}_queries": load["load_answered"],
        f"{prefix}_errors": load["load_errors"] + load["load_refused_429"] + load["load_hung"],
        f"{prefix}_seconds": load["load_duration_s"],
        f"{prefix}_qps": load["load_throughput_qps"],
        f"{prefix}_p50_s": seconds(load.get("load_p50_ms")),
        f"{prefix}_p95_s": seconds(load.get("load_p95_ms")),
        f"{prefix}_grader_calls": [b - a for a, b in zip(before, after, strict=True)],
    }


def seconds(milliseconds: float | None) -> float | None:
    return None if milliseconds is None else round(milliseconds / 1000, 2)


def table(figures: dict[str, Any]) -> str:
    lines = [
        "| grader replicas | queries | errors | seconds | queries/s | p50 s | p95 s "
        "| grader calls per replica |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for graders in GRADER_COUNTS:
        f = {k.removeprefix(f"graders_{graders}_"): v for k, v in figures.items()}
        calls = ", ".join(map(str, f["grader_calls"]))
        lines.append(
            f"| {graders} | {f['queries']} | {f['errors']} | {f['seconds']} | {f['qps']} "
            f"| {f['p50_s']} | {f['p95_s']} | {calls} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.balancing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_load_arguments(parser, duration_s=120)
    parser.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL.name)
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (replaced)")
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)

    figures: dict[str, Any] = {}
    for graders in GRADER_COUNTS:
        with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as work:
            figures |= run(args, graders, Path(work))
    one, two = figures["graders_1_qps"], figures["graders_2_qps"]
    figures |= {
        "date": date.today().isoformat(),
        "machine": machine(),
        "command": shlex.join(["python", "-m", "bench.balancing", *arguments]),
        "model": args.model,
        "model_servers": MODEL_SERVERS,
        "clients": args.clients,
        "load_s": args.duration_s,
        **{f"query_{k}": v for k, v in QUERY_OPTIONS.items()},
        "qps_ratio_2_to_1": round(two / one, 2) if one else None,
    }
    print(table(figures))
    print(f"queries/s with 2 grader replicas / with 1: {figures['qps_ratio_2_to_1']}")
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
