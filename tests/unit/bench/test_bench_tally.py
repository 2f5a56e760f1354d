"""The benchmark's count of malformed model output, against the real stages and a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.common import read_results, write_results
from bench.models import tally_totals
from bench.pubmedqa import DECISION_INSTRUCTION, DecisionGenerator
from bench.stages import CountingRewriter, Tally
from ragloop.generator.prompts import INSTRUCTIONS_LABEL, unstated_decision
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from ragloop.grader.stage import GradingMode, ModelGrader
from ragloop.rewriter.stage import ModelRewriter
from tests.unit.fakes import ScriptedChatModel, doc

ANSWER = json.dumps({"answerable": True, "sentences": [{"source": 1, "text": "Yes, it does."}]})
REWRITE = json.dumps({"rewritten_query": "mitochondria lace plant", "reason": "r", "keywords": []})


@pytest.fixture
def tally() -> Tally:
    return Tally()


async def test_an_answer_no_reply_of_which_parsed_is_a_failure(tally: Tally) -> None:
    generator = DecisionGenerator(
        ModelGenerator(
            ScriptedChatModel(["yes", "{oops", "nope"]), answer_format=AnswerFormat.JSON
        ),
        tally,
    )
    answer = await generator.generate("Q?", [doc("d1")])
    assert answer.text == unstated_decision("yes")  # the scored decision, without sentences
    assert (tally.failures, tally.replies.count) == (1, 2)


async def test_a_repaired_answer_is_no_failure_and_the_generator_gets_the_instruction(
    tally: Tally,
) -> None:
    model = ScriptedChatModel(["yes", "{oops", ANSWER])
    answer = await DecisionGenerator(
        ModelGenerator(model, answer_format=AnswerFormat.JSON), tally
    ).generate("Q?", [doc("d1")])
    assert answer.text.startswith("Yes")
    assert (tally.failures, tally.replies.count) == (0, 1)
    prompt = model.calls[1].text  # after the scored call that chose the lead
    assert "Question: Q?\n" in prompt  # the question unchanged
    assert f"{INSTRUCTIONS_LABEL}: {DECISION_INSTRUCTION}\n" in prompt


async def test_the_loops_instructions_come_before_the_decision_instruction(tally: Tally) -> None:
    model = ScriptedChatModel(["yes", ANSWER])
    generator = DecisionGenerator(ModelGenerator(model, answer_format=AnswerFormat.JSON), tally)
    await generator.generate("Q?", [doc("d1")], "Answer in French.")
    assert f"{INSTRUCTIONS_LABEL}: Answer in French. {DECISION_INSTRUCTION}\n" in (
        model.calls[1].text
    )


async def test_a_rewrite_that_kept_the_query_for_want_of_a_parse_is_a_failure(
    tally: Tally,
) -> None:
    bad = CountingRewriter(ModelRewriter(ScriptedChatModel(["x", "y"])), tally)
    assert (await bad.rewrite("Q?", "Q?", [], [])).query == "Q?"
    good = CountingRewriter(ModelRewriter(ScriptedChatModel([REWRITE])), tally)
    assert (await good.rewrite("Q?", "Q?", [], [])).query == "mitochondria lace plant"
    assert tally.failures == 1


async def test_grader_fallbacks_and_failures_come_from_its_counters(tally: Tally) -> None:
    grader = ModelGrader(ScriptedChatModel(["bad", "worse"]), mode=GradingMode.PER_DOCUMENT)
    result = await grader.grade("Q?", [doc("d1")])
    assert not result.grades[0].relevant
    tally.add_grader(grader)
    assert (tally.failures, tally.batch_fallbacks, tally.replies.count) == (1, 0, 2)


def test_runs_of_single_parts_add_up_to_the_whole_benchmark_counts(tmp_path: Path) -> None:
    output = tmp_path / "models.json"
    write_results(output, tally_totals({"malformed_output_failures_accuracy": 1, "date": "d1"}))
    again = {"malformed_output_failures_pubmedqa": 2, "unparseable_replies_pubmedqa": 5}
    merged = tally_totals(read_results(output) | again | {"date": "d2"})

    assert merged["malformed_output_failures"] == 3
    assert merged["unparseable_replies"] == 5
    assert merged["grader_batch_fallbacks"] == 0
    assert merged["date"] == "d2"
