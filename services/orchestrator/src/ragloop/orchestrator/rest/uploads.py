"""Text out of uploaded files: .txt and .md as UTF-8, .html through the standard library's HTML
parser (scripts and styles dropped, blocks on their own lines), .pdf through pypdf.

Files are read in blocks (PDFs page by page) and their text is written to a spooled temporary
file, so an upload of any size is never whole in memory; the text is then sent in pieces.
"""

from __future__ import annotations

import codecs
import io
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from html.parser import HTMLParser
from pathlib import PurePath
from typing import BinaryIO

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from ragloop.core.errors import InvalidInput


class UnsupportedFileType(InvalidInput):
    """A file whose extension ragloop cannot read."""


READ_BLOCK_BYTES = 1024 * 1024
SPOOL_MAX_BYTES = 1024 * 1024  # extracted text beyond this goes to disk
PIECE_CHARS = 256 * 1024

SKIPPED_TAGS = {"script", "style", "noscript", "template", "head"}
BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
    "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "dt", "dd",
}  # fmt: skip


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


class _Tidier:
    """Collapses runs of spaces and tabs, trims lines and keeps at most one blank line between
    lines, for text that arrives in pieces (held back: only the unfinished line)."""

    SPACES = re.compile(r"[ \t\r\f\v\xa0]+")

    def __init__(self, out: ExtractedText) -> None:
        self._out = out
        self._unfinished: list[str] = []  # pieces of the line not ended yet
        self._wrote = False
        self._blank_pending = False

    def feed(self, text: str) -> None:
        first, *lines = text.split("\n")
        self._unfinished.append(first)
        if not lines:
            return
        *finished, last = lines
        for line in ["".join(self._unfinished), *finished]:
            self._line(line)
        self._unfinished = [last]

    def close(self) -> None:
        self._line("".join(self._unfinished))
        self._unfinished = []

    def _line(self, line: str) -> None:
        tidy = self.SPACES.sub(" ", line).strip()
        if not tidy:
            self._blank_pending = self._wrote
            return
        separator = ("\n\n" if self._blank_pending else "\n") if self._wrote else ""
        self._out.write(separator + tidy)
        self._wrote, self._blank_pending = True, False


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)

    def take(self) -> str:
        text = "".join(self.parts)
        self.parts.clear()
        return text


def _decoded(name: str, data: BinaryIO) -> Iterator[str]:
    """The UTF-8 text of ``data`` block by block, without a leading byte order mark."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # of the next block
    first = True
    while True:
        block = data.read(READ_BLOCK_BYTES)
        held = len(decoder.getstate()[0])  # bytes of a character split by the previous block
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            position = offset - held + exc.start
            raise InvalidInput(f"{name}: not UTF-8 text (byte {position})") from None
        offset += len(block)
        if first and text:
            text, first = text.removeprefix("\ufeff"), False
        yield text
        if not block:
            return


def _plain(name: str, data: BinaryIO, out: ExtractedText) -> None:
    for text in _decoded(name, data):
        out.write(text)


def _html(name: str, data: BinaryIO, out: ExtractedText) -> None:
    parser = _TextExtractor()
    tidier = _Tidier(out)
    for text in _decoded(name, data):
        parser.feed(text)
        tidier.feed(parser.take())
    parser.close()
    tidier.feed(parser.take())
    tidier.close()


def _pdf(name: str, data: BinaryIO, out: ExtractedText) -> None:
    tidier = _Tidier(out)
    try:
        reader = PdfReader(data)
        if reader.is_encrypted:
            raise InvalidInput(f"{name}: the PDF is encrypted")
        for number, page in enumerate(reader.pages):
            tidier.feed(("\n\n" if number else "") + (page.extract_text() or ""))
    except InvalidInput:
        raise
    except (PdfReadError, ValueError, KeyError) as exc:
        raise InvalidInput(f"{name}: not a readable PDF ({exc})") from None
    tidier.close()


READERS: dict[str, Callable[[str, BinaryIO, ExtractedText], None]] = {
    ".txt": _plain,
    ".md": _plain,
    ".markdown": _plain,
    ".html": _html,
    ".htm": _html,
    ".pdf": _pdf,
}


def extract(filename: str, data: BinaryIO, *, max_chars: int) -> ExtractedText:
    """The text of an uploaded file, chosen by its extension, read from ``data`` in blocks.
    InvalidInput when unreadable, empty or longer than ``max_chars`` characters (a guard
    against PDFs that unpack to far more text than their size), UnsupportedFileType for other
    extensions. The caller closes the result."""
    suffix = PurePath(filename).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise UnsupportedFileType(
            f"{filename}: cannot read {suffix or 'files without an extension'}; "
            f"upload one of {', '.join(sorted(READERS))}"
        )
    text = ExtractedText(filename, max_chars)
    try:
        reader(filename, data, text)
        if not text.has_text:
            raise InvalidInput(f"{filename}: no text found")
    except BaseException:
        text.close()
        raise
    return text


def extract_text(filename: str, data: bytes) -> str:
    """The text of a small file held in memory (see :func:`extract`)."""
    text = extract(filename, io.BytesIO(data), max_chars=sys.maxsize)
    try:
        return text.read()
    finally:
        text.close()


def html_to_text(html: str) -> str:
    return extract_text("page.html", html.encode())
