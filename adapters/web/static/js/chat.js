// The conversation pane: saved messages, and a live turn built from SSE events.

import { MarkdownBlock } from "./markdown.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function pretty(text) {
  if (text === undefined || text === null || text === "") return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

// What the user can do about an error, by its code or message.
export function remedy(code, message) {
  const text = `${code || ""} ${message || ""}`.toLowerCase();
  if (text.includes("llm") || text.includes("model") || text.includes("api key")) {
    return { hint: "Check your LLM settings, then try again.", action: "settings" };
  }
  if (text.includes("not opened") || text.includes("closed")) {
    return { hint: "Open the project in GNS3, then press Refresh.", action: "refresh" };
  }
  if (text.includes("gns3")) {
    return { hint: "Check that GNS3 is running and the project is open.", action: "refresh" };
  }
  if (text.includes("running") || text.includes("busy")) {
    return { hint: "Wait for the current answer to finish, or press Stop.", action: null };
  }
  return { hint: "Try again; if it keeps failing, check the service's log.", action: null };
}

export function errorBox(message, code, onAction) {
  const box = el("div", "error-box");
  box.setAttribute("role", "alert");
  box.append(el("strong", null, "Error: "), el("span", "error-text", message));
  const { hint, action } = remedy(code, message);
  const help = el("p", "error-hint", hint);
  box.append(help);
  if (action && onAction) {
    const label = action === "settings" ? "Open LLM settings" : "Refresh projects";
    const button = el("button", "link-button", label);
    button.type = "button";
    button.addEventListener("click", () => onAction(action));
    box.append(button);
  }
  return box;
}

class ToolCard {
  constructor(parent, id, name) {
    this.element = el("details", "tool-card");
    this.element.dataset.toolCallId = id;
    this.element.open = true;
    const summary = el("summary");
    this.name = el("span", "tool-name", name || "tool");
    this.status = el("span", "tool-status", "writing…");
    this.status.dataset.status = "writing";
    summary.append(el("span", "tool-icon", "⚙"), this.name, this.status);
    this.args = el("pre", "tool-args");
    this.args.setAttribute("aria-label", "Tool arguments");
    this.output = el("details", "tool-output");
    this.output.hidden = true;
    this.outputSummary = el("summary", null, "Output");
    this.outputBody = el("pre", "tool-output-json");
    this.output.append(this.outputSummary, this.outputBody);
    this.element.append(summary, this.args, this.output);
    parent.append(this.element);
  }

  setName(name) {
    if (name) this.name.textContent = name;
  }

  setArguments(text, complete) {
    this.args.textContent = complete ? pretty(text) || "{}" : text;
  }

  setStatus(status) {
    const labels = { running: "running…", success: "done", error: "failed", aborted: "stopped" };
    this.status.textContent = labels[status] || status;
    this.status.dataset.status = status;
  }

  setOutput(text, status) {
    this.setStatus(status || "success");
    this.outputBody.textContent = pretty(text);
    this.output.hidden = false;
    this.element.open = false; // collapse the card; the summary keeps name + status
  }
}

// One assistant turn: activity trail, text blocks and tool cards, in order.
export class TurnView {
  constructor(container, { onAction } = {}) {
    this.element = el("article", "message assistant");
    this.element.setAttribute("aria-label", "Copilot answer");
    this.trail = el("ol", "activity-trail");
    this.trail.setAttribute("aria-label", "Agent activity");
    this.trail.hidden = true;
    this.body = el("div", "message-body");
    this.element.append(this.trail, this.body);
    container.append(this.element);
    this.cards = new Map();
    this.text = null;
    this.blocks = [];
    this.sawText = false;
    this.onAction = onAction;
    this.typing = el("span", "typing", "…");
    this.typing.setAttribute("aria-label", "The copilot is answering");
    this.body.append(this.typing);
  }

  textBlock() {
    if (!this.text) {
      this.text = new MarkdownBlock(this.body);
      this.blocks.push(this.text);
      this.body.append(this.typing);
    }
    return this.text;
  }

  card(id, name) {
    let card = this.cards.get(id);
    if (!card) {
      card = new ToolCard(this.body, id, name);
      this.cards.set(id, card);
      this.text = null; // text after a tool goes into a new block
      this.body.append(this.typing);
    }
    return card;
  }

