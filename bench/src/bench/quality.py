"""`python -m bench.quality`: answer-level accuracy of four systems on the same questions, model
and Milvus — ragloop (the five processes over REST), ragloop single-shot (``max_rewrite_attempts``
0), plain RAG (the retriever's ``top_k`` passages to ragloop's generator, nothing graded) and the
LangGraph corrective RAG of ``bench/baseline``.

SQuAD 2.0 (answerable questions: a gold answer in the answer; unanswerable ones: a refusal),
two-hop questions over the same paragraphs (``bench/data/multihop.json``: a gold answer in the
answer) and PubMedQA (the answer's leading yes/no/maybe), on a split chosen so that tuning never
sees the reported questions: ``--split dev`` (SQuAD articles 1-4, PubMedQA outside the official
test split) for tuning, ``--split report`` (articles 5-12, the official test split) for the figures.

Each run (system, data set, question) is appended to the runs file as it ends; an invocation
makes only the runs the file lacks (or that failed), so it can be stopped (Ctrl-C, ``kill``) and
started again, and runs of several sessions combine. The figures are computed from every run in
the file and merged into ``--output``. The runs file is ``NAME-runs.jsonl.xz`` beside ``--output``
(a JSON line a run, xz-compressed; compacted into one xz stream when the invocation ends).
``--fresh`` starts over; ``--forget SYSTEM`` drops one system's runs (of the ``--parts`` run), to
make them again, ``--forget-question ID`` only those of question ID; ``--summarise`` only
recomputes the figures; ``--report-only`` prints the tables of ``--output``.
A smoke run:
``--squad 4 --multihop 2 --pubmedqa 2 --corpus-limit 40 --output /tmp/quality-smoke/quality.json``.

Every system uses the local Qwen2.5-Coder-1.5B on a llama-server the benchmark starts, or, with
``--model-url URL --model-name NAME``, a llama-server already running another model (a larger GGUF
on a machine with a GPU, say); each run records the model's name, and a runs file holds one model's
runs only.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

import httpx

from bench.answers import report
from bench.answers.items import (
    COLLECTIONS,
    DATASETS,
    MULTIHOP,
    SPLITS,
    SQUAD2,
    Workload,
    workload,
)
from bench.answers.multihop import MULTIHOP_ITEMS
from bench.answers.runs import QualityRun, QualityRunsFile, pending
from bench.answers.summary import quality_figures
from bench.answers.systems import (
    BASELINE,
    PLAIN,
    RAGLOOP,
    SINGLE,
    SYSTEMS,
    Baseline,
    PlainRag,
    RagloopRest,
)
from bench.baseline import BaselineRag, openai_chat
from bench.common import (
    RESULTS_DIR,
    SHARED_DATA,
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
from bench.compare import changed_settings, provenance, runs_file_beside, warm_up
from bench.comparison.llama_metrics import read_counts
from bench.comparison.runs import Meter, System
from bench.comparison.services import ChatServer, RunningStack, ragloop_stack, shared_milvus
from bench.comparison.systems import LangGraphBaseline
from bench.comparison.workload import PUBMEDQA
from bench.stages import ModelEndpoint
from ragloop.core.settings import ChatModelSettings
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings


def build_systems(
    names: list[str],
    client: httpx.AsyncClient,
    stack: RunningStack,
    milvus_uri: str,
    datasets: list[str],
    model: str,
) -> tuple[list[System], Any, Any]:
    """The named systems, in ``SYSTEMS``' order, with the retriever and the plain generator's
    model to close afterwards."""
    policies = {
        dataset: server_policy(OrchestratorSettings(), COLLECTIONS[dataset]) for dataset in datasets
    }
    retriever = build_retriever(RetrieverSettings(milvus_uri=milvus_uri))
    endpoint = ModelEndpoint(stack.model_url, model)
    generator_settings: GeneratorSettings = endpoint.settings(GeneratorSettings)
    generator_model = generator_settings.make_chat_model()
    chat = openai_chat(
        f"{stack.model_url}/v1", model, timeout_s=ChatModelSettings().model_timeout_s
    )
    rest = (client, stack.base_url, policies, stack.pids, stack.model_url)
    every: dict[str, System] = {
        BASELINE: Baseline(
            LangGraphBaseline(
                {name: BaselineRag(retriever, chat, p) for name, p in policies.items()},
                stack.model_url,
            )
        ),
        RAGLOOP: RagloopRest(*rest),
        SINGLE: RagloopRest(*rest, name=SINGLE, overrides={"max_rewrite_attempts": 0}),
        PLAIN: PlainRag(
            retriever,
            build_generator(generator_settings, generator_model),
            policies,
            stack.model_url,
        ),
    }
    return [every[name] for name in SYSTEMS if name in names], retriever, generator_model


def progress(done: int, total: int, run: QualityRun, started: float) -> str:
    answer = " ".join(run.answered.answer.split())[:80] if run.answered else ""
    verdict = "FAILED " + run.error if run.error else ("right" if run.correct else "wrong")
    return (
        f"  {done}/{total} {run.item.dataset} {run.item.id} {run.system}: {verdict}, "
        f"{run.seconds:.1f}s, {run.server.prompt_tokens:.0f} prompt tokens evaluated "
        f"[{time.perf_counter() - started:.0f}s so far] {answer!r}"
    )


async def measure(
    args: argparse.Namespace,
    milvus_uri: str,
    stack: RunningStack,
    load: Workload,
    runs_file: QualityRunsFile,
    record_with: Mapping[str, str],
) -> None:
    datasets = list(dict.fromkeys(item.dataset for item in load.items))
    async with httpx.AsyncClient() as client:
        systems, retriever, generator_model = build_systems(
            args.systems, client, stack, milvus_uri, datasets, args.model_name
        )
        try:
            by_name = {system.name: system for system in systems}
            todo = pending(load.items, [s.name for s in systems], runs_file.made())
            if args.warm_up:
                await warm_up(systems, datasets[0])
            meter, started = Meter(client), time.perf_counter()
            for done, (item, name) in enumerate(todo, start=1):
                run = QualityRun.of(await meter.measure(by_name[name], item))
                runs_file.append(run, record_with)
                print(progress(done, len(todo), run, started), flush=True)
        finally:
            retriever.close()
            await generator_model.aclose()


def run(args: argparse.Namespace, runs_file: QualityRunsFile) -> dict[str, Any]:
    """Makes the runs the file lacks; returns what describes this invocation."""
    clock = time.perf_counter()
    counts = {SQUAD2: args.squad, MULTIHOP: args.multihop, PUBMEDQA: args.pubmedqa}
    paths = {
        SQUAD2: Path(args.squad2_data),
        MULTIHOP: Path(args.multihop_data),
        PUBMEDQA: Path(args.pubmedqa_data),
    }
    load = workload(args.parts, args.split, args.seed, counts, paths, args.corpus_limit)
    todo = pending(load.items, args.systems, runs_file.made())
    print(
        f"{len(todo)} runs to make of {len(load.items)} questions × {len(args.systems)} systems "
        f"(the others are in {runs_file.path})"
    )
    if todo:
        model = chat_server(args)
        if model is not None:
            check_chat_server(model)
        recorded = provenance() | {"model": args.model_name}
        with (
            shared_milvus(load.corpora) as milvus_uri,
            ragloop_stack(milvus_uri, cache_dir() / "quality-run", model) as stack,
        ):
            print(f"ragloop at {stack.base_url}, llama-server at {stack.model_url}", flush=True)
            asyncio.run(measure(args, milvus_uri, stack, load, runs_file, recorded))
    return {
        "date": date.today().isoformat(),
        "machine": machine(),
        "command": invocation("bench.quality"),
        "settings_changed": changed_settings(),
        "seconds_last_invocation": round(time.perf_counter() - clock, 1),
    }


def default_output(split: str, model: str = QWEN_CODER_1_5B.name) -> Path:
    """quality.json for the report split; quality-dev.json for tuning, never mixed with it;
    another model's figures (and runs, beside them) under a name of its own."""
    name = "quality" if split == "report" else f"quality-{split}"
    if model != QWEN_CODER_1_5B.name:
        name += "-" + re.sub(r"[^a-z0-9.]+", "-", model.lower()).strip("-")
    return RESULTS_DIR / f"{name}.json"


