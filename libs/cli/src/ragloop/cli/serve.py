"""``ragloop serve``: the whole local stack, through ragloop-local's launcher (what ``make run``
calls). Imported only when asked for, so the rest of the CLI works without ragloop-local."""

from __future__ import annotations

import importlib

from ragloop.cli.errors import CliError

LAUNCHER_MODULE = "ragloop.local.cli"
MISSING_LAUNCHER = (
    "`ragloop serve` needs the ragloop-local package (the local model server and process "
    "launcher), which is not installed: run `make run` in the ragloop repository, or install "
    "ragloop-local (`uv sync` there installs it)"
)


def launcher_argv(*, no_ingest: bool, corpus: str | None) -> list[str]:
    argv = ["run"]
    if no_ingest:
        argv.append("--no-ingest")
    if corpus:
        argv += ["--corpus", corpus]
    return argv


def serve(*, no_ingest: bool, corpus: str | None) -> int:
    try:
        launcher = importlib.import_module(LAUNCHER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in ("ragloop.local", LAUNCHER_MODULE):
            raise  # ragloop-local is there but broken: show the real problem
        raise CliError(MISSING_LAUNCHER) from None
    return launcher.main(launcher_argv(no_ingest=no_ingest, corpus=corpus))
