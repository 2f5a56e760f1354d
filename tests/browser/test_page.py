"""The web page at ``/`` in a real headless Chromium: against a fake stream endpoint replaying
recorded runs (what the page shows for each event, errors, its event-stream parser), and against
the real orchestrator over real gRPC stages and the real chat model."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.browser import recorded_run as rec
from tests.service.http_helpers import serving_http
from tests.service.stack_helpers import rest_over_grpc

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

Gates = tuple[threading.Event, threading.Event]
pytestmark = pytest.mark.browser
async_api = pytest.importorskip(
    "playwright.async_api", reason="the `playwright` package drives the browser tests"
)
expect = async_api.expect

BAD_QUESTION = "Is the grader up?"
SHORT_QUESTION = "Does the stream end early?"


@pytest.fixture
def gates() -> Gates:
    return threading.Event(), threading.Event()


@pytest.fixture
def fake(gates: Gates) -> rec.FakeApi:
    return rec.FakeApi(
        {
            rec.QUESTION: rec.run_with_one_rewrite(*gates),
            BAD_QUESTION: rec.run_with_grader_down(),
            SHORT_QUESTION: rec.run_cut_short(),
        }
    )


@pytest.fixture
def fake_url(fake: rec.FakeApi, gates: Gates) -> Iterator[str]:
    with serving_http(fake.app()) as url:
        yield url
        for gate in gates:  # a stream left waiting would hold up the server's shutdown
            gate.set()


async def ask(page: Page, question: str, **options: str) -> None:
    """Type ``question`` (and any options, by field id) into the page and ask."""
    options_closed = await page.locator("#options").get_attribute("open") is None
    if options and options_closed:
        await page.locator("#options > summary").click()
    for field_id, value in options.items():
        await page.locator(f"#{field_id}").fill(value)
    await page.get_by_label("Question").fill(question)
    await page.get_by_role("button", name="Ask").click()


def node(page: Page, round_index: int, name: str) -> Locator:
    return page.locator("#rounds > li").nth(round_index).locator(f'.node[data-node="{name}"]')


async def test_the_page_shows_a_run_with_one_rewrite_as_its_events_arrive(
    page: Page, fake: rec.FakeApi, fake_url: str, gates: Gates
) -> None:
    grading, answering = gates
    served = await page.goto(fake_url)
    assert "script-src 'self'" in served.headers["content-security-policy"]
    options = {"top-k": "2", "max-rewrites": "1", "instructions": "Answer in French."}
    await ask(page, rec.QUESTION, **{"api-key": rec.API_KEY, **options})

    # While round 1's grader runs: retrieve has finished, grade is lit, the passages wait.
    await expect(node(page, 0, "grade")).to_have_attribute("data-state", "running")
    await expect(node(page, 0, "retrieve")).to_have_attribute("data-state", "ok")
    await expect(node(page, 0, "retrieve").locator(".node-time")).to_have_text("13 ms")
    await expect(node(page, 0, "retrieve").locator(".node-summary")).to_have_text(
        "2 passages (hybrid)"
    )
    await expect(page.locator("#passages .verdict")).to_have_text(["grading…", "grading…"])
    await expect(page.get_by_role("status")).to_have_text("Grading passages…")
    grading.set()

    # The answer streams; the restart dropped the first attempt's text.
    answer = page.locator("#answer")
    await expect(answer).to_have_text("Cats sleep up to sixteen hours a day.")
    await expect(answer).to_have_attribute("aria-busy", "true")
    await expect(node(page, 1, "generate")).to_have_attribute("data-state", "running")
    answering.set()

    # Done: the answer with its citation, the decision path, every node lit per round.
    await expect(answer).to_have_text(rec.ANSWER)
    await expect(answer).to_have_attribute("aria-busy", "false")
    await expect(page.locator("#decision-path")).to_have_text(
        "Decision path: retrieve → grade → rewrite → retrieve → grade → generate (outcome: passed)"
    )
    rounds = page.locator("#rounds > li")
    await expect(rounds).to_have_count(2)
    await expect(rounds.nth(0).locator(".node-name")).to_have_text(["retrieve", "grade", "rewrite"])
    await expect(rounds.nth(1).locator(".node-name")).to_have_text(
        ["retrieve", "grade", "generate"]
    )
    await expect(page.locator('.node:not([data-state="ok"])')).to_have_count(0)
    await expect(node(page, 0, "grade").locator(".node-summary")).to_have_text("0 of 2 passed (0%)")
    await expect(rounds.nth(1).locator("h3")).to_have_text(f"Round 2: {rec.REWRITTEN}")
    await expect(node(page, 1, "generate").locator(".node-summary")).to_have_text(
        "1 citation, grounded"
    )

    rewrites = page.locator("#rewrites > li")
    await expect(rewrites).to_have_count(1)
    await expect(rewrites.locator(".rewrite-query")).to_have_text(rec.REWRITTEN)
    await expect(rewrites.locator(".rewrite-reason")).to_have_text(rec.REWRITE_REASON)

    cards = page.locator("#passages .document")
    await expect(cards.locator(".verdict")).to_have_text(
        [
            "not relevant · confidence 0.90",
            "not relevant · confidence 0.70",
            "relevant · confidence 0.95",
            "not relevant · confidence 0.90",
        ]
    )
    await expect(cards.nth(2).locator(".reasoning")).to_have_text("States how long cats sleep.")
    # Document and model text are shown as text, never run as markup.
    await expect(cards.nth(1).locator(".passage-text")).to_have_text(rec.MARKUP_TEXT)
    await expect(cards.nth(1).locator(".reasoning")).to_contain_text("<script>alert(2)</script>")
    await expect(page.locator("#passages b, #passages img, #passages script")).to_have_count(0)

    # The citation link scrolls to the cited passage (the latest round's) and marks its quote.
    cats = cards.nth(2)
    await expect(cats).not_to_be_in_viewport()
    await answer.get_by_role("link", name="[1]").click()
    await expect(cats).to_have_class("document highlight")
    await expect(cats.locator("mark")).to_have_text(rec.QUOTE)
    await expect(cats).to_be_in_viewport()
    await expect(cats).to_be_focused()
    await expect(page.locator("#passages .highlight")).to_have_count(1)
    await expect(page.locator("#sources > li")).to_have_text([f"[1] notes/cats.md — {rec.QUOTE}"])

    # The options and the key went with the request; the key stays for this tab only.
    body, authorization = fake.requests[-1]
    assert (body.query, body.top_k, body.max_rewrite_attempts) == (rec.QUESTION, 2, 1)
    assert (body.collection, body.retrieval_mode) == (None, None)
    assert body.answer_instructions == "Answer in French."
    assert authorization == f"Bearer {rec.API_KEY}"
    await page.reload()
    await expect(page.get_by_label("API key")).to_have_value(rec.API_KEY)


async def test_a_citation_works_from_the_keyboard(page: Page, fake_url: str, gates: Gates) -> None:
    for gate in gates:
        gate.set()
    await page.goto(fake_url)
    await ask(page, rec.QUESTION, **{"api-key": rec.API_KEY})
    source_link = page.locator("#sources a.citation")
    await expect(source_link).to_have_text("[1] notes/cats.md")
    await source_link.focus()
    await page.keyboard.press("Enter")
    cats = page.locator("#passages .document").nth(2)
    await expect(cats).to_be_focused()
    await expect(cats.locator("mark")).to_have_text(rec.QUOTE)


async def test_a_thread_sends_its_turns_with_the_next_question(
    page: Page, fake: rec.FakeApi, fake_url: str, gates: Gates
) -> None:
    for gate in gates:
        gate.set()
    await page.goto(fake_url)
    thread = page.locator("#thread-section")
    await expect(thread).to_be_hidden()
    await ask(page, rec.QUESTION, **{"api-key": rec.API_KEY})
    await expect(page.locator("#status")).to_contain_text("Done")
    await expect(thread.locator(".turn")).to_have_text([rec.QUESTION, rec.ANSWER])
    first, _ = fake.requests[-1]
    assert first.history == []

    await ask(page, rec.QUESTION)
    await expect(thread.locator(".turn")).to_have_count(4)
    follow_up, _ = fake.requests[-1]
    assert [(t.role, t.content) for t in follow_up.history] == [
        ("user", rec.QUESTION),
        ("assistant", rec.ANSWER),
    ]

    await page.get_by_role("button", name="New conversation").click()
    await expect(thread).to_be_hidden()
    await ask(page, rec.QUESTION)
    await expect(thread.locator(".turn")).to_have_count(2)
    assert fake.requests[-1][0].history == []


async def test_http_errors_are_shown_with_what_to_do(page: Page, fake_url: str) -> None:
    await page.goto(fake_url)
    await ask(page, rec.QUESTION)
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("HTTP 401 Unauthorized")
    await expect(alert).to_contain_text("A valid API key is required.")
    await expect(alert).to_contain_text("Set the API key under Options.")

    await ask(page, rec.QUESTION, **{"api-key": rec.API_KEY, "top-k": "99"})
    await expect(alert).to_contain_text("HTTP 422 Unprocessable")
    await expect(alert).to_contain_text("top_k: Input should be less than or equal to 50")
    await expect(page.locator("#answer-section")).to_be_hidden()

    await page.get_by_label("Question").fill("   ")
    await page.get_by_label("Question").press("Enter")
    await expect(alert).to_have_text("Type a question first.")


async def test_an_error_event_and_a_stream_cut_short_are_shown(page: Page, fake_url: str) -> None:
    await page.goto(fake_url)
    await ask(page, BAD_QUESTION, **{"api-key": rec.API_KEY})
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("Error 503 stage_unavailable")
    await expect(alert).to_contain_text("grader: failed to connect to 127.0.0.1:9 (stage: grader)")
    await expect(alert).to_contain_text(f"Request id: {rec.REQUEST_ID}")
    await expect(node(page, 0, "grade")).to_have_attribute("data-state", "error")
    await expect(page.locator("#decision-path")).to_have_text("Decision path: retrieve → grade")
    await expect(page.locator("#passages .verdict")).to_have_text(["not graded"])

    await ask(page, SHORT_QUESTION)
    await expect(alert).to_contain_text("The stream ended early.")
    await expect(node(page, 0, "retrieve")).to_have_attribute("data-state", "stopped")
    await expect(page.get_by_role("button", name="Ask")).to_be_enabled()


async def test_stop_closes_the_stream(page: Page, fake_url: str, gates: Gates) -> None:
    await page.goto(fake_url)
    await ask(page, rec.QUESTION, **{"api-key": rec.API_KEY})
    await expect(node(page, 0, "grade")).to_have_attribute("data-state", "running")
    await page.get_by_role("button", name="Stop").click()
    await expect(page.get_by_role("status")).to_have_text("Stopped.")
    await expect(node(page, 0, "grade")).to_have_attribute("data-state", "stopped")
    await expect(page.get_by_role("button", name="Ask")).to_be_enabled()
    await expect(page.locator("#error")).to_be_hidden()


async def test_the_event_stream_reader(page: Page, fake_url: str) -> None:
    await page.goto(fake_url)
    events = await page.evaluate(
        """async (chunks) => {
            const { EventStreamParser } = await import("/static/page.js");
            const parser = new EventStreamParser();
            return chunks.flatMap((chunk) => parser.push(chunk));
        }""",
        [
            ": keep-alive\r",
            "\n\r\nevent: token\r",
            '\ndata: {"text":',
            ' "a"}\n',
            "\n",
            "event:ping\n\n",  # no data: no event
            "data:x\ndata: y\nid: 3\nretry: 10\n\r\n",
            "event: done\ndata: {}\n",  # never completed by a blank line
        ],
    )
    assert events == [
        {"event": "token", "data": '{"text": "a"}'},
        {"event": "message", "data": "x\ny"},
    ]

    # Bytes of one character split between two reads of the body are decoded as one.
    streamed = await page.evaluate(
        """async () => {
            const { readEventStream } = await import("/static/page.js");
            const bytes = new TextEncoder().encode('event: token\\ndata: "— é"\\n\\n');
            const cut = bytes.indexOf(0xe2) + 1;
            const body = new ReadableStream({
                start(controller) {
                    controller.enqueue(bytes.slice(0, cut));
                    controller.enqueue(bytes.slice(cut));
                    controller.close();
                },
            });
            const events = [];
            for await (const event of readEventStream(new Response(body))) events.push(event);
            return events;
        }"""
    )
    assert streamed == [{"event": "token", "data": '"— é"'}]


async def test_the_page_with_the_real_orchestrator_and_model(
    page: Page, tmp_path: Path, llama_url: str
) -> None:
    question = "How many hours a day do cats sleep?"
    cats_fact = "Cats sleep up to sixteen hours a day."
    async with rest_over_grpc(str(tmp_path / "milvus.db"), llama_url=llama_url) as url:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            ingested = await client.post(
                "/v1/documents",
                json={
                    "documents": [
                        {"source": "notes/cats.md", "text": cats_fact},
                        {"source": "notes/dogs.txt", "text": "Dogs enjoy long walks in the park."},
                    ]
                },
            )
            assert ingested.status_code == 200, ingested.text
        await page.goto(url)
        await ask(page, question, **{"top-k": "1", "max-rewrites": "0"})

        answer = page.locator("#answer")
        finished = re.compile("^(Done|Failed)")
        await expect(page.get_by_role("status")).to_have_text(finished, timeout=300_000)
        error = page.locator("#error")
        await expect(error, await error.text_content()).to_be_hidden()
        await expect(page.locator("#decision-path")).to_contain_text(
            "Decision path: retrieve → grade → generate"
        )
        await expect(page.locator('.node[data-state="ok"]')).to_have_count(3)
        await expect(answer).to_contain_text(re.compile("sixteen|16", re.IGNORECASE))
        await expect(page.locator("#passages .verdict")).to_have_text(
            [re.compile(r"^relevant · confidence \d\.\d\d$")]
        )

        await answer.get_by_role("link", name="[1]").click()
        cats = page.locator("#passages .document").first
        await expect(cats).to_have_class("document highlight")
        await expect(cats.locator("mark")).to_have_text(cats_fact)
