"""A chat model server for the fault tests: OpenAI's ``/v1/chat/completions`` on 127.0.0.1 (what
llama-server speaks), answering every stage's JSON schema (and the generator's plain-text prompt)
at once with a valid reply (streamed when asked), so the stage processes run their real code while
the test decides when a stage's model call ends.

The stage is told by the reply schema it asks for, a one-token scored call by its system
message (the grader's, or the generator's answer-match and support checks and lead). A grader
call passes its passage unless the question holds ``NOT_RELEVANT`` (so the loop goes on to the
rewriter); every rewrite is a new query. ``hold(stage)`` makes that stage's calls wait until the
test releases them: the test then knows a request is in flight at that stage, without timing
anything.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragloop.generator.prompts import ANSWER_MATCH_SYSTEM, LEAD_SYSTEM, SUPPORT_SYSTEM
from ragloop.generator.text_answer import TEXT_SYSTEM

NOT_RELEVANT = "NOT_RELEVANT"
# The generator's one-token calls (the answer-match and support checks, a decision's lead) ask
# for log-probabilities as the grader's do; their system messages tell them apart.
GENERATOR_SCORED_SYSTEMS = (ANSWER_MATCH_SYSTEM, SUPPORT_SYSTEM, LEAD_SYSTEM)
HOLD_LIMIT_S = 120.0  # a held call never outlives a test, even one that forgets to release it


class Hold:
    """Calls of one stage waiting for :meth:`release`."""

    def __init__(self) -> None:
        self._released = threading.Event()
        self._arrived = threading.Condition()
        self.arrivals = 0

    def wait_for_arrivals(self, count: int, timeout_s: float) -> bool:
        with self._arrived:
            return self._arrived.wait_for(lambda: self.arrivals >= count, timeout=timeout_s)

    def release(self) -> None:
        self._released.set()

    def _enter(self) -> None:
        with self._arrived:
            self.arrivals += 1
            self._arrived.notify_all()
        self._released.wait(HOLD_LIMIT_S)


class ScriptedModel:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self._holds: dict[str, Hold] = {}
        self._rewrites = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def serving(self) -> Iterator[ScriptedModel]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            for hold in list(self._holds.values()):
                hold.release()
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=10)

    @contextmanager
    def hold(self, stage: str) -> Iterator[Hold]:
        """Hold ``stage``'s model calls inside the block; they are released when it ends."""
        hold = Hold()
        self._holds[stage] = hold
        try:
            yield hold
        finally:
            self._holds.pop(stage, None)
            hold.release()

    def reply(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The stage a request comes from and the reply its schema asks for."""
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        fields = set(schema.get("properties", {}))
        prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
        if body.get("logprobs"):  # a scored call: one token, yes or no
            system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
            stage = "generator" if system in GENERATOR_SCORED_SYSTEMS else "grader"
            return stage, {"token": "no" if NOT_RELEVANT in prompt else "yes"}
        if "relevant" in fields:
            relevant = NOT_RELEVANT not in prompt
            return "grader", {"relevant": relevant, "confidence": 0.9, "reasoning": "scripted"}
        if "rewritten_query" in fields:
            query = f"rewritten query {next(self._rewrites)}"
            return "rewriter", {"rewritten_query": query, "reason": "scripted", "keywords": []}
        if "answerable" in fields:
            sentence = {"source": 1, "text": "The first passage answers it."}
            return "generator", {"answerable": True, "sentences": [sentence]}
        if not schema and TEXT_SYSTEM in prompt:  # the generator's default, plain-text answer
            return "generator", {"text": "The first passage answers it. [1]"}
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                scripted = model.reply(body)
                if self.path != "/v1/chat/completions" or scripted is None:
                    self._send(400, {"error": {"message": "the scripted model cannot answer this"}})
                    return
                stage, reply = scripted
                with model._lock:
                    model.calls[stage] = model.calls.get(stage, 0) + 1
                hold = model._holds.get(stage)
                if hold is not None:
                    hold._enter()
                if body.get("stream"):
                    self._send_stream(_completion(reply))
                else:
                    self._send(200, _completion(reply))

            def _send_stream(self, completion: dict[str, Any]) -> None:
                """The completion as OpenAI streams it: its text in one delta, the usage, [DONE];
                the connection's end ends the body (HTTP/1.0)."""
                text = completion["choices"][0]["message"]["content"]
                events = [
                    {"choices": [{"delta": {"content": text}}]},
                    {"choices": [], "usage": completion["usage"]},
                ]
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(data.encode())
                except OSError:
                    pass  # the stage that asked was killed meanwhile

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the stage that asked was killed meanwhile

            def log_message(self, format: str, *args: Any) -> None:
                pass  # one line per call would drown the test output

        return Handler


def _completion(reply: dict[str, Any]) -> dict[str, Any]:
    """The chat completion of a scripted reply: plain ``text``, a JSON object, or one ``token``
    with OpenAI's log-probabilities (a sure answer: the other word far behind)."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    if "text" in reply:
        message = {"role": "assistant", "content": reply["text"]}
        return {"choices": [{"message": message}], "usage": usage}
    if "token" not in reply:
        message = {"role": "assistant", "content": json.dumps(reply)}
        return {"choices": [{"message": message}], "usage": usage}
    token = reply["token"]
    other = "no" if token == "yes" else "yes"
    top = [{"token": token, "logprob": -0.01}, {"token": other, "logprob": -6.0}]
    logprobs = {"content": [{"token": token, "logprob": -0.01, "top_logprobs": top}]}
    message = {"role": "assistant", "content": token}
    return {"choices": [{"message": message, "logprobs": logprobs}], "usage": usage}
