"""Milvus Lite's own gRPC server (``python -m milvus_lite server``) as a child process on a
loopback port: a Milvus in server mode with nothing else to install, for tests that stop and
restart Milvus under a running retriever."""

from __future__ import annotations

import sys
from pathlib import Path

from ragloop.local.processes import ChildProcess


def milvus_lite_server(
    data_dir: Path, *, port: int, log_path: Path, host: str = "127.0.0.1"
) -> ChildProcess:
    """The server, not started yet: ``start()`` it, and start it again after a stop or a kill
    (same data directory and port). It accepts connections once it is ready."""
    command = [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir)]
    command += ["--host", host, "--port", str(port)]
    return ChildProcess("milvus-lite-server", command, log_path)
