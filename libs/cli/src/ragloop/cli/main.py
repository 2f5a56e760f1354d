"""ragloop: ask questions over your documents, ingest files, manage collections, or run the whole
local stack. A client of the orchestrator's REST API (--url, default RAGLOOP_URL or
http://127.0.0.1:8000)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ragloop.cli import commands
from ragloop.cli.client import DEFAULT_TIMEOUT_S, DEFAULT_URL
from ragloop.cli.errors import CliError
from ragloop.core.file_types import SUFFIX_LIST

EXAMPLES = """examples:
  ragloop ingest docs/ notes.pdf --collection kb
  ragloop ask "Who owns the Milvus Lite data directory?" --trace
  ragloop eval questions.jsonl --collection kb --output eval.json
  ragloop collections
  ragloop delete docs/storage.md
  ragloop serve
"""


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. \'{"lang": "en"}\'')
    return value


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return seconds


def _connection_options(*, suppress: bool) -> argparse.ArgumentParser:
    """--url, --api-key and --timeout; accepted before and after the subcommand (the
    subcommand's copies default to SUPPRESS so they do not overwrite the main parser's)."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("connection")
    group.add_argument(
        "--url",
        default=default(None),
        help=f"the orchestrator's base URL (default: $RAGLOOP_URL or {DEFAULT_URL})",
    )
    group.add_argument(
        "--api-key",
        default=default(None),
        metavar="KEY",
        help="sent as 'Authorization: Bearer KEY' (default: $RAGLOOP_API_KEY)",
    )
    group.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=default(DEFAULT_TIMEOUT_S),
        metavar="SECONDS",
        help=f"longest wait for one request (default: {DEFAULT_TIMEOUT_S:.0f})",
    )
    return options


