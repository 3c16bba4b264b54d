// The Intent panel: the checks the user wants to hold in the project's lab (their standing
// intent, GET/PUT …/intent), each with its verdict in the last run and when that was, a
// Run button (POST …/intent/run), and a form that adds a check.

import { ApiError, call } from "./api.js";
import { forPeople } from "./chat.js";
import { KINDS, checkLabel, checkOf, kindFields } from "./checks.js";

const $ = (id) => document.getElementById(id);
const OPEN_KEY = "copilot.intent-open";

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// An observed fact as a line: {"neighbor": "R2", "state": "absent"} → "neighbor R2, state absent".
function factLine(observed) {
  if (observed === null || observed === undefined) return "";
  if (typeof observed !== "object") return String(observed);
  return Object.entries(observed)
    .map(([key, value]) => `${key} ${typeof value === "object" ? JSON.stringify(value) : value}`)
    .join(", ");
}

function timeOf(iso) {
  const when = new Date(iso);
  const node = el("time");
  node.dateTime = iso;
  node.title = when.toLocaleString();
  const today = when.toDateString() === new Date().toDateString();
  node.textContent = today
    ? when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : when.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  return node;
}

export class IntentPanel {
  constructor({ onError } = {}) {
    this.project = null;
    this.checks = [];
    this.lastRun = null;
    this.loads = 0;
    this.running = false;
    this.onError = onError;
    const remembered = localStorage.getItem(OPEN_KEY);
    const narrow = window.matchMedia("(max-width: 760px)").matches;
    this.setOpen(remembered === null ? !narrow : remembered === "1", false);
    $("intent-toggle").addEventListener("click", () => this.setOpen(!this.isOpen()));
    $("intent-run").addEventListener("click", () => this.run());
    const kinds = $("intent-kind");
    kinds.replaceChildren(...Object.entries(KINDS).map(([kind, { label }]) => new Option(label, kind)));
    kinds.addEventListener("change", () => this.showFields());
    this.showFields();
    $("intent-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.add();
    });
  }

  isOpen() {
    return $("intent-toggle").getAttribute("aria-expanded") === "true";
  }

  setOpen(open, remember = true) {
    $("intent-toggle").setAttribute("aria-expanded", String(open));
    $("intent-body").hidden = !open;
    if (remember) localStorage.setItem(OPEN_KEY, open ? "1" : "0");
  }

  // Show (or, with null, hide) a project's standing intent.
  show(project) {
    this.project = project;
    this.checks = [];
    this.lastRun = null;
    this.loads++;
    $("intent").hidden = !project;
    this.say("");
    this.formSays("");
    if (!project) return;
    $("intent-summary").textContent = "Loading…";
    $("intent-checks").replaceChildren();
    $("intent-when").replaceChildren();
    this.reload();
  }

  path(rest = "") {
    return `/projects/${encodeURIComponent(this.project.id)}/intent${rest}`;
  }

  // A call about the shown project; undefined when another project is shown by its end.
  async ask(method, rest = "", body) {
    const project = this.project;
    const generation = this.loads;
    try {
      const answer = await call(method, this.path(rest), body);
      return project === this.project && generation === this.loads ? answer : undefined;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401 && this.onError) this.onError(error);
      if (project !== this.project || generation !== this.loads) return undefined;
      throw error;
    }
  }

  async reload() {
    let intent;
    try {
      intent = await this.ask("GET");
    } catch (error) {
      $("intent-summary").textContent = `The checks could not be read: ${forPeople(error.message)}`;
      return;
    }
    if (intent) this.take(intent);
  }

  take(intent) {
    this.checks = intent.checks || [];
    this.lastRun = intent.last_run || null;
    this.render();
  }

  // Each check's verdict in the last run (which ran these very checks, in this order).
  results() {
    const ran = this.lastRun ? this.lastRun.result.checks || [] : [];
    return ran.length === this.checks.length ? ran : [];
  }

  render() {
    const results = this.results();
    const counts = { pass: 0, fail: 0, error: 0 };
    for (const result of results) counts[result.status] = (counts[result.status] || 0) + 1;
    const summary = $("intent-summary");
    if (!this.checks.length) summary.textContent = "No checks yet";
    else if (!results.length) summary.textContent = `${plural(this.checks.length, "check")}, not run yet`;
    else {
      const verdicts = Object.entries(counts).filter(([, n]) => n).map(([status, n]) => `${n} ${status}`);
      summary.textContent = `${plural(this.checks.length, "check")}: ${verdicts.join(", ")}`;
    }
    summary.dataset.status = results.length ? this.lastRun.result.status : "none";
    const when = $("intent-when");
    when.replaceChildren();
    if (results.length) when.append("Last run ", timeOf(this.lastRun.at), ".");
    $("intent-checks").replaceChildren(...this.checks.map((check, index) => this.item(check, results[index], index)));
    if (!this.checks.length) $("intent-checks").append(el("li", "intent-none", "Add the checks that should always hold in this lab, then Run them."));
    this.showRunButton();
  }

  showRunButton() {
    const button = $("intent-run");
    const opened = this.project && this.project.status === "opened";
    button.disabled = this.running || !opened || !this.checks.length;
    button.textContent = this.running ? "Running…" : "Run";
    button.title = !opened
      ? "Open the project in GNS3 to run its checks"
      : this.checks.length ? "Run the checks now" : "Add a check first";
  }

  item(check, result, index) {
    const label = checkLabel(check);
    const item = el("li", "intent-check");
    const details = el("details", "intent-detail");
    const head = el("summary");
    const status = result ? result.status : "none";
    const badge = el("span", "intent-status", result ? result.status : "not run");
    badge.dataset.status = status;
    head.append(badge, el("span", "intent-label", label));
    head.title = result ? result.reason || factLine(result.observed) || result.status : "Not run since the checks were set";
    details.append(head, this.facts(check, result));
    const remove = el("button", "icon-button intent-remove", "✕");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove “${label}”`);
    remove.title = `Remove “${label}”`;
    remove.addEventListener("click", () => this.remove(index));
    item.dataset.status = status;
    item.append(details, remove);
    return item;
  }

  // What the last run saw of a check: why, the observed fact, and the deciding output.
  facts(check, result) {
    const box = el("div", "intent-facts");
    const facts = el("dl");
    const fact = (name, value) => {
      if (value === null || value === undefined || value === "") return;
      facts.append(el("dt", null, name), el("dd", null, value));
    };
    if (check.name) fact("Checks", checkLabel({ ...check, name: undefined }));
    if (!result) {
      fact("Verdict", "not run since the checks were set");
      box.append(facts);
      return box;
    }
    fact("Why", result.reason);
    fact("Seen", factLine(result.observed));
    fact("Tries", result.attempts === undefined ? "" : `${result.attempts} in ${result.waited_s} s`);
    box.append(facts);
    for (const evidence of result.evidence || []) {
      box.append(el("p", "intent-command", `${evidence.node}: ${evidence.command}`));
      if (evidence.lines && evidence.lines.length) box.append(el("pre", null, evidence.lines.join("\n")));
    }
    return box;
  }

  say(message, kind = "") {
    const line = $("intent-message");
    line.textContent = message;
    line.dataset.kind = kind;
  }

  formSays(message, kind = "") {
    const line = $("intent-form-result");
    line.textContent = message;
    line.dataset.kind = kind;
    if (message && kind) line.scrollIntoView({ block: "nearest" }); // the panel may scroll
  }

  async run() {
    if (this.running || !this.project) return;
    this.running = true;
    this.say("");
    this.showRunButton();
    try {
      const answer = await this.ask("POST", "/run");
      if (answer !== undefined) await this.reload();
      // 202: the run goes on; its result becomes the last run (the message says so)
      if (answer && answer.status === "running") this.say(answer.message || "Still running.");
    } catch (error) {
      this.say(`The checks did not run: ${forPeople(error.message)}`, "error");
    } finally {
      this.running = false;
      this.showRunButton();
    }
  }

  async save(checks) {
    const stored = await this.ask("PUT", "", { checks });
    if (stored) this.take(stored);
    return stored;
  }

  async remove(index) {
    this.say("");
    try {
      await this.save(this.checks.filter((_, i) => i !== index));
    } catch (error) {
      this.say(`Not removed: ${forPeople(error.message)}`, "error");
    }
  }

  showFields() {
    $("intent-fields").replaceChildren(...kindFields($("intent-kind").value));
  }

  async add() {
    if (!this.project) return;
    const check = checkOf($("intent-form"));
    const button = $("intent-add-button");
    button.disabled = true;
    this.formSays("Saving…");
    try {
      if (await this.save([...this.checks, check])) {
        this.formSays(`Added “${checkLabel(this.checks[this.checks.length - 1])}”.`, "ok");
        $("intent-name").value = "";
        this.showFields();
      }
    } catch (error) {
      this.formSays(`Not added: ${forPeople(error.message)}`, "error");
    } finally {
      button.disabled = false;
    }
  }
}
