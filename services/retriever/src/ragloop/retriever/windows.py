"""A found passage's window: the passage with its neighbouring chunks of the same source joined
back into one text, for the generator (decision 0011). Pure logic; the store fetches the chunks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ragloop.core.domain import Document

MAX_WINDOW_CHUNKS = 3  # neighbours on each side; more would not fit the generator's budget

ChunkKey = tuple[str, int]  # (source, chunk index)


def neighbour_keys(documents: Iterable[Document], radius: int) -> set[ChunkKey]:
    """The chunks within ``radius`` of each document, the documents' own chunks excluded."""
    own = {(d.source, d.chunk_index) for d in documents}
    wanted = {
        (source, index + step)
        for source, index in own
        for step in range(-radius, radius + 1)
        if index + step >= 0
    }
    return wanted - own


def join_chunks(first: str, second: str) -> str:
    """Two consecutive chunks of a source as one text: the second's repeated section heading and
    the sentences it carried over from the first (the chunker's overlap) are not repeated."""
    heading, _, _ = first.partition("\n")
    if "\n" in first and second.startswith(heading + "\n"):
        second = second[len(heading) + 1 :]
    for start in range(len(second), 0, -1):
        if first.endswith(second[:start]) and (start == len(second) or second[start] in " \n"):
            second = second[start:].lstrip(" ")
            break
    if not second:
        return first
    return first + ("" if second.startswith("\n") else " ") + second


def with_windows(
    documents: list[Document], chunks: Mapping[ChunkKey, str], radius: int
) -> list[Document]:
    """``documents`` with ``window`` set where a neighbour within ``radius`` was found: the
    contiguous run of chunks around the document's own, joined. ``chunks`` holds the neighbours'
    texts (the documents' own texts are taken from the documents)."""
    texts = dict(chunks) | {(d.source, d.chunk_index): d.text for d in documents}
    windowed: list[Document] = []
    for doc in documents:
        window = doc.text
        for index in range(doc.chunk_index - 1, doc.chunk_index - radius - 1, -1):
            if (text := texts.get((doc.source, index))) is None:
                break
            window = join_chunks(text, window)
        for index in range(doc.chunk_index + 1, doc.chunk_index + radius + 1):
            if (text := texts.get((doc.source, index))) is None:
                break
            window = join_chunks(window, text)
        windowed.append(replace(doc, window=window) if window != doc.text else doc)
    return windowed
