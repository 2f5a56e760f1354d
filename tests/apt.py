"""Debian packages a test needs (docker-compose, prometheus), installed with apt-get when missing
— the tests run as root on CI machines and development machines alike."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

APT_TIMEOUT_S = 600


def apt_install(package: str, binary: str) -> str:
    """The path of ``binary``, installing Debian's ``package`` when it is missing; skips (saying
    why) only when no installation is possible."""
    found = shutil.which(binary)
    if found:
        return found
    if shutil.which("apt-get") is None:
        pytest.skip(f"{binary} is not installed and there is no apt-get to install {package}")
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            pytest.skip(f"{binary} is not installed; installing {package} needs root or sudo")
        prefix = ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}

    def apt_get(*args: str) -> subprocess.CompletedProcess:
        command = [*prefix, "apt-get", *args]
        try:
            return subprocess.run(
                command, capture_output=True, text=True, timeout=APT_TIMEOUT_S, env=env
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"`{' '.join(command)}` did not finish in {APT_TIMEOUT_S} s")

    install = ("install", "-y", "--no-install-recommends", package)
    if apt_get(*install).returncode != 0:
        apt_get("update")  # the package lists may be missing or stale
        result = apt_get(*install)
        if result.returncode != 0:
            pytest.skip(f"cannot install Debian's {package} package:\n{result.stderr[-2000:]}")
    found = shutil.which(binary)
    if not found:
        pytest.fail(f"Debian's {package} package installed no {binary} on PATH")
    return found
