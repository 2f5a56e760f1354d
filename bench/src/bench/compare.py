"""`python -m bench.compare`: ragloop side by side with a LangGraph corrective RAG (issue 9).

In one run, on one machine, with one Milvus and one model: ragloop's five processes
(REST in, gRPC between them), the same loop in-process, and the LangGraph baseline
(``bench/baseline``) answer the same SciFact claims and PubMedQA questions, one query at a time
and taking turns. Measured per query: latency and its split by node, model calls and tokens
(the systems' counts and the llama-server's own), CPU time of each system's processes, and the
evidence handed to the generator (precision and recall against SciFact's judgments or the
question's own PubMedQA abstract); the PubMedQA decision; then throughput with 1, 2 and 4
concurrent clients on claims not used before.

Prints Markdown tables and merges its figures into bench/results/compare.json. The first run
ingests the corpora (minutes; cached in bench/results/.cache/). Hours in all on two cores: use
``--queries 3 --questions 2 --clients 1,2 --throughput-queries 2 --corpus-limit 200`` to smoke.

Each query run is appended to the runs file as it ends (``--runs-file``; by default
``NAME-runs.jsonl.xz`` beside ``--output``, a JSON line a run, xz-compressed and compacted into one
xz stream when the invocation ends; the one beside bench/results/compare.json is committed with it,
so a later change to ragloop re-runs ragloop and keeps the baseline's runs), and the latency
figures are computed from every run in that file: parts can run in separate invocations
(``--parts scifact,overhead`` today, ``--parts pubmedqa,overhead`` tomorrow), and an interrupted
invocation goes on where it stopped when started again. ``--fresh`` starts over; ``--forget
ragloop`` drops ragloop's runs of the ``--parts`` run, to make them again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import date
from pathlib import Path
from typing import Any

import httpx

from bench.baseline import BaselineRag, openai_chat
from bench.common import (
    RESULTS_DIR,
    add_data_arguments,
    add_runs_file_arguments,
    add_sampling_arguments,
    cache_dir,
    check_parts,
    invocation,
    machine,
    prepare_runs_file,
    read_results,
    runs_kept_on_interrupt,
    start_long_run,
    write_results,
)
from bench.comparison import profiling, report
from bench.comparison.cpu import idle_cpu_shares
from bench.comparison.runs import XZ_SUFFIX, Meter, RunKey, RunsFile, System
from bench.comparison.services import RunningStack, ragloop_stack, shared_milvus
from bench.comparison.summary import (
    Throughput,
    comparison_figures,
    merged_results,
    throughput_figures,
)
from bench.comparison.systems import (
    SYSTEMS,
    LangGraphBaseline,
    RagloopInProcess,
    RagloopOverHttp,
)
from bench.comparison.workload import (
    PUBMEDQA,
    SCIFACT,
    WorkItem,
    limited_corpus,
    pubmedqa_items,
    scifact_items,
)
from bench.model_server import llama_server
from bench.pubmedqa import choose_questions, load_pubmedqa
from bench.scifact import load_scifact
from bench.stages import ModelEndpoint, Tally, model_stages
from ragloop.core.domain import SourceDocument
from ragloop.core.settings import ChatModelSettings
from ragloop.core.stages import LoopStages
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.loop.corrective import CorrectiveLoop
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

PARTS = ("scifact", "pubmedqa", "overhead", "throughput")
WARM_UP_QUESTION = "What do these documents say about study design?"
IDLE_SECONDS = 10.0  # to measure each process's CPU use while nothing runs


def rotated(systems: Sequence[System], turn: int) -> list[System]:
    """Each query starts with another system, so none always follows the same one (whose last
    prompt is in the model server's cache)."""
    start = turn % len(systems)
    return [*systems[start:], *systems[:start]]


async def latency_runs(
    meter: Meter,
    systems: Sequence[System],
    items: list[WorkItem],
    runs_file: RunsFile,
    provenance: Mapping[str, str],
) -> None:
    """Every item through every system, one at a time, each run appended to ``runs_file``; the
    runs the file already holds are not made again."""
    done = {run.key for run in runs_file.runs()}
    pending = sum(1 for item in items for system in systems if _key(system, item) not in done)
    print(f"  {pending} runs to make ({len(done)} already in {runs_file.path})", flush=True)
    started = time.perf_counter()
    for turn, item in enumerate(items):
        for system in rotated(systems, turn):
            if _key(system, item) in done:
                continue
            run = await meter.measure(system, item)
            runs_file.append(run, provenance)
            usage = run.answered.usage if run.answered else None
            print(
                f"  {item.dataset} {turn + 1}/{len(items)} {system.name}: {run.seconds:.1f}s, "
                f"{usage.calls if usage else '-'} calls, {usage.prompt_tokens if usage else '-'} "
                f"prompt tokens, precision {run.precision}, recall {run.recall:.2f}"
                + (f", decision {run.decision} (expected {item.decision})" if item.decision else "")
                + (f", FAILED {run.error}" if run.error else "")
                + f" [{time.perf_counter() - started:.0f}s so far]",
                flush=True,
            )


def _key(system: System, item: WorkItem) -> RunKey:
    return (system.name, item.dataset, item.id)


async def throughput(system: System, items: list[WorkItem], clients: int) -> Throughput:
    """``clients`` workers answer ``items`` between them as fast as they can."""
    queue: asyncio.Queue[WorkItem] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    completed = failed = 0

    async def worker() -> None:
        nonlocal completed, failed
        while not queue.empty():
            item = queue.get_nowait()
            try:
                await system.answer(item)
                completed += 1
            except Exception as exc:
                failed += 1
                print(f"    {system.name} failed on {item.id}: {exc}", flush=True)

    clock = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    result = Throughput(system.name, clients, completed, failed, time.perf_counter() - clock)
    print(f"  throughput {system.name}, {clients} clients: {result.per_minute:.2f}/min", flush=True)
    return result


async def warm_up(systems: Sequence[System], collection: str) -> None:
    """One untimed query each: model weights paged in, connections open, lazy imports done."""
    item = WorkItem(collection, "warm-up", WARM_UP_QUESTION, frozenset())
    for system in systems:
        try:
            await system.answer(item)
        except Exception as exc:
            print(f"  warm-up of {system.name} failed: {exc}", flush=True)


async def throughput_runs(
    systems: Sequence[System], clients: list[int], levels: list[list[WorkItem]]
) -> list[Throughput]:
    """Each system with each number of clients, on that number's own items (none when the
    throughput part is not run)."""
    if not levels:
        return []
    return [
        await throughput(system, level, count)
        for count, level in zip(clients, levels, strict=True)
        for system in systems
    ]


async def measure(
    args: argparse.Namespace,
    milvus_uri: str,
    stack: RunningStack,
    inprocess_model_url: str,
    items: list[WorkItem],
    throughput_items: list[list[WorkItem]],
    runs_file: RunsFile,
) -> dict[str, Any]:
    """Runs the latency items not yet in ``runs_file``, then the throughput levels; returns the
    figures of this invocation alone (idle CPU, throughput). The in-process loop calls the
    llama-server at ``inprocess_model_url``, the other systems the stack's."""
    every_item = [*items, *(item for level in throughput_items for item in level)]
    collections = sorted({item.dataset for item in every_item})
    policies = {name: server_policy(OrchestratorSettings(), name) for name in collections}
    retriever = build_retriever(RetrieverSettings(milvus_uri=milvus_uri))
    tally = Tally()
    stages = model_stages(ModelEndpoint(inprocess_model_url, QWEN_CODER_1_5B.name), tally)
    chat = openai_chat(
        f"{stack.model_url}/v1", QWEN_CODER_1_5B.name, timeout_s=ChatModelSettings().model_timeout_s
    )
    try:
        async with httpx.AsyncClient() as client:
            ragloop = RagloopOverHttp(client, stack.base_url, policies, stack.pids, stack.model_url)
            baseline = LangGraphBaseline(
                {name: BaselineRag(retriever, chat, p) for name, p in policies.items()},
                stack.model_url,
            )
            systems: list[System] = [ragloop, baseline]
            if "overhead" in args.parts:
                loop = CorrectiveLoop(
                    LoopStages(retriever, stages.grader, stages.rewriter, stages.generator)
                )
                systems.append(RagloopInProcess(loop, policies, inprocess_model_url))
            if args.warm_up:
                await warm_up(systems, collections[0])
            pids = {**stack.pids, "bench": os.getpid()}
            idle = await idle_cpu_shares(pids, IDLE_SECONDS)
            profile_dir = Path(args.profile) if args.profile else None
            with profiling.profiled(pids, profile_dir) if profile_dir else nullcontext():
                meter = Meter(client)
                await latency_runs(meter, systems, items, runs_file, provenance())
            if profile_dir:
                print("\nWhere the processes spent CPU (py-spy, self time):")
                print(profiling.summary(profile_dir))
            rates = await throughput_runs([ragloop, baseline], args.clients, throughput_items)
    finally:
        retriever.close()
        await stages.aclose()
    idle_figures = {f"idle_cpu_share_{name}": round(share, 4) for name, share in idle.items()}
    return idle_figures | throughput_figures(rates)


def workload(
    args: argparse.Namespace,
) -> tuple[list[WorkItem], list[list[WorkItem]], dict[str, list[SourceDocument]]]:
    """The latency items (SciFact then PubMedQA), the throughput items of each client count, and
    the corpora they search."""
    parts = set(args.parts)
    items: list[WorkItem] = []
    levels: list[list[WorkItem]] = []
    corpora: dict[str, list[SourceDocument]] = {}
    if parts & {"scifact", "throughput"}:
        scifact = load_scifact(Path(args.scifact))
        judged = {doc for docs in scifact.qrels.values() for doc in docs}
        corpora[SCIFACT] = limited_corpus(scifact.corpus, args.corpus_limit, judged)
        if "scifact" in parts:
            items += scifact_items(scifact, args.queries, args.seed)
        if "throughput" in parts:
            per_level = args.throughput_queries
            spare = scifact_items(
                scifact, per_level * len(args.clients), args.seed, skip=args.queries
            )
            levels = [spare[i * per_level : (i + 1) * per_level] for i in range(len(args.clients))]
    if "pubmedqa" in parts:
        corpus, questions = load_pubmedqa(Path(args.pubmedqa))
        chosen = choose_questions(questions, args.questions, args.seed)
        corpora[PUBMEDQA] = limited_corpus(corpus, args.corpus_limit, {q.pubid for q in chosen})
        items += pubmedqa_items(chosen)
    return items, levels, corpora


def changed_settings() -> str:
    """Settings of every ragloop process and of the baseline's model timeout, when changed."""
    return " ".join(
        f"{name}={value}"
        for name, value in sorted(os.environ.items())
        if name.startswith("RAGLOOP_")
    )


def provenance() -> dict[str, str]:
    """What each run is recorded with, so runs of several invocations can be told apart."""
    head = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    )
    return {"commit": head.stdout.strip(), "settings_changed": changed_settings()}


