"""The `ragloop` command line's wiring and messages that need no server: argument parsing,
server error bodies turned into one line, refusals before any request, and `serve` without
ragloop-local."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloop.cli.client import DEFAULT_TIMEOUT_S, error_message
from ragloop.cli.ingest import show_progress
from ragloop.cli.main import build_parser, main
from ragloop.cli.serve import launcher_argv


def response(status: int, body: Any = None, text: str = "") -> httpx.Response:
    request = httpx.Request("GET", "http://127.0.0.1:8000/v1/x")
    if body is not None:
        return httpx.Response(status, json=body, request=request)
    return httpx.Response(status, text=text, request=request)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            response(
                404, {"error": {"code": "not_found", "message": "no kb", "stage": "retriever"}}
            ),
            "HTTP 404 Not Found: no kb",
        ),
        (
            response(
                503,
                {
                    "error": {
                        "code": "stage_unavailable",
                        "message": "connection refused",
                        "stage": "grader",
                        "decision_path": ["retrieve", "grade"],
                    }
                },
            ),
            "HTTP 503 Service Unavailable: grader: connection refused "
            "(decision path: retrieve → grade)",
        ),
        (
            response(
                422,
                {
                    "detail": [
                        {"loc": ["body", "top_k"], "msg": "Input should be less than 50"},
                        {"loc": ["body"], "msg": "Field required"},
                    ]
                },
            ),
            "HTTP 422 Unprocessable Entity: top_k: Input should be less than 50; Field required",
        ),
        (response(404, {"detail": "Not Found"}), "HTTP 404 Not Found: Not Found"),
        (
            response(502, text="<html>bad gateway</html>\nmore"),
            "HTTP 502 Bad Gateway: <html>bad gateway</html>",
        ),
        (response(500, text=""), "HTTP 500 Internal Server Error"),
    ],
)
def test_server_errors_become_one_line(reply: httpx.Response, message: str) -> None:
    assert error_message(reply) == message


def test_connection_options_work_before_and_after_the_subcommand() -> None:
    parser = build_parser()
    before = parser.parse_args(["--url", "http://a", "collections", "describe", "kb"])
    after = parser.parse_args(
        ["collections", "describe", "kb", "--url", "http://b", "--timeout", "5"]
    )
    assert (before.url, before.timeout, before.name) == ("http://a", DEFAULT_TIMEOUT_S, "kb")
    assert (after.url, after.timeout, after.api_key) == ("http://b", 5.0, None)


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["ingest", "a.md", "--metadata", "{"], "not valid JSON"),
        (["ingest", "a.md", "--metadata", "[1]"], "must be a JSON object"),
        (["ask", "q", "--filters", "3"], "must be a JSON object"),
        (["ask", "q", "--mode", "bm25"], "invalid choice"),
        (["ask", "q", "--trace", "--json"], "not allowed with argument"),
        (["--timeout", "0", "collections"], "must be a positive number of seconds"),
        (["ingest"], "the following arguments are required: PATH"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_bad_arguments_are_usage_errors(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert complaint in capsys.readouterr().err


def test_drop_needs_yes_before_any_request(capsys: pytest.CaptureFixture[str]) -> None:
    # No server at this URL: the refusal must come first.
    assert main(["--url", "http://127.0.0.1:9", "collections", "drop", "kb"]) == 2
    assert capsys.readouterr().err == (
        "error: dropping collection 'kb' deletes every chunk in it; repeat with --yes to confirm\n"
    )


def test_ingest_refuses_missing_paths_and_folders_with_nothing_to_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", "http://127.0.0.1:9"]
    assert main([*url, "ingest", str(tmp_path / "nope"), str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: no such file or folder: {tmp_path / 'nope'}\n"

    (tmp_path / "photo.png").write_bytes(b"png")
    assert main([*url, "ingest", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"skipped: {tmp_path / 'photo.png'} (not a file type ragloop reads)\n"
    assert captured.err == (
        "error: no files to ingest: ragloop reads "
        ".txt, .md, .markdown, .html, .htm, .pdf, .docx, .pptx, .xlsx, .csv, .epub\n"
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_only_for_a_terminal_and_not_quiet() -> None:
    assert show_progress(quiet=False, stream=Terminal())
    assert not show_progress(quiet=True, stream=Terminal())
    assert not show_progress(quiet=False, stream=io.StringIO())


def test_serve_without_ragloop_local_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ragloop.local.cli", None)  # as if not installed
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: `ragloop serve` needs the ragloop-local package")
    assert len(err.splitlines()) == 1


def test_serve_passes_its_options_to_the_launcher() -> None:
    assert launcher_argv(no_ingest=False, corpus=None) == ["run"]
    assert launcher_argv(no_ingest=True, corpus="papers") == [
        "run",
        "--no-ingest",
        "--corpus",
        "papers",
    ]
