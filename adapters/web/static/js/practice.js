// The Practice panel: troubleshooting drills on the project's lab (…/drills). Pick a
// topic and a difficulty (or any), Start: a fault is put into the lab and handed over
// once its symptoms show. While it runs: the symptoms, the hints revealed, Next hint,
// Grade me (each condition with its evidence, partial credit), End and Give up. The
// answer and the restore's report come only in the reply to ending the drill; the
// panel holds nothing of the fault before that. History and best scores when idle.
// Every value is set as text (textContent), never as HTML: hints, evidence and the
// fault's lines are device text.

import { ApiError, call } from "./api.js";
import { forPeople } from "./chat.js";

const $ = (id) => document.getElementById(id);
const OPEN_KEY = "copilot.practice-open";

const TOPICS = {
  addressing: "Addressing",
  ospf: "OSPF",
  bgp: "BGP",
  static_routing: "Static routing",
  interfaces_and_links: "Interfaces and links",
  filtering: "Filtering",
  hosts: "Hosts",
};
const LEVELS = { 1: "1 (first steps)", 2: "2 (intermediate)", 3: "3 (subtle)" };

// What a request does while the page waits (none is streamed: see docs/api.md).
const WORK = {
  start: "Starting the drill: a fault goes into the lab, then the panel waits until its symptoms show (up to a minute or two)",
  grade: "Grading your fix: the checks are tried until they hold (up to the fault's settle time), then the lab is compared with before the drill",
  end: "Ending the drill: the lab is restored and compared with before the drill (up to two minutes)",
};

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

