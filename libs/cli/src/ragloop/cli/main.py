"""Entry point of the ``ragloop`` command (subcommands are added in this package)."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragloop", description=__doc__)
    parser.parse_args(argv)
    return 0
