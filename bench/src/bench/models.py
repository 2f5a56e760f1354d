"""`make bench-models`: the model stages measured on public data.

- grader accuracy (precision, recall, F1) on balanced SciFact pairs — judged (claim, abstract)
  pairs and hard negatives — with the default 1.5B model (per document and batched) and the
  0.5B model (per document);
- grading cost per query, per document vs batched, with and without the grade cache, over two
  rounds of the same SciFact queries' top passages;
- PubMedQA through the whole loop: yes/no/maybe accuracy and citation validity;
- malformed model output over all of it.

Starts one llama-server at a time (libs/local), runs the stages in-process, prints Markdown
tables as it goes and writes bench/results/models.json. The SciFact rankings are cached in
bench/results/.cache/ (the first run ingests the 5,183 abstracts, a few minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from bench import report
from bench.answers.squad import SPLIT_ARTICLES, load_squad
from bench.common import (
    RESULTS_DIR,
    SHARED_DATA,
    add_data_arguments,
    add_sampling_arguments,
    cache_dir,
    check_parts,
    machine,
    read_results,
    seeded_prefix,
    write_results,
)
from bench.grader_pairs import group_by_query, select_pairs
from bench.grading import Case, Workload, grader_accuracy, grading_cost, scifact_cases
from bench.metrics import best_threshold
from bench.model_server import llama_server
from bench.pubmedqa import (
    DecisionGenerator,
    Question,
    answer_questions,
    choose_questions,
    load_pubmedqa,
)
from bench.scifact import SciFact, load_scifact
from bench.scifact_rankings import scifact_rankings
from bench.squad_pairs import squad_pairs
from bench.stages import ModelEndpoint, Tally, model_stages
from ragloop.core.domain import Document
from ragloop.core.models import make_embedder
from ragloop.core.stages import LoopStages
from ragloop.grader.stage import GradingMode
from ragloop.local.models import QWEN_CODER_0_5B, QWEN_CODER_1_5B, SplitModel
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.loop.corrective import CorrectiveLoop
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings
from ragloop.retriever.stage import MilvusRetriever

PARTS = ("accuracy", "cost", "pubmedqa", "small", "squad2")
FIRST_ROUND_MODE = "hybrid"  # the retriever's default: what the loop's first round grades
SECOND_ROUND_MODE = "dense"  # stands in for a rewrite's retrieval (see report.COST_DESIGN)
TOP = 5
PUBMEDQA_COLLECTION = "pubmedqa"
INGEST_BATCH = 200


@dataclass
class Bench:
    """What every part adds to: the figures, the time each part took, malformed output."""

    results: dict[str, Any] = field(
        default_factory=lambda: {"date": date.today().isoformat(), "machine": machine()}
    )
    seconds: dict[str, float] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        clock = time.perf_counter()
        yield
        self.seconds[part] = time.perf_counter() - clock

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Malformed output is counted per part, so that runs of single parts add up (see
        ``tally_totals``)."""
        before = self.tally.counts()
        yield
        after = self.tally.counts()
        for counter, total in after.items():
            self.results[f"{counter}_{name}"] = total - before[counter]

    @contextmanager
    def serving(self, model: SplitModel) -> Iterator[ModelEndpoint]:
        """The model's llama-server for the duration (its start-up time is recorded)."""
        clock = time.perf_counter()
        with llama_server(model, cache_dir() / "logs") as url:
            self.seconds[f"server_start_{model.name}"] = time.perf_counter() - clock
            print(f"\n{model.name} served at {url}")
            yield ModelEndpoint(url, model.name)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    bench = Bench()
    parts = set(args.parts)
    scifact = groups = workload = None
    if parts & {"accuracy", "cost", "small"}:
        scifact = limited(load_scifact(Path(args.scifact)), args.corpus_limit)
        with bench.timed("scifact_rankings"):
            rankings = await scifact_rankings(
                scifact, (FIRST_ROUND_MODE, SECOND_ROUND_MODE), top=TOP
            )
        first = rankings[FIRST_ROUND_MODE]
        ranked = {query: ranking.documents for query, ranking in first.items()}
        pairs = select_pairs(scifact.qrels, ranked, args.pairs, args.seed)
        groups = group_by_query(pairs, args.seed)
        bench.results["scifact_grader_pairs"] = len(pairs)
        query_ids = seeded_prefix(scifact.queries, args.queries, args.seed)
        workload = Workload.of(scifact, query_ids, first, rankings[SECOND_ROUND_MODE], TOP)
        bench.results["grading_cost_queries"] = len(query_ids)

    with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as tmp:
        retriever = questions = None
        if "pubmedqa" in parts:
            corpus, all_questions = load_pubmedqa(Path(args.pubmedqa))
            questions = choose_questions(all_questions, args.questions, args.seed)
            retriever = build_retriever(RetrieverSettings(milvus_uri=str(Path(tmp) / "milvus.db")))
            with bench.timed("pubmedqa_ingest"):
                for start in range(0, len(corpus), INGEST_BATCH):
                    batch = corpus[start : start + INGEST_BATCH]
                    await retriever.ingest(batch, collection=PUBMEDQA_COLLECTION)
            print(f"ingested {len(corpus)} PubMedQA abstracts")
        try:
            if parts & {"accuracy", "cost", "pubmedqa", "squad2"}:
                with bench.serving(QWEN_CODER_1_5B) as endpoint:
                    if "accuracy" in parts and scifact and groups:
                        with bench.part("accuracy"):
                            cases = scifact_cases(groups, scifact)
                            await default_model_accuracy(bench, endpoint, cases)
                    if "squad2" in parts:
                        with bench.part("squad2"):
                            await squad_accuracy(bench, endpoint, args)
                    if "cost" in parts and workload:
                        with bench.part("cost"):
                            await grading_costs(bench, endpoint, workload)
                    if retriever is not None and questions:
                        budget_s = args.pubmedqa_minutes * 60
                        with bench.part("pubmedqa"):
                            await pubmedqa(bench, endpoint, retriever, questions, budget_s)
            if "small" in parts and scifact and groups:
                with bench.serving(QWEN_CODER_0_5B) as endpoint, bench.part("small"):
                    await small_model_accuracy(bench, endpoint, scifact_cases(groups, scifact))
        finally:
            if retriever is not None:
                retriever.close()

    tally_totals(bench.results)
    bench.results.update({f"seconds_{part}": round(s, 1) for part, s in bench.seconds.items()})
    report.summary(bench.results, bench.seconds)
    return bench.results


