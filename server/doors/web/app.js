// The ask page: sign in, ask, see the evidence and then the answer as it is written, open the
// passages it cites, follow up in the same conversation, rate each answer, find old ones.
"use strict";

const el = docfinder.el;
const STEPS = {
  received: "Question received",
  condense: "Reading the conversation",
  classify_query: "Choosing the collections",
  retrieve: "Searching the documents",
  evidence: "Evidence found; writing the answer",
  generate: "Writing the answer",
  supported: "Checking the answer against the documents",
  useful: "Checking that it answers the question",
};
let conversationId = null;
let feedbackLabels = [];

async function loadLabels() {
  const openapi = await (await fetch("/openapi.json")).json();
  const label = openapi.components.schemas.FeedbackBody.properties.label;
  const choices = (label.anyOf || [label]).find((option) => option.enum);
  feedbackLabels = choices ? choices.enum : [];
}

async function loadConversations() {
  const list = document.getElementById("conversations");
  const { conversations } = await docfinder.json("/v1/conversations?limit=50");
  list.replaceChildren(
    ...conversations.map((c) => {
      const button = el("button", { type: "button", class: "link", text: c.title || "(untitled)" });
      button.addEventListener("click", () => openConversation(c.conversation_id));
      if (c.conversation_id === conversationId) button.setAttribute("aria-current", "true");
      return el("li", {}, button, el("span", { class: "when", text: c.updated_at.replace("T", " ").slice(0, 16) }));
    })
  );
}

async function openConversation(id) {
  const { turns } = await docfinder.json("/v1/conversations/" + encodeURIComponent(id));
  conversationId = id;
  const list = document.getElementById("turns");
  list.replaceChildren();
  for (const turn of turns) {
    if (turn.role === "user") list.append(questionTurn(turn.text));
    else {
      const block = answerTurn();
      block.answer.replaceChildren(turn.text);
      if (turn.answer_id) block.node.append(ratingForm(turn.answer_id));
      list.append(block.node);
    }
  }
  await loadConversations();
  document.getElementById("question").focus();
}

function questionTurn(text) {
  return el("li", { class: "turn user" }, el("h3", { class: "visually-hidden", text: "You asked" }), el("p", { text }));
}

function answerTurn() {
  const evidence = el("section", { class: "evidence", hidden: true, "aria-label": "Best evidence" });
  const answer = el("div", { class: "answer" });  // the status line announces progress, not each token
  const sources = el("section", { class: "sources", hidden: true, "aria-label": "Sources" });
  const node = el("li", { class: "turn assistant" }, el("h3", { class: "visually-hidden", text: "docfinder answered" }), evidence, answer, sources);
  return { node, evidence, answer, sources };
}

function showEvidence(block, quotes) {
  block.evidence.hidden = false;
  block.evidence.replaceChildren(
    el("h4", { text: "Best evidence" }),
    el("ul", {}, ...quotes.map((q) => el("li", {}, el("blockquote", { text: q.text }), el("span", { class: "where", text: where(q) }))))
  );
}

function where(item) {
  const pages = item.pages && item.pages[0] ? ", page " + item.pages[0] : "";
  const name = item.title || (item.source || "").split("/").pop();
  const heading = (item.heading_path || []).filter((h) => h !== name).join(" › ");
  return [name, heading].filter(Boolean).join(" — ") + pages;
}

// The answer's text with each [n] as a button that opens the passage it cites.
function citedText(text, citations, quotes) {
  const paragraph = el("p");
  for (const part of text.split(/(\[\d+\])/)) {
    const match = part.match(/^\[(\d+)\]$/);
    const citation = match && citations.find((c) => c.n === Number(match[1]));
    if (!citation) {
      paragraph.append(part);
      continue;
    }
    const button = el("button", { type: "button", class: "cite", "aria-label": "Source " + citation.n + ": " + where(citation), text: part });
    button.addEventListener("click", () => openPassage(citation, quotes));
    paragraph.append(button);
  }
  return paragraph;
}

function showAnswer(block, result) {
  block.answer.replaceChildren(citedText(result.answer, result.citations, result.evidence));
  if (result.evidence.length) showEvidence(block, result.evidence);
  if (result.citations.length) {
    block.sources.hidden = false;
    block.sources.replaceChildren(
      el("h4", { text: "Sources" }),
      el("ol", {}, ...result.citations.map((c) => {
        const button = el("button", { type: "button", class: "link", text: where(c) });
        button.addEventListener("click", () => openPassage(c, result.evidence));
        return el("li", { value: c.n }, button);
      }))
    );
  }
  block.node.append(ratingForm(result.answer_id));
}

