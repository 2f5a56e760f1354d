"""A real Milvus 2.3.5 standalone server (the PyPI ``milvus`` package, no Docker) reachable on
127.0.0.1 only: for the tests of the dense-only path and for server latency benchmarks.

Milvus 2.3.5 listens on every interface and has no setting to change that (the
``<component>.ip`` settings only choose the address it advertises), so ``python -m
ragloop.local.milvus_server --data DIR --port PORT`` runs it in a private network namespace
(:mod:`ragloop.local.private_network`) and relays 127.0.0.1:PORT to its proxy. The launcher
starts listening on PORT only once Milvus is healthy: a connection that succeeds means ready.

The package unpacks ~250 MB of binaries into each data directory (about 6 s of CPU); here they
are unpacked once into a cache directory that every data directory links to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from types import FrameType
from typing import Any

from ragloop.local.private_network import enter_private_network, forward, isolation_problem
from ragloop.local.processes import ChildProcess, StartupError, free_port
from ragloop.local.readiness import accepts_connections, http_ok, serving_on_loopback

log = logging.getLogger(__name__)

COMPONENTS = (
    "rootCoord",
    "proxy",
    "queryCoord",
    "queryNode",
    "indexCoord",
    "indexNode",
    "dataCoord",
    "dataNode",
)
STARTUP_TIMEOUT_S = 120.0
# Milvus's graceful stop takes over 10 s; its data is thrown away, so it gets only a few.
STOP_TIMEOUT_S = 3.0

__all__ = ["isolation_problem", "running_milvus_235"]


def default_bin_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ragloop" / f"milvus-{version('milvus')}-bin"


@contextlib.contextmanager
def running_milvus_235(
    work_dir: Path, *, timeout_s: float = STARTUP_TIMEOUT_S, bin_cache: Path | None = None
) -> Iterator[str]:
    """A fresh Milvus 2.3.5 with its data and logs under ``work_dir``; yields its URI
    (``http://127.0.0.1:PORT``) and stops it afterwards. Check :func:`isolation_problem` first."""
    port = free_port()
    command = [sys.executable, "-m", __name__, "--data", str(work_dir / "milvus")]
    command += ["--port", str(port), "--bin-cache", str(bin_cache or default_bin_cache())]
    child = ChildProcess("milvus-2.3.5", command, work_dir / "launcher.log")
    stop_timeout_s = STOP_TIMEOUT_S + 10
    with serving_on_loopback(
        child, port, timeout_s=timeout_s, stop_timeout_s=stop_timeout_s
    ) as uri:
        yield uri


# --- the launcher (runs in its own process) ---------------------------------------------------


class _Stopped(Exception):
    pass


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a fresh data directory")
    parser.add_argument("--port", type=int, required=True, help="the port on 127.0.0.1")
    parser.add_argument("--bin-cache", type=Path, default=None, help="where binaries are unpacked")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not every health probe
    signal.signal(signal.SIGTERM, _raise_stopped)
    signal.signal(signal.SIGINT, _raise_stopped)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))  # in the host's namespace: the only way in
    try:
        enter_private_network()
    except OSError as exc:
        sys.exit(f"cannot give Milvus a private network namespace: {exc}")
    server = _start_milvus(args.data, args.bin_cache or default_bin_cache())
    try:
        _wait_healthy(server)
        log.info("Milvus %s healthy; serving 127.0.0.1:%d", version("milvus"), args.port)
        asyncio.run(_serve(listener, server.server_proc, server.listen_port))
    except _Stopped as exc:
        log.info("stopping on %s", exc)
    finally:
        _stop(server)


def _start_milvus(data_dir: Path, bin_cache: Path) -> Any:
    from milvus import MilvusServer, MilvusServerConfig  # the launcher's dependency only

    data_dir.mkdir(parents=True, exist_ok=True)
    bin_cache.mkdir(parents=True, exist_ok=True)
    if not (data_dir / "bin").exists():
        (data_dir / "bin").symlink_to(bin_cache.resolve(), target_is_directory=True)
    config = MilvusServerConfig(data_dir=str(data_dir))
    for component in COMPONENTS:  # otherwise it looks for a non-loopback address, and has none
        config.set(f"{component}.ip", "127.0.0.1")
    server = MilvusServer(config, wait_for_started=False)
    with (bin_cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one launcher unpacks, the others wait and reuse
        server.start()
    return server


def _wait_healthy(server: Any) -> None:
    health = f"http://127.0.0.1:{server.webservice_port}/healthz"
    logs = Path(server.config.base_data_dir) / "logs"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        code = server.server_proc.poll()
        if code is not None:
            raise StartupError(f"Milvus exited with {code} during startup; see {logs}")
        if http_ok(health) and accepts_connections("127.0.0.1", server.listen_port):
            return
        time.sleep(0.25)
    raise StartupError(f"Milvus not healthy after {STARTUP_TIMEOUT_S:.0f}s; see {logs}")


async def _serve(listener: socket.socket, process: subprocess.Popen[Any], port: int) -> None:
    """Relay connections until a signal arrives or Milvus exits."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    relay = asyncio.create_task(forward(listener, port))
    while process.poll() is None and not stop.is_set() and not relay.done():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=1)
    if process.poll() is not None:
        log.error("Milvus exited with %s", process.returncode)
    else:
        log.info("stopping")
    relay.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await relay


def _stop(server: Any) -> None:
    process = server.server_proc
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    server.stop()  # closes its log files


if __name__ == "__main__":
    main()
