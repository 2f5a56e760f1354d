"""Uploaded files to Markdown, by the file name's suffix (``ragloop.core.file_types``), so that
the heading-aware chunker keeps a document's sections apart and each table whole:

- .txt .md .markdown: UTF-8, as they are, decoded block by block.
- .html .htm: markdownify: headings, lists and tables; head, scripts and styles dropped, links as
  their text, no images.
- .docx: mammoth to HTML (Word's heading styles become headings), then as HTML.
- .pptx: python-pptx: a section per slide under its title ("Slide N" without one): its text,
  tables and notes.
- .xlsx: openpyxl: a section per sheet under its name, the sheet as one table.
- .csv: one table.
- .epub: the book's chapters in reading order (its spine), each as HTML.
- .pdf: pdfplumber, page by page: tables drawn with ruling lines as tables, the rest as lines.

A table's first row is its header. Whitespace is tidied (see ``_Tidier``) except in .txt and .md.
"""

from __future__ import annotations

import codecs
import csv
import io
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO
from urllib.parse import unquote
from xml.etree import ElementTree

import mammoth
import openpyxl
import pdfplumber
import pptx
from bs4 import BeautifulSoup
from markdownify import ATX, MarkdownConverter
from pdfminer.pdfdocument import PDFPasswordIncorrect
from pdfplumber.page import Page
from pdfplumber.utils.exceptions import PdfminerException
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.shapes.base import BaseShape

from ragloop.core.errors import InvalidInput
from ragloop.core.file_types import SUFFIX_LIST, FileFormat, file_type, suffix_of

READ_BLOCK_BYTES = 1024 * 1024
# The formats that are ZIP archives; what their members unpack to is bounded before parsing.
ARCHIVES = {FileFormat.DOCX, FileFormat.PPTX, FileFormat.XLSX, FileFormat.EPUB}
HTML_DROPPED = ["head", "script", "style", "noscript", "template"]
EPUB_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
EPUB_PACKAGE = "{http://www.idpf.org/2007/opf}"
EPUB_CHAPTER_TYPES = {"application/xhtml+xml", "text/html"}
# A chapter's XML declaration: dropped, so that bs4 does not warn that the lenient HTML parser
# (chosen on purpose) reads XML.
XML_DECLARATION = re.compile(rb"^\s*<\?xml[^>]*\?>")

Converter = Callable[[str, BinaryIO], Iterator[str]]


class UnsupportedFileType(InvalidInput):
    """A file whose extension ragloop cannot read."""


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


def _cell(value: object) -> str:
    """A table cell on one line, its pipes escaped so that the row keeps its columns."""
    return " ".join(str(value).split()).replace("|", "\\|") if value is not None else ""


def _markdown_table(rows: Iterable[Sequence[object]]) -> str:
    """``rows`` as one Markdown table between blank lines, the first row as its header; empty
    rows and trailing empty columns are left out, "" when no cell has text."""
    cells = [row for row in ([_cell(value) for value in row] for row in rows) if any(row)]
    if not cells:
        return ""
    width = max(max(i for i, cell in enumerate(row) if cell) + 1 for row in cells)
    lines = ["| " + " | ".join([*row, *[""] * width][:width]) + " |" for row in cells]
    lines.insert(1, "|" + " --- |" * width)
    return "\n\n" + "\n".join(lines) + "\n\n"


class _Markdown(MarkdownConverter):
    """markdownify for chunking, not for display: ATX headings, nothing escaped but pipes in
    table cells, links as their text, no images, a headerless table's first row as header."""

    def __init__(self) -> None:
        super().__init__(
            heading_style=ATX,
            escape_asterisks=False,
            escape_underscores=False,
            strip=["a", "img"],
            table_infer_header=True,
        )

    def convert_td(self, el: Any, text: str, parent_tags: set[str]) -> str:
        return super().convert_td(el, text.replace("|", "\\|"), parent_tags)

    def convert_th(self, el: Any, text: str, parent_tags: set[str]) -> str:
        return super().convert_th(el, text.replace("|", "\\|"), parent_tags)


