"""deploy/docker-compose.yml as a real compose implementation reads it: Debian's docker-compose
1.29 (installed with apt-get when missing), whose `config` needs no Docker engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.helpers import COMPOSE_FILE, ENV_EXAMPLE, INIT_ENV, env_example_values

COMPOSE_TIMEOUT_S = 120


def compose_variables() -> set[str]:
    """Variables that would change what compose reads: the file's and compose's own."""
    return {*env_example_values(), "COMPOSE_FILE", "COMPOSE_PROFILES", "COMPOSE_PROJECT_NAME"}


@dataclass(frozen=True)
class Compose:
    binary: str

    def run(
        self, env_file: Path, *args: str, files: Sequence[Path] = (COMPOSE_FILE,)
    ) -> subprocess.CompletedProcess:
        """``docker-compose -f deploy/docker-compose.yml --env-file ENV_FILE ARGS`` (``-f`` each of
        ``files``), with no RAGLOOP_* or compose variable of this process leaking in (compose
        reads the shell too)."""
        leaking = compose_variables()
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in leaking and not name.startswith("RAGLOOP_")
        }
        command = [self.binary, *(arg for file in files for arg in ("-f", str(file)))]
        command += ["--env-file", str(env_file), *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=COMPOSE_TIMEOUT_S, env=env
        )

    def config(self, env_file: Path, files: Sequence[Path] = (COMPOSE_FILE,)) -> dict[str, Any]:
        """The configuration compose resolves (interpolated, merged, validated)."""
        result = self.run(env_file, "config", files=files)
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


def bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container path to host path of each bind mount."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("/"):
            mounts[target] = Path(source)
    return mounts
