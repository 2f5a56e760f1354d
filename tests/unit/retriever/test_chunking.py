"""chunk_text and Chunker: sentence packing, size limit, overlap, overlong units, Markdown
sections, text fed in pieces, and sizes in characters or in the embedding model's tokens."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from pydantic import ValidationError

from ragloop.core.errors import ConfigurationError
from ragloop.core.models.embeddings import OnnxMiniLMEmbedder, load_minilm_tokenizer
from ragloop.core.text import split_sentences
from ragloop.retriever.chunking import MAX_PENDING_CHARS, Chunker, Tokens, chunk_text
from ragloop.retriever.settings import RetrieverSettings
from ragloop.retriever.stage import chunk_measure


def prose(count: int) -> str:
    """Sentences of varying length, each unique so it can be found again."""
    fillers = ["", " with a few more words", " and then something rather longer than before"]
    return " ".join(f"Sentence {n} is here{fillers[n % 3]}." for n in range(count))


def test_short_text_is_one_chunk() -> None:
    text = "Milvus stores vectors.  It is fast.\n\nIt scales."
    assert chunk_text(text, size=200, overlap=20) == [
        "Milvus stores vectors. It is fast. It scales."
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\n \t\n"])
def test_empty_text_gives_no_chunks(text: str) -> None:
    assert chunk_text(text, size=100, overlap=10) == []


@pytest.mark.parametrize(("size", "overlap"), [(40, 0), (80, 30), (120, 60), (500, 100)])
def test_every_chunk_fits_the_size(size: int, overlap: int) -> None:
    text = prose(40) + " " + "x" * (size * 2 + 7) + " " + " ".join(["word"] * 60) + "."
    chunks = chunk_text(text, size=size, overlap=overlap)

    assert len(chunks) > 1
    assert all(0 < len(c) <= size for c in chunks), [len(c) for c in chunks]


def test_consecutive_chunks_share_text_when_overlap_is_positive() -> None:
    text = prose(30)
    chunks = chunk_text(text, size=200, overlap=80)  # every sentence <= 80 chars

    assert len(chunks) > 2
    for previous, following in itertools.pairwise(chunks):
        before, after = split_sentences(previous), split_sentences(following)
        # Each chunk starts with the last sentence(s) of the previous one, at most 80 chars.
        assert after[0] in before, (previous, following)
        shared = before[before.index(after[0]) :]
        assert after[: len(shared)] == shared
        assert len(" ".join(shared)) <= 80
        assert len(after) > len(shared)  # and then moves on


def test_no_shared_text_without_overlap() -> None:
    text = prose(30)
    chunks = chunk_text(text, size=120, overlap=0)

    assert len(chunks) > 2
    sentences_per_chunk = [split_sentences(c) for c in chunks]
    flat = [s for sentences in sentences_per_chunk for s in sentences]
    assert flat == split_sentences(text)  # every sentence exactly once, in order


@pytest.mark.parametrize(("size", "overlap"), [(70, 0), (90, 40), (200, 120)])
def test_no_sentence_is_lost(size: int, overlap: int) -> None:
    text = prose(25)  # the longest sentence has 65 characters: none needs cutting
    chunks = chunk_text(text, size=size, overlap=overlap)

    for sentence in split_sentences(text):
        assert any(sentence in chunk for chunk in chunks), sentence
    # And in order: the first chunk opens the text, the last closes it.
    assert text.startswith(chunks[0])
    assert text.endswith(chunks[-1])


def test_overlong_word_is_cut_at_character_boundaries() -> None:
    word = "".join(chr(ord("a") + i % 26) for i in range(250))
    chunks = chunk_text(word, size=100, overlap=20)

    assert chunks == [word[:100], word[100:200], word[200:]]


def test_overlong_sentence_is_cut_at_word_boundaries() -> None:
    words = [f"w{n:02d}" for n in range(40)]  # 4 characters each
    sentence = " ".join(words) + "."
    chunks = chunk_text(sentence, size=30, overlap=0)

    assert len(chunks) > 1
    assert all(len(c) <= 30 for c in chunks)
    # No word is split and none is lost or duplicated.
    assert " ".join(chunks).split() == sentence.split()


def test_overlong_sentence_between_short_ones_keeps_everything() -> None:
    long_sentence = " ".join(["alpha"] * 30) + "."
    text = f"First short one. {long_sentence} Last short one."
    chunks = chunk_text(text, size=50, overlap=0)

    assert all(len(c) <= 50 for c in chunks)
    assert " ".join(chunks).split() == text.split()


@pytest.mark.parametrize(("size", "overlap"), [(100, 100), (100, 150), (10, 11)])
def test_overlap_not_smaller_than_size_is_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("Some text.", size=size, overlap=overlap)


def test_markdown_sections_are_chunked_apart_and_carry_their_heading() -> None:
    text = (
        "# Storage\n\nIntro about storage.\n\n## One owner\n\nOnly one process may open it. "
        "The retriever owns it.\n\n## Empty\n\n### Deep heading ###\nDeep text."
    )
    chunks = chunk_text(text, size=200, overlap=20)
    assert chunks == [
        "Storage\nIntro about storage.",
        "One owner\nOnly one process may open it. The retriever owns it.",
        "Empty",
        "Deep heading\nDeep text.",
    ]


def test_a_long_section_repeats_its_heading_in_every_chunk() -> None:
    body = " ".join(f"Sentence {i} is here." for i in range(40))
    chunks = chunk_text(f"## Topic\n{body}", size=120, overlap=0)
    assert len(chunks) > 3
    assert all(c.startswith("Topic\n") and len(c) <= 120 for c in chunks)


# --- Markdown tables ------------------------------------------------------------------------


def markdown_table(rows: int, header: str = "| Tea | Origin | Price |") -> str:
    lines = [header, "|:---|:---:|---:|"]
    lines += [f"| Tea {n} | Garden {n} | {n}.50 |" for n in range(rows)]
    return "\n".join(lines)


def test_a_table_that_fits_stays_whole_in_one_chunk_with_its_lines() -> None:
    table = markdown_table(4)  # 154 characters
    after = "Prices are per kilogram. They change with every harvest, twice a year."
    chunks = chunk_text(f"# Teas\n\n{prose(3)}\n\n{table}\n{after}", size=200, overlap=60)
    assert chunks == [
        f"Teas\n{prose(3)}",  # the table does not fit after these sentences: it starts a chunk
        f"Teas\n{table}\nPrices are per kilogram.",
        f"Teas\n{after}",  # the overlap carries the sentence, never the table
    ]


def test_a_table_longer_than_a_chunk_is_cut_between_rows_repeating_its_header() -> None:
    table = markdown_table(30)
    chunks = chunk_text(f"## Price list\n{table}\n\nThe end.", size=150, overlap=40)
    head = "Price list\n| Tea | Origin | Price |\n|:---|:---:|---:|\n"
    assert len(chunks) > 5 and all(len(c) <= 150 for c in chunks)
    assert all(c.startswith(head) for c in chunks[:-1])
    assert chunks[-1] == "Price list\nThe end."
    rows = [line for c in chunks[:-1] for line in c.removeprefix(head).splitlines()]
    assert rows == table.splitlines()[2:]  # every row once, in order


def test_a_row_too_long_to_follow_the_header_is_a_chunk_of_its_own() -> None:
    long_row = "| " + " ".join(["word"] * 40) + " | x |"  # 207 characters
    text = f"| A | B |\n|---|---|\n| 1 | 2 |\n{long_row}\n| 3 | 4 |"
    chunks = chunk_text(text, size=120, overlap=0)
    assert chunks[0] == "| A | B |\n|---|---|\n| 1 | 2 |"
    assert all(len(c) <= 120 for c in chunks)
    assert chunks[-1].endswith(" | x |\n| A | B |\n|---|---|\n| 3 | 4 |")
    rest = f"{long_row}\n| A | B |\n|---|---|\n| 3 | 4 |"
    assert " ".join(chunks[1:]).split() == rest.split()  # the long row cut at words, all kept


def test_a_table_ends_at_the_first_line_that_is_no_row() -> None:
    text = (
        "Before.\n| a | b |\n| --- | --- |\n|  1  |  2  |\nAfter, no blank line.\n"
        "| c |\n|---|\n# Next\n| d |\n|---|"
    )
    assert chunk_text(text, size=300, overlap=0) == [
        "Before.\n| a | b |\n| --- | --- |\n| 1 | 2 |\nAfter, no blank line.\n| c |\n|---|",
        "Next\n| d |\n|---|",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "| not a table\nwithout a separator.",
        "| a | b |\n---\nA thematic break is no separator.",
        "| a | b |\n|---|---| and more\nNot a separator either.",
    ],
)
def test_pipes_without_a_separator_row_are_text(text: str) -> None:
    assert chunk_text(text, size=300, overlap=0) == [" ".join(text.split())]


# --- text in pieces -------------------------------------------------------------------------

MARKDOWN = (
    "Preamble line one.\r\nStill the preamble! Yes.\n\n# Storage\n\nOnly one process may open "
    "it. The retriever owns it.\n  \n## Deep ##\rDeep text here. 42 is a number.\u2028More.\n"
    + prose(30)
    + "\n\n### Empty\n\n## Table\n"
    + markdown_table(12)
    + "\n## Last\nThe end."
)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(("size", "overlap"), [(60, 0), (120, 40), (400, 100)])
def test_text_fed_in_pieces_gives_the_same_chunks_as_whole(
    seed: int, size: int, overlap: int
) -> None:
    rng = random.Random(seed)
    chunker = Chunker(size=size, overlap=overlap)
    chunks: list[str] = []
    start = 0
    while start < len(MARKDOWN):  # pieces end anywhere: mid-word, between "\r" and "\n"...
        end = start + rng.randint(1, 40)
        chunks += chunker.feed(MARKDOWN[start:end])
        start = end
    chunks += chunker.close()
    assert chunks == chunk_text(MARKDOWN, size=size, overlap=overlap)
    assert any(c.startswith("Deep\n") for c in chunks) and "Empty" in chunks
    if size >= 120:
        table_head = "Table\n| Tea | Origin | Price |\n|:---|:---:|---:|\n| Tea 0 |"
        assert any(c.startswith(table_head) for c in chunks)


def test_chunks_come_out_while_text_still_arrives() -> None:
    # One line, no sentence end, no paragraph break: the worst case for holding text back.
    words = (f"word{n}" for n in range(400_000))
    chunker = Chunker(size=1000, overlap=100)
    emitted = 0
    for _ in range(100):
        piece = " ".join(next(words) for _ in range(4000)) + " "
        emitted += len(chunker.feed(piece))
    rest = chunker.close()
    # All but the last few chunks were out before the text ended: what is held back is bounded.
    assert emitted > 3000 and len(rest) <= 100
    held_back = sum(len(c) for c in rest)
    assert held_back < 2 * MAX_PENDING_CHARS


def test_a_long_line_without_breaks_loses_no_word() -> None:
    text = " ".join(f"w{n}" for n in range(60_000))  # longer than MAX_PENDING_CHARS, one line
    chunks = chunk_text(text, size=500, overlap=0)
    assert " ".join(chunks).split() == text.split()


# --- tokens ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_minilm_tokenizer()


def token_count(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize(("size", "overlap"), [(16, 0), (40, 10), (128, 32)])
def test_token_chunks_fit_the_size_in_the_models_own_tokens(
    tokenizer: Any, size: int, overlap: int
) -> None:
    text = MARKDOWN + " Straße, naïve café — 東京 tokens. " + "Antidisestablishmentarianism " * 20
    chunks = chunk_text(text, size=size, overlap=overlap, measure=Tokens(tokenizer))
    counts = [token_count(tokenizer, c) for c in chunks]
    assert len(chunks) > 3
    assert all(0 < n <= size for n in counts), counts
    assert max(counts) > size // 2  # packed, not one sentence each
    assert any(c.startswith("Storage\n") for c in chunks)


def test_a_table_is_measured_in_tokens_too(tokenizer: Any) -> None:
    table = markdown_table(3)
    assert chunk_text(f"## Teas\n{table}", size=64, overlap=8, measure=Tokens(tokenizer)) == [
        f"Teas\n{table}"
    ]
    long_table = f"## Teas\n{markdown_table(20)}"
    chunks = chunk_text(long_table, size=64, overlap=8, measure=Tokens(tokenizer))
    assert len(chunks) > 2 and all(token_count(tokenizer, c) <= 64 for c in chunks)
    assert all(c.startswith("Teas\n| Tea | Origin | Price |\n") for c in chunks)


def test_token_and_character_units_differ_as_expected(tokenizer: Any) -> None:
    text = prose(60)
    by_characters = chunk_text(text, size=400, overlap=0)
    by_tokens = chunk_text(text, size=100, overlap=0, measure=Tokens(tokenizer))
    # These sentences hold about 4.5 characters per word piece, so 100 tokens ≈ 450 characters.
    assert all(len(c) <= 400 for c in by_characters)
    assert any(len(c) > 400 for c in by_tokens)
    assert " ".join(by_tokens).split() == text.split()


def test_a_word_longer_than_the_size_is_cut_at_a_token_boundary(tokenizer: Any) -> None:
    word = "pneumonoultramicroscopicsilicovolcanoconiosis" * 2  # 90 characters, many pieces
    chunks = chunk_text(word, size=8, overlap=0, measure=Tokens(tokenizer))
    assert "".join(chunks) == word
    assert all(token_count(tokenizer, c) <= 8 for c in chunks)


class OtherEmbedder:
    """An embedding model whose tokenizer ragloop does not have (never asked to embed)."""

    name = "ollama:nomic-embed-text"
    dimension = 768

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("not expected to embed")


def test_the_model_limit_for_token_chunks_is_enforced() -> None:
    embedder = OnnxMiniLMEmbedder()
    assert chunk_measure("tokens", embedder, 254).unit == "tokens"
    assert chunk_measure("characters", embedder, 8000).unit == "characters"
    with pytest.raises(ConfigurationError, match=r"256 word pieces.*at most 254"):
        chunk_measure("tokens", embedder, 255)
    with pytest.raises(ConfigurationError, match="tokenizer"):
        chunk_measure("tokens", OtherEmbedder(), 100)


def test_chunk_settings_are_checked_per_unit() -> None:
    assert RetrieverSettings(chunk_unit="tokens", chunk_size=16, chunk_overlap=4).chunk_size == 16
    with pytest.raises(ValidationError, match="at least 100 characters"):
        RetrieverSettings(chunk_size=50, chunk_overlap=10)
    with pytest.raises(ValidationError, match="chunk_size"):
        RetrieverSettings(chunk_unit="tokens", chunk_size=8, chunk_overlap=0)
