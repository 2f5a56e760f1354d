"""`python -m bench.concurrency` (`make bench-concurrency`): answers per minute of ragloop and of
plain RAG under concurrent clients, by the llama-server's slots (``--parallel``) — issue 55's
"concurrency by measurement", the figures that choose `make run`'s slots
(``ragloop.local.model_server.MODEL_SLOTS``).

A fixed, seeded subset of the userqa questions (``shared/data/userqa``: ``--questions`` of them,
every kind in turn) is answered, for each slot count S of ``--slots`` and each client count C of
``--clients``, by C client threads that each take the next question until none is left. Every
(system, S, C) runs on servers started for it alone (``bench.userqa_systems.serving``: the
llama-server with S slots, and for ragloop its five processes with the grader asking S model calls
at once), so no run reads another's cached prompts or grades; one question outside the subset is
answered first, untimed, to warm them. ``stuffed`` (plain RAG: the retriever's passages in one
free-text prompt, ``bench.userqa_systems``) is measured at ``--stuffed-slots`` only (default:
`make run`'s).

Per run: answers per minute (answers made / the wall time from the first question to the last
answer: with C clients the last questions run with fewer than C in flight), p50 and p95 seconds per
answer, and right, wrong and refused by ``ragloop eval``'s scorer. Each run is merged into
``bench/results/quality.json`` as it ends: ``model_slots`` {"S=1,C=4": {"ragloop": {...}}, ...},
and ``concurrent4_answers_per_min_{ragloop,stuffed}`` at 4 clients and `make run`'s slots.
"""

from __future__ import annotations

import argparse
import queue
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from bench.common import measured_with, read_results, seeded_prefix, start_long_run, write_results
from bench.compare import provenance
from bench.metrics import percentile
from bench.userqa import OUTPUT, by_kind_in_turn, load_corpus, userqa_parser
from bench.userqa_systems import RAGLOOP, STUFFED, answerer_of, serving
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.cli.evaluation.runner import Answerer, EvalRecord, evaluate
from ragloop.cli.evaluation.scoring import Verdict
from ragloop.core.domain import SourceDocument
from ragloop.local.model_server import MODEL_SLOTS
from ragloop.local.models import QWEN_CODER_1_5B

SYSTEMS = (RAGLOOP, STUFFED)
QUESTIONS = 10  # the default run (6 ragloop runs, 2 stuffed) takes about 21 minutes on 2 cores
SEED = 55
SLOTS = (1, 2, 4)
CLIENTS = (1, 4)
HEADLINE_CLIENTS = 4  # the clients of concurrent4_answers_per_min_*
TABLE = "model_slots"
ROUND = 2


@dataclass(frozen=True)
class Setup:
    """One measured run: a system, the llama-server's slots and the concurrent clients."""

    system: str
    slots: int
    clients: int

    @property
    def key(self) -> str:
        """Its row in quality.json's ``model_slots`` table."""
        return slot_key(self.slots, self.clients)


def slot_key(slots: int, clients: int) -> str:
    return f"S={slots},C={clients}"


@dataclass(frozen=True)
class Answered:
    """What one answer of a run counts for: its seconds and its verdict."""

    seconds: float
    verdict: Verdict
    refused: bool
    failed: bool  # the system gave no answer (an error): neither timed nor counted as made

    @classmethod
    def of(cls, record: EvalRecord) -> Answered:
        scored = record.scored
        return cls(record.answer.seconds, scored.verdict, scored.refused, bool(record.error))


def setups(
    systems: Sequence[str], slots: Sequence[int], clients: Sequence[int], stuffed_slots: int
) -> list[Setup]:
    """The runs to make: ragloop at every slot count, plain RAG at ``stuffed_slots``; each with
    every client count."""
    measured = {RAGLOOP: list(slots), STUFFED: [stuffed_slots]}
    return [Setup(system, s, c) for system in systems for s in measured[system] for c in clients]


def chosen_questions(
    questions: Iterable[EvalQuestion], count: int, seed: int
) -> tuple[list[EvalQuestion], EvalQuestion | None]:
    """``count`` questions of a seeded shuffle, every kind in turn (a smaller count chooses a
    prefix of a larger one's), and the next one to warm the servers with (None: none is left)."""
    ordered = list(questions)
    shuffled = by_kind_in_turn(seeded_prefix(ordered, len(ordered), seed, key=lambda q: q.id))
    warm_up = shuffled[count] if count < len(shuffled) else None
    return shuffled[:count], warm_up


def run_figures(answers: Sequence[Answered], wall_s: float) -> dict[str, Any]:
    """A run's figures: answers made per minute of wall time, p50 and p95 seconds per answer
    made, and the verdicts of every question asked."""
    made = [a for a in answers if not a.failed]
    seconds = [a.seconds for a in made]
    return {
        "questions": len(answers),
        "answers": len(made),
        "errors": len(answers) - len(made),
        "wall_s": round(wall_s, 1),
        "answers_per_min": round(len(made) * 60 / wall_s, ROUND) if wall_s > 0 else None,
        "p50_s": round(percentile(seconds, 50), ROUND) if seconds else None,
        "p95_s": round(percentile(seconds, 95), ROUND) if seconds else None,
        "right": sum(a.verdict is Verdict.RIGHT for a in answers),
        "wrong": sum(a.verdict is Verdict.WRONG for a in answers),
        "refused": sum(a.refused for a in made),
    }


