"""Instructions that name the answer's first word: the JSON reply's ``lead`` is limited to those
words and the answer begins with it."""

from __future__ import annotations

import json

import pytest

from ragloop.generator.leads import required_lead, with_lead
from ragloop.generator.prompts import ANSWER_SCHEMA, answer_schema
from ragloop.generator.stage import ModelGenerator
from tests.unit.fakes import ScriptedChatModel, doc


@pytest.mark.parametrize(
    ("instructions", "leads"),
    [
        ("Begin your answer with yes, no or maybe.", ("yes", "no", "maybe")),
        ("Answer in French. Start the answer with 'oui' or 'non'.", ("oui", "non")),
        ("begin your reply with one of: true/false", ()),  # a colon ends the clause: no list
        ("Begin the answer with True or False", ("true", "false")),
        ("Begin your answer with a short summary of the findings.", ()),
        ("Answer in French.", ()),
        ("", ()),
        ("Begin your answer with yes.", ()),  # one word is no choice
    ],
)
def test_the_words_an_answer_must_begin_with(instructions: str, leads: tuple[str, ...]) -> None:
    assert required_lead(instructions) == leads


def test_the_schema_asks_for_a_lead_only_when_there_are_words() -> None:
    assert answer_schema(()) == ANSWER_SCHEMA
    schema = answer_schema(("yes", "no"))
    assert list(schema["properties"])[-1] == "lead"  # chosen after the sentences are written
    assert schema["properties"]["lead"] == {"enum": ["yes", "no"]}
    assert schema["required"][-1] == "lead"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes, it does. [1]", "Yes, it does. [1]"),
        ("It does. [1]", "Yes. It does. [1]"),
        ("'yes' - it does.", "'yes' - it does."),
    ],
)
def test_an_answer_begins_with_its_lead_once(text: str, expected: str) -> None:
    assert with_lead("yes", text) == expected


async def test_the_generator_begins_the_answer_with_the_chosen_lead() -> None:
    reply = {
        "lead": "no",
        "answerable": True,
        "sentences": [{"source": 1, "text": "The trial found no effect."}],
    }
    model = ScriptedChatModel([json.dumps(reply)])
    answer = await ModelGenerator(model).generate(
        "Does it work?", [doc("d1")], "Begin your answer with yes, no or maybe."
    )
    assert answer.text == "No. The trial found no effect. [1]"
    assert model.calls[0].json_schema == answer_schema(("yes", "no", "maybe"))


async def test_a_refusal_keeps_no_lead() -> None:
    reply = {"lead": "maybe", "answerable": False, "sentences": []}
    model = ScriptedChatModel([json.dumps(reply)])
    answer = await ModelGenerator(model).generate(
        "Does it work?", [doc("d1")], "Begin your answer with yes, no or maybe."
    )
    assert answer.text.startswith("The sources do not contain") and not answer.grounded