def limited(data: SciFact, corpus_limit: int) -> SciFact:
    """For smoke runs: the first ``corpus_limit`` abstracts plus every judged one."""
    if not corpus_limit:
        return data
    judged = {doc for docs in data.qrels.values() for doc in docs}
    kept = [d for i, d in enumerate(data.corpus) if i < corpus_limit or d.source in judged]
    return SciFact(kept, data.queries, data.qrels)


async def default_model_accuracy(bench: Bench, endpoint: ModelEndpoint, cases: list[Case]) -> None:
    """Every grading mode; the default (scored) mode's figures carry no suffix."""
    runs = {}
    for mode in GradingMode:
        with bench.timed(f"grader_accuracy_{mode}"):
            runs[mode] = await grader_accuracy(endpoint, mode, cases, bench.tally)
    report.accuracy_table({f"{endpoint.model_name}, {mode}": run for mode, run in runs.items()})
    per_document, batched = runs[GradingMode.PER_DOCUMENT], runs[GradingMode.BATCHED]
    bench.results.update(report.accuracy_figures(runs[GradingMode.SCORED], ""))
    bench.results.update(report.accuracy_figures(per_document, "_per_document"))
    bench.results.update(report.accuracy_figures(batched, "_batched"))
    drop = per_document.classification.f1 - batched.classification.f1
    bench.results["grader_f1_drop_batched"] = round(drop, 4)


async def squad_accuracy(bench: Bench, endpoint: ModelEndpoint, args: argparse.Namespace) -> None:
    """The scored grader on SQuAD 2.0 pairs of one split (bench/squad_pairs.py)."""
    squad = load_squad(Path(args.squad2_data))
    settings = RetrieverSettings()
    embedder = make_embedder(settings.embedding_model, ollama_url=settings.ollama_url)
    pairs = squad_pairs(squad, args.split, args.squad_pairs, args.seed, embedder)
    texts = {document.source: document.text for document in squad.corpus}
    cases = [
        (pair.question, [(Document(pair.source, texts[pair.source], pair.source), pair.relevant)])
        for pair in pairs
    ]
    with bench.timed("grader_accuracy_squad2"):
        run = await grader_accuracy(endpoint, GradingMode.SCORED, cases, bench.tally)
    split = f"SQuAD 2.0 {args.split} pairs"
    report.accuracy_table({f"{endpoint.model_name}, {GradingMode.SCORED}": run}, split)
    threshold, f1 = best_threshold(run.scores)
    print(f"best F1 on these pairs: {f1:.3f} at threshold {threshold:.3f}")
    suffix = "" if args.split == "report" else f"_{args.split}"
    bench.results.update(report.accuracy_figures(run, suffix, dataset="squad2"))
    bench.results[f"squad2_grader_pairs{suffix}"] = len(pairs)
    bench.results[f"grader_best_threshold_squad2{suffix}"] = round(threshold, 3)


