"""Milvus Lite's own gRPC server (``python -m milvus_lite server``) as a child process on a
loopback port: a Milvus in server mode with nothing else to install, for tests that stop and
restart Milvus under a running retriever."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import serving_on_loopback


def milvus_lite_server(
    data_dir: Path, *, port: int, log_path: Path, host: str = "127.0.0.1"
) -> ChildProcess:
    """The server, not started yet: ``start()`` it, and start it again after a stop or a kill
    (same data directory and port). It accepts connections once it is ready."""
    command = [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir)]
    command += ["--host", host, "--port", str(port)]
    return ChildProcess("milvus-lite-server", command, log_path)


@contextmanager
def serving_milvus_lite(
    data_dir: Path, log_path: Path, *, timeout_s: float = 60.0
) -> Iterator[str]:
    """A Milvus Lite server over ``data_dir`` on a free loopback port for the duration; yields
    its URI (``http://127.0.0.1:PORT``) once it accepts connections."""
    port = free_port()
    child = milvus_lite_server(data_dir, port=port, log_path=log_path)
    with serving_on_loopback(child, port, timeout_s=timeout_s, stop_timeout_s=15) as uri:
        yield uri
