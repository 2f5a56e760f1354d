"""`python -m bench.userqa` (`make bench-userqa`): user-shaped questions over the Prometheus
documentation (``shared/data/userqa``), scored by ``ragloop eval``'s own scorer, for five systems
on the same model (``bench.userqa_systems``): ``ragloop``, ``single`` (one round), ``ungraded``
(ragloop's writer over the retriever's ungraded passages), ``stuffed`` (plain RAG: the passages in
one free-text prompt) and ``ceiling`` (the reading ceiling: the same prompt over the gold text
around the expected answer, answerable questions only).

Each answer is appended to the runs file as it ends (``userqa-runs.jsonl`` beside the output), so
an invocation makes only the answers the file lacks and can be stopped and started again;
``--fresh`` starts over, ``--forget SYSTEM`` makes one system's answers again. Answers are scored
again from their text whenever figures are computed. The figures (``userqa_*``, with the paired
wins and losses of the loop against single-shot and of ragloop against stuffed, the reading
ceiling and the figures by kind) are merged into ``bench/results/quality.json``.

This is a development set (60 questions): a set of the same shape over other documents is kept
outside the repository and measured regularly, so what is tuned to these questions shows there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from datetime import date
from itertools import zip_longest
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    SHARED_DATA,
    invocation,
    machine,
    read_results,
    start_long_run,
    write_results,
)
from bench.compare import changed_settings, provenance
from bench.refusal_replay import Bars, sweep, with_bars
from bench.userqa_systems import (
    CEILING,
    RAGLOOP,
    SINGLE,
    STUFFED,
    SYSTEMS,
    answerer_of,
    asks,
    serving,
    system_named,
)
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.cli.evaluation.report import ALL, summary, table
from ragloop.cli.evaluation.runner import Answerer, EvalAnswer, EvalRecord, evaluate
from ragloop.cli.evaluation.scoring import POINTS, Verdict, score
from ragloop.core.domain import SourceDocument
from ragloop.local.models import QWEN_CODER_1_5B

DATA = SHARED_DATA / "userqa"
OUTPUT = RESULTS_DIR / "quality.json"


def load_corpus(path: Path) -> list[SourceDocument]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [SourceDocument(row["source"], row["text"]) for row in rows]


class RunsFile:
    """One JSON line an answer: system, question id, the answer and what it was made with."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> list[dict[str, Any]]:
        """The rows, each system by its name today (a runs file may be older than a rename)."""
        if not self.path.exists():
            return []
        lines = self.path.read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        return [{**row, "system": system_named(row["system"])} for row in rows]

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


# Paired by question: (first, second, the figures' prefix, the printed heading).
PAIRS = (
    (RAGLOOP, SINGLE, "userqa_loop", "loop vs single-shot"),
    (RAGLOOP, STUFFED, "userqa_ragloop_vs_stuffed", "ragloop vs stuffed (plain RAG)"),
)


def calls_per_query(records: list[EvalRecord]) -> float | None:
    """Mean model calls of the answers made (a failed one made none to count)."""
    calls = [record.answer.model_calls for record in records if not record.error]
    return round(statistics.mean(calls), 2) if calls else None


def prompt_reading(records: list[EvalRecord]) -> tuple[float | None, float | None]:
    """Mean prompt tokens the model server evaluated per answer made (those it did not take from
    its prompt cache), and the cached share of all prompt tokens; None for runs that recorded no
    prompt tokens (before 2026-11-29)."""
    made = [r.answer for r in records if not r.error and r.answer.prompt_tokens]
    if not made:
        return None, None
    sent = sum(a.prompt_tokens for a in made)
    cached = sum(a.cached_prompt_tokens for a in made)
    return round((sent - cached) / len(made), 1), round(cached / sent, 3)