def _names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=SPLITS, default="report", help="default: report")
    parser.add_argument(
        "--squad", type=int, default=200, help="SQuAD 2.0 questions, half answerable"
    )
    parser.add_argument(
        "--multihop", type=int, default=0, help="two-hop questions (default 0: all of the split)"
    )
    parser.add_argument("--pubmedqa", type=int, default=50, help="PubMedQA questions")
    parser.add_argument(
        "--systems",
        type=_names,
        default=list(SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all)",
    )
    add_sampling_arguments(parser, DATASETS)
    parser.add_argument(
        "--squad2-data", default=str(SHARED_DATA / "squad2" / "squad2-dev-subset.json")
    )
    parser.add_argument("--multihop-data", default=str(MULTIHOP_ITEMS))
    parser.add_argument(
        "--pubmedqa-data",
        default=str(SHARED_DATA / "pubmedqa" / "ori_pqal.json"),
        help="PQA-L file; test_ground_truth.json beside it names the official test split",
    )
    parser.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false", help="skip the untimed questions"
    )
    parser.add_argument(
        "--model-url",
        default="",
        help="a running llama-server (http://HOST:PORT, started with --metrics) that every "
        "system uses instead of the local model (default: start one with the local model)",
    )
    parser.add_argument(
        "--model-name", default="", help="the name --model-url's model is recorded by"
    )
    parser.add_argument(
        "--output",
        default="",
        help="default: bench/results/quality.json (quality-dev.json for --split dev)",
    )
    add_runs_file_arguments(parser, SYSTEMS)
    parser.add_argument(
        "--report-only", action="store_true", help="print the tables of --output and stop"
    )
    args = parser.parse_args(argv)
    check_parts(parser, args, DATASETS)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if bool(args.model_url) != bool(args.model_name):
        parser.error(
            "--model-url and --model-name go together: a model server, and the name "
            "its runs are recorded by"
        )
    args.model_url = args.model_url.rstrip("/").removesuffix("/v1")
    args.model_name = args.model_name or QWEN_CODER_1_5B.name
    return args


