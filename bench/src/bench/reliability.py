"""Reliability benchmark: load, memory and the fault tests' counts (``make bench-reliability``).

1. Start the embedded default as ``make run`` does — llama-server with a small local model, the
   four stages and the orchestrator on 127.0.0.1 (free ports), Milvus Lite — and ingest docs/.
2. Load: ``--clients`` clients send queries (questions about docs/, in turn) for
   ``--duration-s``; throughput, p50/p95/p99 of answered queries, errors, queries refused by
   admission control (429), hung requests; every process's resident memory before and after.
3. Retrieval only, ``--retrieval-requests`` each: the REST API has no retrieval-only endpoint
   (every query grades what it retrieves), so (a) Retrieve RPCs straight to the retriever
   process (query embedding + hybrid search in Milvus Lite: the retrieval path itself) and
   (b) GET /v1/collections/ragloop through the orchestrator (its whole REST path — middleware,
   request ids, metrics — and a gRPC call through its stage client to the retriever and Milvus,
   without a model). Memory growth of the retriever over (a) and of the orchestrator over (b),
   from after a warm-up to the end, must stay below ``--memory-bound-mib``.
4. Faults: the reliability tests (``pytest -m reliability tests/reliability``), whose lost and
   duplicated chunks and hung requests are collected through ``RAGLOOP_RELIABILITY_OUT``.

Figures are merged into bench/results/reliability.json (other keys are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path
from typing import Any

import grpc
import httpx

from bench.common import RESULTS_DIR, ROOT, machine, read_results, write_results
from bench.loadgen import Load
from bench.metrics import percentile
from ragloop.local.launcher import STAGES, Stack, StackConfig
from ragloop.local.models import MODELS, QWEN_CODER_0_5B
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc

RESULTS = RESULTS_DIR / "reliability.json"
MIB = 1024 * 1024
QUESTIONS = [
    "Which process owns the Milvus Lite data directory, and why?",
    "How does ragloop decide to rewrite a query?",
    "What does the grader return for each passage?",
    "How are large uploads sent to the retriever?",
    "What happens when a stage cannot be reached?",
    "Which metrics does the orchestrator export?",
    "How long may one query take by default?",
    "What is hybrid retrieval in ragloop?",
    "How are tenants kept apart?",
    "What does the generator do with citations?",
]
DESCRIBE_PATH = "/v1/collections/ragloop"


def start_stack(args: argparse.Namespace, work: Path) -> Stack:
    config = StackConfig.on_free_ports(
        work,
        models_dir=Path(os.environ.get("RAGLOOP_MODELS_DIR", ROOT / ".models")),
        metrics_ports=dict.fromkeys(STAGES, 0),
        chat_model=MODELS[args.model],
        extra_env={"RAGLOOP_LOG_LEVEL": "WARNING"},
    )
    stack = Stack(config)
    stack.start()
    return stack


def rss_mib(stack: Stack) -> dict[str, float]:
    return {
        child.name: round((child.rss_bytes() or 0) / MIB, 1)
        for child in stack.children
        if child.running
    }


def latency_figures(prefix: str, seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {}
    milliseconds = [s * 1000 for s in seconds]
    return {f"{prefix}_p{q}_ms": round(percentile(milliseconds, q), 1) for q in (50, 95, 99)}


# --- load --------------------------------------------------------------------------------------


def add_load_arguments(parser: argparse.ArgumentParser, *, duration_s: float) -> None:
    """The options of :func:`load_phase`."""
    parser.add_argument("--clients", type=int, default=4, help="load clients (4)")
    parser.add_argument(
        "--duration-s", type=float, default=duration_s, help=f"load duration ({duration_s:g})"
    )
    parser.add_argument("--budget-s", type=float, default=300, help="each query's budget (300)")


def load_phase(
    stack: Stack,
    clients: int,
    duration_s: float,
    budget_s: float,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``clients`` clients query without pause for ``duration_s`` (the queries in flight then
    are waited for); ``options`` are added to every query's body."""
    bodies = [{"query": q, "time_budget_s": budget_s, **(options or {})} for q in QUESTIONS]
    started = time.monotonic()
    with Load(stack.config.base_url, bodies, clients=clients) as load:
        time.sleep(duration_s)
    elapsed = time.monotonic() - started  # the requests in flight at the end included
    results = load.ended()
    answered = [e for e in results if e.status == 200]
    refused = [e for e in results if e.status == 429]
    errors = [e for e in results if e.status not in (200, 429)]
    print(f"load: {len(results)} requests, {len(answered)} answered, {len(errors)} errors")
    for error in errors[:5]:
        print(f"  {error.status} {error.stage} {error.message[:160]}")
    return {
        "load_clients": clients,
        "load_duration_s": round(elapsed, 1),
        "load_requests": len(results),
        "load_answered": len(answered),
        "load_throughput_qpm": round(len(answered) / elapsed * 60, 2),
        "load_throughput_qps": round(len(answered) / elapsed, 4),
        "load_errors": len(errors),
        "load_refused_429": len(refused),
        "load_hung": sum(e.hung for e in results),
        **latency_figures("load", [e.seconds for e in answered]),
    }


