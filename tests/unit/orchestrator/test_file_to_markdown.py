"""Uploaded files to Markdown (ragloop.orchestrator.file_to_markdown, through the upload path's
extract_text): real files built by the libraries that write them, a public PDF with a table, and
broken files, each refused naming it."""

from __future__ import annotations

import io
import re

import pytest

from ragloop.core.errors import InvalidInput
from ragloop.core.file_types import FILE_TYPES, FileFormat
from ragloop.orchestrator.file_to_markdown import CONVERTERS, UnsupportedFileType
from ragloop.orchestrator.rest.uploads import extract, extract_text
from ragloop.retriever.chunking import chunk_text
from tests.sample_files import (
    PUBLIC_PDF,
    PUBLIC_PDF_ROWS,
    docx_file,
    encrypted_pdf,
    epub_file,
    minimal_pdf,
    pptx_file,
    xlsx_file,
    zip_file,
)


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of every table line of ``markdown`` (separator lines left out)."""
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in markdown.splitlines()
        if line.startswith("|") and not set(line) <= set("|- :")
    ]


def test_every_format_has_a_converter() -> None:
    assert set(CONVERTERS) == set(FileFormat)
    assert {t.format for t in FILE_TYPES.values()} == set(FileFormat)


def test_text_and_markdown_are_utf8_as_written() -> None:
    assert extract_text("a.txt", "Café au lait.".encode()) == "Café au lait."
    assert extract_text("notes/A.MD", b"\xef\xbb\xbf# Title\n\n  Body") == "# Title\n\n  Body"


def test_html_keeps_headings_lists_and_tables_and_drops_the_rest() -> None:
    html = (
        "<html><head><title>T</title><style>p {color: red}</style></head><body>"
        "<h1>Cats</h1><p>They&nbsp;sleep <b>a lot</b> &amp; purr_ing. "
        "<a href='https://example.org'>More</a><img src='data:image/png;base64,AAAA'></p>"
        "<script>alert('x')</script><noscript>No JS</noscript><ul><li>one</li><li>two</li></ul>"
        "<table><tr><td>a|b</td><td>c</td></tr><tr><td>1</td><td>2</td></tr></table></body></html>"
    )
    assert extract_text("page.htm", html.encode()) == (
        "# Cats\n\nThey sleep **a lot** & purr_ing. More\n\n* one\n* two\n\n"
        "| a\\|b | c |\n| --- | --- |\n| 1 | 2 |"
    )


def test_a_word_document_keeps_its_headings_and_its_table() -> None:
    assert extract_text("otters.docx", docx_file()) == (
        "# Otters\n\n"
        "Sea otters hold hands while they sleep so that they do not drift apart.\n\n"
        "## Otter species\n\n"
        "| Species | Weight |\n| --- | --- |\n| Sea otter | 45 kg |\n"
        "| Giant otter \\| river | 32 kg |\n\n"
        "Giant otters live in South American rivers."
    )


def test_a_slide_deck_is_a_section_per_slide() -> None:
    assert extract_text("plan.pptx", pptx_file()) == (
        "# Lighthouse upgrade\n\nReplace the lamp with LEDs\nPaint the tower white\n\n"
        "# Budget\n\nThe lens costs 12,000 euros\n\nAsk the council before May.\n\n"
        "# Slide 3\n\n| Keeper | Shift |\n| --- | --- |\n| Ada | Night |"
    )


def test_a_workbook_is_a_table_per_sheet() -> None:
    assert extract_text("tea.xlsx", xlsx_file()) == (
        "# Tea prices\n\n| Tea | Price per kg | Origin |\n| --- | --- | --- |\n"
        "| Darjeeling | 84.5 | India |\n| Sencha | 60 | |\n| Rooibos | 22 | South Africa |\n\n"
        "# Staff\n\n| Name | Role |\n| --- | --- |\n| Mei | Taster |"
    )


def test_a_csv_file_is_one_table() -> None:
    data = '\ufeffplanet,moons\r\nMars,2\r\n"Jupiter, giant",95\r\n\r\nPipe|world,0\r\n'
    assert extract_text("planets.csv", data.encode()) == (
        "| planet | moons |\n| --- | --- |\n| Mars | 2 |\n| Jupiter, giant | 95 |\n"
        "| Pipe\\|world | 0 |"
    )


def test_an_epub_is_its_chapters_in_reading_order_without_the_contents() -> None:
    assert extract_text("keeper.epub", epub_file()) == (
        "# Arrival\n\nThe keeper arrived on the island in spring.\n\n"
        "# Storms\n\nIn a storm the keeper winds the clockwork every two hours.\n\n"
        "| Month | Storms |\n| --- | --- |\n| November | 7 |"
    )


def test_pdf_pages_become_paragraphs() -> None:
    pdf = minimal_pdf("Cats sleep (a lot).", "Page two.")
    assert extract_text("paper.pdf", pdf) == "Cats sleep (a lot).\n\nPage two."


def test_a_public_pdf_keeps_its_table_in_place_and_whole_in_one_chunk() -> None:
    markdown = extract_text("example.pdf", PUBLIC_PDF.read_bytes())
    lines = markdown.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("|"))
    assert lines[header - 2] == "Namespaces are one honking great idea -- let's do more of those!"
    assert lines[header + 1] == "| --- | --- | --- | --- | --- | --- |"
    assert table_rows(markdown)[1:] == PUBLIC_PDF_ROWS
    assert [cell.split()[0] for cell in table_rows(markdown)[0][1:]] == [
        "Indonesia", "Germany", "Austria", "France", "Vatican",
    ]  # fmt: skip
    assert lines[header + 6 :] == ["", "12021 estimate", "22020 estimate", "32020 estimate"]

    chunks = chunk_text(markdown, size=1000, overlap=150)  # the retriever's defaults
    with_table = [c for c in chunks if "|" in c]
    assert len(with_table) == 1
    assert "\n".join(lines[header : header + 6]) in with_table[0]


def test_a_framed_box_in_a_pdf_is_text_not_a_table() -> None:
    # A frame of two cells, one above the other, as in a diagram: pdfplumber finds a "table".
    boxed = minimal_pdf("A note in a box.", drawing="60 680 200 60 re S 60 710 m 260 710 l S")
    assert extract_text("note.pdf", boxed) == "A note in a box."


def test_a_pdf_encrypted_without_a_password_is_read() -> None:
    assert extract_text("open.pdf", encrypted_pdf("")) == "Locked text."


@pytest.mark.parametrize(
    ("name", "data", "error", "message"),
    [
        ("a.odt", b"PK..", UnsupportedFileType, "a.odt: cannot read .odt; upload one of .txt"),
        ("README", b"x", UnsupportedFileType, "without an extension"),
        ("a.txt", b"\xff\xfe\x00", InvalidInput, "a.txt: not UTF-8 text (byte 0)"),
        ("a.csv", b"a,b\n\xff", InvalidInput, "a.csv: not UTF-8 text (byte 4)"),
        ("a.pdf", b"%PDF-1.4 garbage", InvalidInput, "a.pdf: not a readable PDF file"),
        ("locked.pdf", encrypted_pdf("secret"), InvalidInput, "locked.pdf: the PDF is encrypted"),
        ("a.docx", b"PK\x03\x04 torn", InvalidInput, "a.docx: not a readable DOCX file"),
        ("sheet.docx", xlsx_file(), InvalidInput, "sheet.docx: not a readable DOCX file"),
        ("a.xlsx", b"Tea,Price\nSencha,60\n", InvalidInput, "a.xlsx: not a readable XLSX file"),
        ("a.pptx", pptx_file()[:3000], InvalidInput, "a.pptx: not a readable PPTX file"),
        ("a.epub", zip_file({"mimetype": b"x"}), InvalidInput, "a.epub: not a readable EPUB"),
        ("a.md", b"  \n ", InvalidInput, "a.md: no text found"),
        ("a.html", b"<script>only()</script>", InvalidInput, "a.html: no text found"),
        ("deep.html", b"<div>" * 1000 + b"x", InvalidInput, "deep.html: not a readable HTML"),
        ("empty.csv", b"\n,\n", InvalidInput, "empty.csv: no text found"),
    ],
)
def test_unreadable_files_are_refused_naming_them(
    name: str, data: bytes, error: type, message: str
) -> None:
    with pytest.raises(error) as caught:
        extract_text(name, data)
    assert message in str(caught.value)


def test_an_archive_that_unpacks_to_more_than_the_limit_is_refused() -> None:
    bomb = zip_file({"word/document.xml": b" " * 2_000_000})  # a few kilobytes packed
    with pytest.raises(InvalidInput) as caught:
        extract("bomb.docx", io.BytesIO(bomb), max_chars=1_000_000)
    assert str(caught.value) == "bomb.docx: the DOCX file unpacks to more than 1000000 bytes"
