"""`python -m bench.docsqa` (`make bench-docsqa`): "the first minute", a newcomer's 20 questions
about ragloop (``bench/data/docsqa.jsonl``) over ragloop's own ``docs/``, the sample corpus `make
run` ingests, asked of ragloop over REST and scored by ``ragloop eval``'s own scorer.

``docs/`` goes into a collection of its own with the source names `make run` records
(``docs/storage.md``, ``docs/decisions/…``), in the benchmarks' shared Milvus Lite (ingested again
when the number of pages or their total length changes); ragloop's five processes run on free
ports with the server's defaults. Each answer is appended to the runs file as it ends, so an
invocation makes only the answers the file lacks and can be stopped and started again (``--fresh``
starts over). The figures (``docsqa_*``) are merged into ``bench/results/quality.json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    ROOT,
    cache_dir,
    invocation,
    read_results,
    start_long_run,
    write_results,
)
from bench.compare import provenance
from bench.comparison.services import ragloop_stack, shared_milvus
from bench.userqa import RunsFile, by_kind_in_turn, record_answers, records_of
from bench.userqa_systems import RAGLOOP
from ragloop.cli.client import Api
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.cli.evaluation.report import ALL, summary, table
from ragloop.cli.evaluation.runner import EvalRecord, RestAnswerer
from ragloop.core.domain import SourceDocument
from ragloop.local.launcher import corpus_files
from ragloop.local.models import DEFAULT_MODEL

QUESTIONS = ROOT / "bench" / "data" / "docsqa.jsonl"
DOCS = ROOT / "docs"
OUTPUT = RESULTS_DIR / "quality.json"
RUNS = RESULTS_DIR / "docsqa-runs.jsonl"
COLLECTION = "docsqa"


def docs_corpus(folder: Path = DOCS) -> list[SourceDocument]:
    """The files `make run` ingests from ``folder``, named as it names them."""
    return [SourceDocument(source, text) for source, text in corpus_files(folder)]


def measure(questions: list[EvalQuestion], runs: RunsFile) -> None:
    """Each question the runs file has no answer to, asked of ragloop over REST."""
    made = {row["id"] for row in runs.rows() if row["system"] == RAGLOOP and not row.get("error")}
    todo = [q for q in by_kind_in_turn(questions) if q.id not in made]
    print(f"{len(todo)} answers to make (the others are in {runs.path})", flush=True)
    if not todo:
        return
    recorded = provenance() | {"model": DEFAULT_MODEL.name}
    with (
        shared_milvus({COLLECTION: docs_corpus()}) as milvus_uri,
        ragloop_stack(milvus_uri, cache_dir() / "docsqa-run") as stack,
        Api(stack.base_url) as api,
    ):
        print(f"ragloop at {stack.base_url}", flush=True)
        answerers = {RAGLOOP: RestAnswerer(api, COLLECTION)}
        record_answers([(question, RAGLOOP) for question in todo], answerers, runs, recorded)


def docsqa_figures(records: list[EvalRecord]) -> dict[str, Any]:
    """The figures quality.json holds for ragloop's answers."""
    overall = summary(records)[ALL]
    return {
        "docsqa_questions": overall["questions"],
        "docsqa_right_ragloop": overall["right_share"],
        "docsqa_wrong_ragloop": overall["wrong_share"],
        "docsqa_score_ragloop": overall["score"],
        "docsqa_p50_s_ragloop": overall["p50_s"],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--runs-file", default=str(RUNS), help="default: %(default)s")
    parser.add_argument("--fresh", action="store_true", help="forget every answer made before")
    parser.add_argument("--summarise", action="store_true", help="only compute the figures")
    return parser.parse_args(argv)


def ragloop_records(runs: RunsFile, questions: Mapping[str, EvalQuestion]) -> list[EvalRecord]:
    return records_of(runs.rows(), questions).get(RAGLOOP, [])


def main() -> None:
    args = parse_args()
    questions = load_questions(QUESTIONS)
    if args.limit:
        questions = questions[: args.limit]
    runs = RunsFile(Path(args.runs_file))
    if args.fresh:
        runs.keep([])
    if not args.summarise:
        start_long_run()
        measure(questions, runs)
    records = ragloop_records(runs, {q.id: q for q in questions})
    if not records:
        print(f"no answers in {runs.path} yet")
        return
    figures = read_results(OUTPUT) | docsqa_figures(records)
    command = invocation("bench.docsqa")
    if args.summarise:  # the figures of answers made before: their command stays
        figures.setdefault("docsqa_command", command)
    else:
        figures |= {"docsqa_date": date.today().isoformat(), "docsqa_command": command}
    write_results(OUTPUT, figures)
    print("\n" + table(summary(records)))
    print(f"\nwrote {OUTPUT}")


if __name__ == "__main__":
    main()