def chat_server(args: argparse.Namespace) -> ChatServer | None:
    """The running model server ``--model-url`` names (None: the benchmark starts the local one)."""
    return ChatServer(args.model_url, args.model_name) if args.model_url else None


def check_one_model(recorded: list[str], model: str) -> None:
    """Ends the benchmark when the runs file holds another model's runs: figures of two models
    in one file would mean neither."""
    others = [name for name in recorded if name != model]
    if others:
        raise SystemExit(
            f"the runs file holds runs of {', '.join(others)}, not {model}: give this model "
            "its own --runs-file and --output"
        )


def check_chat_server(model: ChatServer) -> None:
    """Ends the benchmark at once, saying why, when ``--model-url`` is not a llama-server whose
    counters can be read (every run reads them before and after)."""

    async def read() -> None:
        async with httpx.AsyncClient() as client:
            await read_counts(client, model.url)

    try:
        asyncio.run(read())
    except httpx.HTTPError as exc:
        raise SystemExit(
            f"cannot read the counters of the model server at {model.url}/metrics ({exc}): "
            "--model-url must be a running llama-server started with --metrics"
        ) from exc


def grader_figures(models_results: Path) -> dict[str, Any]:
    """The grader's ROC AUC on SciFact and SQuAD 2.0 pairs, as ``make bench-models`` last measured
    them (its ``accuracy`` and ``squad2`` parts), so that quality.json holds them beside the
    answers; absent until measured."""
    wanted = ("grader_roc_auc_scifact", "grader_roc_auc_squad2", "grader_f1_squad2")
    measured = read_results(models_results)
    return {key: measured[key] for key in wanted if measured.get(key) is not None}


def main() -> None:
    args = parse_args()
    model = args.model_name
    output = Path(args.output) if args.output else default_output(args.split, model)
    if args.report_only:
        print(report.render(read_results(output)))
        return
    start_long_run()
    runs_file = QualityRunsFile(
        Path(args.runs_file) if args.runs_file else runs_file_beside(output)
    )
    prepare_runs_file(runs_file, args)
    if not args.summarise:
        check_one_model(runs_file.recorded("model", QWEN_CODER_1_5B.name), model)
    invocation: dict[str, Any] = {}
    with runs_kept_on_interrupt(runs_file):
        if not args.summarise:
            invocation = run(args, runs_file)
    figures = (
        read_results(output)
        | invocation
        | quality_figures(runs_file.runs())
        | (grader_figures(RESULTS_DIR / "models.json") if model == QWEN_CODER_1_5B.name else {})
    )
    figures["runs_commits"] = " ".join(runs_file.commits())
    figures["model"] = " ".join(runs_file.recorded("model", QWEN_CODER_1_5B.name))
    write_results(output, figures)
    print("\n" + report.render(figures))
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
