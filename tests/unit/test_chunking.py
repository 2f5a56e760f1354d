"""chunk_text: sentence packing, size limit, overlap, overlong units."""

from __future__ import annotations

import itertools

import pytest

from ragloop.core.text import split_sentences
from ragloop.retriever.chunking import chunk_text


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
