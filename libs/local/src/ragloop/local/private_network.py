"""Confine a server that listens on every interface to the host's loopback.

The calling process moves into a new, empty network namespace (loopback only) where the server
runs; one socket, bound to 127.0.0.1 in the host's namespace *before* the move, is forwarded to
the server's port inside. Nothing else the server opens is reachable from outside, and every port
is free inside, so several such servers never collide. Linux only; needs either CAP_SYS_ADMIN or
unprivileged user namespaces.
"""

from __future__ import annotations

import asyncio
import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH14x"  # struct ifreq: interface name, then ifr_flags
CHUNK = 65536


def enter_private_network() -> None:
    """Move this (still single-threaded) process into a new network namespace, loopback up.

    Raises OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWNET) != 0:  # allowed with CAP_SYS_ADMIN
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:  # allowed to anyone, where enabled
            errno = ctypes.get_errno()
            raise OSError(errno, f"unshare(CLONE_NEWUSER | CLONE_NEWNET): {os.strerror(errno)}")
        # Keep our own uid and gid inside the user namespace (files stay ours).
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1"),
            ("/proc/self/gid_map", f"{gid} {gid} 1"),
        ):
            with open(path, "w") as file:
                file.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def isolation_problem() -> str | None:
    """Why this machine cannot give a process a private network namespace (None if it can).

    Tried in a throw-away interpreter: a namespace cannot be left once entered."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    probe = f"from {__name__} import enter_private_network as enter; enter()"
    try:
        result = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        return "probing for network namespaces timed out"
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return lines[-1] if lines else f"probe exited with {result.returncode}"


async def forward(listener: socket.socket, target_port: int) -> None:
    """Accept on ``listener`` (bound in the host's namespace) and relay each connection to
    127.0.0.1:``target_port`` in this process's namespace, until cancelled."""

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", target_port
            )
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except asyncio.CancelledError:
            # Shutting down. Not re-raised: asyncio (3.11) logs a cancelled connection handler
            # as an error.
            writer.close()
            upstream_writer.close()

    server = await asyncio.start_server(relay, sock=listener)
    async with server:
        await server.serve_forever()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