async function openPassage(citation, quotes) {
  const dialog = document.getElementById("passage");
  const text = document.getElementById("passage-text");
  document.getElementById("passage-title").textContent = citation.title || "Passage";
  document.getElementById("passage-where").textContent = where(citation);
  text.replaceChildren("Loading…");
  const link = document.getElementById("passage-link");
  link.hidden = !/^https?:\/\//.test(citation.link || "");
  if (!link.hidden) link.href = citation.link;
  dialog.showModal();
  try {
    const passage = await docfinder.json("/v1/passage?id=" + encodeURIComponent(citation.passage_id));
    const quoted = (quotes || []).filter((q) => q.passage_id === citation.passage_id).map((q) => q.text);
    text.replaceChildren(...highlighted(passage.text, quoted));
  } catch (error) {
    text.replaceChildren(error.message);
  }
}

// The passage as text nodes, with each quoted sentence found in it inside <mark>.
function highlighted(text, quotes) {
  const spans = [];
  for (const quote of quotes) {
    const start = text.indexOf(quote);
    if (start >= 0) spans.push([start, start + quote.length]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const nodes = [];
  let at = 0;
  for (const [start, end] of spans) {
    if (start < at) continue;
    nodes.push(document.createTextNode(text.slice(at, start)), el("mark", { text: text.slice(start, end) }));
    at = end;
  }
  nodes.push(document.createTextNode(text.slice(at)));
  return nodes;
}

function ratingForm(answerId) {
  const name = "rating-" + answerId;
  const stars = [1, 2, 3, 4, 5].map((n) =>
    el("label", { class: "star" }, el("input", { type: "radio", name, value: n }), n + (n === 1 ? " star" : " stars"))
  );
  const select = el("select", { name: "label", id: "label-" + answerId },
    el("option", { value: "", text: "No label" }),
    ...feedbackLabels.map((label) => el("option", { value: label, text: label })));
  const result = el("span", { class: "status", role: "status" });
  const form = el("form", { class: "rating" },
    el("fieldset", {}, el("legend", { text: "Rate this answer" }), ...stars),
    el("label", { for: "label-" + answerId, text: "What was it like?" }), select,
    el("button", { type: "submit", text: "Send rating" }), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = form.querySelector("input[type=radio]:checked");
    const body = { answer_id: answerId };
    if (chosen) body.rating = Number(chosen.value);
    if (select.value) body.label = select.value;
    if (!chosen && !select.value) {
      result.textContent = "Choose stars or a label first.";
      return;
    }
    try {
      await docfinder.call("/v1/feedback", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      result.textContent = "Thank you: your rating was saved.";
    } catch (error) {
      result.textContent = error.message;
    }
  });
  return form;
}

async function ask(question) {
  const status = document.getElementById("status");
  const list = document.getElementById("turns");
  list.append(questionTurn(question));
  const block = answerTurn();
  list.append(block.node);
  const body = { question };
  if (conversationId) body.conversation_id = conversationId;
  let draft = null;
  status.textContent = "Sending the question…";
  const response = await docfinder.call("/v1/ask/stream", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  await docfinder.readEvents(response, (name, data) => {
    if (name === "status") status.textContent = STEPS[data.step] || status.textContent;
    else if (name === "evidence") showEvidence(block, data.quotes);
    else if (name === "token") {
      if (data.draft !== draft) {
        draft = data.draft;
        block.answer.replaceChildren();
      }
      block.answer.append(data.text);
    } else if (name === "answer") {
      conversationId = data.conversation_id;
      showAnswer(block, data);
      status.textContent = data.outcome === "answered" ? "Answered." : "Answered: " + data.outcome.replaceAll("_", " ") + ".";
    } else if (name === "error") {
      block.answer.replaceChildren(el("p", { class: "error", text: data.error }));
      status.textContent = "No answer.";
    }
  });
  await loadConversations();
}

function start() {
  document.getElementById("ask").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = document.getElementById("question");
    const question = input.value.trim();
    if (!question) return;
    const button = document.getElementById("ask-button");
    button.disabled = true;
    input.value = "";
    try {
      await ask(question);
    } catch (error) {
      document.getElementById("status").textContent = error.message;
    } finally {
      button.disabled = false;
      input.focus();
    }
  });
  document.getElementById("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) document.getElementById("ask").requestSubmit();
  });
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName);
    if (event.key === "/" && !typing && !document.getElementById("workspace").hidden) {
      event.preventDefault();
      document.getElementById("question").focus();  // "/" goes back to the question, as on many sites
    }
  });
  document.getElementById("new-conversation").addEventListener("click", () => {
    conversationId = null;
    document.getElementById("turns").replaceChildren();
    loadConversations();
    document.getElementById("question").focus();
  });
  docfinder.signIn(
    () => docfinder.json("/v1/conversations?limit=1"),
    async () => {
      document.getElementById("workspace").hidden = false;
      await loadLabels();
      await loadConversations();
      document.getElementById("question").focus();
    }
  );
}

start();
