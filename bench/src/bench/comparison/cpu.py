"""CPU time of processes, from /proc (Linux): user + system seconds of every thread."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def cpu_seconds_of_stat(stat: str) -> float:
    """utime + stime of a /proc/PID/stat line. The command name (field 2) may hold spaces and
    parentheses, so the fields are counted after its closing parenthesis."""
    after_name = stat.rpartition(")")[2].split()
    utime, stime = int(after_name[11]), int(after_name[12])  # fields 14 and 15 of stat
    return (utime + stime) / TICKS_PER_SECOND


def process_cpu_seconds(pid: int) -> float:
    return cpu_seconds_of_stat(Path(f"/proc/{pid}/stat").read_text())


def cpu_snapshot(pids: Mapping[str, int]) -> dict[str, float]:
    return {name: process_cpu_seconds(pid) for name, pid in pids.items()}


def cpu_spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {name: after[name] - before[name] for name in before}


async def idle_cpu_shares(pids: Mapping[str, int], seconds: float) -> dict[str, float]:
    """CPU seconds per second of each process while nothing is asked of it: the background
    work (event loops, timers, metrics servers) that every query's CPU time also holds."""
    before = cpu_snapshot(pids)
    await asyncio.sleep(seconds)
    return {name: spent / seconds for name, spent in cpu_spent(before, cpu_snapshot(pids)).items()}