# --- retrieval only ----------------------------------------------------------------------------


Timed = tuple[list[float], int, float]  # each call's seconds, failed calls, wall-clock seconds


async def run_requests(
    count: int, concurrency: int, call: Callable[[int], Awaitable[bool]]
) -> Timed:
    """``count`` calls, ``concurrency`` at a time."""
    numbers = iter(range(count))
    seconds: list[float] = []
    failures = 0
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal failures
        for number in numbers:
            started = time.perf_counter()
            ok = await call(number)
            seconds.append(time.perf_counter() - started)
            failures += not ok

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return seconds, failures, time.perf_counter() - started


async def retrieve_rpcs(stack: Stack, count: int, concurrency: int) -> Timed:
    async with grpc.aio.insecure_channel(stack.stage_address("retriever")) as channel:
        stub = retriever_pb2_grpc.RetrieverServiceStub(channel)

        async def call(number: int) -> bool:
            request = retriever_pb2.RetrieveRequest(
                query=QUESTIONS[number % len(QUESTIONS)], top_k=5, similarity_threshold=0.3
            )
            try:
                await stub.Retrieve(request, timeout=60)
            except grpc.aio.AioRpcError:
                return False
            return True

        return await run_requests(count, concurrency, call)


async def describe_requests(stack: Stack, count: int, concurrency: int) -> Timed:
    async with httpx.AsyncClient(base_url=stack.config.base_url, timeout=60) as client:

        async def call(number: int) -> bool:
            try:
                return (await client.get(DESCRIBE_PATH)).status_code == 200
            except httpx.HTTPError:
                return False

        return await run_requests(count, concurrency, call)


def memory_phase(
    stack: Stack,
    name: str,
    process: str,
    run: Callable[[int], Awaitable[Timed]],
    requests: int,
) -> dict[str, Any]:
    """Warm up, then ``requests`` calls; the growth of ``process``'s memory over them."""
    asyncio.run(run(max(50, requests // 20)))
    before = stack.child(process).rss_bytes() or 0
    seconds, failures, wall_s = asyncio.run(run(requests))
    after = stack.child(process).rss_bytes() or 0
    growth = round((after - before) / MIB, 1)
    print(f"{name}: {requests} requests, {failures} failed; {process} memory {growth:+} MiB")
    return {
        f"{name}_requests": requests,
        f"{name}_errors": failures,
        f"{name}_per_s": round(requests / wall_s, 1),
        f"{process}_rss_growth_mib_{name}": growth,
        **latency_figures(name, seconds),
    }


# --- faults ------------------------------------------------------------------------------------


def fault_tests() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "faults.json"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-m", "reliability", "tests/reliability"]
        env = {**os.environ, "RAGLOOP_RELIABILITY_OUT": str(out)}
        completed = subprocess.run(command, cwd=ROOT, env=env, check=False)
        counts = json.loads(out.read_text()) if out.exists() else {}
    return {**counts, "fault_tests_passed": completed.returncode == 0}


# --- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reliability",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_load_arguments(parser, duration_s=300)
    parser.add_argument("--retrieval-requests", type=int, default=10_000)
    parser.add_argument("--retrieval-clients", type=int, default=4)
    parser.add_argument("--memory-bound-mib", type=float, default=50.0)
    parser.add_argument("--model", choices=sorted(MODELS), default=QWEN_CODER_0_5B.name)
    parser.add_argument("--no-faults", action="store_true", help="skip the fault tests")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (merged into)")
    args = parser.parse_args(argv)

    figures: dict[str, Any] = {"load_model": args.model}
    with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as work:
        stack = start_stack(args, Path(work))
        try:
            chunks = stack.ingest_directory(ROOT / "docs")
            print(f"stack ready; {chunks} chunks of docs/ ingested")
            before = rss_mib(stack)
            figures |= load_phase(stack, args.clients, args.duration_s, args.budget_s)
            after = rss_mib(stack)
            figures |= {f"rss_mib_before_load_{name}": mib for name, mib in before.items()}
            figures |= {f"rss_mib_after_load_{name}": mib for name, mib in after.items()}
            figures |= memory_phase(
                stack,
                "retrieve",
                "retriever",
                lambda n: retrieve_rpcs(stack, n, args.retrieval_clients),
                args.retrieval_requests,
            )
            figures |= memory_phase(
                stack,
                "describe",
                "orchestrator",
                lambda n: describe_requests(stack, n, args.retrieval_clients),
                args.retrieval_requests,
            )
        finally:
            stack.stop()
    growth = [figures["retriever_rss_growth_mib_retrieve"]]
    growth.append(figures["orchestrator_rss_growth_mib_describe"])
    figures["memory_bound_mib"] = args.memory_bound_mib
    figures["memory_within_bound"] = max(growth) < args.memory_bound_mib
    if not args.no_faults:
        figures |= fault_tests()
    figures |= {"date": date.today().isoformat(), "machine": machine()}
    figures.setdefault("load_p99_ms", None)  # no query was answered
    print(json.dumps(figures, indent=2, sort_keys=True))
    write_results(args.out, read_results(args.out) | figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
