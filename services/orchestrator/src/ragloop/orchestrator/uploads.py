"""Text out of uploaded files: .txt and .md as UTF-8, .html through the standard library's HTML
parser (scripts and styles dropped, blocks on their own lines), .pdf through pypdf."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import PurePath

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from ragloop.core.errors import InvalidInput


class UnsupportedFileType(InvalidInput):
    """A file whose extension ragloop cannot read."""


SKIPPED_TAGS = {"script", "style", "noscript", "template", "head"}
BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
    "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "dt", "dd",
}  # fmt: skip


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


def _tidy(text: str) -> str:
    lines = (re.sub(r"[ \t\r\f\v\xa0]+", " ", line).strip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return _tidy("".join(parser.parts))


def _utf8(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name}: not UTF-8 text (byte {exc.start})") from None


def _pdf(name: str, data: bytes) -> str:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InvalidInput(f"{name}: the PDF is encrypted")
        return _tidy("\n\n".join(page.extract_text() or "" for page in reader.pages))
    except (PdfReadError, ValueError, KeyError) as exc:
        raise InvalidInput(f"{name}: not a readable PDF ({exc})") from None


READERS: dict[str, Callable[[str, bytes], str]] = {
    ".txt": _utf8,
    ".md": _utf8,
    ".markdown": _utf8,
    ".html": lambda name, data: html_to_text(_utf8(name, data)),
    ".htm": lambda name, data: html_to_text(_utf8(name, data)),
    ".pdf": _pdf,
}


def extract_text(filename: str, data: bytes) -> str:
    """The text of an uploaded file, chosen by its extension; InvalidInput when unreadable or
    empty, UnsupportedFileType for other extensions."""
    suffix = PurePath(filename).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise UnsupportedFileType(
            f"{filename}: cannot read {suffix or 'files without an extension'}; "
            f"upload one of {', '.join(sorted(READERS))}"
        )
    text = reader(filename, data)
    if not text.strip():
        raise InvalidInput(f"{filename}: no text found")
    return text
