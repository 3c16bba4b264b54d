// The chat's mode: which mode the shown chat runs in, the switch that changes it for the
// next messages, and the modes the operator's policy allows the user (GET /policy).

import { call } from "./api.js";

export const MODE_LABELS = {
  teaching_assistant: "Teaching assistant",
  lab_automation_assistant: "Lab automation",
};
const ORDER = ["teaching_assistant", "lab_automation_assistant"]; // least to most allowed

export class ChatMode {
  constructor(select, note) {
    this.select = select;
    this.note = note;
    this.current = null; // the mode the shown chat runs in
    this.fallback = "teaching_assistant"; // the service's default mode
    this.own = null; // the user's stored default (LLM settings)
    this.allowed = null; // null: any
    this.asked = undefined; // what show() was last given (undefined: nothing shown yet)
    select.addEventListener("change", () => this.showNote());
  }

  // What the policy allows, and the user's own default mode.
  async load() {
    const [policy, settings] = await Promise.allSettled([call("GET", "/policy"), call("GET", "/llm-config")]);
    this.allowed = policy.status === "fulfilled" && Array.isArray(policy.value.modes) ? policy.value.modes : null;
    this.own = settings.status === "fulfilled" ? settings.value.copilot_mode || null : null;
    for (const option of this.select.options) {
      const shown = this.allows(option.value);
      option.hidden = !shown;
      option.disabled = !shown;
    }
    this.select.disabled = this.allowed !== null && this.allowed.length < 2;
    this.select.title = this.select.disabled ? "The only mode your operator allows you" : "Applies from your next message";
    if (this.asked !== undefined) this.show(this.asked); // shown before the policy was known
  }

  allows(mode) {
    return this.allowed === null || this.allowed.includes(mode);
  }

  // The highest allowed mode not above ``mode`` (the service runs a chat so).
  capped(mode) {
    if (this.allows(mode)) return mode;
    const below = ORDER.slice(0, ORDER.indexOf(mode) + 1).filter((m) => this.allows(m));
    return below.pop() || (this.allowed && this.allowed[0]) || mode;
  }

  // Show the mode of a session (``null``: a new chat, which starts in the user's default).
  show(mode) {
    this.asked = mode;
    this.current = this.capped(mode || this.own || this.fallback);
    this.select.value = this.current;
    this.showNote();
  }

  showNote() {
    const changed = this.current !== null && this.select.value !== this.current;
    this.note.hidden = !changed;
    this.note.textContent = changed ? `${MODE_LABELS[this.select.value] || this.select.value} from your next message` : "";
  }

  // The mode to send with a message: only when the user switched it.
  requested() {
    return this.current !== null && this.select.value !== this.current ? this.select.value : null;
  }
}
