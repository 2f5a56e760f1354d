"""Which files `ragloop ingest` uploads, what it skips, and the source name of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloop.cli.files import plan_ingest, source_name


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder as people have them: documents, other files, hidden entries, nested folders."""
    files = {
        "notes/b.md": "# B",
        "notes/a.txt": "A",
        "notes/deep/page.HTML": "<p>x</p>",
        "notes/deep/old.htm": "<p>y</p>",
        "notes/paper.pdf": "%PDF",
        "notes/slides.PPTX": "PK",
        "notes/deep/table.csv": "a,b",
        "notes/image.png": "png",
        "notes/README": "no extension",
        "notes/.secret.md": "hidden file",
        "notes/.git/HEAD.md": "hidden folder",
        "notes/deep/data.json": "{}",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_folder_is_walked_in_order_and_unreadable_types_are_skipped(tree: Path) -> None:
    plan = plan_ingest([tree / "notes"], cwd=tree)
    assert [f.source for f in plan.files] == [
        "notes/a.txt",
        "notes/b.md",
        "notes/paper.pdf",
        "notes/slides.PPTX",
        "notes/deep/old.htm",
        "notes/deep/page.HTML",
        "notes/deep/table.csv",
    ]
    assert [p.relative_to(tree).as_posix() for p in plan.skipped] == [
        "notes/README",
        "notes/image.png",
        "notes/deep/data.json",
    ]
    assert plan.missing == []
    assert [f.content_type for f in plan.files][2:] == [
        "application/pdf",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "text/html",
        "text/html",
        "text/csv",
    ]
    assert plan.total_bytes == len("A# B%PDFPK<p>y</p><p>x</p>a,b")


def test_files_given_twice_are_uploaded_once_and_missing_paths_are_reported(tree: Path) -> None:
    plan = plan_ingest(
        [tree / "notes" / "b.md", tree / "notes", tree / "nowhere", tree / "notes/.secret.md"],
        cwd=tree,
    )
    assert [f.source for f in plan.files].count("notes/b.md") == 1
    assert plan.missing == [tree / "nowhere"]
    # A hidden file named explicitly is the user's choice; only walking leaves them out.
    assert "notes/.secret.md" in [f.source for f in plan.files]


def test_an_explicit_unsupported_file_is_skipped(tree: Path) -> None:
    plan = plan_ingest([tree / "notes" / "image.png"], cwd=tree)
    assert plan.files == [] and plan.skipped == [tree / "notes" / "image.png"]


@pytest.mark.parametrize(
    ("path", "argument", "cwd", "prefix", "expected"),
    [
        # inside the current folder: relative to it, whatever the argument
        ("/w/docs/a.md", "/w/docs", "/w", "", "docs/a.md"),
        ("/w/docs/a.md", "/w/docs/a.md", "/w", "", "docs/a.md"),
        ("/w/docs/sub/a.md", "/w/docs/sub", "/w/docs", "", "sub/a.md"),
        # outside it: relative to the argument's parent folder
        ("/elsewhere/notes/x/a.md", "/elsewhere/notes", "/w", "", "notes/x/a.md"),
        ("/elsewhere/notes/a.md", "/elsewhere/notes/a.md", "/w", "", "a.md"),
        # a prefix, joined by exactly one slash
        ("/w/docs/a.md", "/w/docs", "/w", "kb/", "kb/docs/a.md"),
        ("/w/docs/a.md", "/w/docs", "/w", "/kb", "kb/docs/a.md"),
        ("/w/docs/a.md", "/w/docs", "/w", "/", "docs/a.md"),
    ],
)
def test_source_names(path: str, argument: str, cwd: str, prefix: str, expected: str) -> None:
    assert source_name(Path(path), Path(argument), Path(cwd), prefix) == expected


def test_relative_arguments_resolve_against_the_current_folder(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "notes")
    plan = plan_ingest([Path("deep"), Path("../notes/a.txt")], prefix="kb")
    assert [f.source for f in plan.files] == [
        "kb/deep/old.htm",
        "kb/deep/page.HTML",
        "kb/deep/table.csv",
        "kb/a.txt",
    ]