def against_ceiling(records: list[EvalRecord], ceiling: list[EvalRecord]) -> tuple[int, int, int]:
    """Right answers of ``records`` and of the ceiling, and how many questions, over the
    answerable questions the ceiling was asked."""
    asked = {r.question.id for r in ceiling if r.question.answerable}

    def right(rs: list[EvalRecord]) -> int:
        return sum(r.scored.verdict is Verdict.RIGHT for r in rs if r.question.id in asked)

    return right(records), right(ceiling), len(asked)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def userqa_figures(records: Mapping[str, list[EvalRecord]]) -> dict[str, Any]:
    """The figures quality.json holds, named ``userqa_<figure>_<system>``; the reading ceiling
    (the ceiling's share right of the answerable questions it was asked) and ragloop's right
    answers as a share of the ceiling's, over those questions."""
    figures: dict[str, Any] = {}
    by_kind: dict[str, Any] = {}
    funnels: dict[str, Any] = {}
    for system, system_records in records.items():
        result = summary(system_records)
        overall = result[ALL]
        figures[f"userqa_questions_{system}"] = overall["questions"]
        for name in ("right", "wrong", "score"):
            figures[f"userqa_{name}_{system}"] = overall[
                "score" if name == "score" else f"{name}_share"
            ]
        figures[f"userqa_p50_s_{system}"] = overall["p50_s"]
        figures[f"userqa_calls_per_query_{system}"] = calls_per_query(system_records)
        evaluated, cached_share = prompt_reading(system_records)
        figures[f"userqa_prompt_tokens_evaluated_per_query_{system}"] = evaluated
        figures[f"userqa_cached_prompt_share_{system}"] = cached_share
        figures[f"userqa_false_refusal_{system}"] = overall["false_refusal"]
        figures[f"userqa_out_of_scope_refused_{system}"] = overall["unanswerable_refused"]
        figures[f"userqa_spurious_leads_{system}"] = overall["spurious_leads"]
        figures[f"userqa_repeated_{system}"] = overall["repeated"]
        figures[f"userqa_cut_off_{system}"] = overall["cut_off"]
        lost = overall["funnel"]
        if lost["read"] is not None:  # the answer's text in front of the writer
            figures[f"userqa_text_reached_{system}"] = _ratio(lost["read"], lost["answerable"])
        figures[f"userqa_refused_with_text_{system}"] = _ratio(
            lost["refused_with_text"], lost["answerable"]
        )
        funnels[system] = lost
        by_kind[system] = result["by_kind"]
    for first, second, prefix, _ in PAIRS:
        if first in records and second in records:
            wins, losses = paired(records[first], records[second])
            figures[f"{prefix}_wins"], figures[f"{prefix}_losses"] = wins, losses
    if CEILING in records:
        right, ceiling_right, asked = against_ceiling(records.get(RAGLOOP, []), records[CEILING])
        figures["userqa_reading_ceiling"] = _ratio(ceiling_right, asked)
        if RAGLOOP in records:
            figures["userqa_ragloop_of_ceiling"] = _ratio(right, ceiling_right)
    figures["userqa_by_kind"] = by_kind
    figures["userqa_funnel"] = funnels
    return figures


def render(records: Mapping[str, list[EvalRecord]]) -> str:
    parts = [f"{system}\n{table(summary(rs))}" for system, rs in records.items()]
    for first, second, _, heading in PAIRS:
        if first in records and second in records:
            wins, losses = paired(records[first], records[second])
            parts.append(f"{heading}: {wins} wins, {losses} losses")
    if RAGLOOP in records and CEILING in records:
        right, ceiling_right, asked = against_ceiling(records[RAGLOOP], records[CEILING])
        share = f"{right / ceiling_right:.2f}" if ceiling_right else "-"
        parts.append(
            f"ragloop right {right} of {asked} answerable = {share} × the reading ceiling "
            f"({ceiling_right} of {asked})"
        )
    return "\n\n".join(parts)


