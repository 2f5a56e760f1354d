"""`ragloop eval QUESTIONS.jsonl`: the command's run, progress lines and output file."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragloop.cli.client import Api
from ragloop.cli.errors import ApiError, UsageError
from ragloop.cli.evaluation.questions import load_questions
from ragloop.cli.evaluation.report import summary, table
from ragloop.cli.evaluation.runner import EvalRecord, RestAnswerer, evaluate


def _api_failure(exc: Exception) -> str | None:
    """A question the server answered with an error is recorded and the run goes on; an
    unreachable server ends it."""
    return str(exc) if isinstance(exc, ApiError) else None


def progress_line(done: int, total: int, record: EvalRecord) -> str:
    answer = " ".join(record.answer.text.split())
    shown = record.error or (answer[:100] + ("…" if len(answer) > 100 else ""))
    return (
        f"[{done}/{total}] {record.question.id} ({record.question.kind or '-'}): "
        f"{record.scored.verdict.value}, {record.answer.seconds:.1f} s  {shown}"
    )


def run_eval(args: argparse.Namespace, api: Api) -> int:
    questions = load_questions(args.questions)
    if args.kinds:
        questions = [q for q in questions if q.kind in args.kinds]
    if args.limit:
        questions = questions[: args.limit]
    if not questions:
        raise UsageError("no question of the file matches --kinds")
    options: dict[str, Any] = {}
    if args.max_rewrites is not None:
        options["max_rewrite_attempts"] = args.max_rewrites
    if args.tenant:
        options["tenant"] = args.tenant
    answerer = RestAnswerer(api, args.collection or "", options)
    records: list[EvalRecord] = []
    for record in evaluate(questions, answerer, failure=_api_failure):
        records.append(record)
        if not args.quiet:
            print(progress_line(len(records), len(questions), record), file=sys.stderr, flush=True)
    result = summary(records)
    print(table(result))
    if args.output:
        write_output(args.output, result, records, args, api.base_url)
        print(f"wrote {args.output}")
    return 0


def write_output(
    path: Path,
    result: dict[str, Any],
    records: list[EvalRecord],
    args: argparse.Namespace,
    url: str,
) -> None:
    document = {
        "questions_file": str(args.questions),
        "url": url,
        "collection": args.collection or "",
        "options": {"max_rewrite_attempts": args.max_rewrites, "tenant": args.tenant or ""},
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "summary": result,
        "records": [record.as_json() for record in records],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
