"""The figures of an evaluation, overall and by kind of question, and their table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ragloop.cli.evaluation.questions import OUT_OF_SCOPE_KIND
from ragloop.cli.evaluation.runner import EvalRecord
from ragloop.cli.evaluation.scoring import POINTS, Verdict

ALL = "all"


def _share(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


def figures(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """Counts and shares of one group of records: right, wrong, missing, the score (right −
    wrong, over the group's size), refused unanswerable questions, form problems, p50 seconds."""
    n = len(records)
    count = {v: sum(1 for r in records if r.scored.verdict is v) for v in Verdict}
    unanswerable = [r for r in records if not r.question.answerable]
    answerable = [r for r in records if r.question.answerable]
    seconds = [r.answer.seconds for r in records if not r.error]
    return {
        "questions": n,
        "right": count[Verdict.RIGHT],
        "wrong": count[Verdict.WRONG],
        "missing": count[Verdict.MISSING],
        "right_share": _share(count[Verdict.RIGHT], n),
        "wrong_share": _share(count[Verdict.WRONG], n),
        "score": round(sum(POINTS[r.scored.verdict] for r in records) / n, 3) if n else 0.0,
        "false_refusal": _share(sum(r.scored.refused for r in answerable), len(answerable)),
        "unanswerable_refused": (
            _share(sum(r.scored.refused for r in unanswerable), len(unanswerable))
            if unanswerable
            else None
        ),
        "spurious_leads": sum(r.scored.spurious_lead for r in records),
        "repeated": sum(bool(r.scored.repeated) for r in records),
        "cut_off": sum(bool(r.scored.cut_off) for r in records),
        "errors": sum(bool(r.error) for r in records),
        "p50_s": round(statistics.median(seconds), 2) if seconds else None,
    }


def summary(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """``figures`` of every record (``all``) and of each kind, kinds in order of first use."""
    kinds = list(dict.fromkeys(r.question.kind or "-" for r in records))
    by_kind = {k: figures([r for r in records if (r.question.kind or "-") == k]) for k in kinds}
    return {ALL: figures(records), "by_kind": by_kind}


# (heading, figure, format)
COLUMNS = (
    ("n", "questions", "{}"),
    ("right", "right", "{}"),
    ("wrong", "wrong", "{}"),
    ("missing", "missing", "{}"),
    ("score", "score", "{:+.2f}"),
    ("leads", "spurious_leads", "{}"),
    ("repeated", "repeated", "{}"),
    ("cut off", "cut_off", "{}"),
    ("p50 s", "p50_s", "{:.1f}"),
)


def _cells(result: dict[str, Any]) -> list[str]:
    return ["-" if result[key] is None else form.format(result[key]) for _, key, form in COLUMNS]


def table(result: dict[str, Any]) -> str:
    """The summary as a text table: a row a kind, then every question."""
    rows = [[kind, *_cells(f)] for kind, f in result["by_kind"].items()]
    rows.append([ALL, *_cells(result[ALL])])
    header = ["kind", *(name for name, _, _ in COLUMNS)]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    overall = result[ALL]
    refused = overall["unanswerable_refused"]
    lines.append(
        f"score {overall['score']:+.3f} (right {overall['right_share']:.3f}, wrong "
        f"{overall['wrong_share']:.3f}); answerable refused {overall['false_refusal']:.3f}"
        + (f"; {OUT_OF_SCOPE_KIND} refused {refused:.3f}" if refused is not None else "")
    )
    return "\n".join(lines)
