"""Text extraction from uploaded files."""

from __future__ import annotations

import pytest

from ragloop.core.errors import InvalidInput
from ragloop.orchestrator.rest.uploads import UnsupportedFileType, extract_text, html_to_text
from tests.sample_files import minimal_pdf


def test_text_and_markdown_are_utf8() -> None:
    assert extract_text("a.txt", "Café au lait.".encode()) == "Café au lait."
    assert extract_text("notes/A.MD", b"\xef\xbb\xbf# Title\n\nBody") == "# Title\n\nBody"


def test_html_keeps_the_text_and_drops_scripts_and_styles() -> None:
    html = (
        "<html><head><title>T</title><style>p {color: red}</style></head><body>"
        "<h1>Cats</h1><p>They&nbsp;sleep <b>a lot</b> &amp; purr.</p>"
        "<script>alert('x')</script><ul><li>one</li><li>two</li></ul></body></html>"
    )
    assert html_to_text(html) == "Cats\n\nThey sleep a lot & purr.\n\none\n\ntwo"
    assert extract_text("page.htm", html.encode()) == html_to_text(html)


def test_pdf_pages_become_paragraphs() -> None:
    pdf = minimal_pdf("Cats sleep (a lot).", "Page two.")
    assert extract_text("paper.pdf", pdf) == "Cats sleep (a lot).\n\nPage two."


@pytest.mark.parametrize(
    ("name", "data", "error", "message"),
    [
        ("a.docx", b"PK..", UnsupportedFileType, "cannot read .docx"),
        ("README", b"x", UnsupportedFileType, "without an extension"),
        ("a.txt", b"\xff\xfe\x00", InvalidInput, "not UTF-8 text"),
        ("a.pdf", b"%PDF-1.4 garbage", InvalidInput, "not a readable PDF"),
        ("a.md", b"  \n ", InvalidInput, "no text found"),
        ("a.html", b"<script>only()</script>", InvalidInput, "no text found"),
    ],
)
def test_unreadable_files_are_refused(name: str, data: bytes, error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        extract_text(name, data)
    assert message in str(caught.value)
