"""`python -m bench.userqa` (`make bench-userqa`): user-shaped questions over the Prometheus
documentation (``shared/data/userqa``), scored by ``ragloop eval``'s own scorer, for three systems
on the same model and Milvus collection:

- ``ragloop``: the five processes over REST with the server's defaults;
- ``single``: the same with ``max_rewrite_attempts`` 0 (one round of retrieval and grading);
- ``plain``: plain RAG in this process: the retriever's passages straight to ragloop's generator
  stage, nothing graded or rewritten, the question as asked (a follow-up is not made standalone).

Each answer is appended to the runs file as it ends (``userqa-runs.jsonl`` beside the output), so
an invocation makes only the answers the file lacks and can be stopped and started again;
``--fresh`` starts over, ``--forget SYSTEM`` makes one system's answers again. Answers are scored
again from their text whenever figures are computed. The figures (``userqa_*``, with the paired
wins and losses of the loop against single-shot and the figures by kind) are merged into
``bench/results/quality.json``.

This is a development set (60 questions): a set of the same shape over other documents is kept
outside the repository and measured regularly, so what is tuned to these questions shows there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import date
from itertools import zip_longest
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    SHARED_DATA,
    cache_dir,
    machine,
    read_results,
    start_long_run,
    write_results,
)
from bench.compare import changed_settings, provenance
from bench.comparison.services import ragloop_stack, shared_milvus
from bench.stages import ModelEndpoint
from ragloop.cli.client import Api
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.cli.evaluation.report import ALL, summary, table
from ragloop.cli.evaluation.report import figures as eval_figures
from ragloop.cli.evaluation.runner import EvalAnswer, EvalRecord, RestAnswerer, evaluate
from ragloop.cli.evaluation.scoring import POINTS, score
from ragloop.core.answers import NO_ANSWER
from ragloop.core.domain import SourceDocument
from ragloop.core.leads import requested_decision
from ragloop.core.stages import Generator, Retriever
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.loop.corrective import LoopPolicy
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

RAGLOOP, SINGLE, PLAIN = "ragloop", "single", "plain"
SYSTEMS = (RAGLOOP, SINGLE, PLAIN)
COLLECTION = "userqa"
DATA = SHARED_DATA / "userqa"
OUTPUT = RESULTS_DIR / "quality.json"


def load_corpus(path: Path) -> list[SourceDocument]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [SourceDocument(row["source"], row["text"]) for row in rows]


@dataclass
class PlainAnswerer:
    """Plain RAG: the retriever's ``top_k`` passages over the first round's similarity threshold
    to ragloop's generator stage, in this process, on one event loop of its own."""

    retriever: Retriever
    generator: Generator
    policy: LoopPolicy
    loop: asyncio.AbstractEventLoop

    async def _answer(self, question: EvalQuestion) -> EvalAnswer:
        clock = time.perf_counter()
        retrieval = await self.retriever.retrieve(
            question.question,
            top_k=self.policy.top_k,
            similarity_threshold=self.policy.similarity_threshold_of(1),
            collection=self.policy.collection,
            mode=self.policy.retrieval_mode,
        )
        answer = await self.generator.generate(question.question, retrieval.documents)
        return EvalAnswer(
            text=answer.text,
            seconds=round(time.perf_counter() - clock, 3),
            citations=len(answer.citations),
            model_calls=answer.usage.calls,
            decision_path=("retrieve", "generate"),
            checks={
                name: value
                for name, value in (
                    ("support", answer.support),
                    ("answer_match", answer.answer_match),
                )
                if value is not None
            },
        )

    def answer(self, question: EvalQuestion) -> EvalAnswer:
        return self.loop.run_until_complete(self._answer(question))


class RunsFile:
    """One JSON line an answer: system, question id, the answer and what it was made with."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    def keep(self, wanted: Iterable[dict[str, Any]]) -> None:
        self.path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in wanted))


def records_of(
    rows: Iterable[dict[str, Any]], questions: Mapping[str, EvalQuestion]
) -> dict[str, list[EvalRecord]]:
    """Each system's records, scored again from the answers' text, in the questions' order."""
    by_system: dict[str, dict[str, EvalRecord]] = {}
    for row in rows:
        question = questions.get(row["id"])
        if question is None:
            continue
        made = row["answer"]
        answer = EvalAnswer(**{**made, "decision_path": tuple(made.get("decision_path", ()))})
        record = EvalRecord(question, answer, score(question, answer.text), row.get("error", ""))
        by_system.setdefault(row["system"], {})[question.id] = record
    order = list(questions)
    return {
        system: sorted(records.values(), key=lambda r: order.index(r.question.id))
        for system, records in by_system.items()
    }