  addTrail(kind, text) {
    this.trail.hidden = false;
    const item = el("li", `trail-${kind}`, text);
    this.trail.append(item);
    while (this.trail.children.length > 30) this.trail.firstElementChild.remove();
  }

  // Apply one SSE event; returns true when the turn is over.
  apply(event) {
    switch (event.type) {
      case "content":
        this.sawText = true;
        this.textBlock().append(event.content || "");
        break;
      case "answer":
        if (!this.sawText && event.content) this.textBlock().append(event.content);
        this.sawText = true;
        break;
      case "tool_call": {
        const call = event.tool_call || {};
        const fn = call.function || {};
        const card = this.card(call.id, fn.name);
        card.setName(fn.name);
        card.setArguments(fn.arguments || "", Boolean(fn.complete));
        break;
      }
      case "tool_start":
        this.card(event.tool_call_id, event.tool_name).setStatus("running");
        break;
      case "tool_end":
        this.card(event.tool_call_id, event.tool_name).setOutput(event.tool_output, event.status);
        break;
      case "thinking":
        this.addTrail("thinking", `Thinking: ${event.content || ""}`);
        break;
      case "status":
        this.addTrail("status", `${event.status || "status"}: ${event.message || ""}`.trim());
        break;
      case "step":
        this.addTrail(
          "step",
          `Step ${event.step}${event.total ? ` of ${event.total}` : ""} ${event.status || ""}`.trim(),
        );
        break;
      case "plan": {
        const steps = Array.isArray(event.steps) ? event.steps : [];
        const current = event.current_step;
        const text = steps
          .map((s, i) => (i === current ? `▶ ${s}` : s)) // current_step counts from 0
          .join(" → ");
        this.addTrail("plan", `Plan: ${text}`);
        break;
      }
      case "error":
        this.body.append(errorBox(event.error || "Something failed.", event.code, this.onAction));
        this.text = null;
        break;
      case "agent_error":
        this.body.append(errorBox(event.content || "The agent failed.", "agent", this.onAction));
        this.text = null;
        break;
      case "abort":
        this.body.append(el("p", "notice-stopped", "Stopped. The partial answer was kept."));
        this.text = null;
        break;
      case "done":
        this.finish();
        return true;
      default:
        break; // heartbeat and unknown types
    }
    return false;
  }

  note(text) {
    this.body.append(el("p", "turn-note", text));
  }

  async finish() {
    this.typing.remove();
    this.element.classList.add("done");
    await Promise.all(this.blocks.map((block) => block.finish()));
  }
}

export function userMessage(container, text) {
  const node = el("article", "message user");
  node.setAttribute("aria-label", "Your message");
  node.append(el("div", "message-body", text));
  container.append(node);
  return node;
}

// Render a saved history (OpenAI-shaped messages) into the pane.
export function renderHistory(container, messages, { onAction } = {}) {
  container.replaceChildren();
  let turn = null;
  const cards = new Map();
  const renders = [];
  for (const message of messages) {
    if (message.role === "user") {
      turn = null;
      userMessage(container, message.content || "");
    } else if (message.role === "assistant") {
      if (!turn) {
        turn = new TurnView(container, { onAction });
        turn.typing.remove();
        turn.element.classList.add("done");
      }
      if (message.content) {
        const block = turn.textBlock();
        block.set(message.content);
        renders.push(block);
        turn.text = null;
      }
      for (const call of message.tool_calls || []) {
        const card = turn.card(call.id, call.function?.name);
        card.setArguments(call.function?.arguments || "", true);
        cards.set(call.id, card);
      }
      if (message.metadata?.aborted) turn.note("Stopped. The partial answer was kept.");
      turn.typing.remove();
    } else if (message.role === "tool") {
      const card = cards.get(message.tool_call_id);
      if (card) {
        let status = message.metadata?.status || "success";
        try {
          const parsed = JSON.parse(message.content);
          if (parsed && parsed.status === "aborted") status = "aborted";
          else if (parsed && parsed.error) status = "error";
        } catch {
          /* plain text output */
        }
        card.setOutput(message.content, status);
      }
    }
  }
  return Promise.all(renders.map((block) => block.finish()));
}