def by_kind_in_turn(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    """The questions one kind after another (the first of each kind, then the second …), so that
    a run stopped part way has answers of every kind."""
    kinds: dict[str, list[EvalQuestion]] = {}
    for question in questions:
        kinds.setdefault(question.kind, []).append(question)
    return [q for turn in zip_longest(*kinds.values()) for q in turn if q is not None]


def measure(args: argparse.Namespace, questions: list[EvalQuestion], runs: RunsFile) -> None:
    """Each question answered by every system in turn (so an interrupted run leaves paired
    answers; single-shot right after ragloop, whose grades the grader's cache then holds). Only
    what the answers still to make need is started (``userqa_systems.serving``)."""
    made = {(row["system"], row["id"]) for row in runs.rows() if not row.get("error")}
    todo = [
        (q, s)
        for q in by_kind_in_turn(questions)
        for s in args.systems
        if asks(s, q) and (s, q.id) not in made
    ]
    print(f"{len(todo)} answers to make (the others are in {runs.path})", flush=True)
    if not todo:
        return
    systems = list(dict.fromkeys(system for _, system in todo))
    corpus = load_corpus(Path(args.data) / "corpus.jsonl")
    pages = {document.source: document.text for document in corpus}
    recorded = provenance() | {"model": QWEN_CODER_1_5B.name}
    with serving(systems, corpus) as served, ExitStack() as opened:
        print(
            f"llama-server at {served.model_url}, ragloop at {served.base_url or '-'}", flush=True
        )
        answerers = {
            system: opened.enter_context(answerer_of(system, served, pages)) for system in systems
        }
        record_answers(todo, answerers, runs, recorded)


def record_answers(
    todo: list[tuple[EvalQuestion, str]],
    answerers: Mapping[str, Answerer],
    runs: RunsFile,
    recorded: Mapping[str, Any],
) -> None:
    """Each (question, system) answered by the system's answerer and appended to ``runs`` as it
    ends, with what the answers were made with (``recorded``), a progress line each."""
    for done, (question, system) in enumerate(todo, start=1):
        (record,) = evaluate([question], answerers[system], failure=str)
        runs.append({"system": system, **record.as_json(), **recorded, "date": str(date.today())})
        answer = " ".join(record.answer.text.split())[:90]
        print(
            f"  [{done}/{len(todo)}] {question.id} {system}: {record.scored.verdict.value}, "
            f"{record.answer.seconds:.1f} s {answer!r}",
            flush=True,
        )


def userqa_parser(description: str | None) -> argparse.ArgumentParser:
    """A parser of a benchmark over the userqa questions, with ``--data`` (their folder)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", default=str(DATA), help="the userqa folder (default: %(default)s)"
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = userqa_parser(__doc__)
    parser.add_argument(
        "--systems",
        type=lambda text: [system_named(s) for s in text.split(",") if s],
        default=list(SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all; ceiling alone "
        "starts only a llama-server)",
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--output", default=str(OUTPUT), help="default: %(default)s")
    parser.add_argument(
        "--runs-file", default="", help="default: userqa-runs.jsonl beside --output"
    )
    parser.add_argument("--fresh", action="store_true", help="forget every answer made before")
    parser.add_argument(
        "--forget", type=system_named, default="", help="make this system's answers again"
    )
    parser.add_argument("--summarise", action="store_true", help="only compute the figures")
    parser.add_argument(
        "--bars-sweep",
        action="store_true",
        help="print each system's figures under many sets of refusal bars (answer floor, "
        "answer-match and support thresholds), best score first, replayed from runs made with "
        "every bar off: RAGLOOP_ANSWER_MIN_CONFIDENCE=0 and the generator's check thresholds at "
        "0.0001 (the checks run, and refuse nothing)",
    )
    for bar, what in (("floor", "answer floor"), ("match", "answer-match"), ("support", "support")):
        parser.add_argument(
            f"--at-{bar}",
            type=float,
            default=None,
            help=f"compute and write the figures as the {what} bar AT_{bar.upper()} would have "
            "left the answers, replayed from runs made with every bar off (see --bars-sweep)",
        )
    args = parser.parse_args(argv)
    for bar in ("floor", "match", "support"):
        value = getattr(args, f"at_{bar}")
        if value is not None and not 0.0 <= value <= 1.0:
            parser.error(f"--at-{bar} is a probability, between 0 and 1")
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    return args


def replayed_bars(args: argparse.Namespace) -> Bars | None:
    """The bars ``--at-floor``, ``--at-match`` and ``--at-support`` replay (a bar not named is
    none); None where none is named."""
    named = (args.at_floor, args.at_match, args.at_support)
    if all(value is None for value in named):
        return None
    return Bars(*(value or 0.0 for value in named))


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
    bars = replayed_bars(args)
    records = made
    if bars is not None:
        records = {
            system: [with_bars(record, bars) for record in system_records]
            for system, system_records in made.items()
        }
    figures = read_results(output) | userqa_figures(records)
    figures["userqa_bars_replayed"] = bars.label() if bars is not None else None
    command_key = "userqa_summary_command" if args.summarise else "userqa_command"
    figures[command_key] = invocation("bench.userqa")
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
    if args.bars_sweep:
        for system, system_records in made.items():
            print(f"\n{system}, refusal bars replayed\n{sweep(system_records)}")
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