def _add_ask(commands_: argparse._SubParsersAction, connection: argparse.ArgumentParser) -> None:
    parser = commands_.add_parser(
        "ask",
        parents=[connection],
        help="answer a question from your documents, with sources",
        description="Answer a question: retrieve, grade, rewrite when too few passages pass, "
        "then generate an answer citing its sources.",
    )
    parser.add_argument("question")
    parser.add_argument("--collection", help="knowledge base (default: the server's)")
    parser.add_argument("--tenant", help="tenant whose documents are searched")
    parser.add_argument("--top-k", type=int, help="passages retrieved per round (1-50)")
    parser.add_argument("--mode", choices=["dense", "sparse", "hybrid"], help="retrieval mode")
    parser.add_argument("--max-rewrites", type=int, help="query rewrites allowed (0-5)")
    parser.add_argument(
        "--instructions",
        metavar="TEXT",
        help='how the answer should be written, e.g. "Answer in French." (for the generator only)',
    )
    parser.add_argument(
        "--filters",
        type=_json_object,
        metavar="JSON",
        help='metadata conditions, e.g. \'{"lang": "en", "year": {"gte": 2020}}\'',
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--trace", action="store_true", help="also print the decision path")
    output.add_argument("--json", action="store_true", help="print the raw JSON response")
    parser.set_defaults(handler=commands.ask)


def _add_eval(commands_: argparse._SubParsersAction, connection: argparse.ArgumentParser) -> None:
    parser = commands_.add_parser(
        "eval",
        parents=[connection],
        help="score ragloop's answers to a file of questions (right +1, refused 0, wrong -1)",
        description="Ask every question of a JSON-lines question file and score each answer: "
        "right (it holds every must_include group; a yes-no answer also begins with the right "
        "word; an unanswerable question refused), missing (an answerable question refused) or "
        "wrong. Prints right, wrong, missing, the score (right - wrong, over the questions), "
        "refusals, spurious yes/no leads, repeated and cut-off sentences and p50 seconds by "
        "kind of question. The file's format: docs/evaluation.md.",
    )
    parser.add_argument("questions", type=Path, metavar="QUESTIONS.jsonl")
    parser.add_argument("--collection", help="knowledge base asked (default: the server's)")
    parser.add_argument("--tenant", help="tenant whose documents are searched")
    parser.add_argument(
        "--max-rewrites", type=int, help="query rewrites allowed (0-5; 0: a single round)"
    )
    parser.add_argument("--kinds", type=_names, help="only these kinds, comma-separated")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument(
        "--output", type=Path, metavar="FILE", help="write every answer and figure as JSON"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per question")
    parser.set_defaults(handler=commands.evaluate)


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one kind")
    return names


def _add_ingest(commands_: argparse._SubParsersAction, connection: argparse.ArgumentParser) -> None:
    parser = commands_.add_parser(
        "ingest",
        parents=[connection],
        help=f"upload files and folders ({SUFFIX_LIST})",
        description=f"Upload files, and folders recursively (hidden entries are left out), one "
        f"request per file: {SUFFIX_LIST}; other files are skipped. The server turns each into "
        "Markdown (Word headings and tables, one section per slide, a sheet or a CSV as a table, "
        "PDF tables as tables) and chunks it by section, keeping a table whole. A file's source "
        "is its path relative to the current folder (or to the argument's parent folder when "
        "outside it); re-ingesting a source replaces it. "
        "Exit code 1 when any file failed.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--collection", help="knowledge base (default: the server's)")
    parser.add_argument("--tenant", help="tenant the documents belong to")
    parser.add_argument(
        "--source-prefix", default="", metavar="PREFIX", help="put PREFIX/ before every source"
    )
    parser.add_argument(
        "--metadata", type=_json_object, metavar="JSON", help="metadata given to every file"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar, no list of skipped files"
    )
    parser.set_defaults(handler=commands.ingest)


def _add_collections(
    commands_: argparse._SubParsersAction, connection: argparse.ArgumentParser
) -> None:
    parser = commands_.add_parser(
        "collections",
        parents=[connection],
        help="list, describe, create or drop collections",
        description="Manage knowledge bases. Without an action: list them.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", parents=[connection], help="every collection (the default)")
    for action, text in [
        ("describe", "one collection's chunk count, model and features"),
        ("create", "an empty collection for the retriever's embedding model"),
    ]:
        actions.add_parser(action, parents=[connection], help=text).add_argument("name")
    drop = actions.add_parser(
        "drop", parents=[connection], help="delete a collection and all its chunks"
    )
    drop.add_argument("name")
    drop.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    parser.set_defaults(handler=commands.collections)


def _add_delete(commands_: argparse._SubParsersAction, connection: argparse.ArgumentParser) -> None:
    parser = commands_.add_parser(
        "delete", parents=[connection], help="delete every chunk of one source"
    )
    parser.add_argument("source", help="the source name, as ingested (e.g. docs/storage.md)")
    parser.add_argument("--collection", default="", help="knowledge base (default: the server's)")
    parser.add_argument("--tenant", default="", help="tenant the source belongs to")
    parser.set_defaults(handler=commands.delete)


def _add_serve(commands_: argparse._SubParsersAction) -> None:
    parser = commands_.add_parser(
        "serve",
        help="run the whole local stack (model server, four stages, REST API) until Ctrl-C",
        description="Run every service on 127.0.0.1, like `make run` (needs ragloop-local). "
        "Ports and folders come from RAGLOOP_* variables (RAGLOOP_HTTP_PORT, RAGLOOP_DATA_DIR).",
    )
    parser.add_argument("--no-ingest", action="store_true", help="skip the sample corpus")
    parser.add_argument("--corpus", help="folder ingested when the collection is empty")
    parser.set_defaults(handler=commands.serve)


def _version() -> str:
    try:
        return version("ragloop-cli")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragloop",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_connection_options(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    connection = _connection_options(suppress=True)
    _add_ask(subcommands, connection)
    _add_ingest(subcommands, connection)
    _add_eval(subcommands, connection)
    _add_collections(subcommands, connection)
    _add_delete(subcommands, connection)
    _add_serve(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
