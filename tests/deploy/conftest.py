"""Compose as the deploy tests run it, and deploy/.env as `make up` writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apt import apt_install
from tests.deploy.compose_helpers import Compose, initialized_env


@pytest.fixture(scope="session")
def compose() -> Compose:
    return Compose(apt_install("docker-compose", "docker-compose"))


@pytest.fixture(scope="module")
def env_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return initialized_env(tmp_path_factory.mktemp("deploy"))
