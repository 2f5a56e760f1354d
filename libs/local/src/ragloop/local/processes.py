"""Start child processes, wait for them to become ready, and stop them cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


class StartupError(RuntimeError):
    pass


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


# Every port free_port handed out in this process: once its probe socket is closed the kernel
# may offer a port again, and two services started together were once given the same one.
_HANDED_OUT: set[tuple[str, int]] = set()
_FREE_PORT_ATTEMPTS = 100


def free_port(host: str = "127.0.0.1") -> int:
    """A port of ``host`` that nothing listens on now and that this process never handed out."""
    for _ in range(_FREE_PORT_ATTEMPTS):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if (host, port) not in _HANDED_OUT:
            _HANDED_OUT.add((host, port))
            return port
    raise StartupError(f"no free port on {host} that was not handed out already")


@dataclass
class ChildProcess:
    name: str
    command: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
            start_new_session=True,  # Ctrl-C reaches the launcher only; it stops children in order
        )
        log.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def exit_status(self) -> str:
        """How the process ended, in words: "exit code 1", "killed by SIGKILL"."""
        code = None if self.process is None else self.process.poll()
        if code is None:
            return "not started" if self.process is None else "running"
        if code >= 0:
            return f"exit code {code}"
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_until(self, ready: Callable[[], bool], *, timeout_s: float) -> None:
        """Poll ``ready`` until it holds; fail fast if the process dies, or after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                raise StartupError(
                    f"{self.name} exited during startup (see {self.log_path}):\n{self.log_tail()}"
                )
            if ready():
                return
            time.sleep(0.25)
        raise StartupError(f"{self.name} not ready after {timeout_s:.0f}s (see {self.log_path})")

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def rss_bytes(self) -> int | None:
        """Resident memory of the running process (Linux /proc), or None."""
        if not self.running or self.pid is None:
            return None
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024  # kB
        return None

    def kill(self) -> None:
        """SIGKILL the process and everything it started (its own session), as a crash would,
        and reap it."""
        if self.running and self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def signal_stop(self) -> None:
        if self.running and self.process is not None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout_s: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
