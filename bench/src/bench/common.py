"""What every benchmark shares: where results and caches go, and a description of the machine."""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import shlex
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # bench.comparison.runs imports this module (through bench.pubmedqa)
    from bench.comparison.runs import RunsFile

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "bench" / "results"
SHARED_DATA = ROOT.parent / "shared" / "data"


def machine() -> str:
    cpu = f"{os.cpu_count()} cores, {platform.machine()}"
    return f"{cpu}{_memory()}, {platform.system()}, Python {platform.python_version()}"


def _memory() -> str:
    """The RAM part of the description (", 24 GiB RAM"), empty without /proc/meminfo."""
    try:
        with open("/proc/meminfo") as meminfo:
            kib = int(meminfo.readline().split()[1])  # MemTotal is the first line
    except (OSError, ValueError, IndexError):
        return ""
    return f", {round(kib / 2**20)} GiB RAM"


def invocation(module: str) -> str:
    """The command line this benchmark was run with, as the results record it."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


def measured_with(prefix: str, module: str, model: str) -> dict[str, str]:
    """What the figures a benchmark merges into a shared results file were measured with and
    when, each key named ``<prefix>_…``."""
    return {
        f"{prefix}_command": invocation(module),
        f"{prefix}_date": date.today().isoformat(),
        f"{prefix}_machine": machine(),
        f"{prefix}_model": model,
    }


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


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the SciFact and PubMedQA data are (``../shared/data`` on development machines)."""
    parser.add_argument("--scifact", default=str(SHARED_DATA / "scifact"), help="BEIR folder")
    parser.add_argument(
        "--pubmedqa", default=str(SHARED_DATA / "pubmedqa" / "ori_pqal.json"), help="PQA-L file"
    )


def add_sampling_arguments(parser: argparse.ArgumentParser, parts: Sequence[str]) -> None:
    """``--seed``, ``--parts`` (a subset of ``parts``) and ``--corpus-limit`` (smoke runs)."""
    parser.add_argument("--seed", type=int, default=13, help="of every sample")
    parser.add_argument(
        "--parts",
        type=lambda s: [p for p in s.split(",") if p],
        default=list(parts),
        help=f"comma-separated subset of {','.join(parts)} (default: all)",
    )
    parser.add_argument(
        "--corpus-limit", type=int, default=0, help="smoke runs: index fewer abstracts"
    )


def check_parts(
    parser: argparse.ArgumentParser, args: argparse.Namespace, parts: Sequence[str]
) -> None:
    unknown = set(args.parts) - set(parts)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {', '.join(parts)}")


def start_long_run() -> None:
    """What a benchmark of hours sets first: ``kill`` stops it as Ctrl-C does (so the services
    and servers it started are stopped on the way out), it prints line by line, and it logs
    warnings."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def add_runs_file_arguments(parser: argparse.ArgumentParser, systems: Sequence[str]) -> None:
    """``--runs-file``, ``--fresh``, ``--forget`` (one of ``systems``) and ``--summarise``, the
    options of a benchmark that keeps its runs in a ``RunsFile``; ``prepare_runs_file`` acts on
    the first three."""
    parser.add_argument(
        "--runs-file",
        default="",
        help="every run, a JSON line each (default: beside --output, NAME-runs.jsonl.xz, "
        "xz-compressed; a name ending in .jsonl keeps plain lines)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="delete the runs file first (by default, runs already in it are not made again)",
    )
    parser.add_argument(
        "--forget",
        action="append",
        default=[],
        choices=systems,
        metavar="SYSTEM",
        help=f"drop SYSTEM's runs of the --parts being run from the runs file first, so that "
        f"they are made again (one of {', '.join(systems)}; repeat for more)",
    )
    parser.add_argument(
        "--forget-question",
        action="append",
        default=[],
        metavar="ID",
        help="with --forget, drop only the runs of question ID (repeat for more): to make again "
        "the runs of the questions a change affects",
    )
    parser.add_argument(
        "--summarise", action="store_true", help="compute --output from the runs file, run nothing"
    )


def prepare_runs_file(runs_file: RunsFile, args: argparse.Namespace) -> None:
    """The runs file as ``--fresh``, ``--forget`` and ``--forget-question`` ask."""
    if args.forget_question and not args.forget:
        raise SystemExit("--forget-question names the questions of the systems --forget names")
    if args.fresh:
        runs_file.clear()
    if args.forget:
        # Only the parts this invocation makes again: the others' runs would be lost, not remade.
        parts = getattr(args, "parts", None)
        questions = args.forget_question or None
        dropped = runs_file.forget(args.forget, parts, questions)
        which = f" ({', '.join(parts)})" if parts else ""
        of = f", questions {', '.join(questions)}" if questions else ""
        print(f"forgot {dropped} runs of {', '.join(args.forget)}{which}{of} in {runs_file.path}")


@contextmanager
def runs_kept_on_interrupt(runs_file: RunsFile) -> Iterator[None]:
    """On Ctrl-C (or ``kill`` after ``start_long_run``), ends the process saying where the runs
    made so far are kept; either way, compacts the runs file on the way out."""
    try:
        yield
    except KeyboardInterrupt:
        sys.exit(
            f"\ninterrupted: the runs made so far are kept in {runs_file.path}; the same "
            "command, without --fresh or --forget, goes on from there (--summarise writes the "
            "figures of what is there)"
        )
    finally:
        runs_file.compact()
