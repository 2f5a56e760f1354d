"""Split text into overlapping chunks on sentence boundaries."""

from __future__ import annotations

import re

from ragloop.core.text import split_sentences

HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


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


def markdown_sections(text: str) -> list[tuple[str, str]]:
    """Split at Markdown headings into (heading without its #s, body); plain text is one section."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        match = HEADING.match(line)
        if match:
            sections.append((match.group(1).strip(), []))
        else:
            sections[-1][1].append(line)
    return [
        (heading, "\n".join(body)) for heading, body in sections if heading or "".join(body).strip()
    ]


def chunk_text(text: str, *, size: int, overlap: int) -> list[str]:
    """Chunks of at most ``size`` characters that never straddle a Markdown section.

    Each chunk starts with its section's heading, so a passage carries its topic with it (a small
    model then reads "Storage > One owner for Milvus Lite" before the sentences). Within a
    section, sentences are packed with ``overlap`` characters carried into the next chunk.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    chunks: list[str] = []
    for heading, body in markdown_sections(text):
        title = heading[: size // 4]
        room = size - len(title) - 1 if title else size
        for packed in _pack_sentences(body, size=room, overlap=min(overlap, room - 1)):
            chunks.append(f"{title}\n{packed}" if title else packed)
        if title and not body.strip():
            chunks.append(title)
    return chunks


def _pack_sentences(text: str, *, size: int, overlap: int) -> list[str]:
    """Pack sentences into chunks of at most ``size`` characters.

    Each chunk after the first starts with the last sentences of the previous one, up to
    ``overlap`` characters, so that a fact spanning a boundary is whole in at least one chunk.
    """
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
