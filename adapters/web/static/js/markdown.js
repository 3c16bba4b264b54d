// Streamed text shown as plain text at once, replaced by server-rendered,
// sanitised HTML (POST /render) at most every RENDER_INTERVAL ms, and once at the end.

import { call } from "./api.js";

export const RENDER_INTERVAL = 300;

// Copy text to the clipboard (the API needs a secure context; else a hidden field).
export async function copyText(text, button) {
  let done = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      done = true;
    }
  } catch {
    done = false;
  }
  if (!done) {
    const field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.className = "visually-hidden";
    document.body.append(field);
    field.select();
    try {
      done = document.execCommand("copy");
    } catch {
      done = false;
    }
    field.remove();
  }
  if (button) {
    const label = button.textContent;
    button.textContent = done ? "Copied" : "Copy failed";
    setTimeout(() => {
      button.textContent = label;
    }, 1500);
  }
  return done;
}

// A "Copy" button on every code block (and device output) inside `root`.
export function addCopyButtons(root) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.parentElement.classList.contains("copyable")) continue;
    const wrap = document.createElement("div");
    wrap.className = "copyable";
    pre.replaceWith(wrap);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-button";
    button.textContent = "Copy";
    const what = pre.dataset.device ? `the output of ${pre.dataset.device}` : "this code";
    button.setAttribute("aria-label", `Copy ${what}`);
    button.addEventListener("click", () => copyText(pre.textContent, button));
    wrap.append(pre, button);
  }
}

export class MarkdownBlock {
  constructor(parent) {
    this.element = document.createElement("div");
    this.element.className = "text-block";
    this.html = document.createElement("div");
    this.html.className = "markdown";
    this.tail = document.createElement("span");
    this.tail.className = "plain";
    this.element.append(this.html, this.tail);
    parent.append(this.element);
    this.text = "";
    this.renderedLength = 0;
    this.timer = null;
    this.lastRender = 0;
    this.inFlight = null;
  }

  append(piece) {
    this.text += piece;
    this.showTail();
    this.schedule();
  }

  set(text) {
    this.text = text;
    this.showTail();
  }

  // The part not rendered yet, as plain text: inside the last paragraph when it goes
  // on with it (no line break appears at the streaming edge), after it otherwise.
  showTail() {
    const rest = this.text.slice(this.renderedLength);
    const last = this.html.lastElementChild;
    const continues = last && /^(P|H[1-6])$/.test(last.tagName) && !/^\s*\n/.test(rest);
    if (continues) {
      if (this.tail.parentElement !== last) last.append(this.tail);
      this.tail.textContent = rest;
    } else {
      if (this.tail.parentElement !== this.element) this.element.append(this.tail);
      this.tail.textContent = rest.replace(/^\n+/, "");
    }
  }

  schedule() {
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastRender + RENDER_INTERVAL - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.render();
    }, wait);
  }

  // Render the whole text now (also called once when the turn ends).
  async render() {
    if (this.inFlight) await this.inFlight.catch(() => {});
    const text = this.text;
    if (!text || text.length === this.renderedLength) return;
    this.lastRender = Date.now();
    this.inFlight = call("POST", "/render", { markdown: text });
    try {
      const { html } = await this.inFlight;
      if (text.length >= this.renderedLength) {
        this.element.append(this.tail); // out of the old HTML before it is replaced
        this.html.innerHTML = html; // sanitised on the server (nh3 allow-list)
        addCopyButtons(this.html);
        this.renderedLength = text.length;
        this.showTail();
        this.element.dataset.rendered = "true";
      }
    } catch {
      // Keep the plain text: it is already on screen.
    } finally {
      this.inFlight = null;
    }
  }

  async finish() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    await this.render();
  }
}
