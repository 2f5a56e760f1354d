"""deploy/docker-compose.yml as a real compose implementation reads it: Debian's docker-compose
1.29 (installed with apt-get when missing), whose `config` needs no Docker engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.helpers import COMPOSE_FILE, ENV_EXAMPLE, INIT_ENV, env_example_values

APT_TIMEOUT_S = 600
COMPOSE_TIMEOUT_S = 120


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


def compose_variables() -> set[str]:
    """Variables that would change what compose reads: the file's and compose's own."""
    return {*env_example_values(), "COMPOSE_FILE", "COMPOSE_PROFILES", "COMPOSE_PROJECT_NAME"}


@dataclass(frozen=True)
class Compose:
    binary: str

    def run(self, env_file: Path, *args: str) -> subprocess.CompletedProcess:
        """``docker-compose -f deploy/docker-compose.yml --env-file ENV_FILE ARGS``, with no
        RAGLOOP_* or compose variable of this process leaking in (compose reads the shell too)."""
        leaking = compose_variables()
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in leaking and not name.startswith("RAGLOOP_")
        }
        command = [self.binary, "-f", str(COMPOSE_FILE), "--env-file", str(env_file), *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=COMPOSE_TIMEOUT_S, env=env
        )

    def config(self, env_file: Path) -> dict[str, Any]:
        """The configuration compose resolves (interpolated, merged, validated)."""
        result = self.run(env_file, "config")
        if result.returncode != 0:
            raise AssertionError(f"docker-compose config failed:\n{result.stderr}")
        return yaml.safe_load(result.stdout)


def initialized_env(directory: Path) -> Path:
    """deploy/.env as `make up` creates it: deploy/init-env.sh run on a copy of .env.example."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(ENV_EXAMPLE, directory / ENV_EXAMPLE.name)
    shutil.copy(INIT_ENV, directory / INIT_ENV.name)
    subprocess.run(
        ["sh", str(directory / INIT_ENV.name)],
        check=True,
        capture_output=True,
        timeout=COMPOSE_TIMEOUT_S,
    )
    return directory / ".env"


def raw_compose() -> dict[str, Any]:
    """deploy/docker-compose.yml as written (YAML anchors and merge keys resolved)."""
    return yaml.safe_load(COMPOSE_FILE.read_text())