@contextmanager
def inprocess_model_server(args: argparse.Namespace, stack: RunningStack) -> Iterator[str]:
    """The URL of the llama-server the in-process loop calls: a second one, started like the
    stack's, when the in-process loop runs (see ``bench/comparison/systems.py``: a shared server
    would hand one ragloop variant the other's cached prompts)."""
    if "overhead" not in args.parts:
        yield stack.model_url
        return
    with llama_server(QWEN_CODER_1_5B, cache_dir() / "logs") as url:
        print(f"in-process loop's llama-server at {url}", flush=True)
        yield url


def run(args: argparse.Namespace, runs_file: RunsFile) -> dict[str, Any]:
    items, levels, corpora = workload(args)
    clock = time.perf_counter()
    with (
        shared_milvus(corpora) as milvus_uri,
        ragloop_stack(milvus_uri, cache_dir() / "compare-run") as stack,
        inprocess_model_server(args, stack) as inprocess_model_url,
    ):
        print(f"ragloop at {stack.base_url}, llama-server at {stack.model_url}", flush=True)
        figures = asyncio.run(
            measure(args, milvus_uri, stack, inprocess_model_url, items, levels, runs_file)
        )
    figures |= {
        "date": date.today().isoformat(),
        "machine": machine(),
        "model": QWEN_CODER_1_5B.name,
        "seconds_last_invocation": round(time.perf_counter() - clock, 1),
        "command": invocation("bench.compare"),
        "settings_changed": changed_settings(),
    }
    if "throughput" in args.parts:
        figures["throughput_queries_per_level"] = args.throughput_queries
    return figures


