"""The incremental extractor of the answer text from a streamed JSON reply, on every chunk
boundary: inside keys, escapes (\\", \\u00e9, surrogate pairs) and partial tokens."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from ragloop.core.answers import without_markers as plain_text
from ragloop.generator.answer_stream import AnswerTextStream
from ragloop.generator.citations import compose_answer
from ragloop.generator.draft import parse_draft
from ragloop.generator.incremental_json import JsonStringReader, StringPiece
from tests.unit.fakes import doc


def reply(*texts: str, answerable: bool = True, source: int = 1) -> dict[str, Any]:
    return {
        "answerable": answerable,
        "sentences": [{"source": source, "text": text} for text in texts],
    }


def expected_text(data: dict[str, Any]) -> str:
    """What the stream must produce: the drafted sentences joined as the answer joins them."""
    return " ".join(s.text for s in parse_draft(data).sentences)


def streamed(pieces: list[str]) -> tuple[str, list[str]]:
    stream = AnswerTextStream()
    out = [stream.feed(piece) for piece in pieces]
    return "".join(out), out


def split_at(text: str, *cuts: int) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


TRICKY = [
    reply("Only one process may open it.", "The retriever owns the data directory."),
    reply('She said "stop" and left.', "A back\\slash / and a tab\there."),
    reply("Café crème", "naïve façade"),
    reply("Emoji 😀 and 𝄞 clef."),
    reply("  leading and trailing  ", "inner   runs\nof\n\nwhite  space\t."),
    reply("", "   ", "After two empty sentences."),
    reply("[2] starts with a marker", "ends with one [1]", "[3]"),
    {"sentences": [{"text": "text before source", "source": 2}], "answerable": True},
    {"answerable": True, "text": "a top-level text is no sentence", "sentences": []},
    {"answerable": True, "sentences": [{"source": 1, "text": "x", "note": {"text": "nested"}}]},
    {"answerable": True, "sentences": [{"source": 1, 'te"xt': "odd key", "text": "kept"}]},
]


@pytest.mark.parametrize("ensure_ascii", [True, False], ids=["ascii-escapes", "raw-unicode"])
@pytest.mark.parametrize("data", TRICKY, ids=range(len(TRICKY)))
def test_every_two_piece_split_gives_the_answer_text(
    data: dict[str, Any], ensure_ascii: bool
) -> None:
    raw = json.dumps(data, ensure_ascii=ensure_ascii, indent=1)
    expected = expected_text(data)
    for cut in range(len(raw) + 1):
        text, _ = streamed(split_at(raw, cut))
        assert text == expected, f"split at {cut}: {raw[:cut]!r} | {raw[cut:]!r}"


@pytest.mark.parametrize("data", TRICKY, ids=range(len(TRICKY)))
def test_one_character_at_a_time_gives_the_answer_text(data: dict[str, Any]) -> None:
    raw = json.dumps(data)  # ASCII: every \uXXXX escape is cut at each of its characters
    text, _ = streamed(list(raw))
    assert text == expected_text(data)


def test_text_is_passed_on_before_its_string_ends() -> None:
    raw = json.dumps(reply("Only one process.", "Second."))
    cut = raw.index("process")
    text, out = streamed(split_at(raw, cut, cut + 4, raw.index("Second") + 3))

    # White space waits for the next visible character: a trailing one is never passed on.
    assert out == ["Only one", " proc", "ess. Sec", "ond."]
    assert text == "Only one process. Second."


def test_a_split_escape_waits_for_its_last_hex_digit() -> None:
    raw = '{"answerable": true, "sentences": [{"source": 1, "text": "caf\\u00e9 ok"}]}'
    cut = raw.index("\\u00e9") + 4  # after "\u00"
    _, out = streamed(split_at(raw, cut, cut + 1, cut + 2))

    assert out == ["caf", "", "é", " ok"]


def test_a_surrogate_pair_split_between_its_halves_is_one_character() -> None:
    raw = json.dumps(reply("a😀b"))  # "a\ud83d\ude00b"
    cut = raw.index("\\ude00")
    _, out = streamed(split_at(raw, cut))

    assert out == ["a", "😀b"]


def test_a_lone_surrogate_decodes_as_json_loads_does() -> None:
    raw = '{"sentences": [{"text": "x\\ud83dy"}]}'
    reader = JsonStringReader(lambda path: path[-1:] == ("text",))

    assert reader.feed(raw) == [
        StringPiece(("sentences", 0, "text"), json.loads(raw)["sentences"][0]["text"])
    ]


def test_only_sentence_texts_are_selected_with_their_paths() -> None:
    raw = json.dumps(reply("one", "two") | {"text": "not a sentence"})
    reader = JsonStringReader(lambda path: path[-1:] == ("text",))

    assert reader.feed(raw) == [
        StringPiece(("sentences", 0, "text"), "one"),
        StringPiece(("sentences", 1, "text"), "two"),
        StringPiece(("text",), "not a sentence"),
    ]


def test_random_replies_in_random_pieces() -> None:
    rng = random.Random(20261122)
    alphabet = 'ab xyz .,;:"\\/\n\t\r\b\f{}[]é中😀\u2028\u00a0'
    for _ in range(300):
        texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(3)]
        data = reply(*texts)
        raw = json.dumps(data, ensure_ascii=rng.random() < 0.5)
        cuts = sorted(rng.sample(range(len(raw) + 1), k=min(len(raw), rng.randint(1, 12))))
        text, _ = streamed(split_at(raw, *cuts))
        assert text == expected_text(data), raw


@pytest.mark.parametrize(
    "texts",
    [
        ("Milvus Lite [1] has one owner.", "The retriever [2] owns it."),
        ("[1] Markers first.", "Markers last [1]", "[3]"),
        ("No markers at all.",),
    ],
)
def test_streamed_text_equals_the_composed_answer_without_markers(texts: tuple[str, ...]) -> None:
    data = reply(*texts)
    text, _ = streamed(list(json.dumps(data)))
    answer = compose_answer(parse_draft(data), [doc("d1"), doc("d2")])

    assert plain_text(text) == plain_text(answer.text)