def _html_markdown(html: str | bytes) -> str:
    soup = BeautifulSoup(html, "lxml")
    for tag in soup(HTML_DROPPED):
        tag.decompose()
    return _Markdown().convert_soup(soup)


def _html(name: str, data: BinaryIO) -> Iterator[str]:
    yield _html_markdown("".join(_decoded(name, data)))


def _docx(name: str, data: BinaryIO) -> Iterator[str]:
    # Images are left out without reading them (mammoth would inline each as a data URI).
    skip_images = mammoth.images.img_element(lambda image: {})
    yield _html_markdown(mammoth.convert_to_html(data, convert_image=skip_images).value)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shapes(shapes: Iterable[BaseShape]) -> Iterator[BaseShape]:
    """The shapes of a slide, those inside groups included, in the slide's order."""
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _pptx(name: str, data: BinaryIO) -> Iterator[str]:
    for number, slide in enumerate(pptx.Presentation(data).slides, start=1):
        title = slide.shapes.title
        heading = _one_line(title.text_frame.text) if title is not None else ""
        yield f"\n\n# {heading or f'Slide {number}'}\n\n"
        for shape in _shapes(slide.shapes):
            if title is not None and shape.shape_id == title.shape_id:
                continue
            if shape.has_text_frame:
                yield "\n".join(p.text for p in shape.text_frame.paragraphs) + "\n\n"
            elif shape.has_table:
                rows = shape.table.rows
                yield _markdown_table([cell.text for cell in row.cells] for row in rows)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            yield slide.notes_slide.notes_text_frame.text + "\n\n"


def _xlsx(name: str, data: BinaryIO) -> Iterator[str]:
    book = openpyxl.load_workbook(data, read_only=True, data_only=True)
    try:
        for sheet in book.worksheets:
            table = _markdown_table(sheet.iter_rows(values_only=True))
            if table:
                yield f"\n\n# {_one_line(sheet.title)}\n\n{table}"
    finally:
        book.close()


def _csv(name: str, data: BinaryIO) -> Iterator[str]:
    text = "".join(_decoded(name, data))
    yield _markdown_table(csv.reader(io.StringIO(text, newline="")))


def _epub(name: str, data: BinaryIO) -> Iterator[str]:
    with zipfile.ZipFile(data) as book:
        container = ElementTree.fromstring(book.read("META-INF/container.xml"))
        root = container.find(f".//{EPUB_CONTAINER}rootfile")
        if root is None or not root.get("full-path"):
            raise ValueError("META-INF/container.xml names no package document")
        package_path = root.get("full-path", "")
        package = ElementTree.fromstring(book.read(package_path))
        chapters = {
            item.get("id"): item.get("href", "")
            for item in package.iter(f"{EPUB_PACKAGE}item")
            if item.get("media-type") in EPUB_CHAPTER_TYPES
            and "nav" not in item.get("properties", "").split()  # the table of contents
        }
        folder = posixpath.dirname(package_path)
        for reference in package.iter(f"{EPUB_PACKAGE}itemref"):
            href = chapters.get(reference.get("idref"))
            if href:
                path = posixpath.normpath(posixpath.join(folder, unquote(href)))
                chapter = XML_DECLARATION.sub(b"", book.read(path), count=1)
                yield "\n\n" + _html_markdown(chapter) + "\n\n"


def _is_table(rows: list[list[str | None]]) -> bool:
    """Whether cells found by pdfplumber form a table: two rows and two columns with text at
    least (it also finds framed boxes, such as a diagram's, which are read as text)."""
    filled = [row for row in rows if any(row)]
    columns = {position for row in filled for position, cell in enumerate(row) if cell}
    return len(filled) >= 2 and len(columns) >= 2


def _pdf_page(page: Page) -> str:
    """A page's lines, top to bottom, with each ruled table in its place as a Markdown table."""
    tables = [(t.bbox, rows) for t in page.find_tables() if _is_table(rows := t.extract())]
    rest = page
    for bbox, _ in tables:
        rest = rest.outside_bbox(bbox, strict=False)  # a table may reach past the page
    blocks = [(line["top"], line["text"]) for line in rest.extract_text_lines()]
    blocks += [(bbox[1], _markdown_table(rows)) for bbox, rows in tables]
    return "\n".join(text for _, text in sorted(blocks, key=lambda block: block[0]))


