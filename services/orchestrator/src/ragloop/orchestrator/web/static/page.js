// The ragloop page: asks POST /v1/query/stream and shows the loop as its events arrive.
// Plain ES module, no framework, no build step. Every text that comes from the server (model
// output, document text) is set with textContent, never parsed as HTML.

const STREAM_URL = "/v1/query/stream";
const API_KEY_STORAGE = "ragloop.apiKey";
const NODE_ACTIVITY = {
  retrieve: "Retrieving passages",
  grade: "Grading passages",
  rewrite: "Rewriting the query",
  generate: "Writing the answer",
  contextualize: "Reading the conversation",
};
// Earlier turns sent with a follow-up question: the server's limit is 50; the rewriter reads
// only the last few, so a long thread sends its end.
const HISTORY_TURNS_SENT = 10;

// ---------------------------------------------------------------------------------------------
// Server-sent events over fetch (EventSource cannot POST).

/** Incremental parser of the text/event-stream format: feed decoded text, get whole events. */
export class EventStreamParser {
  #buffer = "";
  #event = "";
  #data = [];

  /** Returns the events completed by ``text`` as {event, data} (data: the joined data lines). */
  push(text) {
    this.#buffer += text;
    const events = [];
    const lineEnd = /\r\n|\r|\n/g;
    let start = 0;
    let match;
    while ((match = lineEnd.exec(this.#buffer)) !== null) {
      // A lone "\r" at the very end may be the first half of "\r\n": wait for more text.
      if (match[0] === "\r" && lineEnd.lastIndex === this.#buffer.length) break;
      const event = this.#line(this.#buffer.slice(start, match.index));
      if (event) events.push(event);
      start = lineEnd.lastIndex;
    }
    this.#buffer = this.#buffer.slice(start);
    return events;
  }

  #line(line) {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return null; // a comment, e.g. ": keep-alive"
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#event = value;
    else if (field === "data") this.#data.push(value);
    return null; // "id", "retry" and unknown fields mean nothing to this page
  }

  #dispatch() {
    const event = { event: this.#event || "message", data: this.#data.join("\n") };
    const complete = this.#data.length > 0;
    this.#event = "";
    this.#data = [];
    return complete ? event : null;
  }
}

/** The events of a fetch Response's event-stream body, as they arrive. */
export async function* readEventStream(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventStreamParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield* parser.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function formatDuration(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function quoted(text) {
  return `“${text}”`;
}

/** A person-readable message from an HTTP error body of this API or of FastAPI's validation. */
function describeErrorBody(body) {
  if (body && typeof body.error === "object" && body.error !== null) {
    const { code, message, stage, decision_path: path } = body.error;
    const parts = [message || code || "request failed"];
    if (stage) parts.push(`(stage: ${stage})`);
    if (Array.isArray(path) && path.length) parts.push(`— decision path: ${path.join(" → ")}`);
    return parts.join(" ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail
      .map((item) => {
        const where = Array.isArray(item.loc) ? item.loc.filter((p) => p !== "body").join(".") : "";
        return where ? `${where}: ${item.msg}` : String(item.msg);
      })
      .join("; ");
  }
  return "";
}

function readStoredKey() {
  try {
    return sessionStorage.getItem(API_KEY_STORAGE) || "";
  } catch {
    return ""; // storage can be disabled; the key then lives in the field only
  }
}

function storeKey(key) {
  try {
    if (key) sessionStorage.setItem(API_KEY_STORAGE, key);
    else sessionStorage.removeItem(API_KEY_STORAGE);
  } catch {
    // storage disabled: nothing to keep
  }
}

// ---------------------------------------------------------------------------------------------
// One run of the loop as shown on the page.

class RunView {
  constructor(dom) {
    this.dom = dom;
    this.rounds = new Map(); // round number from the server → {label, nodes, cards}
    this.nodes = new Map(); // "round:node" → node element
    this.cardsById = new Map(); // document id → its cards, oldest round first
    this.path = [];
    this.answerText = "";
    this.citations = new Map(); // citation number → citation
    this.requestId = ""; // the server's X-Request-ID, to find this run in its logs
    this.response = null; // the done event's body, once it arrived
    this.reset();
  }

  /** The run ended without finishing some nodes (stopped, failed): they no longer run. */
  settle() {
    for (const item of this.nodes.values()) {
      if (item.dataset.state === "running") item.dataset.state = "stopped";
    }
    for (const verdict of this.dom.passages.querySelectorAll('.verdict[data-verdict="pending"]')) {
      verdict.dataset.verdict = "none";
      verdict.textContent = "not graded";
    }
    this.dom.answer.setAttribute("aria-busy", "false");
  }

  reset() {
    const d = this.dom;
    for (const list of [d.rounds, d.rewrites, d.passages, d.sources, d.answer]) list.replaceChildren();
    d.decisionPath.textContent = "";
    d.answerMeta.textContent = "";
    d.error.hidden = true;
    d.error.replaceChildren();
    for (const section of [d.answerSection, d.loopSection, d.rewritesSection, d.passagesSection]) {
      section.hidden = true;
    }
  }

  // --- events ----------------------------------------------------------------------------------

  handle({ event, data }) {
    let payload;
    try {
      payload = JSON.parse(data);
    } catch {
      throw new Error(`the server sent an unreadable ${event} event`);
    }
    switch (event) {
      case "node_started":
        return this.nodeStarted(payload);
      case "node_finished":
        return this.nodeFinished(payload);
      case "token":
        return this.token(payload);
      case "done":
        return this.done(payload);
      case "error":
        return this.streamError(payload);
      default:
        return undefined; // an event this page does not know yet: ignore it
    }
  }

  nodeStarted({ node, round, query }) {
    const row = this.round(round, query);
    const item = element("li", "node");
    item.dataset.node = node;
    item.dataset.state = "running";
    item.append(element("span", "node-name", node), element("span", "node-time"));
    item.append(element("span", "node-summary"));
    row.nodes.append(item);
    this.nodes.set(`${round}:${node}`, item);
    this.path.push(node);
    this.showPath(this.path);
    this.dom.loopSection.hidden = false;
    this.dom.status.textContent = `${NODE_ACTIVITY[node] || node}…`;
    if (node === "generate") this.showAnswerSection();
  }

  nodeFinished({ node, round, duration_ms: durationMs, status, details = {} }) {
    const item = this.nodes.get(`${round}:${node}`);
    if (item) {
      item.dataset.state = status === "ok" ? "ok" : "error";
      if (typeof durationMs === "number") {
        item.querySelector(".node-time").textContent = formatDuration(durationMs);
      }
      item.querySelector(".node-summary").textContent =
        status === "ok" ? this.summary(node, details) : details.error || "failed";
    }
    if (status !== "ok") return;
    if (node === "retrieve") this.showDocuments(round, details.query, details.documents);
    else if (node === "grade") this.showGrades(round, details.grades);
    else if (node === "rewrite") this.addRewrite(details);
  }

  summary(node, details) {
    switch (node) {
      case "retrieve": {
        if (!Array.isArray(details.documents)) return "";
        const mode = details.mode ? ` (${details.mode})` : "";
        return `${plural(details.documents.length, "passage")}${mode}`;
      }
      case "grade":
        if (typeof details.pass_count !== "number") return "";
        return `${details.pass_count} of ${details.total_count} passed (${Math.round(
          (details.pass_rate || 0) * 100,
        )}%)`;
      case "rewrite":
        return details.query ? `→ ${quoted(details.query)}` : "";
      case "contextualize":
        return details.standalone ? `→ ${quoted(details.standalone)}` : "";
      case "generate": {
        if (typeof details.citations !== "number") return "";
        const citations = plural(details.citations, "citation");
        if (typeof details.grounded !== "boolean") return citations;
        return `${citations}, ${details.grounded ? "grounded" : "not grounded"}`;
      }
      default:
        return "";
    }
  }

  token({ text, restart }) {
    if (restart) this.answerText = "";
    this.answerText += text || "";
    this.showAnswerSection();
    const answer = this.dom.answer;
    answer.setAttribute("aria-busy", "true");
    answer.classList.add("streaming");
    answer.textContent = this.answerText;
  }

  done(response) {
    this.response = response;
    this.showPath(response.workflow?.decision_path || this.path, response.workflow);
    if (Array.isArray(response.rewrite_history)) {
      this.dom.rewrites.replaceChildren();
      response.rewrite_history.forEach((rewrite) => this.addRewrite(rewrite));
    }
    this.showAnswer(response);
    const seconds = response.workflow ? formatDuration(response.workflow.total_duration_ms) : "";
    this.dom.status.textContent = seconds ? `Done in ${seconds}.` : "Done.";
  }

  streamError({ status, code, message, stage }) {
    const title = `Error ${status ?? ""} ${code ?? ""}`.trim();
    this.showError(title, stage ? `${message} (stage: ${stage})` : message);
  }

  // --- rendering -------------------------------------------------------------------------------

  round(number, query) {
    let row = this.rounds.get(number);
    if (row) return row;
    // Round 0 is the follow-up question made standalone, before the first round.
    const numbered = [...this.rounds.keys()].filter((n) => n > 0).length;
    const label = number === 0 ? "Follow-up question" : `Round ${numbered + 1}`;
    const item = element("li", "round");
    const heading = element("h3", null, label);
    if (query) heading.append(": ", element("q", null, query));
    const nodes = element("ol", "nodes");
    nodes.setAttribute("aria-label", `${label} nodes`);
    item.append(heading, nodes);
    this.dom.rounds.append(item);
    row = { label, nodes, cards: [] };
    this.rounds.set(number, row);
    return row;
  }

  showPath(path, workflow) {
    const text = path.join(" → ");
    const outcome = workflow?.outcome ? ` (outcome: ${workflow.outcome.replaceAll("_", " ")})` : "";
    this.dom.decisionPath.textContent = text ? `Decision path: ${text}${outcome}` : "";
  }

  showDocuments(roundNumber, query, documents) {
    if (!Array.isArray(documents)) return;
    const row = this.round(roundNumber, query);
    const section = element("section", "round-passages");
    const heading = element("h3", null, row.label);
    if (query) heading.append(": ", element("q", null, query));
    section.append(heading);
    if (documents.length === 0) section.append(element("p", "empty", "No passage found."));
    const list = element("ol", "documents");
    for (const doc of documents) {
      const item = element("li");
      item.append(this.card(doc));
      list.append(item);
    }
    section.append(list);
    row.cards = [...list.querySelectorAll(".document")];
    this.dom.passages.append(section);
    this.dom.passagesSection.hidden = false;
  }

  card(doc) {
    const card = this.dom.documentTemplate.content.firstElementChild.cloneNode(true);
    card.dataset.documentId = doc.id;
    const chunk = typeof doc.chunk_index === "number" ? `, chunk ${doc.chunk_index}` : "";
    card.querySelector(".source").textContent = `${doc.source}${chunk}`;
    if (typeof doc.score === "number") {
      card.querySelector(".score").textContent = `similarity ${doc.score.toFixed(2)}`;
    }
    card.querySelector(".passage-text").textContent = doc.text;
    card.passageText = doc.text; // kept to re-render when a quote is marked
    const known = this.cardsById.get(doc.id) || [];
    this.cardsById.set(doc.id, [...known, card]);
    return card;
  }

  showGrades(roundNumber, grades) {
    const row = this.rounds.get(roundNumber);
    if (!row || !Array.isArray(grades)) return;
    const unmatched = [...row.cards];
    for (const grade of grades) {
      const at = unmatched.findIndex((card) => card.dataset.documentId === grade.document_id);
      if (at === -1) continue;
      const [card] = unmatched.splice(at, 1);
      const verdict = card.querySelector(".verdict");
      verdict.dataset.verdict = grade.relevant ? "pass" : "fail";
      const confidence =
        typeof grade.confidence === "number" ? ` · confidence ${grade.confidence.toFixed(2)}` : "";
      verdict.textContent = `${grade.relevant ? "relevant" : "not relevant"}${confidence}`;
      card.querySelector(".reasoning").textContent = grade.reasoning || "";
    }
  }

  addRewrite({ query, reason }) {
    const item = element("li", "rewrite");
    item.append(element("q", "rewrite-query", query));
    if (reason) item.append(element("p", "rewrite-reason", reason));
    this.dom.rewrites.append(item);
    this.dom.rewritesSection.hidden = false;
  }

  showAnswerSection() {
    this.dom.answerSection.hidden = false;
  }

  showAnswer(response) {
    this.showAnswerSection();
    const answer = this.dom.answer;
    this.citations = new Map((response.citations || []).map((c) => [c.number, c]));
    answer.classList.remove("streaming");
    answer.replaceChildren(...this.answerParts(response.answer || ""));
    answer.setAttribute("aria-busy", "false");

    const sources = this.dom.sources;
    sources.replaceChildren();
    for (const citation of this.citations.values()) {
      const item = element("li", "source-item");
      item.id = `source-${citation.number}`;
      item.append(this.citationLink(citation.number, `[${citation.number}] ${citation.source}`));
      if (citation.quote) item.append(" — ", element("q", "quote", citation.quote));
      sources.append(item);
    }

    const facts = [response.grounded ? "grounded in the passages" : "not grounded"];
    if (response.grounded && response.hallucination_risk > 0) {
      facts.push(`${Math.round(response.hallucination_risk * 100)}% of sentences uncited`);
    }
    const usage = response.workflow?.usage;
    if (usage) facts.push(plural(usage.model_calls, "model call"));
    this.dom.answerMeta.textContent = facts.join(" · ");
  }

  /** The answer's text with each known citation marker [n] as a link to its passage. */
  answerParts(text) {
    const parts = [];
    let last = 0;
    for (const match of text.matchAll(/\[(\d+)\]/g)) {
      const number = Number(match[1]);
      if (!this.citations.has(number)) continue;
      parts.push(document.createTextNode(text.slice(last, match.index)));
      parts.push(this.citationLink(number, `[${number}]`));
      last = match.index + match[0].length;
    }
    parts.push(document.createTextNode(text.slice(last)));
    return parts;
  }

  citationLink(number, label) {
    const link = element("a", "citation", label);
    link.href = `#source-${number}`;
    link.dataset.citation = String(number);
    const source = this.citations.get(number)?.source;
    if (source) link.title = `Show the passage from ${source}`;
    link.addEventListener("click", (event) => {
      if (this.showCitation(number)) event.preventDefault();
    });
    return link;
  }

  /** Scroll to the cited passage and mark its quote; false when no such passage is shown. */
  showCitation(number) {
    const citation = this.citations.get(number);
    const cards = citation && this.cardsById.get(citation.document_id);
    if (!cards?.length) return false;
    const card = cards[cards.length - 1]; // the latest round that retrieved it
    for (const other of this.dom.passages.querySelectorAll(".document.highlight")) {
      other.classList.remove("highlight");
      other.querySelector(".passage-text").textContent = other.passageText;
    }
    card.classList.add("highlight");
    markQuote(card.querySelector(".passage-text"), card.passageText, citation.quote);
    const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    card.scrollIntoView({ behavior: smooth ? "smooth" : "auto", block: "center" });
    card.focus({ preventScroll: true });
    return true;
  }

  showError(title, message) {
    const error = this.dom.error;
    error.replaceChildren(element("strong", null, title));
    if (message) error.append(element("p", null, message));
    if (this.requestId) error.append(element("p", "meta", `Request id: ${this.requestId}`));
    error.hidden = false;
    this.settle();
    this.dom.status.textContent = "Failed.";
  }
}

/** Show ``text`` in ``target`` with ``quote`` wrapped in <mark> (white space and case may differ). */
function markQuote(target, text, quote) {
  target.textContent = text;
  if (!quote) return;
  let start = text.indexOf(quote);
  let length = quote.length;
  if (start === -1) {
    const words = quote.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const found = new RegExp(words.join("\\s+"), "i").exec(text);
    if (!found) return;
    start = found.index;
    length = found[0].length;
  }
  target.replaceChildren(
    document.createTextNode(text.slice(0, start)),
    element("mark", "quote-mark", text.slice(start, start + length)),
    document.createTextNode(text.slice(start + length)),
  );
}

// ---------------------------------------------------------------------------------------------
// The form.

function requestBody(form, thread) {
  const body = { query: form.question.value.trim() };
  if (thread.length) body.history = thread.slice(-HISTORY_TURNS_SENT);
  const collection = form.collection.value.trim();
  if (collection) body.collection = collection;
  for (const [input, name] of [
    [form.topK, "top_k"],
    [form.maxRewrites, "max_rewrite_attempts"],
  ]) {
    if (input.value.trim() !== "") body[name] = Number(input.value);
  }
  if (form.mode.value) body.retrieval_mode = form.mode.value;
  const instructions = form.instructions.value.trim();
  if (instructions) body.answer_instructions = instructions;
  return body;
}

/** The conversation so far: each question asked and its answer, oldest first. */
function showThread(dom, thread) {
  dom.thread.replaceChildren(
    ...thread.map(({ role, content }) => element("li", `turn ${role}`, content)),
  );
  dom.threadSection.hidden = thread.length === 0;
}

async function httpError(response) {
  let detail = "";
  try {
    detail = describeErrorBody(await response.json());
  } catch {
    // not JSON: the status line says enough
  }
  if (response.status === 401) {
    detail = `${detail || "An API key is required."} Set the API key under Options.`;
  }
  const retryAfter = response.headers.get("retry-after");
  if (response.status === 429 && retryAfter) detail = `${detail} Try again in ${retryAfter} s.`.trim();
  return [`HTTP ${response.status} ${response.statusText}`.trim(), detail];
}

async function ask(view, body, apiKey, signal) {
  const headers = { "content-type": "application/json", accept: "text/event-stream" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  let response;
  try {
    response = await fetch(STREAM_URL, { method: "POST", headers, body: JSON.stringify(body), signal });
  } catch (error) {
    if (signal.aborted) throw error;
    view.showError("Could not reach the server.", String(error.message || error));
    return;
  }
  view.requestId = response.headers.get("x-request-id") || "";
  if (!response.ok) {
    view.showError(...(await httpError(response)));
    return;
  }
  if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
    view.showError("Unexpected response.", "The server did not answer with an event stream.");
    return;
  }
  let finished = false;
  try {
    for await (const event of readEventStream(response)) {
      view.handle(event);
      if (event.event === "done" || event.event === "error") finished = true;
    }
  } catch (error) {
    if (signal.aborted) throw error;
    view.showError("The stream broke off.", String(error.message || error));
    return;
  }
  if (!finished) view.showError("The stream ended early.", "The server closed it before the answer was complete.");
}

function init() {
  const byId = (id) => document.getElementById(id);
  const form = {
    element: byId("ask"),
    question: byId("question"),
    collection: byId("collection"),
    topK: byId("top-k"),
    maxRewrites: byId("max-rewrites"),
    mode: byId("mode"),
    instructions: byId("instructions"),
    apiKey: byId("api-key"),
    submit: byId("submit"),
    stop: byId("stop"),
  };
  const dom = {
    status: byId("status"),
    error: byId("error"),
    answerSection: byId("answer-section"),
    answer: byId("answer"),
    answerMeta: byId("answer-meta"),
    sources: byId("sources"),
    loopSection: byId("loop-section"),
    decisionPath: byId("decision-path"),
    rounds: byId("rounds"),
    rewritesSection: byId("rewrites-section"),
    rewrites: byId("rewrites"),
    passagesSection: byId("passages-section"),
    passages: byId("passages"),
    documentTemplate: byId("document-template"),
    threadSection: byId("thread-section"),
    thread: byId("thread"),
  };
  let running = null;
  // The conversation this page keeps (the server keeps none): a question and its answer join it
  // once answered, and go with the next question as its history.
  const thread = [];
  byId("new-thread").addEventListener("click", () => {
    thread.length = 0;
    showThread(dom, thread);
  });

  form.apiKey.value = readStoredKey();
  form.apiKey.addEventListener("input", () => storeKey(form.apiKey.value.trim()));
  form.stop.addEventListener("click", () => running?.abort());
  form.question.addEventListener("keydown", (event) => {
    // Enter asks, Shift+Enter starts a new line.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.element.requestSubmit();
    }
  });

  form.element.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = requestBody(form, thread);
    if (!body.query) {
      new RunView(dom).showError("Type a question first.");
      form.question.focus();
      return;
    }
    running?.abort();
    const controller = new AbortController();
    running = controller;
    const view = new RunView(dom);
    dom.status.textContent = "Asking…";
    form.submit.disabled = true;
    form.stop.disabled = false;
    try {
      await ask(view, body, form.apiKey.value.trim(), controller.signal);
      if (view.response?.answer) {
        thread.push({ role: "user", content: body.query }, { role: "assistant", content: view.response.answer });
        showThread(dom, thread);
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
      view.settle();
      dom.status.textContent = "Stopped.";
    } finally {
      if (running === controller) {
        running = null;
        form.submit.disabled = false;
        form.stop.disabled = true;
      }
    }
  });
}

if (document.getElementById("ask")) init();
