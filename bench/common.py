"""What every benchmark shares: where results and caches go, and a description of the machine."""

from __future__ import annotations

import json
import os
import platform
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
SHARED_DATA = ROOT.parent / "shared" / "data"


def machine() -> str:
    cpu = f"{os.cpu_count()} cores, {platform.machine()}"
    return f"{cpu}, {platform.system()}, Python {platform.python_version()}"


def cache_dir() -> Path:
    """bench/results/.cache/, ignored by git (it holds its own .gitignore)."""
    path = RESULTS_DIR / ".cache"
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    return path


def seeded_prefix(
    items: Iterable[T], count: int, seed: int, key: Callable[[T], Any] | None = None
) -> list[T]:
    """The first ``count`` of a seeded shuffle of the sorted items: the same seed with a smaller
    count chooses a prefix of what a larger count chooses."""
    ordered = sorted(items, key=key)  # type: ignore[arg-type]
    random.Random(seed).shuffle(ordered)
    return ordered[:count]


def read_results(path: Path) -> dict[str, Any]:
    """The figures a results file holds (none yet: empty); a run of some parts of a benchmark
    replaces only the figures it measured."""
    return json.loads(path.read_text()) if path.exists() else {}


def write_results(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
