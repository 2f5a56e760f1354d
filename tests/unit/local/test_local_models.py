"""The chat models' registry and the join-and-verify of their part packages (fake parts here)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloop.local.models import DEFAULT_MODEL, MODELS, QWEN_CODER_1_5B, SplitModel, ensure_model


def test_the_registry_holds_the_default_and_the_small_model() -> None:
    assert DEFAULT_MODEL is QWEN_CODER_1_5B
    assert sorted(MODELS) == ["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"]
    assert (
        len({m.file_name for m in MODELS.values()})
        == len({m.package_prefix for m in MODELS.values()})
        == 2
    )


@pytest.fixture
def fake_parts(tmp_path: Path) -> Iterator[tuple[str, bytes]]:
    """Two importable part packages, ``ragloop_fake_part1`` and ``2``, holding b"abc" and b"de"."""
    pieces = [b"abc", b"de"]
    for number, piece in enumerate(pieces, start=1):
        package = tmp_path / "site" / f"ragloop_fake_part{number}"
        package.mkdir(parents=True)
        (package / "part.bin").write_bytes(piece)
        (package / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(__file__), 'part.bin')\n"
        )
    sys.path.insert(0, str(tmp_path / "site"))
    yield "ragloop_fake_part", b"".join(pieces)
    sys.path.remove(str(tmp_path / "site"))
    for number in range(1, len(pieces) + 1):
        sys.modules.pop(f"ragloop_fake_part{number}", None)


def model(prefix: str, content: bytes, *, sha256: str = "") -> SplitModel:
    digest = sha256 or hashlib.sha256(content).hexdigest()
    return SplitModel("fake", "fake.gguf", prefix, 2, len(content), digest)


def test_parts_are_joined_in_order_and_verified(
    fake_parts: tuple[str, bytes], tmp_path: Path
) -> None:
    prefix, content = fake_parts
    path = ensure_model(model(prefix, content), tmp_path / "models")
    assert path.read_bytes() == b"abcde"
    assert ensure_model(model(prefix, content), tmp_path / "models") == path  # stamped: no re-join


def test_a_wrong_digest_is_refused_and_the_file_removed(
    fake_parts: tuple[str, bytes], tmp_path: Path
) -> None:
    prefix, content = fake_parts
    with pytest.raises(RuntimeError, match="sha256"):
        ensure_model(model(prefix, content, sha256="0" * 64), tmp_path / "models")
    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_missing_part_packages_say_which_one(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="ragloop_absent_part1 is missing"):
        ensure_model(model("ragloop_absent_part", b"x"), tmp_path / "models")
