"""What the deployment files are checked against, derived from the code: the five services,
the settings class each one reads, and the variables of deploy/.env.example."""

from __future__ import annotations

import importlib
import inspect
import re
from functools import cache

from pydantic_settings import BaseSettings

from ragloop.core.names import Stage, values
from tests.conftest import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE_FILE = DEPLOY / "docker-compose.yml"
ENV_EXAMPLE = DEPLOY / ".env.example"
INIT_ENV = DEPLOY / "init-env.sh"
K8S = DEPLOY / "k8s"

STAGES = values(Stage)
SERVICES = (*STAGES, "orchestrator")


@cache
def settings_class(service: str) -> type[BaseSettings]:
    """The settings class ``ragloop.<service>.settings`` defines (the one the service reads)."""
    module = importlib.import_module(f"ragloop.{service}.settings")
    defined = [
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseSettings)
        and value.__module__ == module.__name__
    ]
    if len(defined) != 1:
        raise AssertionError(f"{module.__name__} defines {defined}, not one settings class")
    return defined[0]


def variable(field: str) -> str:
    return f"RAGLOOP_{field.upper()}"


def settings_variables(service: str) -> set[str]:
    """Every RAGLOOP_* variable the service reads."""
    return {variable(field) for field in settings_class(service).model_fields}


def all_settings_variables() -> set[str]:
    return set().union(*(settings_variables(service) for service in SERVICES))


def default(service: str, field: str) -> object:
    return settings_class(service).model_fields[field].default


def grpc_port_field(service: str) -> str:
    """The setting of the service's gRPC port (the orchestrator's: RagService)."""
    return "orchestrator_grpc_port" if service == "orchestrator" else f"{service}_port"


def grpc_port(service: str) -> int:
    """The gRPC port the service serves by default."""
    return int(default(service, grpc_port_field(service)))


def env_file_values(text: str) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments and blank lines skipped; the last line wins)."""
    values = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            if not sep:
                raise AssertionError(f"not KEY=VALUE: {line!r}")
            values[key.strip()] = value
    return values


def env_example_values() -> dict[str, str]:
    return env_file_values(ENV_EXAMPLE.read_text())


def env_example_unset() -> set[str]:
    """Settings .env.example names but leaves unset (``# VAR=``): their default depends on
    another setting (the embedding model's thresholds and prefixes), and compose would pass a
    value written there."""
    return set(re.findall(r"^# (RAGLOOP_[A-Z_]+)=$", ENV_EXAMPLE.read_text(), re.MULTILINE))
