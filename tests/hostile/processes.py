"""The ragloop processes (the stages and the orchestrator) started as `make run` starts
them, with ports of their own on this machine and no RAGLOOP_BIND_HOST: what they listen on is
their default. The chat model is a fake OpenAI-compatible server in the test (no model server)."""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ragloop.core.names import Stage, values
from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import stage_spec
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import grpc_serving, http_ok

STAGES = values(Stage)
STARTUP_TIMEOUT_S = 120


@dataclass
class Processes:
    children: list[ChildProcess] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)  # "grader grpc", "grader metrics", …

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['orchestrator http']}"

    def logs(self) -> dict[str, str]:
        return {c.name: c.log_path.read_text(errors="replace") for c in self.children}

    def stop(self) -> None:
        for child in reversed(self.children):
            child.signal_stop()
        for child in reversed(self.children):
            child.wait_stopped(15)


def start_processes(log_dir: Path, env: dict[str, str]) -> Processes:
    """Start the processes with ``env`` on free ports; wait until the orchestrator reports
    every stage ready. The caller stops them (also when this raises)."""
    running = Processes()
    for stage in STAGES:
        running.ports[f"{stage} grpc"] = free_port()
        running.ports[f"{stage} metrics"] = free_port()
    running.ports["orchestrator http"] = free_port()
    running.ports["orchestrator grpc"] = free_port()
    addresses = {
        setting_variable(stage_spec(stage).address_setting): (
            f"127.0.0.1:{running.ports[f'{stage} grpc']}"
        )
        for stage in STAGES
    }
    common = {**env, **addresses}
    for stage in STAGES:
        stage_env = {
            **common,
            setting_variable(stage_spec(stage).port_setting): str(running.ports[f"{stage} grpc"]),
            "RAGLOOP_METRICS_PORT": str(running.ports[f"{stage} metrics"]),
        }
        running.children.append(_spawn(stage, log_dir, stage_env))
    orchestrator_env = {
        **common,
        "RAGLOOP_HTTP_PORT": str(running.ports["orchestrator http"]),
        "RAGLOOP_ORCHESTRATOR_GRPC_PORT": str(running.ports["orchestrator grpc"]),
    }
    running.children.append(_spawn("orchestrator", log_dir, orchestrator_env))
    for child in running.children[:-1]:
        address = f"127.0.0.1:{running.ports[f'{child.name} grpc']}"
        child.wait_until(lambda a=address: grpc_serving(a), timeout_s=STARTUP_TIMEOUT_S)
    running.children[-1].wait_until(
        lambda: http_ok(f"{running.base_url}/readyz"), timeout_s=STARTUP_TIMEOUT_S
    )
    return running


def _spawn(name: str, log_dir: Path, env: dict[str, str]) -> ChildProcess:
    child = ChildProcess(
        name, [sys.executable, "-m", f"ragloop.{name}"], log_dir / f"{name}.log", env
    )
    child.start()
    return child


def listening_addresses(port: int) -> set[str]:
    """The local addresses something listens on at TCP ``port``, from /proc/net/tcp and tcp6
    (an IPv4-mapped IPv6 address as its IPv4 address)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.add(_address(address))
    return found


def _address(kernel_hex: str) -> str:
    """The kernel's hex: 32-bit words, each in host (little-endian) byte order."""
    packed = b"".join(
        bytes.fromhex(kernel_hex[i : i + 8])[::-1] for i in range(0, len(kernel_hex), 8)
    )
    if len(packed) == 4:
        return str(ipaddress.IPv4Address(packed))
    ipv6 = ipaddress.IPv6Address(packed)
    return str(ipv6.ipv4_mapped or ipv6)
