"""Which files ``ragloop ingest`` uploads, and under which source name.

Folders are walked recursively in sorted order; hidden files and folders (a name starting with
".") are not walked, so ``.git/`` and editor droppings stay out. A file the server cannot read
(by its extension) is listed as skipped instead of being uploaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ragloop.core.file_types import file_type


@dataclass(frozen=True)
class FileToIngest:
    path: Path
    source: str  # the name the server stores the document under
    size: int

    @property
    def content_type(self) -> str:
        known = file_type(self.path.name)
        return known.content_type if known else "application/octet-stream"


@dataclass
class IngestPlan:
    files: list[FileToIngest] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # unsupported file types
    missing: list[Path] = field(default_factory=list)  # arguments that do not exist

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def is_supported(path: Path) -> bool:
    return file_type(path.name) is not None


def source_name(path: Path, argument: Path, cwd: Path, prefix: str = "") -> str:
    """The source of ``path`` (found through the command-line ``argument``): its path relative to
    the current directory when it lies inside it, else relative to the argument's parent folder
    (so ``notes/`` anywhere gives ``notes/...``); always with forward slashes. ``prefix`` is put
    in front, joined by one slash."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path(os.path.abspath(cwd)))
    except ValueError:
        relative = absolute.relative_to(Path(os.path.abspath(argument)).parent)
    name = relative.as_posix()
    if prefix.strip("/"):
        name = f"{prefix.strip('/')}/{name}"
    return name


def _walk(folder: Path) -> Iterator[Path]:
    """Every non-hidden file below ``folder``, in a stable order."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root, name)


def plan_ingest(
    arguments: Iterable[Path], *, cwd: Path | None = None, prefix: str = ""
) -> IngestPlan:
    """The files to upload for the command-line ``arguments`` (files and folders), each once."""
    cwd = cwd or Path.cwd()
    plan = IngestPlan()
    seen: set[str] = set()
    for argument in arguments:
        if argument.is_dir():
            candidates: Iterable[Path] = _walk(argument)
        elif argument.is_file():
            candidates = [argument]
        else:
            plan.missing.append(argument)
            continue
        for path in candidates:
            if not path.is_file():
                continue  # a dangling link, a socket, …
            if not is_supported(path):
                plan.skipped.append(path)
                continue
            source = source_name(path, argument, cwd, prefix)
            if source not in seen:
                seen.add(source)
                plan.files.append(FileToIngest(path, source, path.stat().st_size))
    return plan