function button(text, className, onClick) {
  const node = el("button", className, text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function topicLabel(topic) {
  return TOPICS[topic] || String(topic).replaceAll("_", " ");
}

export function percent(score) {
  return `${Math.round(score * 100)}%`;
}

export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function clock(iso) {
  const when = new Date(iso);
  const node = el("time", null, when.toLocaleString([], { dateStyle: "medium", timeStyle: "short" }));
  node.dateTime = iso;
  return node;
}

// A definition list of the given [name, value] pairs (empty values left out).
function facts(pairs, className) {
  const list = el("dl", className);
  for (const [name, value] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    list.append(el("dt", null, name), el("dd", null, String(value)));
  }
  return list;
}

// A step of the fault or of its fix, as people read it.
function stepItem(step) {
  const item = el("li", "practice-step");
  if (step.kind === "lines") {
    item.append(el("p", "practice-step-node", `On ${step.node}:`), el("pre", null, (step.lines || []).join("\n")));
  } else if (step.kind === "link_filter") {
    const link = (step.link || []).join(" – ");
    item.append(step.packet_loss ? `Link ${link}: ${step.packet_loss}% of packets dropped` : `Link ${link}: no packet loss`);
  } else if (step.kind === "link_suspend") {
    item.append(`Link ${(step.link || []).join(" – ")} ${step.suspend === false ? "resumed" : "suspended"}`);
  } else {
    item.append(JSON.stringify(step));
  }
  return item;
}

export class PracticePanel {
  constructor({ onError } = {}) {
    this.project = null;
    this.drill = null; // the running drill as its student sees it (DrillBody)
    this.grade = null; // its last grade, shown until the drill ends
    this.ending = null; // the ended drill's reply (the answer, the restore)
    this.catalog = [];
    this.loaded = false;
    this.busy = null; // "start" | "grade" | "end" | "hint" while a request runs
    this.loads = 0;
    this.onError = onError;
    this.setOpen(localStorage.getItem(OPEN_KEY) === "1", false);
    $("practice-toggle").addEventListener("click", () => this.setOpen(!this.isOpen()));
    $("practice-topic").addEventListener("change", () => this.showLevels());
    $("practice-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.start();
    });
  }

  isOpen() {
    return $("practice-toggle").getAttribute("aria-expanded") === "true";
  }

  setOpen(open, remember = true) {
    $("practice-toggle").setAttribute("aria-expanded", String(open));
    $("practice-body").hidden = !open;
    if (remember) localStorage.setItem(OPEN_KEY, open ? "1" : "0");
  }

  // Show (or, with null, hide) a project's drills: its running drill is resumed.
  show(project) {
    this.project = project;
    this.drill = null;
    this.grade = null;
    this.ending = null;
    this.busy = null;
    this.loaded = false; // the running drill asked for (until then the summary says Loading…)
    this.loads++;
    this.stopTicking();
    $("practice").hidden = !project;
    this.say("");
    if (!project) return;
    this.render();
    this.load();
  }

  path(rest = "") {
    return `/projects/${encodeURIComponent(this.project.id)}/drills${rest}`;
  }

  // A call about the shown project; undefined when another project is shown by its end.
  async ask(method, rest = "", body) {
    const project = this.project;
    const generation = this.loads;
    const current = () => project === this.project && generation === this.loads;
    try {
      const answer = await call(method, this.path(rest), body);
      return current() ? answer : undefined;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401 && this.onError) this.onError(error);
      if (!current()) return undefined;
      throw error;
    }
  }

  async load() {
    try {
      const catalog = await this.ask("GET", "/catalog");
      if (catalog === undefined) return;
      this.catalog = catalog.topics || [];
    } catch (error) {
      if (error instanceof ApiError && error.status === 501) {
        $("practice").hidden = true; // this deployment has no drills
        return;
      }
      $("practice-summary").textContent = `Drills could not be read: ${forPeople(error.message)}`;
      return;
    }
    this.showTopics();
    await this.refresh();
  }

  // Read the caller's running drill again (a chat's practice_drill may have changed it).
  async refresh() {
    if (!this.project || this.busy) return;
    let drill = null;
    try {
      drill = await this.ask("GET", "/active");
      if (drill === undefined) return;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) {
        this.say(`Your drill could not be read: ${forPeople(error.message)}`, "error");
        $("practice-summary").textContent = "Drills could not be read";
        return;
      }
    }
    if (drill && (!this.drill || this.drill.id !== drill.id)) this.grade = null;
    if (drill) {
      this.ending = null;
      this.setOpen(true, false);
    }
    this.drill = drill;
    this.loaded = true;
    this.render();
    if (!drill) await this.loadResults();
  }

  showTopics() {
    const select = $("practice-topic");
    const total = this.catalog.reduce((sum, topic) => sum + topic.faults, 0);
    select.replaceChildren(
      new Option(`Any topic (${plural(total, "fault")})`, ""),
      ...this.catalog.map((topic) => new Option(`${topicLabel(topic.topic)} (${topic.faults})`, topic.topic)),
    );
    this.showLevels();
  }

  // The difficulties the chosen topic (or any) has faults of.
  showLevels() {
    const chosen = $("practice-topic").value;
    const counts = {};
    for (const topic of this.catalog) {
      if (chosen && topic.topic !== chosen) continue;
      for (const [level, n] of Object.entries(topic.difficulties || {})) counts[level] = (counts[level] || 0) + n;
    }
    const select = $("practice-difficulty");
    const kept = select.value;
    select.replaceChildren(
      new Option("Any difficulty", ""),
      ...Object.keys(counts).sort().map((level) => new Option(`${LEVELS[level] || level} (${counts[level]})`, level)),
    );
    if (kept in counts) select.value = kept;
  }

  // ---------------------------------------------------------------- rendering
  render() {
    const opened = this.project && this.project.status === "opened";
    const idle = !this.drill;
    $("practice-form").hidden = !idle || Boolean(this.ending); // "Practice again" brings it back
    const start = $("practice-start");
    start.disabled = Boolean(this.busy) || !opened || !this.catalog.length;
    start.textContent = this.busy === "start" ? "Starting…" : "Start a drill";
    start.title = opened ? "Put a fault of this topic into the lab" : "Open the project in GNS3 to practise on its lab";
    $("practice-drill").replaceChildren(...(this.drill ? this.drillView(this.drill) : []));
    $("practice-drill").hidden = !this.drill;
    $("practice-ended").replaceChildren(...(this.ending ? this.endingView(this.ending) : []));
    $("practice-ended").hidden = !this.ending;
    // The results name the faults drilled: never in the page beside a running drill.
    $("practice-results").hidden = !idle;
    if (!idle) {
      $("practice-history").replaceChildren();
      $("practice-best").replaceChildren();
    }
    const summary = $("practice-summary");
    if (!this.loaded) summary.textContent = "Loading…";
    else if (this.drill) {
      const grade = this.drill.score === null ? "not graded yet" : `last grade ${percent(this.drill.score)}`;
      summary.textContent = `${topicLabel(this.drill.topic)} drill running: ${grade}`;
    } else if (this.busy === "start") summary.textContent = "Starting a drill…";
    else summary.textContent = opened ? "No drill running" : "Open the project to practise";
  }

  drillView(drill) {
    const head = el("p", "practice-head");
    head.append(el("strong", null, `${topicLabel(drill.topic)}, difficulty ${drill.difficulty}`), ` on ${drill.lab}.`);
    if (drill.handed_at) head.append(" Handed over ", clock(drill.handed_at), ".");
    const symptoms = el("ul", "practice-symptoms");
    symptoms.setAttribute("aria-label", "Symptoms");
    symptoms.append(...drill.symptoms.map((symptom) => el("li", null, symptom)));
    const hints = el("ol", "practice-hints");
    hints.setAttribute("aria-label", "Hints");
    hints.append(...drill.hints.map((hint) => el("li", null, hint)));
    const working = Boolean(this.busy);
    const next = button(drill.hints_left ? `Next hint (${drill.hints_left} left)` : "No hint left", "", () => this.hint());
    next.disabled = working || !drill.hints_left;
    const grade = button(this.busy === "grade" ? "Grading…" : "Grade me", "primary", () => this.gradeMe());
    grade.disabled = working;
    const end = button(this.busy === "end" ? "Ending…" : "End", "", () => this.end(false));
    end.disabled = working;
    end.title = "End the drill: the lab is restored and the answer shown";
    const giveUp = button("Give up", "danger", () => this.end(true));
    giveUp.disabled = working;
    giveUp.title = "Give up: the lab is restored and the answer shown (kept as given up)";
    const actions = el("div", "practice-actions");
    actions.append(next, grade, end, giveUp);
    const parts = [head, el("p", "practice-label", "What is wrong"), symptoms];
    if (drill.hints.length) parts.push(el("p", "practice-label", "Hints"), hints);
    parts.push(actions);
    if (this.grade) parts.push(this.gradeView(this.grade));
    return parts;
  }

  gradeView(grade) {
    const box = el("section", "practice-grade");
    box.setAttribute("aria-label", "Your grade");
    box.dataset.fixed = String(grade.fixed);
    const met = grade.conditions.filter((c) => c.met).length;
    const verdict = grade.fixed ? "fixed" : "not fixed yet";
    box.append(
      el("p", "practice-score", `Score ${percent(grade.score)}: ${met} of ${plural(grade.conditions.length, "condition")} met, ${verdict}.`),
      el("p", "practice-meta", `Time ${duration(grade.time_s)}, ${plural(grade.hints_used, "hint")} used.`),
    );
    const list = el("ul", "practice-conditions");
    list.setAttribute("aria-label", "Conditions");
    for (const condition of grade.conditions) {
      const item = el("li", "practice-condition");
      item.dataset.met = String(condition.met);
      const badge = el("span", "intent-status", condition.met ? "pass" : "fail");
      badge.dataset.status = condition.met ? "pass" : "fail";
      const name = el("span", "practice-condition-name", condition.name);
      const kind = el("span", "practice-kind", condition.kind === "constraint" ? "constraint" : "check");
      const line = el("div", "practice-condition-line");
      line.append(badge, name, kind);
      item.append(line, el("p", "practice-evidence", condition.evidence));
      list.append(item);
    }
    box.append(list);
    return box;
  }

  endingView(ending) {
    const { answer, restore, result } = ending;
    const parts = [];
    const score = result.score === null ? "not graded" : percent(result.score);
    const how = result.given_up ? "You gave up" : "Drill ended";
    parts.push(
      el("p", "practice-score", `${how}: ${score}, ${duration(result.time_s)}, ${plural(result.hints_used, "hint")} used.`),
    );
    const box = el("section", "practice-answer");
    box.setAttribute("aria-label", "The answer");
    box.append(el("h3", null, `The answer: ${answer.title}`));
    const truth = answer.ground_truth || {};
    const where = truth.link ? truth.link.join(" – ") : [truth.node, truth.interface].filter(Boolean).join(" ");
    box.append(
      facts(
        [
          ["Fault", answer.fault_id],
          ["Type", String(truth.fault_type || "").replaceAll("_", " ")],
          ["Where", where],
          ["Resource", truth.resource],
        ],
        "practice-facts",
      ),
    );
    const steps = (title, list) => {
      if (!list || !list.length) return;
      const items = el("ol", "practice-steps");
      items.setAttribute("aria-label", title);
      items.append(...list.map(stepItem));
      box.append(el("p", "practice-label", title), items);
    };
    steps("What broke the lab", answer.inject);
    steps("The reference fix", answer.fix);
    parts.push(box);
    const restored = el("div", "practice-restore");
    restored.dataset.exact = String(restore.exact);
    if (restore.exact) restored.append(el("p", null, "The lab is restored: it reads exactly as before the drill."));
    else {
      restored.append(el("p", null, "The lab was restored, but it does not read as before the drill:"));
      const differences = el("ul");
      differences.append(...restore.differences.map((line) => el("li", null, line)));
      restored.append(differences);
    }
    parts.push(restored, button("Practice again", "", () => this.again()));
    return parts;
  }

  // ---------------------------------------------------------------- actions
  say(message, kind = "", details = []) {
    const box = $("practice-message");
    box.replaceChildren();
    box.dataset.kind = kind;
    delete box.dataset.restored;
    if (!message) return;
    box.append(el("p", null, message));
    if (details.length) {
      const list = el("ul");
      list.append(...details.map((line) => el("li", null, line)));
      box.append(list);
    }
  }

  // The work's progress line, with the seconds it has taken so far.
  tick(work) {
    this.stopTicking();
    const began = Date.now();
    const line = $("practice-progress");
    const show = () => {
      line.textContent = `${WORK[work]}… ${Math.round((Date.now() - began) / 1000)} s`;
    };
    show();
    this.ticker = setInterval(show, 1000);
  }

  stopTicking() {
    clearInterval(this.ticker);
    this.ticker = null;
    $("practice-progress").textContent = "";
  }

  // Run one request of the drill: busy meanwhile, its progress said when it is long.
  async work(kind, fn) {
    if (this.busy || !this.project) return;
    const generation = this.loads;
    this.busy = kind;
    this.say("");
    if (WORK[kind]) this.tick(kind);
    this.render();
    try {
      await fn();
    } finally {
      if (generation === this.loads) {
        this.busy = null;
        this.stopTicking();
        this.render();
      }
    }
  }

  start() {
    const body = {};
    if ($("practice-topic").value) body.topic = $("practice-topic").value;
    if ($("practice-difficulty").value) body.difficulty = Number($("practice-difficulty").value);
    return this.work("start", async () => {
      try {
        const drill = await this.ask("POST", "", body);
        if (drill === undefined) return;
        this.drill = drill;
        this.grade = null;
        this.ending = null;
      } catch (error) {
        await this.refused(error);
      }
    });
  }

  // Why a start was refused, in words: what the lab lacks, a drill already running, a
  // fault that did not take (and whether the lab was restored).
  async refused(error) {
    const body = (error instanceof ApiError && error.body) || {};
    if (error.status === 409 && body.code === "lab_does_not_fit") {
      this.say("This lab does not have what the drill needs:", "error", body.missing || []);
    } else if (error.status === 409 && body.code === "drill_active") {
      this.say("This project already has a drill running: end it (or give up) before starting another.", "error");
      this.busy = null;
      await this.refresh(); // yours (another tab, the chat): shown here
    } else if (error.status === 502 && body.code === "drill_not_started") {
      // The message says whether the lab is back as it was; what still differs, listed.
      this.say(forPeople(error.message), "error", body.restored ? [] : body.differences || []);
      $("practice-message").dataset.restored = String(Boolean(body.restored));
    } else {
      this.say(`The drill did not start: ${forPeople(error.message)}`, "error");
    }
  }

  hint() {
    return this.work("hint", async () => {
      try {
        const drill = await this.ask("POST", `/${encodeURIComponent(this.drill.id)}/hints`);
        if (drill !== undefined) this.drill = drill;
      } catch (error) {
        this.failed("No hint", error);
      }
    });
  }

  gradeMe() {
    return this.work("grade", async () => {
      try {
        const grade = await this.ask("POST", `/${encodeURIComponent(this.drill.id)}/grade`);
        if (grade === undefined) return;
        this.grade = grade;
        this.drill = { ...this.drill, score: grade.score };
      } catch (error) {
        this.failed("Not graded", error);
      }
    });
  }

  end(giveUp) {
    return this.work("end", async () => {
      try {
        const ending = await this.ask("POST", `/${encodeURIComponent(this.drill.id)}/end?give_up=${giveUp}`);
        if (ending === undefined) return;
        this.ending = ending;
        this.drill = null;
        this.grade = null;
        this.loadResults(); // with this drill in them
      } catch (error) {
        this.failed("The drill did not end", error); // a failed restore leaves it running
      }
    });
  }

  // A request on the running drill failed; a drill that is gone is said so and dropped.
  failed(what, error) {
    if (error instanceof ApiError && error.status === 404) {
      this.drill = null;
      this.grade = null;
      this.say("This drill is no longer running (it was ended elsewhere).", "error");
      this.loadResults();
      return;
    }
    this.say(`${what}: ${forPeople(error.message)}`, "error");
  }

  again() {
    this.ending = null;
    this.say("");
    this.render();
    this.loadResults();
  }

  // ---------------------------------------------------------------- results
  async loadResults() {
    let history;
    let best;
    try {
      [history, best] = await Promise.all([this.ask("GET", "/history?limit=20"), this.ask("GET", "/best-scores")]);
    } catch (error) {
      $("practice-history").replaceChildren(el("p", "practice-none", `Your results could not be read: ${forPeople(error.message)}`));
      $("practice-best").replaceChildren();
      return;
    }
    if (history === undefined || best === undefined) return;
    const list = $("practice-history");
    list.replaceChildren();
    if (!history.length) list.append(el("li", "practice-none", "No drill finished yet."));
    for (const outcome of history) {
      const item = el("li", "practice-outcome");
      const score = outcome.score === null ? "not graded" : percent(outcome.score);
      const notes = [
        `${topicLabel(outcome.topic)}, difficulty ${outcome.difficulty}`,
        score,
        duration(outcome.time_s),
        plural(outcome.hints_used, "hint"),
      ];
      if (outcome.given_up) notes.push("given up");
      if (!outcome.restored) notes.push("not restored exactly");
      item.append(el("span", "practice-fault", outcome.fault_id), ` ${notes.join(" · ")} · `, clock(outcome.ended_at));
      list.append(item);
    }
    const scores = Object.entries(best.best_scores || {});
    const table = $("practice-best");
    table.replaceChildren();
    if (scores.length) {
      table.append(el("p", "practice-label", "Best scores"));
      const rows = el("ul", "practice-best-list");
      rows.setAttribute("aria-label", "Best scores");
      for (const [fault, score] of scores.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
        const row = el("li");
        row.append(el("span", "practice-fault", fault), ` ${percent(score)}`);
        rows.append(row);
      }
      table.append(rows);
    }
  }
}
