"""``free_port``: a port nothing listens on, never the same one twice in a process (two stages
started together were once given the same port, and one of them could not listen)."""

from __future__ import annotations

import socket

import pytest

from ragloop.local import processes
from ragloop.local.processes import StartupError, free_port, port_is_free


def test_ports_handed_out_are_free_and_never_repeated() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(port_is_free("127.0.0.1", port) for port in ports[-5:])


class _SamePortSocket(socket.socket):
    """A socket whose bind to port 0 always gets the same port, as a kernel may offer it."""

    def bind(self, address: object) -> None:
        super().bind(("127.0.0.1", 0))

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", 1)


def test_a_kernel_offering_only_handed_out_ports_gets_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(processes, "_HANDED_OUT", set())
    monkeypatch.setattr(processes.socket, "socket", _SamePortSocket)
    assert free_port() == 1
    with pytest.raises(StartupError, match=r"no free port on 127\.0\.0\.1"):
        free_port()