def paired(first: list[EvalRecord], second: list[EvalRecord]) -> tuple[int, int]:
    """Questions where ``first`` scored more than ``second`` (wins) and less (losses)."""
    points = {r.question.id: POINTS[r.scored.verdict] for r in second}
    wins = losses = 0
    for record in first:
        if record.question.id in points:
            mine, theirs = POINTS[record.scored.verdict], points[record.question.id]
            wins += mine > theirs
            losses += mine < theirs
    return wins, losses


def userqa_figures(records: Mapping[str, list[EvalRecord]]) -> dict[str, Any]:
    """The figures quality.json holds, named ``userqa_<figure>_<system>``."""
    figures: dict[str, Any] = {}
    by_kind: dict[str, Any] = {}
    for system, system_records in records.items():
        result = summary(system_records)
        overall = result[ALL]
        figures[f"userqa_questions_{system}"] = overall["questions"]
        for name in ("right", "wrong", "score"):
            figures[f"userqa_{name}_{system}"] = overall[
                "score" if name == "score" else f"{name}_share"
            ]
        figures[f"userqa_p50_s_{system}"] = overall["p50_s"]
        figures[f"userqa_false_refusal_{system}"] = overall["false_refusal"]
        figures[f"userqa_out_of_scope_refused_{system}"] = overall["unanswerable_refused"]
        figures[f"userqa_spurious_leads_{system}"] = overall["spurious_leads"]
        figures[f"userqa_repeated_{system}"] = overall["repeated"]
        figures[f"userqa_cut_off_{system}"] = overall["cut_off"]
        by_kind[system] = result["by_kind"]
    if RAGLOOP in records and SINGLE in records:
        wins, losses = paired(records[RAGLOOP], records[SINGLE])
        figures["userqa_loop_wins"], figures["userqa_loop_losses"] = wins, losses
    figures["userqa_by_kind"] = by_kind
    return figures


def render(records: Mapping[str, list[EvalRecord]]) -> str:
    parts = [f"{system}\n{table(summary(rs))}" for system, rs in records.items()]
    if RAGLOOP in records and SINGLE in records:
        wins, losses = paired(records[RAGLOOP], records[SINGLE])
        parts.append(f"loop vs single-shot: {wins} wins, {losses} losses")
    return "\n\n".join(parts)


FLOORS = (0.0, 0.5, 0.55, 0.6, 0.65, 0.7)


def with_floor(record: EvalRecord, floor: float) -> EvalRecord:
    """The record as the loop's answer floor ``floor`` would have left it, from a run made with
    the floor off (RAGLOOP_ANSWER_MIN_CONFIDENCE=0): the refusal where the best passed grade is
    below it, unless the question asks for a decision (which the floor never refuses)."""
    best = record.answer.checks.get("best_confidence")
    question = record.question
    if best is None or best >= floor or requested_decision("", question.question):
        return record
    refused = replace(record.answer, text=NO_ANSWER, checks={"best_confidence": best})
    return EvalRecord(question, refused, score(question, NO_ANSWER), record.error)


def floor_sweep(records: list[EvalRecord]) -> str:
    """Right, wrong and the score at each floor, replayed from one run with the floor off."""
    lines = ["floor  right  wrong  missing  score"]
    for floor in FLOORS:
        f = eval_figures([with_floor(r, floor) for r in records])
        lines.append(
            f"{floor:<5}  {f['right']:<5}  {f['wrong']:<5}  {f['missing']:<7}  {f['score']:+.3f}"
        )
    return "\n".join(lines)


