"""The Markdown of uploaded files (``ragloop.orchestrator.file_to_markdown``) in spooled temporary
files, so that no upload's text is ever whole in memory; the text is then sent in pieces."""

from __future__ import annotations

import io
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import BinaryIO

from ragloop.core.errors import InvalidInput
from ragloop.orchestrator.file_to_markdown import to_markdown

SPOOL_MAX_BYTES = 1024 * 1024  # extracted text beyond this goes to disk
PIECE_CHARS = 256 * 1024


class ExtractedText:
    """The text of one file in a spooled temporary file (memory up to 1 MiB, then disk)."""

    def __init__(self, name: str, max_chars: int) -> None:
        self.name = name
        self.chars = 0
        self.has_text = False
        self._max_chars = max_chars
        # newline="" keeps line ends as they are; the chunker understands all of them.
        self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed by close()
            max_size=SPOOL_MAX_BYTES, mode="w+", encoding="utf-8", newline=""
        )

    def write(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self._max_chars:
            raise InvalidInput(f"{self.name}: its text is longer than {self._max_chars} characters")
        self.has_text = self.has_text or (bool(text) and not text.isspace())
        self._file.write(text)

    async def pieces(self, size: int = PIECE_CHARS) -> AsyncIterator[str]:
        self._file.seek(0)
        while piece := self._file.read(size):
            yield piece

    def read(self) -> str:
        self._file.seek(0)
        return self._file.read()

    def close(self) -> None:
        self._file.close()


def extract(filename: str, data: BinaryIO, *, max_chars: int) -> ExtractedText:
    """The Markdown of an uploaded file, chosen by its extension. InvalidInput when unreadable,
    empty, longer than ``max_chars`` characters or (an archive format) unpacking to more than
    ``max_chars`` bytes: guards against files that unpack to far more than their size.
    UnsupportedFileType for other extensions. The caller closes the result."""
    text = ExtractedText(filename, max_chars)
    try:
        for piece in to_markdown(filename, data, max_unpacked=max_chars):
            text.write(piece)
        if not text.has_text:
            raise InvalidInput(f"{filename}: no text found")
    except BaseException:
        text.close()
        raise
    return text


def extract_text(filename: str, data: bytes) -> str:
    """The Markdown of a small file held in memory (see :func:`extract`)."""
    text = extract(filename, io.BytesIO(data), max_chars=sys.maxsize)
    try:
        return text.read()
    finally:
        text.close()