def merged_table(
    table: Mapping[str, Mapping[str, Any]], setup: Setup, figures: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """``table`` with the setup's figures in its row, beside the other systems' there."""
    merged = {key: dict(row) for key, row in table.items()}
    merged.setdefault(setup.key, {})[setup.system] = dict(figures)
    return merged


def headline_figures(table: Mapping[str, Mapping[str, Any]], slots: int) -> dict[str, float]:
    """``concurrent4_answers_per_min_<system>``: each system's answers per minute with 4
    clients on a llama-server of ``slots`` slots (`make run`'s), where the table has them."""
    row = table.get(slot_key(slots, HEADLINE_CLIENTS), {})
    return {
        f"concurrent{HEADLINE_CLIENTS}_answers_per_min_{system}": figures["answers_per_min"]
        for system, figures in row.items()
        if figures.get("answers_per_min") is not None
    }


def recorded(
    table: Mapping[str, Mapping[str, Any]], setup: Setup, stamp: Mapping[str, Any]
) -> bool:
    """Whether the table holds the setup's run made with ``stamp`` (commit, questions, seed)."""
    figures = table.get(setup.key, {}).get(setup.system, {})
    return bool(figures) and all(figures.get(name) == value for name, value in stamp.items())


COLUMNS: tuple[tuple[str, str], ...] = (
    ("answers", "answers"),
    ("errors", "errors"),
    ("wall s", "wall_s"),
    ("answers/min", "answers_per_min"),
    ("p50 s", "p50_s"),
    ("p95 s", "p95_s"),
    ("right", "right"),
    ("wrong", "wrong"),
    ("refused", "refused"),
)


def table_text(table: Mapping[str, Mapping[str, Any]]) -> str:
    """The table's runs, a line each: system, slots, clients and the figures."""
    header = ["system", "S", "C", *(heading for heading, _ in COLUMNS)]
    rows = [
        [system, *_slots_and_clients(key), *(_cell(figures.get(name)) for _, name in COLUMNS)]
        for key, row in sorted(table.items(), key=lambda item: _slots_and_clients(item[0]))
        for system, figures in sorted(row.items())
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in [header, *rows]
    )


def _slots_and_clients(key: str) -> tuple[str, str]:
    slots, clients = (part.split("=")[1] for part in key.split(","))
    return slots.rjust(2), clients.rjust(2)


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def fastest(table: Mapping[str, Mapping[str, Any]], system: str, clients: int) -> str | None:
    """The table's row where ``system`` made the most answers a minute with ``clients``."""
    rows = {
        key: row[system]["answers_per_min"]
        for key, row in table.items()
        if key.endswith(f",C={clients}") and row.get(system, {}).get("answers_per_min")
    }
    return max(rows, key=rows.__getitem__) if rows else None


def answer_all(
    questions: Sequence[EvalQuestion],
    answerers: Sequence[Answerer],
    report: Callable[[EvalRecord], None] = lambda record: None,
) -> tuple[list[EvalRecord], float]:
    """Each question answered once, by one client thread an answerer, each taking the next
    question while any is left; the records and the wall seconds from the first question to the
    last answer. Interrupted, the clients take no more questions."""
    waiting: queue.SimpleQueue[EvalQuestion] = queue.SimpleQueue()
    for question in questions:
        waiting.put(question)

    def client(answerer: Answerer) -> list[EvalRecord]:
        made = []
        while True:
            try:
                question = waiting.get_nowait()
            except queue.Empty:
                return made
            (record,) = evaluate([question], answerer, failure=str)
            report(record)
            made.append(record)

    clock = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(answerers)) as pool:
        try:
            futures = [pool.submit(client, answerer) for answerer in answerers]
            records = [record for future in futures for record in future.result()]
        except BaseException:
            while not waiting.empty():
                waiting.get_nowait()
            raise
    return records, time.perf_counter() - clock


def progress(record: EvalRecord) -> None:
    failed = f" error: {record.error}" if record.error else ""
    print(
        f"  {record.question.id}: {record.scored.verdict.value}, "
        f"{record.answer.seconds:.1f} s{failed}",
        flush=True,
    )


def measure(
    setup: Setup,
    questions: Sequence[EvalQuestion],
    warm_up: EvalQuestion | None,
    corpus: list[SourceDocument],
) -> dict[str, Any]:
    """One run on servers started for it: the warm-up question, then the questions by
    ``setup.clients`` clients; its figures."""
    pages = {document.source: document.text for document in corpus}
    with serving([setup.system], corpus, setup.slots) as served, ExitStack() as opened:
        answerers = [
            opened.enter_context(answerer_of(setup.system, served, pages))
            for _ in range(setup.clients)
        ]
        if warm_up is not None:
            list(evaluate([warm_up], answerers[0], failure=str))
        records, wall_s = answer_all(questions, answerers, progress)
    return run_figures([Answered.of(record) for record in records], wall_s)


