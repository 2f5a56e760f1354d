"""The expected failures of a command: each is printed as one ``error:`` line (never a
traceback) and ends the command with its exit code."""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on; exit code 1."""

    exit_code = 1


class UsageError(CliError):
    """The command line asks for something that cannot be done as given."""

    exit_code = 2


class Unreachable(CliError):
    """No orchestrator answers at the URL (refused, no route, name not found)."""

    exit_code = 2

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"cannot reach the orchestrator at {url}: {reason}; is it running? "
            "Start it with `ragloop serve` or `make run`, or point --url / RAGLOOP_URL at it."
        )


class ApiError(CliError):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