def by_kind_in_turn(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    """The questions one kind after another (the first of each kind, then the second …), so that
    a run stopped part way has answers of every kind."""
    kinds: dict[str, list[EvalQuestion]] = {}
    for question in questions:
        kinds.setdefault(question.kind, []).append(question)
    return [q for turn in zip_longest(*kinds.values()) for q in turn if q is not None]


def measure(args: argparse.Namespace, questions: list[EvalQuestion], runs: RunsFile) -> None:
    """Each question answered by every system in turn (so an interrupted run leaves paired
    answers; single-shot right after ragloop, whose grades the grader's cache then holds)."""
    made = {(row["system"], row["id"]) for row in runs.rows() if not row.get("error")}
    todo = [
        (q, s) for q in by_kind_in_turn(questions) for s in args.systems if (s, q.id) not in made
    ]
    print(f"{len(todo)} answers to make (the others are in {runs.path})", flush=True)
    if not todo:
        return
    corpus = load_corpus(Path(args.data) / "corpus.jsonl")
    recorded = provenance() | {"model": QWEN_CODER_1_5B.name}
    with (
        shared_milvus({COLLECTION: corpus}) as milvus_uri,
        ragloop_stack(milvus_uri, cache_dir() / "userqa-run") as stack,
        ExitStack() as opened,
    ):
        print(f"ragloop at {stack.base_url}, llama-server at {stack.model_url}", flush=True)
        answerers = {
            system: opened.enter_context(
                answerer_of(system, stack.base_url, stack.model_url, milvus_uri)
            )
            for system in args.systems
        }
        for done, (question, system) in enumerate(todo, start=1):
            (record,) = evaluate([question], answerers[system], failure=str)
            runs.append(
                {"system": system, **record.as_json(), **recorded, "date": str(date.today())}
            )
            answer = " ".join(record.answer.text.split())[:90]
            print(
                f"  [{done}/{len(todo)}] {question.id} {system}: {record.scored.verdict.value}, "
                f"{record.answer.seconds:.1f} s {answer!r}",
                flush=True,
            )


@contextmanager
def answerer_of(
    system: str, base_url: str, model_url: str, milvus_uri: str
) -> Iterator[RestAnswerer | PlainAnswerer]:
    """The system's answerer, closed (with what it holds open) on exit."""
    if system != PLAIN:
        with Api(base_url) as api:
            yield RestAnswerer(
                api, COLLECTION, {"max_rewrite_attempts": 0} if system == SINGLE else {}
            )
        return
    loop = asyncio.new_event_loop()
    retriever = build_retriever(RetrieverSettings(milvus_uri=milvus_uri))
    endpoint = ModelEndpoint(model_url, QWEN_CODER_1_5B.name)
    settings: GeneratorSettings = endpoint.settings(GeneratorSettings)
    model = settings.make_chat_model()
    policy = server_policy(OrchestratorSettings(), COLLECTION)
    try:
        yield PlainAnswerer(retriever, build_generator(settings, model), policy, loop)
    finally:
        retriever.close()
        loop.run_until_complete(model.aclose())
        loop.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", default=str(DATA), help="the userqa folder (default: %(default)s)"
    )
    parser.add_argument(
        "--systems",
        type=lambda text: [s for s in text.split(",") if s],
        default=list(SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all)",
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--output", default=str(OUTPUT), help="default: %(default)s")
    parser.add_argument(
        "--runs-file", default="", help="default: userqa-runs.jsonl beside --output"
    )
    parser.add_argument("--fresh", action="store_true", help="forget every answer made before")
    parser.add_argument("--forget", default="", help="make this system's answers again")
    parser.add_argument("--summarise", action="store_true", help="only compute the figures")
    parser.add_argument(
        "--floor-sweep",
        action="store_true",
        help="print each system's figures at several answer floors, replayed from runs made "
        "with RAGLOOP_ANSWER_MIN_CONFIDENCE=0 (every answer with its best passed grade)",
    )
    parser.add_argument(
        "--at-floor",
        type=float,
        default=None,
        help="compute and write the figures as the answer floor AT_FLOOR would have left the "
        "answers, replayed from runs made with RAGLOOP_ANSWER_MIN_CONFIDENCE=0 (e.g. the "
        "server's default, to report the default from a run that also serves --floor-sweep)",
    )
    args = parser.parse_args(argv)
    if args.at_floor is not None and not 0.0 <= args.at_floor <= 1.0:
        parser.error("--at-floor is a passed grade, between 0 and 1")
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    return args


def main() -> None:
    args = parse_args()
    questions = load_questions(Path(args.data) / "questions.jsonl")
    if args.limit:
        questions = questions[: args.limit]
    output = Path(args.output)
    runs = RunsFile(
        Path(args.runs_file) if args.runs_file else output.with_name("userqa-runs.jsonl")
    )
    if args.fresh:
        runs.keep([])
    elif args.forget:
        runs.keep(row for row in runs.rows() if row["system"] != args.forget)
    clock = time.perf_counter()
    if not args.summarise:
        start_long_run()
        measure(args, questions, runs)
    made = records_of(runs.rows(), {q.id: q for q in questions})
    records = made
    if args.at_floor is not None:
        records = {
            system: [with_floor(record, args.at_floor) for record in system_records]
            for system, system_records in made.items()
        }
    figures = read_results(output) | userqa_figures(records)
    figures["userqa_answer_floor_replayed"] = args.at_floor
    command_key = "userqa_summary_command" if args.summarise else "userqa_command"
    figures[command_key] = "python -m bench.userqa " + shlex.join(sys.argv[1:])
    if not args.summarise:
        figures |= {
            "userqa_date": date.today().isoformat(),
            "userqa_machine": machine(),
            "userqa_settings_changed": changed_settings(),
            "userqa_seconds_last_invocation": round(time.perf_counter() - clock, 1),
        }
    figures["userqa_runs_commits"] = " ".join(
        dict.fromkeys(row.get("commit", "") for row in runs.rows())
    )
    write_results(output, figures)
    print("\n" + render(records))
    if args.floor_sweep:
        for system, system_records in made.items():
            print(f"\n{system}, answer floor replayed\n{floor_sweep(system_records)}")
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