def parse_counts(text: str) -> list[int]:
    """A comma-separated list of whole numbers of at least 1, each once, in order."""
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: whole numbers of at least 1, comma-separated")
    return list(dict.fromkeys(counts))


def parse_systems(text: str) -> list[str]:
    systems = [part for part in text.split(",") if part]
    unknown = set(systems) - set(SYSTEMS)
    if not systems or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: a subset of {','.join(SYSTEMS)}")
    return systems


# (option, parser, default, what it lists): comma-separated lists.
LIST_OPTIONS: tuple[tuple[str, Callable[[str], list[Any]], Sequence[Any], str], ...] = (
    ("--slots", parse_counts, SLOTS, "llama-server slot counts, comma-separated"),
    ("--clients", parse_counts, CLIENTS, "concurrent client counts, comma-separated"),
    ("--systems", parse_systems, SYSTEMS, "comma-separated subset of ragloop,stuffed"),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = userqa_parser(__doc__)
    parser.add_argument(
        "--questions", type=int, default=QUESTIONS, help="how many questions (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help="of the subset (default: %(default)s)"
    )
    for flag, parse, default, what in LIST_OPTIONS:
        shown = ",".join(map(str, default))
        parser.add_argument(
            flag, type=parse, default=list(default), help=f"{what} (default: {shown})"
        )
    parser.add_argument(
        "--stuffed-slots",
        type=int,
        default=MODEL_SLOTS,
        help="the slots stuffed is measured at (default: make run's, %(default)s)",
    )
    parser.add_argument("--output", default=str(OUTPUT), help="default: %(default)s")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="skip the runs --output already holds from this commit with these questions",
    )
    args = parser.parse_args(argv)
    if args.questions < 1 or args.stuffed_slots < 1:
        parser.error("--questions and --stuffed-slots take whole numbers of at least 1")
    return args


def provenance_figures(seconds: float) -> dict[str, Any]:
    """What the last invocation measured with and when."""
    return measured_with("concurrency", "bench.concurrency", QWEN_CODER_1_5B.name) | {
        "concurrency_seconds_last_invocation": round(seconds, 1),
        "model_slots_make_run": MODEL_SLOTS,
    }


def run_all(args: argparse.Namespace, runs: Sequence[Setup], clock: float) -> None:
    """Each run, its figures merged into ``--output`` as it ends (with ``--resume``, a run the
    file holds from this commit with these questions is not made again)."""
    questions, warm_up = chosen_questions(
        load_questions(Path(args.data) / "questions.jsonl"), args.questions, args.seed
    )
    corpus = load_corpus(Path(args.data) / "corpus.jsonl")
    stamp = {"commit": provenance()["commit"], "questions": len(questions), "seed": args.seed}
    output = Path(args.output)
    for setup in runs:
        results = read_results(output)
        table = results.get(TABLE, {})
        if args.resume and recorded(table, setup, stamp):
            print(f"{setup.system} {setup.key}: in {output} already", flush=True)
            continue
        print(f"{setup.system} {setup.key}: {len(questions)} questions", flush=True)
        started = time.perf_counter()
        figures = measure(setup, questions, warm_up, corpus)
        took = time.perf_counter() - started
        print(f"  {figures['answers_per_min']} answers a minute; {took:.0f} s in all", flush=True)
        table = merged_table(table, setup, figures | stamp | {"date": date.today().isoformat()})
        results |= {TABLE: table} | headline_figures(table, MODEL_SLOTS)
        write_results(output, results | provenance_figures(time.perf_counter() - clock))


def of_runs(
    table: Mapping[str, Mapping[str, Any]], runs: Sequence[Setup]
) -> dict[str, dict[str, Any]]:
    """The table's rows of ``runs`` only."""
    kept: dict[str, dict[str, Any]] = {}
    for setup in runs:
        figures = table.get(setup.key, {}).get(setup.system)
        if figures is not None:
            kept.setdefault(setup.key, {})[setup.system] = figures
    return kept


def main() -> None:
    args = parse_args()
    clock = time.perf_counter()
    start_long_run()
    runs = setups(args.systems, args.slots, args.clients, args.stuffed_slots)
    run_all(args, runs, clock)
    table = of_runs(read_results(Path(args.output)).get(TABLE, {}), runs)
    print("\n" + table_text(table))
    for clients in args.clients:
        best = fastest(table, RAGLOOP, clients) or "-"
        print(f"ragloop's most answers a minute with {clients} clients: {best}")
    seconds = time.perf_counter() - clock
    print(f"make run's slots: {MODEL_SLOTS}; {seconds:.0f} s; wrote {args.output}")


if __name__ == "__main__":
    main()
