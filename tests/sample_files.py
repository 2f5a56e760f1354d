"""Small real files for upload tests, made in code with the libraries that write them (and one
public PDF)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx
import pypdf
from ebooklib import epub

# A real public PDF with a ruled table (origin and license: tests/documents/README.md).
PUBLIC_PDF = Path(__file__).parent / "documents" / "pypdf-example.pdf"
# Its table's rows below the header row; footnote marks run into the numbers, as printed.
PUBLIC_PDF_ROWS = [
    ["Continent", "Asia", "Europe", "", "", ""],
    ["Capital", "Jakarta", "Berlin", "Vienna", "Paris", "Vatican City"],
    ["Currency", "Rupia", "EUR (€)", "", "", "-"],
    ["Population", "273.879.7501", "83,190,5562", "8,935,1123", "67,413,000", "453"],
]


def minimal_pdf(*pages: str, drawing: str = "") -> bytes:
    """A small valid PDF whose pages show ``pages`` in Helvetica (one line each, at 72/720),
    with the path operators ``drawing`` on each page."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"{drawing} BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".strip()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _saved(document: Any) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_file() -> bytes:
    """A Word document: two headings, paragraphs and a table (its first row the header)."""
    document = docx.Document()
    document.add_heading("Otters", level=1)
    document.add_paragraph(
        "Sea otters hold hands while they sleep so that they do not drift apart."
    )
    document.add_heading("Otter species", level=2)
    rows = [("Species", "Weight"), ("Sea otter", "45 kg"), ("Giant otter | river", "32 kg")]
    table = document.add_table(rows=len(rows), cols=2)
    for row, texts in zip(table.rows, rows, strict=True):
        for cell, text in zip(row.cells, texts, strict=True):
            cell.text = text
    document.add_paragraph("Giant otters live in South American rivers.")
    return _saved(document)


def pptx_file() -> bytes:
    """A slide deck: two slides with a title and bullet text (one with speaker notes), and one
    without a title holding a table."""
    deck = pptx.Presentation()
    bullets = deck.slide_layouts[1]  # "Title and Content"
    for title, points in [
        ("Lighthouse upgrade", ["Replace the lamp with LEDs", "Paint the tower white"]),
        ("Budget", ["The lens costs 12,000 euros"]),
    ]:
        slide = deck.slides.add_slide(bullets)
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = "\n".join(points)
    slide.notes_slide.notes_text_frame.text = "Ask the council before May."
    blank = deck.slides.add_slide(deck.slide_layouts[6])
    shape = blank.shapes.add_table(2, 2, *(pptx.util.Inches(n) for n in (1, 1, 4, 1)))
    for position, text in enumerate(["Keeper", "Shift", "Ada", "Night"]):
        shape.table.cell(position // 2, position % 2).text = text
    return _saved(deck)


def xlsx_file() -> bytes:
    """A workbook: a sheet of tea prices, an empty sheet, and a sheet of staff."""
    book = openpyxl.Workbook()
    prices = book.active
    prices.title = "Tea prices"
    for row in [
        ("Tea", "Price per kg", "Origin"),
        ("Darjeeling", 84.5, "India"),
        ("Sencha", 60, None),
        (None, None, None),
        ("Rooibos", 22, "South Africa"),
    ]:
        prices.append(row)
    book.create_sheet("Empty")
    staff = book.create_sheet("Staff")
    staff.append(("Name", "Role"))
    staff.append(("Mei", "Taster"))
    return _saved(book)


def epub_file() -> bytes:
    """An EPUB book of two chapters whose reading order (spine) differs from their order in
    the package, with a navigation document (table of contents)."""
    book = epub.EpubBook()
    book.set_identifier("ragloop-test-book")
    book.set_title("The Keeper")
    book.set_language("en")
    second = epub.EpubHtml(title="Storms", file_name="storms.xhtml", lang="en")
    second.content = (
        "<h1>Storms</h1><p>In a storm the keeper winds the clockwork every two hours.</p>"
        "<table><tr><th>Month</th><th>Storms</th></tr><tr><td>November</td><td>7</td></tr></table>"
    )
    first = epub.EpubHtml(title="Arrival", file_name="arrival.xhtml", lang="en")
    first.content = "<h1>Arrival</h1><p>The keeper arrived on the island in spring.</p>"
    for item in (second, first):
        book.add_item(item)
    book.toc = [first, second]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", first, second]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def encrypted_pdf(user_password: str) -> bytes:
    """A PDF encrypted with ``user_password`` (anyone may open one whose password is "")."""
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(minimal_pdf("Locked text.")))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def zip_file(members: dict[str, bytes]) -> bytes:
    """A ZIP archive of ``members`` (name: content), deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()
