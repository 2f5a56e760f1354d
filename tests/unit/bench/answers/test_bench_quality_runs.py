"""bench.quality's runs file: every run kept as it ends with what scores it, scored again from
the recorded answer when read, and an invocation makes only the runs the file lacks or that
failed (resumable, and runs of several sessions combine)."""

from __future__ import annotations

import dataclasses
import json
import lzma
from pathlib import Path

import pytest

from bench.answers.items import MULTIHOP, SQUAD2, QualityItem
from bench.answers.runs import QualityAnswer, QualityRun, QualityRunsFile, RoundInfo, pending
from bench.common import prepare_runs_file
from bench.compare import runs_file_beside
from bench.comparison.llama_metrics import ServerCounts
from bench.comparison.runs import QueryRun
from bench.comparison.services import ChatServer
from bench.comparison.workload import PUBMEDQA, WorkItem
from bench.quality import check_chat_server, check_one_model, default_output, parse_args
from bench.threshold_sweep import lead_sweep, support_sweep
from ragloop.core.domain import ModelUsage
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.local.processes import free_port

ANSWERABLE = QualityItem(
    SQUAD2,
    "q1",
    "In what country is Normandy?",
    frozenset({"Normans#0"}),
    answers=("France",),
    answerable=True,
    split="report",
    seed=13,
)
UNANSWERABLE = QualityItem(
    SQUAD2, "q2", "Who named Normandy in 1100?", frozenset({"Normans#1"}), answerable=False
)
DECISION = QualityItem(
    PUBMEDQA, "p9", "Does it?", frozenset({"p9"}), "yes", "Begin…", split="report", seed=13
)


def round_info(number: int, passed: tuple[str, ...], bearing: tuple[str, ...]) -> RoundInfo:
    retrieved = ("c1", "c2")
    return RoundInfo(number, f"query {number}", retrieved, ("s1", "s2"), bearing, passed)


def quality_run(
    system: str,
    item: QualityItem,
    answer: str | None,
    *,
    rewrites: int = 0,
    rounds: tuple[RoundInfo, ...] = (),
    citations: tuple[int, int] | None = (1, 0),
    seconds: float = 10.0,
    calls: int = 5,
    server_prompt_tokens: float = 800.0,
    error: str = "",
    support: float | None = None,
    answer_match: float | None = None,
    lead_probabilities: dict[str, float] | None = None,
) -> QualityRun:
    """A run of ``system`` on ``item``; ``answer`` None: it failed."""
    answered = None
    if answer is not None:
        answered = QualityAnswer(
            answer=answer,
            evidence=sorted(item.relevant),
            usage=ModelUsage("qwen", calls, 1000, 60),
            node_seconds={"generate": seconds / 2},
            decision_path=["retrieve", "grade", "generate"],
            rewrites=rewrites,
            citations=citations[0] if citations else None,
            removed_citations=citations[1] if citations else None,
            rounds=rounds,
            support=support,
            answer_match=answer_match,
            lead_probabilities=lead_probabilities or {},
        )
    server = ServerCounts(prompt_tokens=server_prompt_tokens, completion_tokens=60)
    return QualityRun(system, item, seconds, answered, server, {"bench": 0.1}, error)


