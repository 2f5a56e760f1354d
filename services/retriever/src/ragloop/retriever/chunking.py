"""Split text into overlapping chunks on sentence boundaries."""

from __future__ import annotations

from ragloop.core.text import split_sentences


def _split_long(unit: str, size: int) -> list[str]:
    """Cut a unit longer than ``size`` at word boundaries (mid-word only as a last resort)."""
    pieces: list[str] = []
    current = ""
    for word in unit.split(" "):
        while len(word) > size:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:size])
            word = word[size:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > size:
            pieces.append(current)
            current = word
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def chunk_text(text: str, *, size: int, overlap: int) -> list[str]:
    """Pack sentences into chunks of at most ``size`` characters.

    Each chunk after the first starts with the last sentences of the previous one, up to
    ``overlap`` characters, so that a fact spanning a boundary is whole in at least one chunk.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    units: list[str] = []
    for sentence in split_sentences(text):
        units.extend(_split_long(sentence, size) if len(sentence) > size else [sentence])

    chunks: list[str] = []
    current: list[str] = []
    for unit in units:
        if current and len(" ".join([*current, unit])) > size:
            chunks.append(" ".join(current))
            carried: list[str] = []
            for previous in reversed(current):
                candidate = [previous, *carried]
                if len(" ".join(candidate)) > overlap or len(" ".join([*candidate, unit])) > size:
                    break
                carried = candidate
            current = carried
        current.append(unit)
    if current:
        chunks.append(" ".join(current))
    return chunks
