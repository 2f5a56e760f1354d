"""A two-hop question's described thing named from the passages found (decision 0022): what the
model's replies must be to restate the question, and the rewriter falling back to a search query
when they are not."""

from __future__ import annotations

import json

import pytest

from ragloop.core.domain import Grade, GradedDocument, ModelUsage
from ragloop.rewriter.resolution import (
    DESCRIPTION_SCHEMA,
    NAME_SCHEMA,
    describes,
    description_problem,
    name_problem,
    named_question,
    resolve_description,
)
from ragloop.rewriter.stage import ModelRewriter
from tests.unit.fakes import ScriptedChatModel, doc

QUESTION = "As far as which place did the Norman duke who killed King Harold II ride in Scotland?"
DESCRIPTION = "the Norman duke who killed King Harold II"
BRIDGE = doc("bridge", "William the Conqueror killed King Harold II at Hastings in 1066.")
FACT = doc("fact", "William rode as far as Abernethy, where he met his fleet.")


def found(*documents: object, relevant: bool = True) -> list[GradedDocument]:
    return [GradedDocument(d, Grade(d.id, relevant, 0.7, "")) for d in documents]  # type: ignore[attr-defined]


def resolving(model: ScriptedChatModel) -> ModelRewriter:
    return ModelRewriter(model, resolve_descriptions=True)


def described(description: str) -> str:
    return json.dumps({"description": description})


def named(name: str) -> str:
    return json.dumps({"answer": name})


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("the Norman duke who killed King Harold II", True),
        ("California's second most populous city", True),
        ("Cnut the Great", False),  # a name with "the" in it
        ("Enrique Pérez de Guzmán", False),
        ("Sky Italia", False),
        ("the engine", False),  # two words
    ],
)
def test_a_description_has_a_lowercase_word_that_names_do_not(phrase: str, expected: bool) -> None:
    assert describes(phrase) is expected


def test_a_description_must_be_the_questions_own_noun_phrase() -> None:
    assert description_problem(QUESTION, DESCRIPTION) == ""
    assert description_problem(QUESTION, DESCRIPTION.upper()) == ""  # case does not matter
    assert "names everything" in description_problem(QUESTION, "")
    assert "own words" in description_problem(QUESTION, "the duke who won at Hastings")
    assert "a question" in description_problem(QUESTION, "which place did the Norman duke")
    assert "a name" in description_problem(QUESTION, "King Harold II")


def test_a_name_must_be_the_passages_own_words_and_new_to_the_question() -> None:
    documents = [BRIDGE, FACT]
    assert name_problem(QUESTION, "William the Conqueror", documents) == ""
    assert "do not name" in name_problem(QUESTION, "", documents)
    assert "not the passages' own words" in name_problem(QUESTION, "Duke William", documents)
    assert "already in the question" in name_problem(QUESTION, "King Harold II", documents)
    assert "not a name" in name_problem(QUESTION, "William " * 9, [doc("x", "William " * 9)])


def test_the_name_takes_the_descriptions_place() -> None:
    assert named_question(QUESTION, DESCRIPTION.upper(), "William the Conqueror") == (
        "As far as which place did William the Conqueror ride in Scotland?"
    )


async def test_the_described_thing_is_named_from_the_passages_in_two_calls() -> None:
    model = ScriptedChatModel([described(DESCRIPTION), named("William the Conqueror")])

    resolution = await resolve_description(model, QUESTION, [BRIDGE, FACT])

    assert (
        resolution.question == "As far as which place did William the Conqueror ride in Scotland?"
    )
    assert resolution.name == "William the Conqueror"
    assert DESCRIPTION in resolution.reason and "William the Conqueror" in resolution.reason
    assert resolution.usage == ModelUsage("fake:chat", 2, 20, 6)
    first, second = model.calls
    assert first.json_schema == DESCRIPTION_SCHEMA and first.messages[-1].content.endswith(QUESTION)
    assert second.json_schema == NAME_SCHEMA
    assert f"Who or what is {DESCRIPTION}?" in second.text and BRIDGE.text in second.text


async def test_a_question_that_names_everything_costs_one_call() -> None:
    model = ScriptedChatModel([described("")])

    resolution = await resolve_description(model, "When did Apple release the iPhone?", [BRIDGE])

    assert resolution.question == "" and len(model.calls) == 1


async def test_a_reply_that_does_not_parse_leaves_the_question() -> None:
    model = ScriptedChatModel(["not json", "still not json"])

    resolution = await resolve_description(model, QUESTION, [BRIDGE])

    assert resolution.question == ""


async def test_the_rewriter_restates_the_question_when_passages_passed() -> None:
    model = ScriptedChatModel([described(DESCRIPTION), named("William the Conqueror")])

    rewrite = await resolving(model).rewrite(QUESTION, QUESTION, found(BRIDGE, FACT), [])

    assert (
        rewrite.query
        == rewrite.question
        == ("As far as which place did William the Conqueror ride in Scotland?")
    )
    assert rewrite.usage.calls == 2


async def test_an_unnamed_description_falls_back_to_a_search_query() -> None:
    model = ScriptedChatModel(
        [described(DESCRIPTION), named("Duke William"), json.dumps({"rewritten_query": "who won"})]
    )

    rewrite = await resolving(model).rewrite(QUESTION, QUESTION, found(BRIDGE), [])

    assert (rewrite.query, rewrite.question) == ("who won", "")
    assert rewrite.usage.calls == 3  # what the failed resolution cost is counted


async def test_failed_passages_alone_or_the_setting_off_get_a_search_query_only() -> None:
    for rewriter, failed in [
        (resolving, found(BRIDGE, relevant=False)),
        (ModelRewriter, found(BRIDGE)),  # off by default
    ]:
        model = ScriptedChatModel([json.dumps({"rewritten_query": "norman duke harold"})])
        rewrite = await rewriter(model).rewrite(QUESTION, QUESTION, failed, [])  # type: ignore[operator]
        assert (rewrite.query, rewrite.question, len(model.calls)) == ("norman duke harold", "", 1)
