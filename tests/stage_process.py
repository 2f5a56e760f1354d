"""One ragloop stage as a real process (``python -m ragloop.<stage>``) on a free loopback port,
and its gRPC health as the kubelet or compose's healthcheck would ask for it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.names import Stage
from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import stage_spec
from ragloop.local.processes import ChildProcess, free_port

SERVING, NOT_SERVING = "SERVING", "NOT_SERVING"
STOP_TIMEOUT_S = 30


@contextmanager
def stage_process(
    stage: Stage, log_dir: Path, env: dict[str, str]
) -> Iterator[tuple[ChildProcess, str]]:
    """Start ``stage`` with ``env`` (on top of a free port, no /metrics, JSON logs); yield the
    process and its address; stop it (SIGTERM, then SIGKILL after 30 s) on the way out."""
    port = free_port()
    child = ChildProcess(
        str(stage),
        [sys.executable, "-m", stage_spec(stage).module],
        log_dir / f"{stage}-{port}.log",
        env={
            setting_variable(stage_spec(stage).port_setting): str(port),
            "RAGLOOP_METRICS_PORT": "0",
            "RAGLOOP_LOG_JSON": "true",
            **env,
        },
    )
    child.start()
    try:
        yield child, f"127.0.0.1:{port}"
    finally:
        child.signal_stop()
        child.wait_stopped(STOP_TIMEOUT_S)


def health(address: str, service: str = "") -> str:
    """SERVING, NOT_SERVING, or why nothing answered ("UNAVAILABLE: …")."""
    return check_health(address, service, timeout_s=2.0).detail


def wait_for_health(
    child: ChildProcess, address: str, wanted: Callable[[str], bool], timeout_s: float
) -> str:
    """Poll the health of the process at ``address`` until ``wanted`` holds (the last answer),
    failing with its log when it exits or the time is up."""
    seen: list[str] = []

    def reached() -> bool:
        assert child.running, f"{child.name} ended ({child.exit_status}):\n{child.log_tail()}"
        seen.append(health(address))
        return wanted(seen[-1])

    deadline = time.monotonic() + timeout_s
    while not reached() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert wanted(seen[-1]), (
        f"{child.name}: health never as wanted in {timeout_s} s; last {seen[-3:]}\n"
        f"{child.log_tail()}"
    )
    return seen[-1]
