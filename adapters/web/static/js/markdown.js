// Streamed text shown as plain text at once, replaced by server-rendered,
// sanitised HTML (POST /render) at most every RENDER_INTERVAL ms, and once at the end.

import { call } from "./api.js";

export const RENDER_INTERVAL = 300;

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
    this.tail.textContent = this.text.slice(this.renderedLength);
    this.schedule();
  }

  set(text) {
    this.text = text;
    this.tail.textContent = text.slice(this.renderedLength);
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
        this.html.innerHTML = html; // sanitised on the server (nh3 allow-list)
        this.renderedLength = text.length;
        this.tail.textContent = this.text.slice(this.renderedLength);
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
