"""Sampling profiles of running processes with py-spy (``--profile DIR``): where ragloop's own
processes, and this one (the baseline and the in-process loop), spend CPU while the comparison
runs. Only samples of threads doing work count, so a process waiting for the model adds nothing.

Each process's stacks go to ``DIR/NAME.txt`` in py-spy's raw format (one ``frame;frame;… count``
line per distinct stack), summarised by the function and the file where samples were taken.
py-spy counts a thread blocked in ``epoll``/``poll`` (an event loop with nothing to do, a
server thread waiting for a connection) as busy; those samples are left out as idle.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SAMPLES_PER_SECOND = 100
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# Innermost frames of a thread that waits: event loops' selectors, socketserver loops, locks.
_IDLE = re.compile(r"\((selectors|socketserver|threading)\.py:\d+\)$")


@contextmanager
def profiled(pids: Mapping[str, int], out_dir: Path) -> Iterator[None]:
    """py-spy records every process in ``pids`` for the duration."""
    py_spy = str(Path(sys.executable).with_name("py-spy"))  # the bench dependency group's
    out_dir.mkdir(parents=True, exist_ok=True)
    recorders = [
        subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(SAMPLES_PER_SECOND),
                "--format",
                "raw",
                "--function",
                "--nonblocking",
                "--output",
                str(out_dir / f"{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]
    try:
        yield
    finally:
        for recorder in recorders:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        for recorder in recorders:
            try:
                recorder.wait(timeout=30)
            except subprocess.TimeoutExpired:
                recorder.kill()


@dataclass(frozen=True)
class Profile:
    samples: int  # busy samples (idle ones left out)
    idle: int
    by_function: Counter[str]  # samples whose innermost frame is the function (self time)
    by_file: Counter[str]  # samples whose innermost frame is in the file
    inclusive: Counter[str]  # samples with the function anywhere on the stack


def parse_raw(text: str) -> Profile:
    """A py-spy raw (collapsed stacks) file."""
    by_function: Counter[str] = Counter()
    by_file: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    samples = idle = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        weight = int(count)
        if _IDLE.search(frames[-1]):
            idle += weight
            continue
        samples += weight
        leaf = _FRAME.match(frames[-1])
        by_function[frames[-1]] += weight
        by_file[leaf.group("file") if leaf else frames[-1]] += weight
        for frame in set(frames):
            inclusive[frame] += weight
    return Profile(samples, idle, by_function, by_file, inclusive)


def summary(out_dir: Path, *, top: int = 8) -> str:
    """Markdown: per profiled process, its samples and the top functions and files by self time."""
    lines: list[str] = []
    for path in sorted(out_dir.glob("*.txt")):
        profile = parse_raw(path.read_text())
        if not profile.samples:
            continue
        seconds = profile.samples / SAMPLES_PER_SECOND
        lines += [
            f"\n**{path.stem}**: {profile.samples} busy samples (~{seconds:.1f} s; "
            f"{profile.idle} idle ones left out)\n"
        ]
        lines += ["| self % | function | | self % | file |", "|---:|---|---|---:|---|"]
        functions = profile.by_function.most_common(top)
        files = profile.by_file.most_common(top)
        for row in range(max(len(functions), len(files))):
            left = _cell(functions, row, profile.samples)
            right = _cell(files, row, profile.samples)
            lines.append(f"| {left[0]} | {left[1]} | | {right[0]} | {right[1]} |")
    return "\n".join(lines)


def _cell(ranked: list[tuple[str, int]], row: int, total: int) -> tuple[str, str]:
    if row >= len(ranked):
        return "", ""
    name, count = ranked[row]
    return f"{100 * count / total:.1f}", f"`{name.replace('|', '/')}`"
