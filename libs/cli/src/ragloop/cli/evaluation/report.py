"""The figures of an evaluation, overall and by kind of question, and their table."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ragloop.cli.evaluation.funnel import STEPS, UNKNOWN, Loss
from ragloop.cli.evaluation.questions import OUT_OF_SCOPE_KIND
from ragloop.cli.evaluation.runner import EvalRecord
from ragloop.cli.evaluation.scoring import POINTS, Verdict

ALL = "all"


def _share(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


def _reached(records: Sequence[EvalRecord], step: str) -> int | None:
    """How many answers' text was in the step's passages; None when no answer shows them."""
    known = [flag for r in records if (flag := r.answer.reach.get(step)) is not None]
    return sum(known) if known else None


def funnel(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """Where the answers of a group's answerable questions were lost: how many had their text
    retrieved, passed and read, answered and right; how many were lost at each place; the
    refusals by the check that refused; refusals whose text passed grading."""
    answerable = [r for r in records if r.question.answerable]
    refused = [r for r in answerable if r.scored.refused and not r.error]
    places = Counter(r.loss for r in answerable)
    return {
        "answerable": len(answerable),
        **{step: _reached(answerable, step) for step in STEPS},
        "answered": sum(not r.error and not r.scored.refused for r in answerable),
        "right": sum(r.scored.verdict is Verdict.RIGHT for r in answerable),
        "lost": {place.value: places[place] for place in Loss},
        "refused_by": dict(Counter(r.answer.refused_by or UNKNOWN for r in refused).most_common()),
        "refused_with_text": sum(r.answer.reach.get("passed") is True for r in refused),
    }


def figures(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """Counts and shares of one group of records: right, wrong, missing, the score (right −
    wrong, over the group's size), refused unanswerable questions, form problems, p50 seconds,
    and the ``funnel`` of its answerable questions."""
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
        "funnel": funnel(records),
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


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def loss_table(result: dict[str, Any]) -> list[str]:
    """Where the answers of answerable questions were lost: a row a place, a column for all
    questions and for each kind that has answerable ones; then the refusals by check and how
    far the answers' text went."""
    overall = result[ALL]["funnel"]
    if not overall["answerable"]:
        return []
    columns = {ALL: overall} | {
        kind: f["funnel"] for kind, f in result["by_kind"].items() if f["funnel"]["answerable"]
    }
    rows = [
        [place, *(str(f["lost"][place]) for f in columns.values())] for place in overall["lost"]
    ]
    refusals = ", ".join(f"{check} {n}" for check, n in overall["refused_by"].items())
    return [
        *_aligned(["where answers were lost", *columns], rows),
        f"refused by: {refusals or 'none'}",
        f"answer's text retrieved: {_count(overall['retrieved'])}, passed: "
        f"{_count(overall['passed'])}, reached the writer: {_count(overall['read'])} of "
        f"{overall['answerable']} answerable; refused with the text passed: "
        f"{overall['refused_with_text']}",
    ]


def table(result: dict[str, Any]) -> str:
    """The summary as text: a row a kind, then every question, with the score's line; then
    where the answers were lost (``loss_table``)."""
    rows = [[kind, *_cells(f)] for kind, f in result["by_kind"].items()]
    rows.append([ALL, *_cells(result[ALL])])
    lines = _aligned(["kind", *(name for name, _, _ in COLUMNS)], rows)
    overall = result[ALL]
    refused = overall["unanswerable_refused"]
    lines.append(
        f"score {overall['score']:+.3f} (right {overall['right_share']:.3f}, wrong "
        f"{overall['wrong_share']:.3f}); answerable refused {overall['false_refusal']:.3f}"
        + (f"; {OUT_OF_SCOPE_KIND} refused {refused:.3f}" if refused is not None else "")
    )
    losses = loss_table(result)
    if losses:
        lines += ["", *losses]
    return "\n".join(lines)
