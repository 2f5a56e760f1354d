"""The file types ragloop ingests: each file name suffix, the format it is read as and its
content type. The one list: the orchestrator converts uploads by it (to Markdown) and
``ragloop ingest`` picks and labels the files it uploads by it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePath


class FileFormat(StrEnum):
    TEXT = "text"  # plain text and Markdown, read as they are
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    CSV = "csv"
    EPUB = "epub"


@dataclass(frozen=True)
class FileType:
    format: FileFormat
    content_type: str


FILE_TYPES: dict[str, FileType] = {
    ".txt": FileType(FileFormat.TEXT, "text/plain"),
    ".md": FileType(FileFormat.TEXT, "text/markdown"),
    ".markdown": FileType(FileFormat.TEXT, "text/markdown"),
    ".html": FileType(FileFormat.HTML, "text/html"),
    ".htm": FileType(FileFormat.HTML, "text/html"),
    ".pdf": FileType(FileFormat.PDF, "application/pdf"),
    ".docx": FileType(
        FileFormat.DOCX,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    ".pptx": FileType(
        FileFormat.PPTX,
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    ".xlsx": FileType(
        FileFormat.XLSX, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    ),
    ".csv": FileType(FileFormat.CSV, "text/csv"),
    ".epub": FileType(FileFormat.EPUB, "application/epub+zip"),
}
SUFFIX_LIST = ", ".join(FILE_TYPES)  # for messages and help texts


def suffix_of(name: str) -> str:
    """The lower-case suffix of a file name ("" when it has none)."""
    return PurePath(name).suffix.lower()


def file_type(name: str) -> FileType | None:
    """The type of a file by its name's suffix (case-insensitive); None when ragloop cannot
    read it."""
    return FILE_TYPES.get(suffix_of(name))