def test_a_run_comes_back_as_it_was_recorded_and_is_scored_again(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    rounds = (round_info(1, ("c2",), ()), round_info(2, ("c1",), ("c1",)))
    made = quality_run(
        "ragloop",
        ANSWERABLE,
        "It is in France [1].",
        rewrites=1,
        rounds=rounds,
        support=0.82,
        answer_match=0.9,
    )
    refused = quality_run("plain", UNANSWERABLE, "The sources do not contain the answer.")
    failed = quality_run("baseline", DECISION, None, error="TimeoutError: slow")

    for run in (made, refused, failed):
        runs_file.append(run, {"commit": "abc123", "settings_changed": ""})

    assert runs_file.runs() == [made, refused, failed]
    back, back_refused, back_failed = runs_file.runs()
    assert back.correct and not back.refused and back.quality_item.answers == ("France",)
    assert back.round1_answer_bearing_passed is False and back.later_answer_bearing_passed
    assert back_refused.correct and back_refused.refused
    assert not back_failed.correct and back_failed.refused is None
    record = json.loads(lzma.decompress(runs_file.path.read_bytes()).splitlines()[0])
    assert (record["correct"], record["refused"], record["commit"]) == (True, False, "abc123")
    assert record["answered"]["rounds"][1]["passed"] == ["c1"]
    assert record["answered"]["citations"] == 1 and record["server"]["prompt_tokens"] == 800
    assert (record["answered"]["support"], record["answered"]["answer_match"]) == (0.82, 0.9)


def test_a_run_recorded_before_support_figures_reads_back_without_one(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl")
    runs_file.append(quality_run("ragloop", ANSWERABLE, "It is in France [1]."), {})
    record = json.loads(runs_file.path.read_text())
    del record["answered"]["support"], record["answered"]["answer_match"]
    runs_file.path.write_text(json.dumps(record) + "\n")

    (back,) = runs_file.runs()
    assert back.quality_answer is not None
    assert back.quality_answer.support is None and back.quality_answer.answer_match is None


def test_a_pubmedqa_run_is_right_when_it_begins_with_the_experts_decision() -> None:
    assert quality_run("ragloop", DECISION, "Yes, it does [1].").correct
    assert not quality_run("ragloop", DECISION, "Maybe [1].").correct
    assert quality_run("ragloop", DECISION, "Yes [1].").round1_answer_bearing_passed is None


@pytest.mark.parametrize("name", ["quality-runs.jsonl.xz", "quality-runs.jsonl"])
def test_lines_of_another_benchmark_or_cut_short_by_a_kill_are_passed_over(
    tmp_path: Path, name: str
) -> None:
    runs_file = QualityRunsFile(tmp_path / name)
    compare_run = QueryRun("ragloop", WorkItem("scifact", "7", "A claim.", frozenset()), 1.0, None)
    runs_file.append(compare_run, {})  # a record without gold answers
    runs_file.append(quality_run("ragloop", ANSWERABLE, "France [1]."), {})
    runs_file.append(quality_run("plain", ANSWERABLE, "France [1]."), {})
    runs_file.path.write_bytes(runs_file.path.read_bytes()[:-20])  # killed mid-write
    runs_file.append(quality_run("single", ANSWERABLE, "France [1]."), {})

    assert [run.system for run in runs_file.runs()] == ["ragloop", "single"]

    runs_file.compact()
    assert [run.system for run in runs_file.runs()] == ["ragloop", "single"]
    assert len(list(runs_file._records())) == 3  # the other benchmark's record is kept


def test_runs_in_the_file_are_not_made_again_but_failed_ones_are(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    runs_file.append(quality_run("ragloop", ANSWERABLE, "France [1]."), {})
    runs_file.append(quality_run("baseline", ANSWERABLE, None, error="ReadTimeout"), {})
    systems = ["baseline", "ragloop", "single"]

    todo = pending([ANSWERABLE, DECISION], systems, runs_file.made())

    assert [(item.id, system) for item, system in todo] == [
        ("q1", "baseline"),
        ("q1", "single"),
        ("p9", "baseline"),
        ("p9", "ragloop"),
        ("p9", "single"),
    ]
    for item, system in todo:  # the next invocation: everything made
        runs_file.append(quality_run(system, item, "Yes."), {})
    assert pending([ANSWERABLE, DECISION], systems, runs_file.made()) == []
    assert len(runs_file.runs()) == 6  # the failed run replaced by the one made again

    runs_file.clear()
    assert len(pending([ANSWERABLE], systems, runs_file.made())) == 3


def test_a_run_of_a_question_since_reworded_is_made_again(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    runs_file.append(quality_run("ragloop", ANSWERABLE, "France [1]."), {})
    reworded = dataclasses.replace(ANSWERABLE, text=ANSWERABLE.text + " (reworded)")

    assert pending([ANSWERABLE], ["ragloop"], runs_file.made()) == []
    assert pending([reworded], ["ragloop"], runs_file.made()) == [(reworded, "ragloop")]


def test_the_runs_of_a_system_forgotten_are_made_again(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    for system in ("ragloop", "single", "plain"):
        runs_file.append(quality_run(system, ANSWERABLE, "France [1]."), {})

    assert runs_file.forget(["ragloop"]) == 1

    todo = pending([ANSWERABLE], ["ragloop", "single", "plain"], runs_file.made())
    assert [(item.id, system) for item, system in todo] == [("q1", "ragloop")]


def test_the_options_name_the_runs_file_of_the_split_and_the_systems_to_forget() -> None:
    args = parse_args(["--split", "dev", "--forget", "single", "--forget", "plain"])
    assert args.forget == ["single", "plain"]
    assert runs_file_beside(default_output(args.split)).name == "quality-dev-runs.jsonl.xz"
    with pytest.raises(SystemExit):
        parse_args(["--forget", "ragloop_inprocess"])  # a system of bench.compare only


def test_another_models_server_comes_with_its_name_and_figures_of_its_own() -> None:
    args = parse_args(
        ["--split", "dev", "--model-url", "http://gpu:8080/v1/", "--model-name", "Qwen2.5 7B"]
    )

    assert args.model_url == "http://gpu:8080"
    output = default_output(args.split, args.model_name)
    assert output.name == "quality-dev-qwen2.5-7b.json"
    assert runs_file_beside(output).name == "quality-dev-qwen2.5-7b-runs.jsonl.xz"
    assert default_output("report").name == "quality.json"
    for alone in (["--model-url", "http://gpu:8080"], ["--model-name", "qwen2.5-7b"]):
        with pytest.raises(SystemExit):
            parse_args(alone)


def test_a_runs_file_holds_one_models_runs(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    runs_file.append(quality_run("ragloop", ANSWERABLE, "France [1]."), {"commit": "a1"})
    runs_file.append(quality_run("single", ANSWERABLE, "France [1]."), {"model": "big"})

    recorded = runs_file.recorded("model", QWEN_CODER_1_5B.name)

    assert recorded == [QWEN_CODER_1_5B.name, "big"]  # a run recorded before models were
    assert runs_file.commits() == ["a1"]
    check_one_model([QWEN_CODER_1_5B.name], QWEN_CODER_1_5B.name)
    with pytest.raises(SystemExit, match="holds runs of big"):
        check_one_model(recorded, QWEN_CODER_1_5B.name)


def test_a_model_url_whose_counters_cannot_be_read_ends_the_benchmark_saying_why() -> None:
    nothing_there = ChatServer(f"http://127.0.0.1:{free_port()}", "big")

    with pytest.raises(SystemExit, match="started with --metrics"):
        check_chat_server(nothing_there)


def test_a_metered_run_becomes_a_quality_run_unchanged() -> None:
    run = quality_run("ragloop", ANSWERABLE, "France [1].")
    metered = QueryRun(run.system, run.item, run.seconds, run.answered, run.server, {}, "")

    converted = QualityRun.of(metered)

    assert converted.quality_answer == run.answered and converted.correct


def test_a_support_sweep_refuses_answers_below_each_threshold_and_keeps_the_rest() -> None:
    right = quality_run("single", ANSWERABLE, "It is in France [1].", support=0.7)
    invented = quality_run("single", UNANSWERABLE, "Rollo did [1].", support=0.4)
    refused = quality_run("single", UNANSWERABLE, "The sources do not contain the answer.")
    unchecked = quality_run("single", ANSWERABLE, "It is in France [1].")  # no figure: stands

    low, middle, high = support_sweep([right, invented, refused, unchecked], (0.0, 0.5, 0.8))

    assert (low.answerable_right, low.unanswerable_refused, low.false_refusals) == (1, 0.5, 0)
    assert (middle.answerable_right, middle.unanswerable_refused, middle.overall) == (1, 1, 1)
    assert (high.answerable_right, high.false_refusals, high.overall) == (0.5, 0.5, 0.75)


def test_forget_drops_only_the_runs_of_the_parts_being_run(tmp_path: Path) -> None:
    runs_file = QualityRunsFile(tmp_path / "quality-runs.jsonl.xz")
    for run in (
        quality_run("ragloop", ANSWERABLE, "France [1]."),
        quality_run("ragloop", DECISION, "Yes [1]."),
        quality_run("baseline", DECISION, "Yes."),
    ):
        runs_file.append(run, {})

    prepare_runs_file(runs_file, parse_args(["--forget", "ragloop", "--parts", "pubmedqa"]))

    kept = [(run.system, run.item.dataset) for run in runs_file.runs()]
    assert kept == [("ragloop", SQUAD2), ("baseline", PUBMEDQA)]  # SQuAD is not made again


def test_a_lead_sweep_decides_yes_at_or_above_each_threshold() -> None:
    said_no = quality_run(
        "ragloop", DECISION, "No [1].", lead_probabilities={"yes": 0.7, "no": 0.3}
    )
    unscored = quality_run("ragloop", DECISION, "Yes [1].")  # keeps its recorded decision

    strict, lenient = lead_sweep([said_no, unscored], (0.8, 0.7))

    assert (strict.accuracy, strict.yes_share) == (0.5, 0.5)
    assert (lenient.accuracy, lenient.yes_share) == (1, 1)


def test_a_floor_sweep_refuses_answers_whose_round_1_passed_nothing_that_confident() -> None:
    def graded(best: float) -> tuple[RoundInfo, ...]:
        return (RoundInfo(1, "q", ("c1", "c2"), ("s1", "s2"), (), ("c1",), (best, 0.2)),)

    sure = quality_run("single", ANSWERABLE, "France [1].", support=0.9, rounds=graded(0.8))
    unsure = quality_run("single", ANSWERABLE, "France [1].", support=0.9, rounds=graded(0.55))
    invented = quality_run("single", UNANSWERABLE, "Rollo [1].", support=0.9, rounds=graded(0.55))
    unrecorded = quality_run("single", ANSWERABLE, "France [1].", support=0.9)  # no grades: stands

    off, floor = support_sweep([sure, unsure, invented, unrecorded], (0.0,), (0.0, 0.6))

    assert (off.floor, off.answerable_right, off.unanswerable_refused) == (0.0, 1, 0)
    assert floor.floor == 0.6 and floor.unanswerable_refused == 1
    assert floor.answerable_right == pytest.approx(2 / 3, abs=1e-4)
    assert (off.score, floor.score) == (0.5, 0.75)  # the invention refused, one right lost


def test_a_floor_sweep_leaves_a_choice_between_named_candidates_standing() -> None:
    choice = QualityItem(
        MULTIHOP,
        "c1",
        "Which came first, Rouen or Caen?",
        frozenset({"Rouen#0"}),
        answers=("Rouen",),
        answerable=True,
        wrong=("Caen",),
    )
    graded = (RoundInfo(1, "q", ("c1", "c2"), ("s1", "s2"), (), ("c1",), (0.55, 0.2)),)
    answer = "Rouen. It was founded first [1]."
    run = quality_run("single", choice, answer, rounds=graded, support=0.2)

    (row,) = support_sweep([run], (0.8,), (0.6,))

    assert (row.two_hop_right, row.two_hop_score) == (1, 1)


def test_an_answer_match_sweep_refuses_answers_below_each_threshold() -> None:
    right = quality_run("single", ANSWERABLE, "It is in France [1].", answer_match=0.45)
    invented = quality_run("single", UNANSWERABLE, "Rollo did [1].", answer_match=0.15)
    unchecked = quality_run("single", UNANSWERABLE, "Rollo did [1].")  # no figure: stands

    off, low, high = support_sweep([right, invented, unchecked], (0.0,), (0.0,), (0.0, 0.2, 0.5))

    assert (off.match_threshold, off.unanswerable_refused, off.answerable_right) == (0.0, 0, 1)
    assert (low.match_threshold, low.unanswerable_refused, low.answerable_right) == (0.2, 0.5, 1)
    assert (high.false_refusals, high.unanswerable_refused) == (1, 0.5)