def _pdf(name: str, data: BinaryIO) -> Iterator[str]:
    try:
        document = pdfplumber.open(data)
    except PdfminerException as exc:
        if exc.args and isinstance(exc.args[0], PDFPasswordIncorrect):
            raise InvalidInput(f"{name}: the PDF is encrypted") from None
        raise
    with document:
        for number, page in enumerate(document.pages):
            yield ("\n\n" if number else "") + _pdf_page(page)
            page.close()  # frees the page's parsed objects: memory stays that of one page


CONVERTERS: dict[FileFormat, Converter] = {
    FileFormat.TEXT: _decoded,
    FileFormat.HTML: _html,
    FileFormat.PDF: _pdf,
    FileFormat.DOCX: _docx,
    FileFormat.PPTX: _pptx,
    FileFormat.XLSX: _xlsx,
    FileFormat.CSV: _csv,
    FileFormat.EPUB: _epub,
}


class _Tidier:
    """Collapses runs of spaces and tabs, trims lines and keeps at most one blank line between
    lines, for text that arrives in pieces (held back: only the unfinished line)."""

    SPACES = re.compile(r"[ \t\r\f\v\xa0]+")

    def __init__(self) -> None:
        self._unfinished: list[str] = []  # pieces of the line not ended yet
        self._wrote = False
        self._blank_pending = False

    def feed(self, text: str) -> str:
        first, *lines = text.split("\n")
        self._unfinished.append(first)
        if not lines:
            return ""
        *finished, last = lines
        tidy = "".join(self._line(line) for line in ["".join(self._unfinished), *finished])
        self._unfinished = [last]
        return tidy

    def close(self) -> str:
        tidy = self._line("".join(self._unfinished))
        self._unfinished = []
        return tidy

    def _line(self, line: str) -> str:
        tidy = self.SPACES.sub(" ", line).strip()
        if not tidy:
            self._blank_pending = self._wrote
            return ""
        separator = ("\n\n" if self._blank_pending else "\n") if self._wrote else ""
        self._wrote, self._blank_pending = True, False
        return separator + tidy


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _check_archive(name: str, data: BinaryIO, label: str, max_unpacked: int) -> None:
    """Refuse a file that is no ZIP archive, or whose members unpack to more than
    ``max_unpacked`` bytes (the parsers hold them in memory)."""
    try:
        with zipfile.ZipFile(data) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise InvalidInput(f"{name}: not a readable {label} file ({_reason(exc)})") from None
    if unpacked > max_unpacked:
        raise InvalidInput(f"{name}: the {label} file unpacks to more than {max_unpacked} bytes")
    data.seek(0)


def to_markdown(name: str, data: BinaryIO, *, max_unpacked: int) -> Iterator[str]:
    """The Markdown of file ``name``, read from ``data``, in pieces. InvalidInput (naming the
    file) when it cannot be read, UnsupportedFileType for a suffix ragloop does not read."""
    known = file_type(name)
    if known is None:
        suffix = suffix_of(name)
        raise UnsupportedFileType(
            f"{name}: cannot read {suffix or 'files without an extension'}; "
            f"upload one of {SUFFIX_LIST}"
        )
    convert = CONVERTERS[known.format]
    if known.format is FileFormat.TEXT:  # the sender's own text and Markdown, as written
        yield from convert(name, data)
        return
    label = known.format.value.upper()
    if known.format in ARCHIVES:
        _check_archive(name, data, label, max_unpacked)
    tidier = _Tidier()
    try:
        for piece in convert(name, data):
            yield tidier.feed(piece)
    except InvalidInput:
        raise
    # The parsers of these formats raise errors of many kinds on a broken file; each is the
    # file's fault, never the server's.
    except Exception as exc:
        raise InvalidInput(f"{name}: not a readable {label} file ({_reason(exc)})") from None
    yield tidier.close()
