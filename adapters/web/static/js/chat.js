// The conversation pane: saved messages, and a live turn built from SSE events.

import { ApiError, call } from "./api.js";
import { buildPreview, buildProgressOf, isLabBuild, showBuildOutcome } from "./labbuild.js";
import { MarkdownBlock, addCopyButtons, copyText } from "./markdown.js";
import { MODE_LABELS } from "./mode.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function linkButton(text, onClick, label) {
  const button = el("button", "link-button", text);
  button.type = "button";
  if (label) button.setAttribute("aria-label", label);
  button.addEventListener("click", onClick);
  return button;
}

export function pretty(text) {
  if (text === undefined || text === null || text === "") return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

// A message for a person: sentences that quote an API route are left out.
export function forPeople(message) {
  const text = String(message || "");
  const kept = text.split(/(?<=\.)\s+/).filter((sentence) => !/\/v3\/|\b(GET|PUT|POST|DELETE|PATCH) \//.test(sentence));
  if (/no language model is configured/i.test(text)) {
    return "No language model is configured for your account yet.";
  }
  return kept.join(" ") || "Something failed.";
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
  box.append(el("strong", null, "Error: "), el("span", "error-text", forPeople(message)));
  const { hint, action } = remedy(code, message);
  box.append(el("p", "error-hint", hint));
  if (action && onAction) {
    const label = action === "settings" ? "Open LLM settings" : "Refresh projects";
    box.append(linkButton(label, () => onAction(action)));
  }
  return box;
}

// Tool outputs rendered on the server (POST /render/tools), a few per request.
const pendingViews = [];
let flushing = null;
const MAX_BATCH = 16;
const MAX_BATCH_CHARS = 1_000_000;
const MAX_OUTPUT_CHARS = 200_000;

function requestView(card, name, output, status) {
  if (output.length > MAX_OUTPUT_CHARS) {
    card.showView(null, null, "This output is too large to format; see the raw output.");
    return;
  }
  pendingViews.push({ card, item: { tool_name: name || "tool", output, status: status || null } });
  if (!flushing) flushing = Promise.resolve().then(flushViews);
}

async function flushViews() {
  while (pendingViews.length) {
    const batch = [];
    let size = 0;
    while (pendingViews.length && batch.length < MAX_BATCH && size + pendingViews[0].item.output.length <= MAX_BATCH_CHARS) {
      const next = pendingViews.shift();
      size += next.item.output.length;
      batch.push(next);
    }
    if (!batch.length) batch.push(pendingViews.shift());
    try {
      const { items } = await call("POST", "/render/tools", { items: batch.map((b) => b.item) });
      items.forEach((rendered, i) => batch[i].card.showView(rendered.html, rendered.reason));
    } catch {
      for (const { card } of batch) card.showView(null, null, "The output could not be formatted; see the raw output.");
    }
  }
  flushing = null;
}

// A change preview's summary ("create 2 nodes", "start PC1") as a sentence's start.
export function plainTitle(summary) {
  const text = String(summary || "").trim().replace(/[.?]+$/, "");
  return text ? text[0].toUpperCase() + text.slice(1) : "";
}

// Who decided a call, and how ("Approved by you", "Rejected by ann: “why”").
export function decisionText(decision, userId) {
  if (!decision) return "";
  if (decision.reason === "timeout") return "Not approved in time: the change was not made.";
  if (decision.reason === "aborted") return "The answer was stopped before a decision.";
  const who = decision.by && decision.by === userId ? "you" : decision.by || "someone";
  if (decision.decision === "approve") return `Approved by ${who}.`;
  return `Rejected by ${who}${decision.comment ? `: “${decision.comment}”` : "."}`;
}

class ToolCard {
  constructor(parent, id, name) {
    this.element = el("details", "tool-card");
    this.element.dataset.toolCallId = id;
    this.element.open = true;
    const summary = el("summary");
    // The call's plain title (the service's, or a change's summary) and the tool's name in
    // small print.
    this.title = el("span", "tool-title");
    this.title.hidden = true;
    this.titled = false;
    this.name = el("span", "tool-name", name || "tool");
    this.elapsed = el("span", "tool-elapsed");
    this.status = el("span", "tool-status", "writing…");
    this.status.dataset.status = "writing";
    summary.append(el("span", "tool-icon", "⚙"), this.title, this.name, this.elapsed, this.status);
    this.decision = el("p", "tool-decision");
    this.decision.hidden = true;
    this.decided = false; // a decision line is shown (here or on the approval card)
    this.reason = el("p", "tool-reason");
    this.reason.hidden = true;
    this.argsBox = el("details", "tool-args-box");
    this.argsBox.open = true;
    this.argsBox.append(el("summary", null, "Arguments"));
    this.args = el("pre", "tool-args");
    this.args.setAttribute("aria-label", "Tool arguments");
    this.argsBox.append(this.args);
    this.live = el("div", "tool-live");
    this.live.setAttribute("aria-label", "Live output");
    this.live.hidden = true;
    this.devices = new Map();
    this.view = el("div", "tool-view");
    this.view.hidden = true;
    this.raw = el("details", "tool-raw tool-output");
    this.raw.hidden = true;
    this.raw.append(el("summary", null, "Raw output (JSON)"));
    this.outputBody = el("pre", "tool-output-json");
    this.raw.append(this.outputBody);
    this.element.append(summary, this.decision, this.reason, this.argsBox, this.live, this.view, this.raw);
    parent.append(this.element);
    this.started = null;
    this.ticker = null;
  }

  setName(name) {
    if (name) this.name.textContent = name;
  }

  setTitle(text) {
    if (typeof text !== "string" || !text) return;
    this.titled = true;
    this.title.textContent = text;
    this.title.hidden = false;
    this.name.classList.add("small-print");
  }

  // The decision on this call, said on the card itself (a saved history has no approval card).
  setDecision(text, state) {
    this.decided = true;
    if (!text) return;
    this.decision.textContent = text;
    this.decision.dataset.state = state;
    this.decision.hidden = false;
  }

  setArguments(text, complete) {
    this.args.textContent = complete ? pretty(text) || "{}" : text;
    if (complete) this.argsBox.open = false;
  }

  setStatus(status) {
    const labels = {
      running: "running…", success: "done", error: "failed", aborted: "stopped",
      rejected: "rejected", waiting: "waiting for you", partial_success: "partly done",
    };
    this.status.textContent = labels[status] || status;
    this.status.dataset.status = status;
  }

  start() {
    this.setStatus("running");
    this.started = Date.now();
    const tick = () => {
      this.elapsed.textContent = `${Math.floor((Date.now() - this.started) / 1000)} s`;
    };
    tick();
    this.ticker = setInterval(tick, 1000);
  }

  stopTicker(seconds) {
    clearInterval(this.ticker);
    this.ticker = null;
    if (seconds !== undefined && seconds !== null) this.elapsed.textContent = `${seconds.toFixed(1)} s`;
    else if (this.started) this.elapsed.textContent = `${((Date.now() - this.started) / 1000).toFixed(1)} s`;
  }

  progress(device, text) {
    this.live.hidden = false;
    const key = device || "";
    let pre = this.devices.get(key);
    if (!pre) {
      if (device) this.live.append(el("h4", null, device));
      pre = el("pre", "tool-live-output");
      pre.dataset.device = key;
      this.live.append(pre);
      this.devices.set(key, pre);
    }
    const now = pre.textContent + text;
    pre.textContent = now.length > 20000 ? now.slice(-20000) : now;
    pre.scrollTop = pre.scrollHeight;
  }

  setOutput(text, status, name) {
    this.stopTicker();
    const state = status || "success";
    this.setStatus(state);
    this.outputBody.textContent = pretty(text);
    this.raw.hidden = false;
    this.live.hidden = true;
    this.element.dataset.status = state;
    requestView(this, name || this.name.textContent, String(text ?? ""), state);
    // A success folds to its summary line, unless a device printed something: that stays.
    if (state === "success" && !this.devices.size) this.element.open = false;
  }

  showView(html, reason, note) {
    // A rejection is said once: by the decision line (or the approval card above).
    const said = this.decided && this.element.dataset.status === "rejected";
    if (reason && !said) {
      this.reason.textContent = reason;
      this.reason.hidden = false;
    }
    if (html) {
      this.view.innerHTML = html; // sanitised on the server (nh3 allow-list)
      // The failure's sentence is on the card already: not again at the view's top.
      for (const line of this.view.querySelectorAll(".tv > .tv-error")) {
        if (reason && (said || line.textContent.trim() === reason.trim())) line.remove();
      }
      if (this.element.dataset.status === "success" && this.view.querySelector(".tv-output")) {
        this.element.open = true; // device output is what the user asked to see
      }
      addCopyButtons(this.view);
    } else if (note) {
      this.view.replaceChildren(el("p", "tv-note", note));
    }
    this.view.hidden = false;
    this.element.dataset.viewed = "true";
  }
}

// "Undo this change": the restore point a change's result names (tool_end output, or a
// saved tool message's metadata), rolled back after an inline confirmation.
export function restorePointOf(content, metadata) {
  const saved = metadata && metadata.restore_point_id;
  if (typeof saved === "string" && saved) return saved;
  try {
    const id = JSON.parse(content)?.restore_point_id;
    return typeof id === "string" && id ? id : null;
  } catch {
    return null;
  }
}

// Why a rollback did not run, in words; gone: the button cannot help any more.
function undoProblem(error) {
  if (!(error instanceof ApiError)) {
    return { text: "The service did not answer: check your connection, then try again." };
  }
  const detail = forPeople(error.detail);
  if (error.status === 404) {
    return { text: "This restore point no longer exists, so the change cannot be undone from here.", gone: true };
  }
  if (error.status === 409 && /not opened|closed/i.test(error.detail)) {
    return { text: "The project is not open in GNS3: open it, then try again." };
  }
  if (error.status === 409 && /would also touch/i.test(error.detail)) {
    return { text: detail, conflict: true };
  }
  if (error.status === 409 && /rollback running/i.test(error.detail)) {
    return { text: "Another undo is running in this session: wait for it to finish, then try again." };
  }
  if (error.status === 409) {
    return { text: "The copilot is still answering in this session: wait for it to finish (or press Stop), then try again." };
  }
  if (error.status === 501) return { text: "This service cannot roll changes back.", gone: true };
  if (error.status === 502 || error.status === 503) {
    return { text: `Not undone: ${detail} Check that GNS3 is running, then try again.` };
  }
  return { text: `The change was not undone: ${detail}` };
}

const ITEM_WORDS = { success: "as it was", partial_success: "partly put back", failed: "not put back" };

class UndoBox {
  // actions: {point(id) -> restore point | null, preview(id, force) -> preview,
  // rollBack(id, useSnapshot, force) -> reply};
  // both resolve undefined when the page signed out (an expired token).
  constructor(pointId, actions, { label = "Undo this change", what = "this change" } = {}) {
    this.pointId = pointId;
    this.actions = actions;
    this.label = label;
    this.element = el("div", "undo-box");
    this.element.setAttribute("role", "group");
    this.element.setAttribute("aria-label", `Undo ${what}`);
    this.element.dataset.restorePoint = pointId;
    this.element.dataset.state = "ready";
    this.button = el("button", "undo-button", label);
    this.button.type = "button";
    this.button.addEventListener("click", () => this.ask());
    this.panel = el("div", "undo-panel");
    this.element.append(this.button, this.panel);
  }

  busy(text) {
    this.button.disabled = true;
    this.button.textContent = text;
    this.element.setAttribute("aria-busy", "true");
  }

  ready(label = this.label) {
    this.button.disabled = false;
    this.button.textContent = label;
    this.element.removeAttribute("aria-busy");
  }

  async ask() {
    this.busy("Looking up the restore point…");
    this.panel.replaceChildren();
    let point;
    try {
      point = await this.actions.point(this.pointId);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (point === undefined) return;
    if (point === null) {
      this.fail(new ApiError(404));
      return;
    }
    if (point.rolled_back) {
      this.undone(point.rolled_back);
      return;
    }
    let preview = null;
    try {
      preview = this.actions.preview ? await this.actions.preview(this.pointId, false) : null;
    } catch {
      preview = null; // the confirmation then says what the restore point holds
    }
    this.confirm(point, preview);
  }

  // Already undone (a saved history's later rollback, or the restore point says so).
  undone(rolledBack) {
    const status = rolledBack?.status || "success";
    this.element.dataset.state = status === "success" ? "undone" : "partial";
    this.button.remove();
    const when = rolledBack?.at ? ` on ${new Date(rolledBack.at).toLocaleString()}` : "";
    const who = rolledBack?.by_name ? ` by ${rolledBack.by_name}` : "";
    const text = status === "success"
      ? `Undone${who}${when}: this change is no longer in the lab.`
      : `Partly undone${who}${when} (the rollback's status: ${status}).`;
    const head = el("p", "undo-headline", text);
    head.setAttribute("role", "status");
    this.panel.replaceChildren(head);
  }

  confirm(point, preview = null, force = false) {
    this.element.dataset.state = "confirm";
    this.button.hidden = true;
    const box = el("div", "undo-confirm");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Confirm the undo");
    const parts = [];
    if (point.topology) parts.push("the topology (nodes, links, link filters, drawings)");
    if ((point.devices || []).length) parts.push(`the configuration of ${point.devices.join(", ")}`);
    const when = new Date(point.created_at).toLocaleString();
    const lines = preview ? (preview.topology || []) : [];
    const conflicts = lines.filter((line) => line.startsWith("conflict: ")).map((line) => line.slice(10));
    const steps = lines.filter((line) => !line.startsWith("conflict: ") && !line.startsWith("nothing is changed while"));
    box.append(el("p", null,
      `Undo ${point.tool_name}${point.summary ? ` (${point.summary})` : ""}, made at ${when}? ` +
      "Only what this change did is undone: what anyone did since stays."));
    if (preview) {
      const list = el("ul", "undo-plan");
      list.setAttribute("aria-label", "What the undo changes");
      for (const line of steps) list.append(el("li", null, line));
      for (const [device, commands] of Object.entries(preview.devices || {})) {
        const row = el("li", null, `${device}: `);
        row.append(el("span", null, commands.join("; ")));
        list.append(row);
      }
      if (list.children.length) box.append(list);
    } else if (parts.length) {
      box.append(el("p", null, `It puts back ${parts.join(" and ")}.`));
    }
    if (conflicts.length) {
      const warn = el("div", "undo-conflicts");
      warn.setAttribute("role", "alert");
      warn.append(el("p", null, force
        ? "What was done since is in the way; rolling back anyway also does what is listed above:"
        : "What was done since is in the way, so nothing will be changed unless you roll back anyway:"));
      const list = el("ul");
      for (const line of conflicts) list.append(el("li", null, line));
      warn.append(list);
      box.append(warn);
    }
    let snapshot = null;
    if (point.gns3_snapshot) {
      const label = el("label", "undo-snapshot");
      snapshot = el("input");
      snapshot.type = "checkbox";
      label.append(snapshot, el("span", null,
        "Also restore the GNS3 snapshot taken then: the whole project returns to that moment " +
        "(only when every node is stopped)."));
      label.title = point.gns3_snapshot;
      box.append(label);
    }
    const buttons = el("div", "dialog-buttons");
    const go = el("button", "danger", conflicts.length && !force ? "Roll back anyway" : "Roll back");
    go.type = "button";
    const cancel = el("button", null, "Cancel");
    cancel.type = "button";
    buttons.append(go, cancel);
    box.append(buttons);
    this.panel.replaceChildren(box);
    const back = () => {
      this.panel.replaceChildren();
      this.element.dataset.state = "ready";
      this.button.hidden = false;
      this.ready();
      this.button.focus();
    };
    cancel.addEventListener("click", back);
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        back();
      }
    });
    go.addEventListener("click", async () => {
      const useSnapshot = Boolean(snapshot && snapshot.checked);
      if (conflicts.length && !force && !useSnapshot) {
        // Show what a confirmed undo touches besides the change, then confirm again.
        let forced = preview;
        try {
          forced = await this.actions.preview(this.pointId, true);
        } catch {
          /* keep the first preview */
        }
        this.confirm(point, forced, true);
        return;
      }
      this.run(useSnapshot, force);
    });
    cancel.focus();
  }

  async run(useSnapshot, force = false) {
    this.panel.replaceChildren();
    this.button.hidden = false;
    this.element.dataset.state = "running";
    this.busy("Rolling back…");
    let reply;
    try {
      reply = await this.actions.rollBack(this.pointId, useSnapshot, force);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (reply !== undefined) this.show(reply, useSnapshot);
  }

  fail(error) {
    const problem = undoProblem(error);
    this.element.dataset.state = "error";
    this.button.hidden = false;
    if (problem.gone) this.button.remove();
    else this.ready();
    const text = el("p", "undo-error", problem.text);
    text.setAttribute("role", "alert");
    this.panel.replaceChildren(text);
  }

  show(reply, useSnapshot) {
    const status = reply.status;
    const done = status === "success";
    this.element.dataset.state = done ? "undone" : status === "partial_success" ? "partial" : "failed";
    const headline = done
      ? "Undone: everything is as it was before this change."
      : status === "partial_success"
        ? "Partly undone: not everything is as it was (see below)."
        : `Not undone${reply.error ? `: ${forPeople(reply.error)}` : ": nothing could be put back as it was."}`;
    const head = el("p", "undo-headline", headline);
    head.setAttribute("role", done ? "status" : "alert");
    const list = el("ul", "undo-results");
    list.setAttribute("aria-label", "State after the rollback");
    for (const item of reply.results || []) {
      const row = el("li");
      row.dataset.status = item.status;
      const name = item.device_name === "topology" ? "Topology" : item.device_name;
      const output = item.output || {};
      row.append(el("strong", null, `${name}: `), el("span", null, output.state || ITEM_WORDS[item.status] || item.status));
      if (item.error) row.append(el("span", "undo-error", ` — ${forPeople(item.error)}`));
      const differences = output.differences || [];
      if (differences.length) {
        const more = el("ul");
        for (const line of differences.slice(0, 5)) more.append(el("li", null, String(line)));
        if (differences.length > 5) more.append(el("li", null, `and ${differences.length - 5} more`));
        row.append(more);
      }
      list.append(row);
    }
    this.panel.replaceChildren(head);
    if (list.children.length) this.panel.append(list);
    const note = reply.notes?.gns3_snapshot; // said only when the user asked for the snapshot
    const restored = (reply.results || []).find((item) => item.output?.gns3_snapshot_restored);
    if (useSnapshot && note) this.panel.append(el("p", "tv-note", `GNS3 snapshot ${note}.`));
    else if (restored) this.panel.append(el("p", "tv-note", `GNS3 snapshot ${restored.output.gns3_snapshot_restored} restored.`));
    if (done) {
      this.button.remove();
      if (reply.restore_point_id) {
        const again = new UndoBox(reply.restore_point_id, this.actions, { label: "Undo this rollback", what: "this rollback" });
        this.panel.append(again.element);
      }
    } else {
      this.ready("Try again");
    }
  }
}

// The checks that decide a verified change, as its approval card lists them.
function checksPlan(plan) {
  const then = plan.on_fail === "keep" ? "kept even if one fails" : "rolled back if one fails";
  const heading = el("strong", "approval-checks-title", `Checked after the change (${then}, up to ${plan.wait_s} s):`);
  const list = el("ul", "approval-checks");
  for (const label of plan.labels || []) list.append(el("li", null, label));
  for (const label of plan.standing_labels || []) {
    const row = el("li", null, label);
    row.append(el("span", "approval-standing", "standing intent, if it holds before"));
    list.append(row);
  }
  return [heading, list];
}

// The user's decision on a call that changes the lab (approval_required).
class ApprovalCard {
  constructor(parent, event, { decide, userId }) {
    this.userId = userId;
    this.element = el("section", "approval-card");
    this.element.dataset.approvalId = event.approval_id;
    this.element.dataset.state = "pending";
    this.element.setAttribute("aria-label", `Approval for ${event.tool_name}`);
    const preview = event.preview || {};
    // The change in words, from its preview; the tool's name in small print.
    const title = el("h3", null, `${plainTitle(preview.summary) || `Run ${event.tool_name}`}?`);
    this.element.append(title, el("small", "approval-tool", event.tool_name));
    // A call the model wrote in its text rather than made: text that may be quoted from a
    // device or a file, so it asks whatever the approval setting, and the card says so.
    if (event.from_text) {
      this.element.dataset.fromText = "true";
      this.element.append(el("p", "approval-from-text",
        "Read from the model's text, not a tool call it made: approve only a change you asked for."));
    }
    // A lab build draws its plan (picture, nodes, links, each device's lines) instead.
    const build = isLabBuild(event);
    if (build) this.element.append(buildPreview(event));
    // A console call lists every command it sends, in order and as sent, the ones that
    // change the device marked; other previews list the changing commands per device.
    const listed = build ? {} : preview.commands || {};
    for (const [device, lines] of Object.entries(listed)) {
      this.element.append(el("strong", null, device));
      const list = el("ol", "approval-commands");
      list.dataset.device = device;
      for (const line of lines || []) {
        const row = el("li", line.changes ? "approval-command changes" : "approval-command");
        row.dataset.changes = line.changes ? "true" : "false";
        row.append(el("code", null, line.command));
        if (line.changes) {
          const mark = el("span", "approval-mark", "changes the device");
          if (line.note) mark.title = line.note;
          row.append(mark);
        }
        if (line.expanded && line.expanded !== line.command.trim().toLowerCase()) {
          row.append(el("span", "approval-expanded", `read as: ${line.expanded}`));
        }
        list.append(row);
      }
      this.element.append(list);
    }
    for (const [device, commands] of Object.entries(build ? {} : preview.devices || {})) {
      if (device in listed) continue;
      this.element.append(el("strong", null, device));
      const pre = el("pre", "approval-commands", (commands || []).join("\n"));
      pre.dataset.device = device;
      this.element.append(pre);
    }
    if (!build && (preview.topology || []).length) {
      const list = el("ul", "approval-topology");
      for (const line of preview.topology) list.append(el("li", null, line));
      this.element.append(list);
    }
    // A verified change: the checks that will decide it, and what happens when one fails.
    const plan = preview.verification;
    if (plan) this.element.append(...checksPlan(plan));
    // Exactly what will run: the tool's full arguments (the decision is bound to them).
    const details = el("details", "approval-arguments");
    details.append(el("summary", null, "Arguments"));
    details.append(el("pre", "approval-arguments-json", JSON.stringify(event.arguments || {}, null, 2)));
    this.element.append(details);
    this.comment = el("textarea", "approval-comment");
    this.comment.rows = 2;
    this.comment.maxLength = 2000;
    this.comment.placeholder = "Comment (told to the copilot if you reject)";
    this.comment.setAttribute("aria-label", "Comment on this change");
    this.buttons = el("div", "dialog-buttons");
    const approve = el("button", "primary", "Approve");
    approve.type = "button";
    const reject = el("button", "danger", "Reject");
    reject.type = "button";
    const send = async (decision) => {
      approve.disabled = reject.disabled = true;
      this.note.textContent = "Sending your decision…";
      const answer = await decide(event.approval_id, decision, this.comment.value.trim(), event.digest);
      if (answer !== true && this.element.dataset.state === "pending") {
        approve.disabled = reject.disabled = false;
      }
      this.note.textContent = answer === true ? "" : answer;
    };
    approve.addEventListener("click", () => send("approve"));
    reject.addEventListener("click", () => send("reject"));
    this.buttons.append(approve, reject);
    this.note = el("p", "approval-note");
    this.note.setAttribute("role", "status");
    this.element.append(this.comment, this.buttons, this.note);
    parent.append(this.element);
  }

  resolve(event) {
    const text = decisionText(event, this.userId);
    if (event.reason === "timeout" || event.reason === "aborted") this.element.dataset.state = "lapsed";
    else this.element.dataset.state = event.decision === "approve" ? "approve" : "reject";
    this.comment.remove();
    this.buttons.remove();
    this.note.textContent = "";
    const outcome = this.element.querySelector(".approval-outcome") || el("p", "approval-outcome");
    outcome.textContent = text;
    this.element.append(outcome);
  }
}

// One assistant turn: activity trail, text blocks, tool and approval cards, in order.
export class TurnView {
  constructor(container, { onAction, decide, userId, onToolEnd, undo } = {}) {
    this.element = el("article", "message assistant");
    this.element.setAttribute("aria-label", "Copilot answer");
    this.trail = el("ol", "activity-trail");
    this.trail.setAttribute("aria-label", "Agent activity");
    this.trail.hidden = true;
    this.body = el("div", "message-body");
    this.tools = el("div", "answer-tools");
    this.tools.hidden = true;
    this.tools.append(linkButton("Copy answer", () => copyText(this.answerText(), this.copyButton()), "Copy the answer"));
    this.element.append(this.trail, this.body, this.tools);
    container.append(this.element);
    this.cards = new Map();
    this.approvals = new Map();
    this.text = null;
    this.blocks = [];
    this.sawText = false;
    this.onAction = onAction;
    this.decide = decide;
    this.userId = userId;
    this.onToolEnd = onToolEnd;
    this.undo = undo;
    this.typing = el("span", "typing", "…");
    this.typing.setAttribute("aria-label", "The copilot is answering");
    this.body.append(this.typing);
  }

  copyButton() {
    return this.tools.querySelector("button");
  }

  answerText() {
    return this.blocks.map((block) => block.text).join("\n\n").trim();
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

  // The Undo button under a change's card, when its result names a restore point.
  offerUndo(card, pointId) {
    if (!pointId || !this.undo || card.undoBox) return;
    card.undoBox = new UndoBox(pointId, this.undo, { what: card.name.textContent });
    card.element.after(card.undoBox.element);
  }

  addTrail(kind, text) {
    this.trail.hidden = false;
    const item = el("li", `trail-${kind}`, text);
    this.trail.append(item);
    while (this.trail.children.length > 30) this.trail.firstElementChild.remove();
  }

  approval(event) {
    let card = this.approvals.get(event.approval_id);
    if (!card) {
      card = new ApprovalCard(this.body, event, { decide: this.decide, userId: this.userId });
      this.approvals.set(event.approval_id, card);
      this.text = null;
      this.body.append(this.typing);
      // The user must decide: bring the card's buttons into view (below the fold on a phone).
      card.element.scrollIntoView({ block: "nearest" });
    }
    const tool = this.card(event.tool_call_id, event.tool_name);
    tool.setStatus("waiting");
    if (!tool.titled) tool.setTitle(plainTitle(event.preview?.summary)); // the service's title first
    return card;
  }

  // While the model reads its prompt, the typing dots say so; anything else it sends
  // brings the dots back.
  waiting(message) {
    this.typing.textContent = message;
    this.typing.classList.add("waiting");
  }

  answering() {
    if (!this.typing.classList.contains("waiting")) return;
    this.typing.textContent = "…";
    this.typing.classList.remove("waiting");
  }

  // Apply one SSE event; returns true when the turn is over.
  apply(event) {
    if (event.type !== "status" && event.type !== "heartbeat") this.answering();
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
        card.setTitle(event.title); // the call in plain words, sent with the complete call
        card.setArguments(fn.arguments || "", Boolean(fn.complete));
        break;
      }
      case "tool_start":
        this.card(event.tool_call_id, event.tool_name).start();
        break;
      case "tool_progress": {
        const card = this.card(event.tool_call_id, event.tool_name);
        const build = buildProgressOf(card, event.tool_name); // a lab build: stages and devices
        if (build) build.feed(event.text || "");
        else card.progress(event.device, event.text || "");
        break;
      }
      case "tool_end": {
        const card = this.card(event.tool_call_id, event.tool_name);
        card.setOutput(event.tool_output, event.status, event.tool_name);
        showBuildOutcome(card, event.tool_output, event.tool_name);
        this.offerUndo(card, restorePointOf(event.tool_output));
        if (this.onToolEnd) this.onToolEnd(event);
        break;
      }
      case "approval_required":
        this.approval(event);
        break;
      case "approval_resolved": {
        const card = this.approvals.get(event.approval_id);
        if (card) card.resolve(event);
        if (event.tool_call_id) this.card(event.tool_call_id).decided = Boolean(card);
        if (event.decision === "approve") this.card(event.tool_call_id).setStatus("running");
        break;
      }
      case "thinking":
        this.addTrail("thinking", `Thinking: ${event.content || ""}`);
        break;
      case "status":
        if (event.status === "waiting_for_model") this.waiting(event.message || "waiting for the model…");
        else if (event.status === "unseen_output") this.unseen();
        else if (event.status === "unverified") this.unverified(event.claims);
        else this.addTrail("status", `${event.status || "status"}: ${event.message || ""}`.trim());
        break;
      case "step":
        this.addTrail("step", `Step ${event.step}${event.total ? ` of ${event.total}` : ""} ${event.status || ""}`.trim());
        break;
      case "plan": {
        const steps = Array.isArray(event.steps) ? event.steps : [];
        const current = event.current_step;
        const text = steps.map((s, i) => (i === current ? `▶ ${s}` : s)).join(" → "); // current_step counts from 0
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

  // The text above stated device output no tool produced (issue 40): it stays, it is not
  // the answer, and the copilot was asked to run the tool; what comes next goes below.
  unseen() {
    this.body.append(el("p", "unseen-note", "Not checked: no tool produced the device output above. The copilot was asked to run the tool."));
    this.text = null;
    this.body.append(this.typing);
  }

  // The answer states device output no tool produced (live: the status "unverified";
  // saved: the message's metadata.unverified). Says so, with what it claimed.
  unverified(claims) {
    if (this.element.querySelector(".unverified-mark")) return;
    const box = el("div", "unverified-mark");
    box.setAttribute("role", "note");
    box.append(el("span", "unverified-label", "Unverified"));
    box.append(document.createTextNode(" No tool produced the device output this answer states; check it before relying on it."));
    const stated = (Array.isArray(claims) ? claims : []).map((claim) => claim && claim.text).filter(Boolean);
    if (stated.length) {
      const list = el("ul", "unverified-claims");
      for (const text of stated) list.append(el("li", null, text));
      box.append(list);
    }
    this.body.append(box);
    this.text = null;
    if (this.typing.isConnected) this.body.append(this.typing);
  }

  // A saved turn that ended in an error or was stopped (metadata.incomplete): what
  // happened, and Retry (re-sends the question) when it is the session's last turn.
  incomplete(mark, retry) {
    this.element.classList.add("incomplete");
    this.typing.remove();
    let box;
    if (mark.reason === "aborted") {
      box = el("div", "stopped-box");
      box.append(el("p", "notice-stopped", this.answerText() ? "Stopped. The partial answer was kept." : "Stopped before the copilot answered."));
    } else {
      box = errorBox(mark.message || "Something failed.", mark.code, this.onAction);
    }
    box.classList.add("incomplete-box");
    box.prepend(el("span", "incomplete-mark", "Incomplete"));
    if (retry) {
      const button = el("button", "retry-button", "Retry");
      button.type = "button";
      button.setAttribute("aria-label", "Retry this question");
      button.addEventListener("click", () => {
        button.disabled = true;
        retry();
      });
      box.append(button);
    }
    this.body.append(box);
    this.text = null;
  }

  async finish() {
    this.typing.remove();
    for (const card of this.cards.values()) card.stopTicker();
    this.element.classList.add("done");
    await Promise.all(this.blocks.map((block) => block.finish()));
    this.tools.hidden = !this.answerText();
  }
}

// The user's message as text, line breaks kept; edit / ask again on the last one.
export function userMessage(container, text, { id = null } = {}) {
  const node = el("article", "message user");
  node.setAttribute("aria-label", "Your message");
  if (id) node.dataset.messageId = id;
  node.append(el("div", "message-body", text));
  container.append(node);
  return node;
}

export function toolStatus(content, saved) {
  let status = saved || "success";
  try {
    const parsed = JSON.parse(content);
    if (parsed && ["aborted", "rejected", "error", "failed", "partial_success", "rolled_back"].includes(parsed.status)) {
      // a verified change undone because a check failed did not do what it was asked
      status = ["failed", "rolled_back"].includes(parsed.status) ? "error" : parsed.status;
    } else if (parsed && parsed.error && !parsed.results) status = "error";
  } catch {
    /* plain text output */
  }
  return status;
}

// Render a saved history (OpenAI-shaped messages) into the pane.
export function renderHistory(container, messages, options = {}) {
  container.replaceChildren();
  let turn = null;
  let asked = null; // the question of the turn being drawn
  const cards = new Map();
  const renders = [];
  const answer = () => {
    if (!turn) {
      turn = new TurnView(container, options);
      turn.typing.remove();
      turn.element.classList.add("done");
    }
    return turn;
  };
  messages.forEach((message, index) => {
    if (message.role === "user") {
      if (turn) turn.tools.hidden = !turn.answerText();
      turn = null;
      const change = message.metadata?.mode_change;
      if (change && change.to) {
        const name = MODE_LABELS[change.to] || change.to;
        container.append(el("p", "mode-change", `Mode changed to ${name}`));
      }
      const node = userMessage(container, message.content || "", { id: message.id });
      asked = { text: message.content || "", replaceFrom: message.id, from: node };
    } else if (message.role === "assistant") {
      answer();
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
      if (message.metadata?.aborted && !message.metadata?.incomplete) turn.note("Stopped. The partial answer was kept.");
      const unverified = message.metadata?.unverified;
      if (unverified) turn.unverified(unverified.claims);
      const rollback = message.metadata?.rollback;
      const undoneCard = rollback && cards.get(rollback.undoes_tool_call_id);
      if (undoneCard?.undoBox) {
        undoneCard.undoBox.undone({ ...rollback, at: message.metadata.created_at });
      }
      turn.typing.remove();
    } else if (message.role === "tool") {
      const card = cards.get(message.tool_call_id);
      if (card) {
        card.setTitle(message.metadata?.title);
        const approval = message.metadata?.approval;
        if (approval) {
          card.element.dataset.approval = approval.decision;
          card.setDecision(decisionText(approval, options.userId), approval.decision);
        }
        card.setOutput(message.content, toolStatus(message.content, message.metadata?.status), message.name);
        showBuildOutcome(card, message.content, message.name);
        turn.offerUndo(card, restorePointOf(message.content, message.metadata));
      }
    }
    const mark = message.metadata?.incomplete;
    if (mark && typeof mark === "object") {
      const question = asked;
      const last = index === messages.length - 1;
      const retry = last && question && options.onRetry ? () => options.onRetry(question) : null;
      answer().incomplete(mark, retry);
    }
  });
  return Promise.all(renders.map((block) => block.finish())).then(() => {
    for (const view of container.querySelectorAll(".message.assistant")) {
      const tools = view.querySelector(".answer-tools");
      const hasText = view.querySelector(".text-block");
      if (tools) tools.hidden = !hasText;
    }
  });
}
