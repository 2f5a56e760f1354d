"""The plain-text answer format: [n] markers parsed into checked citations, the refusal
recognised, and the streamed text equal to the answer's."""

from __future__ import annotations

import pytest

from ragloop.core.answers import NO_ANSWER
from ragloop.core.answers import without_markers as plain_text
from ragloop.core.domain import Answer, AnswerDelta
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from ragloop.generator.text_answer import TEXT_SYSTEM, attributed_source, parse_text_answer
from tests.unit.fakes import UNCHECKED, ScriptedChatModel, doc

DOCS = [doc("d1", "Normandy is a region in France."), doc("d2", "The Normans came in 911.")]


async def generate(reply: str, instructions: str = "") -> tuple[Answer, ScriptedChatModel]:
    model = ScriptedChatModel([reply])
    answer = await ModelGenerator(model, **UNCHECKED, answer_format=AnswerFormat.TEXT).generate(
        "Where is Normandy?", DOCS, instructions
    )
    return answer, model


async def test_markers_become_checked_citations() -> None:
    answer, model = await generate("Normandy is in France [1]. The Normans arrived in 911 [2].")

    # As in the JSON format, each sentence's markers follow it.
    assert answer.text == "Normandy is in France. [1] The Normans arrived in 911. [2]"
    assert [(c.number, c.document_id) for c in answer.citations] == [(1, "d1"), (2, "d2")]
    assert answer.grounded and answer.uncited_sentences == 0
    assert model.calls[0].json_schema is None
    assert model.calls[0].messages[0].content == TEXT_SYSTEM


async def test_a_marker_to_no_given_passage_is_removed_and_reported() -> None:
    answer, _ = await generate("Normandy is in France [1][7].")
    assert answer.text == "Normandy is in France. [1]"
    assert answer.removed_citations == [7] and answer.grounded


async def test_an_answer_without_markers_is_kept_but_not_grounded() -> None:
    answer, _ = await generate("Normandy is in France.")
    assert answer.text == "Normandy is in France."
    assert not answer.grounded and answer.citations == []
    assert answer.uncited_sentences == 1 and answer.hallucination_risk == 1.0


async def test_a_sentence_without_a_marker_cites_the_passage_it_shares_most_words_with() -> None:
    answer, _ = await generate("The Normans came to Normandy in 911. Normandy is in France [1].")
    assert answer.text == "The Normans came to Normandy in 911. [2] Normandy is in France. [1]"
    assert answer.grounded and answer.uncited_sentences == 0


def test_a_sentence_sharing_too_little_with_every_passage_cites_none() -> None:
    assert attributed_source("Normandy is in France.", DOCS) is None  # 2 words shared
    assert attributed_source("The Normans came in 911 [1].", DOCS) is None  # its marker cites
    assert attributed_source("The Normans came in 911.", DOCS) == 2


@pytest.mark.parametrize(
    "reply",
    [NO_ANSWER, f"{NO_ANSWER} [1]", "  the sources do not contain the answer to this", ""],
)
async def test_the_refusal_is_the_honest_no_answer(reply: str) -> None:
    answer, _ = await generate(reply)
    assert answer.text == NO_ANSWER and not answer.grounded and answer.citations == []


def test_a_sentence_that_merely_mentions_sources_is_not_a_refusal() -> None:
    draft = parse_text_answer("The sources say Normandy is in France [1].", DOCS)
    assert draft.answerable and len(draft.sentences) == 1


async def test_the_instructions_follow_the_question() -> None:
    answer, model = await generate("Yes, it is in France [1].", "Begin with yes or no.")
    user = model.calls[0].messages[1].content
    assert user.index("Question: Where is Normandy?") < user.index("Begin with yes or no.")
    assert answer.text.startswith("Yes")


async def test_the_answer_is_written_for_the_decision_taken() -> None:
    model = ScriptedChatModel(["yes", "It is in France [1]."])
    answer = await ModelGenerator(model, **UNCHECKED, answer_format=AnswerFormat.TEXT).generate(
        "Is Normandy in France?", DOCS, "Begin your answer with yes or no."
    )
    lead_call, answer_call = model.calls
    assert lead_call.max_tokens == 1  # the scored call that takes the decision
    # As in the JSON format, the answer prompt is told the decision, after the instructions,
    # and asked why (not for "the sentences this rests on", which a text writer copied).
    user = answer_call.messages[1].content
    assert user.index("Begin your answer with") < user.index(
        "Begin the answer with Yes, then say why"
    )
    assert answer.text == "Yes. It is in France. [1]"


async def stream(reply: str) -> list[AnswerDelta | Answer]:
    generator = ModelGenerator(
        ScriptedChatModel([reply], stream_piece_chars=4),
        **UNCHECKED,
        answer_format=AnswerFormat.TEXT,
    )
    return [item async for item in generator.generate_stream("Where is Normandy?", DOCS)]


async def test_streamed_pieces_build_the_answer_text() -> None:
    *deltas, answer = await stream("Normandy is in France [1].")
    assert isinstance(answer, Answer)
    assert all(isinstance(d, AnswerDelta) and not d.restart for d in deltas)
    assert plain_text("".join(d.text for d in deltas)) == plain_text(answer.text)


async def test_a_streamed_refusal_cut_short_is_replaced_by_the_whole_one() -> None:
    *deltas, answer = await stream("The sources do not contain the answer")
    assert isinstance(answer, Answer) and answer.text == NO_ANSWER
    last = deltas[-1]
    assert isinstance(last, AnswerDelta) and last.restart and last.text == NO_ANSWER


def test_text_is_the_default_format() -> None:
    assert ModelGenerator(ScriptedChatModel([]))._format is AnswerFormat.TEXT


async def test_an_answer_that_only_restates_the_question_is_refused() -> None:
    answer, _ = await generate("Normandy is where Normandy is [1].")
    assert answer.text == NO_ANSWER and answer.refused_by == "restated"
    assert not answer.grounded and answer.citations == []


async def test_an_answer_that_names_what_no_passage_names_is_refused() -> None:
    answer, _ = await generate("Normandy is set with the `--region` flag [1].")
    assert answer.text == NO_ANSWER and answer.refused_by == "unsourced_name"
    assert not answer.grounded and answer.citations == []


async def test_a_sentence_that_only_restates_the_question_is_left_out() -> None:
    answer, _ = await generate("Normandy is where Normandy is [1]. Normandy is in France [1].")
    assert answer.text == "Normandy is in France. [1]" and answer.refused_by == ""


async def test_an_answer_may_name_the_file_a_passage_comes_from() -> None:
    model = ScriptedChatModel(["Normandy is described in `docs/regions.md` [1]."])
    generator = ModelGenerator(model, **UNCHECKED, answer_format=AnswerFormat.TEXT)
    documents = [doc("d1", "Normandy is a region in France.", source="docs/regions.md")]
    answer = await generator.generate("Where is Normandy described?", documents)
    assert answer.refused_by == "" and "docs/regions.md" in answer.text
