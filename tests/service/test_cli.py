"""The `ragloop` command line against the real orchestrator REST app through real HTTP, its
retriever (Milvus Lite, ONNX embeddings) and — for `ask` — the model stages on real gRPC servers
over the real chat model. The command runs in process, in a worker thread, so that the test's
event loop keeps serving gRPC."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from ragloop.cli.main import main
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.sse import KEEP_ALIVE, encode
from tests.sample_files import PUBLIC_PDF, docx_file, epub_file, pptx_file, xlsx_file
from tests.service.http_helpers import serving_http
from tests.service.stack_helpers import rest_over_grpc


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


async def ragloop(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    async with rest_over_grpc(str(tmp_path / "milvus.db")) as base_url:
        yield base_url


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder of notes: three readable files, one unreadable text file, one other type."""
    folder = tmp_path / "corpus" / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "cats.md").write_text("# Cats\n\nCats sleep up to sixteen hours a day.")
    (folder / "dogs.txt").write_text("Dogs enjoy long walks in the park.")
    (folder / "sub" / "bread.html").write_text(
        "<html><body><p>Sourdough rises with wild yeast.</p><script>x()</script></body></html>"
    )
    (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (folder / "photo.png").write_bytes(b"\x89PNG")
    return folder


def outside(folder: Path) -> Path:
    """A current folder that does not hold ``folder``, whichever folder pytest runs from."""
    elsewhere = folder.parent.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return elsewhere


async def test_ingest_a_folder_then_manage_what_it_holds(
    url: str, notes: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(outside(notes))
    ingested = await ragloop(
        capsys, "--url", url, "ingest", str(notes), "--collection", "kb", "--api-key", "secret"
    )
    assert ingested.code == 1  # one file failed
    assert f"skipped: {notes / 'photo.png'} (not a file type ragloop reads)" in ingested.out
    assert ingested.out.strip().endswith(
        "ingested 3 files (3 chunks) into collection 'kb'; skipped 1, failed 1"
    )
    assert f"failed: {notes / 'latin1.txt'}: HTTP 422 Unprocessable Entity: " in ingested.err
    assert "notes/latin1.txt: not UTF-8 text" in ingested.err
    assert "Traceback" not in ingested.err

    listed = await ragloop(capsys, "collections", "--url", url)
    assert listed.code == 0
    assert listed.out.splitlines()[1].split()[:2] == ["kb", "3"]

    # Outside the current folder, the source is the path below the argument's parent folder.
    deleted = await ragloop(
        capsys, "delete", "notes/sub/bread.html", "--collection", "kb", "--url", url
    )
    assert (deleted.code, deleted.out) == (
        0,
        "deleted 1 chunk of 'notes/sub/bread.html' from collection 'kb'\n",
    )
    described = await ragloop(capsys, "collections", "describe", "kb", "--url", url)
    assert "chunks:                2\n" in described.out

    again = await ragloop(
        capsys, "delete", "notes/sub/bread.html", "--collection", "kb", "--url", url
    )
    assert again.code == 1
    assert again.err == (
        "error: HTTP 404 Not Found: collection 'kb' holds no chunk of source "
        "'notes/sub/bread.html'\n"
    )

    # Re-ingesting a source replaces its chunks. From inside the corpus folder, the file's path
    # relative to the current folder is the same source as before.
    monkeypatch.chdir(notes.parent)
    reingested = await ragloop(
        capsys, "ingest", "notes/cats.md", "--collection", "kb", "-q", "--url", url
    )
    assert reingested.code == 0 and "skipped 0, failed 0" in reingested.out
    described = await ragloop(capsys, "collections", "describe", "kb", "--url", url)
    assert "chunks:                2\n" in described.out


async def test_ingest_uploads_the_documents_people_have(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "office"
    folder.mkdir()
    for name, data in {
        "otters.docx": docx_file(),
        "plan.PPTX": pptx_file(),
        "tea.xlsx": xlsx_file(),
        "planets.csv": b"planet,moons\nMars,2\n",
        "keeper.epub": epub_file(),
        "example.pdf": PUBLIC_PDF.read_bytes(),
        "torn.docx": docx_file()[:1000],
        "old.doc": b"\xd0\xcf\x11\xe0",
    }.items():
        (folder / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    ingested = await ragloop(capsys, "--url", url, "ingest", "office", "-q")
    assert ingested.code == 1
    assert ingested.out.startswith("ingested 6 files (")  # old.doc skipped, torn.docx failed
    assert ingested.out.endswith("skipped 1, failed 1\n")
    assert ingested.err.startswith("failed: office/torn.docx: HTTP 422 Unprocessable Entity: ")
    assert "office/torn.docx: not a readable DOCX file" in ingested.err


async def test_collections_create_describe_and_drop(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    created = await ragloop(capsys, "--url", url, "collections", "create", "kb2")
    assert created.out == (
        "collection 'kb2' is ready (local:all-minilm-l6-v2, 384 dimensions, 0 chunks)\n"
    )
    unconfirmed = await ragloop(capsys, "--url", url, "collections", "drop", "kb2")
    assert unconfirmed.code == 2 and "repeat with --yes" in unconfirmed.err
    assert "kb2" in (await ragloop(capsys, "--url", url, "collections", "list")).out

    dropped = await ragloop(capsys, "--url", url, "collections", "drop", "kb2", "--yes")
    assert (dropped.code, dropped.out) == (0, "dropped collection 'kb2'\n")
    assert (await ragloop(capsys, "--url", url, "collections")).out == "no collections\n"

    missing = await ragloop(capsys, "--url", url, "collections", "describe", "kb2")
    assert missing.code == 1
    assert missing.err == "error: HTTP 404 Not Found: collection 'kb2' does not exist\n"
    invalid = await ragloop(capsys, "--url", url, "collections", "create", "no spaces")
    assert invalid.code == 1 and invalid.err.startswith("error: HTTP 422 Unprocessable Entity: ")
    assert "name: String should match pattern" in invalid.err


async def test_a_failing_stage_is_one_line_naming_it(
    url: str, notes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await ragloop(capsys, "--url", url, "ingest", str(notes / "cats.md"))
    # The grader's address is a closed port in this stack.
    asked = await ragloop(capsys, "--url", url, "ask", "How long do cats sleep?")
    assert asked.code == 1 and asked.out == ""
    # gRPC's words after the stage's name: round robin's "connections to all backends failing;
    # last error: …: Connection refused".
    assert asked.err.startswith("error: HTTP 503 Service Unavailable: grader: ")
    assert "Connection refused" in asked.err
    assert asked.err.endswith("(decision path: retrieve → grade)\n")


def test_a_closed_port_is_one_clear_line_and_exit_code_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    assert main(["--url", closed, "collections"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach the orchestrator at {closed}: ")
    assert "is it running? Start it with `ragloop serve` or `make run`" in err
    assert len(err.splitlines()) == 1


def test_url_and_api_key_come_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []
    app = FastAPI()

    @app.get("/v1/collections")
    async def collections(request: Request) -> dict[str, list]:
        seen.append(request.headers.get("authorization"))
        return {"collections": []}

    monkeypatch.delenv("RAGLOOP_API_KEY", raising=False)
    with serving_http(app) as url:
        monkeypatch.setenv("RAGLOOP_URL", url)
        assert main(["collections"]) == 0
        monkeypatch.setenv("RAGLOOP_API_KEY", "from-env")
        assert main(["collections"]) == 0
        assert main(["collections", "--api-key", "from-flag"]) == 0
    assert seen == [None, "Bearer from-env", "Bearer from-flag"]
    assert capsys.readouterr().out == "no collections\n" * 3


def test_ask_sends_its_options_in_the_request_body(capsys: pytest.CaptureFixture[str]) -> None:
    bodies: list[dict[str, object]] = []
    app = FastAPI()

    @app.post("/v1/query")
    async def query(request: Request) -> dict[str, str]:
        bodies.append(await request.json())
        return {"answer": "Oui."}

    with serving_http(app) as url:
        argv = ["--url", url, "ask", "q", "--top-k", "3", "--instructions", "Answer in French."]
        assert main([*argv, "--json"]) == 0
    assert bodies == [{"query": "q", "top_k": 3, "answer_instructions": "Answer in French."}]
    assert '"answer": "Oui."' in capsys.readouterr().out


async def test_ask_prints_the_answer_its_sources_and_the_decision_path(
    tmp_path: Path,
    notes: Path,
    llama_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(outside(notes))
    async with rest_over_grpc(str(tmp_path / "milvus.db"), llama_url=llama_url) as url:
        ingested = await ragloop(capsys, "--url", url, "ingest", str(notes), "-q")
        assert "ingested 3 files" in ingested.out
        asked = await ragloop(
            capsys,
            "--url",
            url,
            "ask",
            "How many hours a day do cats sleep?",
            "--top-k",
            "1",
            "--max-rewrites",
            "0",
            "--trace",
        )
    assert asked.code == 0, asked.err
    answer, _, rest = asked.out.partition("\nSources:\n")
    assert "sixteen" in answer.lower() or "16" in answer
    assert rest.startswith("  [1] notes/cats.md, chunk 0\n")
    trace = rest.split("\n\n", 1)[1].splitlines()
    assert trace[1] == "├── round 1: “How many hours a day do cats sleep?”"
    assert trace[0].startswith("“How many hours a day do cats sleep?” · 1 round · ")
    assert trace[2].startswith("│   ├── retrieve: 1 passage (hybrid; ")
    assert trace[3].startswith("│   └── grade: 1 of 1 passed (pass rate 100%) · ")
    assert trace[4].startswith("└── generate: from 1 passage: 1 citation, grounded · ")
    assert "decision path: retrieve → grade → generate" in trace


def _question_file(path: Path, *questions: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    return path


def _cat_run(answer: str, standalone: str) -> list[bytes]:
    """A stream of a run that finds, passes and writes from one passage about cats, as the
    server writes its events (with a keep-alive comment)."""
    passage = {"id": "d1", "source": "cats.md", "chunk_index": 0, "score": 0.8}
    nodes = {
        "retrieve": {"documents": [passage | {"text": "Cats sleep up to sixteen hours a day."}]},
        "grade": {"grades": [{"document_id": "d1", "relevant": True, "confidence": 0.9}]},
        "generate": {"document_ids": ["d1"], "best_confidence": 0.58},
    }
    finished = [
        encode("node_finished", {"node": node, "round": 1, "status": "ok", "details": details})
        for node, details in nodes.items()
    ]
    done = {
        "answer": answer,
        "refused_by": "",
        "citations": [{}],
        "query": {"rewrite_count": 1, "standalone": standalone},
        "workflow": {
            "outcome": "passed",
            "node_executions": [{"node": "generate", "details": nodes["generate"]}],
        },
        "support": 0.9,
    }
    return [KEEP_ALIVE, *finished, encode("token", {"text": answer}), encode("done", done)]


def test_eval_sends_each_question_with_its_history_and_scores_the_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies: list[dict[str, object]] = []
    app = FastAPI()

    @app.post("/v1/query/stream")
    async def query(request: Request) -> StreamingResponse:
        body = await request.json()
        bodies.append(body)
        if body["query"] == "Fails?":
            error = {"status": 503, "code": "stage_unavailable", "message": "connection refused"}
            events = [encode("error", error | {"stage": "generator", "decision_path": []})]
        elif body.get("history"):
            events = _cat_run("Cats sleep sixteen hours [1].", "How long do cats sleep?")
        else:
            events = _cat_run("No idea.", body["query"])
        return StreamingResponse(iter(events), media_type="text/event-stream")

    history = [
        {"role": "user", "content": "Tell me about cats."},
        {"role": "assistant", "content": "Cats nap."},
    ]
    questions = _question_file(
        tmp_path / "q.jsonl",
        {
            "id": "a",
            "question": "And how long?",
            "kind": "follow-up",
            "must_include": [["sixteen", "16"]],
            "history": history,
        },
        {"id": "b", "question": "What do dogs eat?", "kind": "what", "must_include": [["meat"]]},
        {"id": "c", "question": "Fails?", "kind": "what", "must_include": [["x"]]},
    )
    output = tmp_path / "out" / "eval.json"
    with serving_http(app) as url:
        argv = ["--url", url, "eval", str(questions), "--collection", "kb", "--max-rewrites", "0"]
        assert main([*argv, "--output", str(output)]) == 0
    assert bodies[0] == {
        "query": "And how long?",
        "max_rewrite_attempts": 0,
        "collection": "kb",
        "history": history,
    }
    assert "history" not in bodies[1]
    captured = capsys.readouterr()
    assert "[1/3] a (follow-up): right" in captured.err
    assert "[3/3] c (what): missing" in captured.err
    assert "HTTP 503 Service Unavailable: generator: connection refused" in captured.err
    assert "score +0.000 (right 0.333, wrong 0.333)" in captured.out
    assert (
        "answer's text retrieved: 1, passed: 1, reached the writer: 1 of 3 answerable; "
        "refused with the text passed: 0"
    ) in captured.out
    written = json.loads(output.read_text())
    assert written["summary"]["all"]["errors"] == 1
    records = written["records"]
    assert [r["verdict"] for r in records] == ["right", "wrong", "missing"]
    assert [r["loss"] for r in records] == ["right", "not_retrieved", "error"]
    first = records[0]["answer"]
    assert first["checks"] == {"support": 0.9, "best_confidence": 0.58}
    assert first["outcome"] == "passed" and first["rewrites"] == 1
    assert first["standalone"] == "How long do cats sleep?"
    assert first["reach"] == {"retrieved": True, "passed": True, "read": True}
    assert "Cats sleep up to" not in output.read_text()  # no passage text is kept
    assert records[1]["answer"]["standalone"] == ""  # answered as asked


def test_eval_names_the_line_of_a_malformed_question_and_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "a", "question": "Why?", "must_include": [["x"]]}\n{"id": "b"}\n')
    assert main(["--url", "http://127.0.0.1:9", "eval", str(questions)]) == 2
    assert f"error: {questions}:2: question must be a non-empty string" in capsys.readouterr().err


async def test_eval_scores_the_real_stack(
    tmp_path: Path,
    notes: Path,
    llama_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(outside(notes))
    questions = _question_file(
        tmp_path / "q.jsonl",
        {
            "id": "cats",
            "question": "How many hours a day do cats sleep?",
            "kind": "what",
            "must_include": [["sixteen", "16"]],
        },
        {
            "id": "tax",
            "question": "What is the corporate tax rate in Peru?",
            "kind": "out-of-scope",
            "answerable": False,
            "must_include": [],
        },
    )
    async with rest_over_grpc(str(tmp_path / "milvus.db"), llama_url=llama_url) as url:
        await ragloop(capsys, "--url", url, "ingest", str(notes), "-q")
        evaluated = await ragloop(
            capsys, "--url", url, "eval", str(questions), "--output", str(tmp_path / "e.json")
        )
    assert evaluated.code == 0, evaluated.err
    records = {r["id"]: r for r in json.loads((tmp_path / "e.json").read_text())["records"]}
    assert records["cats"]["verdict"] == "right", records["cats"]
    assert records["tax"]["verdict"] == "right", records["tax"]  # refused: the notes are silent
    assert "score +1.000 (right 1.000, wrong 0.000)" in evaluated.out