async def small_model_accuracy(bench: Bench, endpoint: ModelEndpoint, cases: list[Case]) -> None:
    mode = GradingMode.PER_DOCUMENT
    with bench.timed("grader_accuracy_small_model"):
        small = await grader_accuracy(endpoint, mode, cases, bench.tally)
    report.accuracy_table({f"{endpoint.model_name}, {mode}": small})
    bench.results.update(report.accuracy_figures(small, "_small_model"))


async def grading_costs(bench: Bench, endpoint: ModelEndpoint, workload: Workload) -> None:
    with bench.timed("grading_cost"):
        costs = [await grading_cost(endpoint, mode, workload, bench.tally) for mode in GradingMode]
    bench.results.update(report.cost_table(costs, workload))


async def pubmedqa(
    bench: Bench,
    endpoint: ModelEndpoint,
    retriever: MilvusRetriever,
    questions: list[Question],
    budget_s: float,
) -> None:
    stages = model_stages(endpoint, bench.tally)
    generator = DecisionGenerator(stages.generator, bench.tally)
    loop = CorrectiveLoop(LoopStages(retriever, stages.grader, stages.rewriter, generator))
    policy = server_policy(OrchestratorSettings(), PUBMEDQA_COLLECTION)
    try:
        with bench.timed("pubmedqa"):
            outcomes = await answer_questions(loop, policy, questions, budget_s=budget_s)
    finally:
        await stages.aclose()
        bench.tally.add_grader(stages.grader)
    bench.results.update(report.pubmedqa_table(outcomes, len(questions), stages.grader))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_data_arguments(parser)
    parser.add_argument("--pairs", type=int, default=200, help="SciFact grader pairs (balanced)")
    parser.add_argument("--queries", type=int, default=50, help="SciFact queries for the cost")
    parser.add_argument("--questions", type=int, default=100, help="PubMedQA questions")
    parser.add_argument(
        "--pubmedqa-minutes",
        type=float,
        default=40,
        help="start no PubMedQA question after this long; 0: answer them all (default: 40)",
    )
    parser.add_argument(
        "--squad2-data", default=str(SHARED_DATA / "squad2" / "squad2-dev-subset.json")
    )
    parser.add_argument(
        "--squad-pairs", type=int, default=160, help="SQuAD 2.0 grader pairs (half relevant)"
    )
    parser.add_argument(
        "--split",
        choices=sorted(SPLIT_ARTICLES),
        default="report",
        help="SQuAD articles the pairs come from: dev (1-4, to tune on) or report (5-12)",
    )
    add_sampling_arguments(parser, PARTS)
    parser.add_argument("--output", default=str(RESULTS_DIR / "models.json"))
    args = parser.parse_args()
    check_parts(parser, args, PARTS)
    # `kill` stops the run like Ctrl-C: the running llama-server is stopped on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # read while running
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        results = asyncio.run(run(args))
    except KeyboardInterrupt:
        sys.exit("\ninterrupted: nothing written")
    # A figure that could not be computed (no citations at all, say) is null, not NaN.
    results = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in results.items()}
    output = Path(args.output)
    merged = tally_totals(read_results(output) | results)
    write_results(output, merged)
    print(
        f"\nwrote {output}: malformed-output failures over every part measured so far: "
        f"{merged['malformed_output_failures']}"
    )


def tally_totals(results: dict[str, Any]) -> dict[str, Any]:
    """The whole-benchmark counts: the sums of the per-part counts in ``results``."""
    for counter in Tally.COUNTERS:
        results[counter] = sum(results.get(f"{counter}_{part}", 0) for part in PARTS)
    return results


if __name__ == "__main__":
    main()
