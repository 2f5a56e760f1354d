"""Throughput with one and with two grader replicas in front of two llama-servers
(``make bench-balancing``).

For each grader count the launcher starts the stack on free loopback ports as ``make run
--model-servers 2 --replicas grader=N`` does: two llama-servers sharing the model threads (one
each on two cores), the grader's replica i calling server i mod 2, one replica of every other
stage (on the first server). Three docs/ pages are ingested and ``--clients`` clients query
without pause for ``--duration-s``; answered queries per minute, latency, and the grader calls
each replica served (its own ``grpc_server_handled_total``) are recorded. Answers are cut to 48
tokens and the grade cache is off, so grading is most of a query's model time.

Figures are merged into bench/results/balancing.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, ROOT, machine, read_results, write_results
from bench.reliability import add_load_arguments, load_phase
from ragloop.local.launcher import Stack, StackConfig, process_name
from ragloop.local.models import DEFAULT_MODEL, MODELS
from ragloop.local.processes import free_port

RESULTS = RESULTS_DIR / "balancing.json"
MODEL_SERVERS = 2
CORPUS = ("docs/architecture.md", "docs/reliability.md", "docs/storage.md")
STACK_ENV = {
    "RAGLOOP_LOG_LEVEL": "WARNING",
    "RAGLOOP_GRADER_CACHE_SIZE": "0",  # the questions repeat: every grade reaches a model
    "RAGLOOP_GENERATOR_ANSWER_FORMAT": "text",
    "RAGLOOP_GENERATOR_MAX_TOKENS": "48",
}


def run(args: argparse.Namespace, graders: int, work: Path) -> dict[str, Any]:
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
        before = [stack.served_calls(name)[1] for name in names]
        figures = load_phase(stack, args.clients, args.duration_s, args.budget_s)
        after = [stack.served_calls(name)[1] for name in names]
    finally:
        stack.stop()
    served = [b - a for a, b in zip(before, after, strict=True)]
    figures |= {
        "grader_calls_per_replica": served,
        "grader_calls_per_min": round(sum(served) / figures["load_duration_s"] * 60, 2),
    }
    print(f"{graders} grader replica(s): {json.dumps(figures, sort_keys=True)}", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.balancing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_load_arguments(parser, duration_s=150)
    parser.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL.name)
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (merged into)")
    args = parser.parse_args(argv)

    runs = {}
    for graders in (1, 2):
        with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as work:
            runs[f"graders_{graders}"] = run(args, graders, Path(work))
    one, two = runs["graders_1"]["load_throughput_qpm"], runs["graders_2"]["load_throughput_qpm"]
    figures = {
        **runs,
        "model": args.model,
        "model_servers": MODEL_SERVERS,
        "throughput_ratio_2_to_1": round(two / one, 2) if one else None,
        "date": date.today().isoformat(),
        "machine": machine(),
    }
    print(json.dumps(figures, indent=2, sort_keys=True))
    write_results(args.out, read_results(args.out) | figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