def runs_summary(runs_file: RunsFile) -> dict[str, Any]:
    """The latency figures from every run in the runs file, whichever invocation made it."""
    runs = runs_file.runs()
    return comparison_figures(runs) | {
        "scifact_queries": len({r.item.id for r in runs if r.item.dataset == SCIFACT}),
        "pubmedqa_questions": len({r.item.id for r in runs if r.item.dataset == PUBMEDQA}),
        "runs_commits": " ".join(runs_file.commits()),
    }


def runs_file_beside(output: Path) -> Path:
    """The runs a results file was computed from, kept next to it (so a smoke run with its own
    ``--output`` never adds to the committed runs)."""
    return output.with_name(f"{output.stem}-runs.jsonl{XZ_SUFFIX}")


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_data_arguments(parser)
    parser.add_argument("--queries", type=int, default=50, help="SciFact test claims")
    parser.add_argument("--questions", type=int, default=50, help="PubMedQA questions")
    parser.add_argument(
        "--clients", type=_int_list, default=[1, 2, 4], help="concurrent clients (default 1,2,4)"
    )
    parser.add_argument(
        "--throughput-queries",
        type=int,
        default=8,
        help="SciFact claims per client count, each set new to both systems (default 8)",
    )
    add_sampling_arguments(parser, PARTS)
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the untimed first query of each system (smoke runs)",
    )
    parser.add_argument("--profile", default="", help="py-spy every process into this folder")
    parser.add_argument("--output", default=str(RESULTS_DIR / "compare.json"))
    add_runs_file_arguments(parser, SYSTEMS)
    parser.add_argument(
        "--report-only", action="store_true", help="print the tables of --output and stop"
    )
    args = parser.parse_args()
    check_parts(parser, args, PARTS)
    output = Path(args.output)
    if args.report_only:
        print(report.render(read_results(output), args.clients))
        return
    start_long_run()
    runs_file = RunsFile(Path(args.runs_file) if args.runs_file else runs_file_beside(output))
    prepare_runs_file(runs_file, args)
    figures: dict[str, Any] = {}
    with runs_kept_on_interrupt(runs_file):
        if not args.summarise:
            figures = run(args, runs_file)
    merged = merged_results(read_results(output), figures, runs_summary(runs_file))
    write_results(output, merged)
    print("\n" + report.render(merged, args.clients))
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
