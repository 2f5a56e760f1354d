"""What tracing costs a query: p50 latency of the same questions through three stacks of the
five real processes, each over its own llama-server with the default chat model and its own
Milvus Lite, asked in turn (one query at a time, the order rotating every round), so that drift
on the machine falls on all three alike:

- ``before``: the services of another checkout (``--before-python``, e.g. main's
  ``.venv/bin/python``), which have no tracing code;
- ``off``: this checkout's services, no OTLP endpoint (tracing off);
- ``on``: this checkout's services exporting every span over OTLP/HTTP to a sink on 127.0.0.1
  that accepts and drops them (the export itself is what is measured, not a backend).

    python -m bench.tracing_overhead --rounds 12 --before-python ../main/.venv/bin/python

Without ``--before-python`` only ``off`` and ``on`` run. Writes bench/results/tracing.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from unittest import mock

import httpx

from bench.common import RESULTS_DIR, ROOT, machine, write_results
from bench.local_http import serving_http
from bench.metrics import percentile
from ragloop.local.launcher import STAGES, Stack, StackConfig
from ragloop.local.model_server import serving_model
from ragloop.local.models import DEFAULT_MODEL, ensure_model

CORPUS = ("docs/storage.md", "docs/architecture.md", "docs/corrective-loop.md")
QUESTIONS = (
    "Which process owns the Milvus Lite data directory?",
    "What does the orchestrator answer on /readyz?",
    "How does a stage learn the request id of a call?",
    "When does the loop rewrite the query?",
)
# Bounded work per query, the same in every arm: one round, three passages; every grade asked
# of the model (no cache), so that a repeated question costs what it cost the first time.
QUERY_OPTIONS = {"top_k": 3, "max_rewrite_attempts": 0}
STACK_ENV = {"RAGLOOP_GRADER_CACHE_SIZE": "0", "RAGLOOP_LOG_LEVEL": "WARNING"}


@dataclass
class Arm:
    name: str
    python: str
    env: dict[str, str]
    seconds: list[float] = field(default_factory=list)
    stack: Stack | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "queries": len(self.seconds),
            "p50_s": round(percentile(self.seconds, 50), 3),
            "p90_s": round(percentile(self.seconds, 90), 3),
            "mean_s": round(sum(self.seconds) / len(self.seconds), 3),
        }


@contextmanager
def span_sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that answers every export with 200 and drops it."""

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    with serving_http(Sink) as url:
        yield url


def start_stack(arm: Arm, work: Path, model_url: str) -> Stack:
    config = StackConfig.on_free_ports(
        work / arm.name,
        metrics_ports=dict.fromkeys(STAGES, 0),
        model_url=model_url,
        extra_env={**STACK_ENV, **arm.env},
        startup_timeout_s=240,
    )
    stack = Stack(config)
    # The launcher starts the services with its own interpreter; an arm may name another
    # checkout's (its services are that checkout's code).
    with mock.patch.object(sys, "executable", arm.python):
        stack.start()
    documents = [{"source": path, "text": (ROOT / path).read_text()} for path in CORPUS]
    response = httpx.post(
        f"{config.base_url}/v1/documents", json={"documents": documents}, timeout=600
    )
    response.raise_for_status()
    return stack


def ask(stack: Stack, question: str) -> float:
    started = time.perf_counter()
    response = httpx.post(
        f"{stack.config.base_url}/v1/query", json={"query": question, **QUERY_OPTIONS}, timeout=600
    )
    response.raise_for_status()
    return time.perf_counter() - started


def run(arms: list[Arm], rounds: int, work: Path) -> None:
    model = ensure_model(DEFAULT_MODEL, ROOT / ".models")
    with ExitStack() as running:
        for arm in arms:  # each its own model server: no arm finds another's prompts cached
            served = running.enter_context(serving_model(model, work / f"{arm.name}-model.log"))
            arm.stack = start_stack(arm, work, served.url)
            running.callback(arm.stack.stop)
        for arm in arms:  # a first query each, not measured: warm caches and connections
            ask(arm.stack, QUESTIONS[0])  # type: ignore[arg-type]
        for number in range(rounds):
            # A new question every round: llama-server reuses the cached prompt of a repeated one,
            # and a round would then cost a fraction of a second.
            question = f"{QUESTIONS[number % len(QUESTIONS)]} (question {number + 1})"
            shift = number % len(arms)
            for arm in arms[shift:] + arms[:shift]:
                arm.seconds.append(ask(arm.stack, question))  # type: ignore[arg-type]
            print(
                f"round {number + 1}/{rounds}: "
                + ", ".join(f"{a.name} {a.seconds[-1]:.2f} s" for a in arms),
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--before-python", help="the interpreter of a checkout without tracing")
    args = parser.parse_args()
    with span_sink() as sink, tempfile.TemporaryDirectory(prefix="ragloop-tracing-") as tmp:
        arms = [
            Arm("off", sys.executable, {}),
            Arm("on", sys.executable, {"RAGLOOP_OTLP_ENDPOINT": sink}),
        ]
        if args.before_python:
            arms.insert(0, Arm("before", args.before_python, {}))
        run(arms, args.rounds, Path(tmp))
    summaries = {arm.name: arm.summary() for arm in arms}
    off = summaries["off"]["p50_s"]
    print("| arm | queries | p50 s | p90 s | mean s | p50 vs off |")
    print("|---|---|---|---|---|---|")
    for name, summary in summaries.items():
        change = (summary["p50_s"] - off) / off * 100
        print(
            f"| {name} | {summary['queries']} | {summary['p50_s']:.3f} | {summary['p90_s']:.3f} "
            f"| {summary['mean_s']:.3f} | {change:+.1f}% |"
        )
    write_results(
        RESULTS_DIR / "tracing.json",
        {
            "date": date.today().isoformat(),
            "machine": machine(),
            "model": DEFAULT_MODEL.name,
            "rounds": args.rounds,
            "query_options": QUERY_OPTIONS,
            "arms": summaries,
            "seconds": {arm.name: [round(s, 3) for s in arm.seconds] for arm in arms},
        },
    )


if __name__ == "__main__":
    main()
