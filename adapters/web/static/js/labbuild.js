// A lab build (the chat's build_lab, issue 39) on the page: its approval card draws the
// plan (an SVG of the nodes and links, the lists, each device's lines), its tool card
// shows the build's progress per stage and device as it arrives, then the verdict (pass
// or fail, the failing checks, whether the build was rolled back).
//
// Everything a device, a plan or the model wrote is set with textContent: never as HTML.

const SVG = "http://www.w3.org/2000/svg";
export const BUILD_TOOL = "build_lab";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

// A small drawing per kind, centred on (0, 0) (the lab drawing's router and computer).
const GLYPHS = {
  router: ["M-12 0h24M0 -12v24", "M-12 0l5 -4M-12 0l5 4M12 0l-5 -4M12 0l-5 4"],
  host: ["M-12 -10h24v15h-24z", "M-5 10h10M0 5v5"],
};

// ------------------------------------------------------------------ the plan, read
// The preview's topology lines, as build_lab writes them: "create node R1 (frr, template
// FRR 8) at (0, -200)", "link R1:eth0 - R2:eth0 (10.10.0.0/30)", "start 6 node(s)".
const NODE_LINE = /^create node (\S+) \(([^,()]+)(?:, template (.*))?\) at \((-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\)$/;
const LINK_LINE = /^link (\S+) - (\S+?)(?: \(([0-9A-Fa-f.:]+\/\d+)\))?$/;

function splitEnd(end) {
  const text = String(end || "");
  const at = text.indexOf(":");
  return at < 0 ? { node: text, port: "" } : { node: text.slice(0, at), port: text.slice(at + 1) };
}

// A plan file's link ("R1:eth0-R2:eth0", or {ends: [...], prefix}) as its two ends.
function fileLink(link, names) {
  if (link && typeof link === "object" && Array.isArray(link.ends) && link.ends.length === 2) {
    return { ends: link.ends.map(String), subnet: link.prefix || "" };
  }
  const text = String(link || "");
  for (let i = text.indexOf("-"); i >= 0; i = text.indexOf("-", i + 1)) {
    const a = text.slice(0, i);
    const b = text.slice(i + 1);
    if (names.has(splitEnd(a).node) && names.has(splitEnd(b).node) && a.includes(":") && b.includes(":")) {
      return { ends: [a, b], subnet: "" };
    }
  }
  return null;
}

// The lab a build makes: nodes {name, platform, template, x, y}, links {ends, subnet},
// each device's lines, the addresses by port, and the summary. The preview (the plan as
// the service read and resolved it) first; the call's plan where the preview says less.
export function readBuild(event) {
  const preview = (event && event.preview) || {};
  const plan = event && event.arguments && typeof event.arguments.plan === "object" ? event.arguments.plan || {} : {};
  const nodes = [];
  const links = [];
  for (const line of Array.isArray(preview.topology) ? preview.topology : []) {
    const node = NODE_LINE.exec(String(line));
    if (node) {
      nodes.push({ name: node[1], platform: node[2], template: node[3] || "", x: Number(node[4]), y: Number(node[5]) });
      continue;
    }
    const link = LINK_LINE.exec(String(line));
    if (link) links.push({ ends: [link[1], link[2]], subnet: link[3] || "" });
  }
  if (!nodes.length && Array.isArray(plan.nodes)) {
    for (const node of plan.nodes) {
      if (!node || typeof node !== "object" || !node.name) continue;
      nodes.push({
        name: String(node.name), platform: String(node.platform || ""), template: node.template ? String(node.template) : "",
        x: Number(node.x) || 0, y: Number(node.y) || 0,
      });
    }
  }
  if (!links.length && Array.isArray(plan.links)) {
    const names = new Set(nodes.map((n) => n.name));
    for (const link of plan.links) {
      const read = fileLink(link, names);
      if (read) links.push(read);
    }
  }
  let devices = preview.devices && typeof preview.devices === "object" ? preview.devices : null;
  if (!devices || !Object.keys(devices).length) devices = plan.config && typeof plan.config === "object" ? plan.config : {};
  const addressing = plan.addressing && typeof plan.addressing === "object" ? plan.addressing : {};
  return { nodes, links, devices, addressing, summary: plan.summary || "" };
}

// Whether an approval (or a tool call) is a lab build: build_lab, or a call whose
// arguments carry a lab plan.
export function isLabBuild(event) {
  if (!event) return false;
  if (event.tool_name === BUILD_TOOL) return true;
  const plan = event.arguments && event.arguments.plan;
  return Boolean(plan && typeof plan === "object" && Array.isArray(plan.nodes));
}

const isRouter = (node) => /^(frr|router)$/i.test(node.platform);

// Positions to draw at: the plan's (or a circle when it gives none), scaled into a box of
// about 640 × 360 so that the drawings (44 wide) keep their size whatever the canvas's.
function placed(nodes) {
  const spread = new Set(nodes.map((n) => `${n.x},${n.y}`)).size > 1 || nodes.length < 2;
  const at = spread ? nodes.map((n) => [n.x, n.y]) : nodes.map((n, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / nodes.length;
    return [Math.cos(angle) * 300, Math.sin(angle) * 300];
  });
  const xs = at.map((p) => p[0]);
  const ys = at.map((p) => p[1]);
  const [minX, minY] = [Math.min(...xs), Math.min(...ys)];
  const spanX = Math.max(...xs) - minX;
  const spanY = Math.max(...ys) - minY;
  const scale = Math.min(spanX ? 640 / spanX : 1.5, spanY ? 360 / spanY : 1.5, 1.5);
  return nodes.map((n, i) => ({ ...n, cx: Math.round((at[i][0] - minX) * scale), cy: Math.round((at[i][1] - minY) * scale) }));
}

// The picture: every node (a router or a host) and link, with the port at each end.
export function buildPicture(build) {
  const nodes = placed(build.nodes);
  const at = new Map(nodes.map((n) => [n.name, n]));
  const pad = 60;
  const xs = nodes.map((n) => n.cx);
  const ys = nodes.map((n) => n.cy);
  const left = Math.min(...xs, 0) - pad;
  const top = Math.min(...ys, 0) - pad;
  const width = Math.max(Math.max(...xs, 0) + pad - left, 220);
  const height = Math.max(Math.max(...ys, 0) + pad + 20 - top, 140);
  const root = svg("svg", {
    class: "lb-picture",
    viewBox: `${left} ${top} ${width} ${height}`,
    role: "img",
    "aria-label": `The lab to build: ${nodes.length} node${nodes.length === 1 ? "" : "s"}, ${build.links.length} link${build.links.length === 1 ? "" : "s"}`,
    preserveAspectRatio: "xMidYMid meet",
  });
  for (const link of build.links) {
    const [a, b] = link.ends.map(splitEnd);
    const from = at.get(a.node);
    const to = at.get(b.node);
    if (!from || !to) continue;
    const group = svg("g", { class: "lb-link", "data-ends": link.ends.join(" ") });
    group.append(
      svg("title", {}, `${link.ends.join(" – ")}${link.subnet ? ` (${link.subnet})` : ""}`),
      svg("line", { x1: from.cx, y1: from.cy, x2: to.cx, y2: to.cy, class: "lb-link-line" }),
    );
    const length = Math.hypot(to.cx - from.cx, to.cy - from.cy) || 1;
    const along = Math.min(Math.max(0.28, 52 / length), 0.45); // clear of the drawing and name
    [[a, from, to], [b, to, from]].forEach(([end, p, q]) => {
      const x = p.cx + (q.cx - p.cx) * along;
      const y = p.cy + (q.cy - p.cy) * along;
      group.append(svg("text", { x, y: y + 4, class: "lb-port" }, end.port));
    });
    root.append(group);
  }
  for (const node of nodes) {
    const kind = isRouter(node) ? "router" : "host";
    const group = svg("g", { class: "lb-node", "data-name": node.name, "data-kind": kind, transform: `translate(${node.cx} ${node.cy})` });
    group.append(svg("title", {}, `${node.name} (${node.platform}${node.template ? `, ${node.template}` : ""})`));
    group.append(svg("rect", { x: -22, y: -22, width: 44, height: 44, rx: 10, class: "lb-shape" }));
    for (const d of GLYPHS[kind]) group.append(svg("path", { d, class: "lb-glyph" }));
    group.append(svg("text", { x: 0, y: 40, class: "lb-name" }, node.name));
    root.append(group);
  }
  return root;
}

function endText(end, addressing) {
  const { node, port } = splitEnd(end);
  const address = addressing[end];
  return `${node} ${port}${address ? ` ${address}` : ""}`;
}

// The approval card's part for a build: the picture, the nodes, the links, and each
// device's lines (one fold per device). The checks follow (the card's own list).
// A relative build's card (build_lab with relative: only the difference from the lab):
// the nodes and links above are those it adds; this says what it removes and what it
// leaves as it is ("delete link R2:eth1 - R3:eth0", "unchanged: R1, R2"). Null for a
// whole build.
function relativeChange(event) {
  const preview = (event && event.preview) || {};
  const lines = (Array.isArray(preview.topology) ? preview.topology : []).map(String);
  const removed = lines.filter((line) => line.startsWith("delete link "));
  const unchanged = lines.find((line) => line.startsWith("unchanged: "));
  const relative = Boolean(event && event.arguments && event.arguments.relative);
  if (!relative && !removed.length && !unchanged) return null;
  const section = el("section", "lb-list lb-relative");
  section.append(el("h4", null, "Only the difference from the lab"));
  const list = el("ul", "lb-removed");
  for (const line of removed) list.append(el("li", null, line.replace(/^delete link /, "Removed link ")));
  if (removed.length) section.append(list);
  if (unchanged) section.append(el("p", "lb-unchanged", `Unchanged: ${unchanged.slice("unchanged: ".length)}`));
  return section;
}

export function buildPreview(event) {
  const build = readBuild(event);
  const box = el("div", "lb-preview");
  if (build.nodes.length) box.append(buildPicture(build));
  const facts = el("div", "lb-facts");
  const nodes = el("section", "lb-list");
  nodes.append(el("h4", null, `Nodes (${build.nodes.length})`));
  const nodeList = el("ul", "lb-nodes");
  for (const node of build.nodes) {
    const row = el("li");
    row.dataset.name = node.name;
    row.append(el("strong", null, node.name), document.createTextNode(
      ` ${isRouter(node) ? "router" : "host"} (${node.platform}${node.template ? `, template ${node.template}` : ""})`));
    nodeList.append(row);
  }
  nodes.append(nodeList);
  const links = el("section", "lb-list");
  links.append(el("h4", null, `Links (${build.links.length})`));
  const linkList = el("ul", "lb-links");
  for (const link of build.links) {
    const row = el("li", null, link.ends.map((end) => endText(end, build.addressing)).join(" — "));
    if (link.subnet) row.append(el("span", "lb-subnet", ` ${link.subnet}`));
    linkList.append(row);
  }
  links.append(linkList);
  facts.append(nodes, links);
  box.append(facts);
  const change = relativeChange(event);
  if (change) box.append(change);
  const entries = Object.entries(build.devices || {});
  if (entries.length) {
    const devices = el("section", "lb-configs");
    devices.append(el("h4", null, `Configuration (${entries.length} device${entries.length === 1 ? "" : "s"})`));
    for (const [device, lines] of entries) {
      const list = Array.isArray(lines) ? lines.map(String) : [];
      const fold = el("details", "lb-device-lines");
      fold.dataset.device = device;
      fold.append(el("summary", null, `${device}: ${list.length} line${list.length === 1 ? "" : "s"}`));
      fold.append(el("pre", "lb-lines", list.join("\n")));
      devices.append(fold);
    }
    box.append(devices);
  }
  return box;
}

// ------------------------------------------------------------------ progress
// The stages a build says as it starts them (the gate's verified change, then the
// builder's), each line's start; any other line belongs to the stage under way.
const STAGES = [
  [/^checking \d+ check\(s\) before/, "before", "Checks before the build"],
  [/^taking a restore point/, "restore", "Restore point"],
  [/^creating \d+ node/, "nodes", "Nodes"],
  [/^linking \d+/, "links", "Links"],
  [/^starting \d+ node/, "start", "Start"],
  [/^configuring \d+ device/, "configure", "Configuration"],
  [/^checking \d+ check\(s\) after the change/, "checks", "Checks"],
  [/^(a check failed after the change|rolling the build back)/, "rollback", "Rollback"],
  [/^checking \d+ check\(s\) after the rollback/, "recheck", "Checks after the rollback"],
];
const DEVICE_LINE = /^([A-Za-z0-9_.-]+): (.*)$/;

// A device's line ("created", "not configured (why)", "sending 4 line(s)") as a state.
function deviceState(said) {
  if (/^not\b/.test(said)) return "fail";
  if (/^(created|started|configured)\b/.test(said)) return "ok";
  return "running";
}

// Any other line: the build stopped, a link not made; else it is said as it goes (a check
// not holding yet is retried, not failed: its name may hold any word).
function noteState(text) {
  return /^(stopped|aborted)\b|^link .*: not made \(/.test(text) ? "fail" : "running";
}

// The build as it goes, on its tool card: one row per stage, and in it one row per device.
export class BuildProgress {
  constructor() {
    this.element = el("section", "lb-progress");
    this.element.setAttribute("aria-label", "Build progress");
    this.element.append(el("h4", null, "Build progress"));
    this.stages = el("ol", "lb-stages");
    this.element.append(this.stages);
    this.current = null;
    this.pending = "";
  }

  // Text as tool_progress brings it (whole lines, maybe several, maybe a part of one).
  feed(text) {
    this.pending += String(text || "");
    const lines = this.pending.split("\n");
    this.pending = lines.pop();
    for (const line of lines) if (line.trim()) this.line(line.trim());
  }

  stage(key, label, text) {
    if (this.current && this.current.key === key) {
      this.note(text);
      return;
    }
    this.settle(key === "rollback" ? "fail" : "done"); // a rollback follows a check that failed
    const row = el("li", "lb-stage");
    row.dataset.stage = key;
    row.dataset.state = "running";
    const head = el("div", "lb-stage-head");
    head.append(el("span", "lb-stage-name", label), el("span", "lb-stage-text", text));
    const devices = el("ul", "lb-stage-devices");
    const notes = el("ul", "lb-stage-notes");
    row.append(head, devices, notes);
    this.stages.append(row);
    // A stage that names how many it makes expects as many devices to say they are done.
    const count = /^(?:creating|starting|configuring) (\d+)/.exec(text);
    this.current = { key, row, devices, notes, seen: new Map(), expected: count ? Number(count[1]) : null };
  }

  // The stage under way ends: done, failed when a device of it failed, or partly done
  // when fewer devices said they were done than the stage named (a start GNS3 refused).
  settle(state) {
    const stage = this.current;
    if (!stage || stage.row.dataset.state !== "running") return;
    const failed = stage.row.querySelector("[data-state='fail']");
    const done = stage.devices.querySelectorAll(".lb-device[data-state='ok']").length;
    if (!failed && state === "done" && stage.expected !== null && done < stage.expected) {
      stage.row.dataset.state = "partial";
      const note = el("li", "lb-note", `${done} of ${stage.expected} said done`);
      note.dataset.state = "partial";
      stage.notes.append(note);
      return;
    }
    stage.row.dataset.state = failed ? "fail" : state;
  }

  note(text) {
    if (!this.current) this.stage("start-up", "Build", "");
    const row = el("li", "lb-note", text);
    row.dataset.state = noteState(text);
    this.current.notes.append(row);
  }

  line(text) {
    for (const [pattern, key, label] of STAGES) {
      if (pattern.test(text)) {
        this.stage(key, label, text);
        return;
      }
    }
    const device = DEVICE_LINE.exec(text);
    if (!device || /^(link|stopped|aborted)$/.test(device[1])) {
      this.note(text);
      return;
    }
    if (!this.current) this.stage("start-up", "Build", "");
    const [, name, said] = device;
    let row = this.current.seen.get(name);
    if (!row) {
      row = el("li", "lb-device");
      row.dataset.device = name;
      row.append(el("span", "lb-device-name", name), el("span", "lb-device-state"), el("ul", "lb-device-history"));
      this.current.devices.append(row);
      this.current.seen.set(name, row);
    }
    row.dataset.state = deviceState(said);
    row.querySelector(".lb-device-state").textContent = said;
    row.querySelector(".lb-device-history").append(el("li", null, said));
  }

  // The build ended: the stage under way ends with it.
  finish(ok) {
    if (this.pending.trim()) this.line(this.pending.trim());
    this.pending = "";
    this.settle(ok ? "done" : "fail");
    this.element.dataset.state = ok ? "done" : "fail";
  }
}

// ------------------------------------------------------------------ the verdict
function parsed(output) {
  if (output && typeof output === "object") return output;
  try {
    const value = JSON.parse(String(output ?? ""));
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

function checkRows(result) {
  return (result && Array.isArray(result.checks) ? result.checks : []).filter((c) => c && c.status !== "pass");
}

// How many checks a phase ran: its counts per status (a check that held is named, not
// listed in full: a phase's checks are the ones that did not hold).
function checkCount(result) {
  const summary = result && result.summary && typeof result.summary === "object" ? result.summary : null;
  if (summary) return Object.values(summary).reduce((sum, n) => sum + (Number(n) || 0), 0);
  return result && Array.isArray(result.checks) ? result.checks.length : 0;
}

// Checks that did not hold, each with its status, reason and the evidence that decided it.
function failedList(checks, className) {
  const list = el("ul", className);
  for (const check of checks) {
    const row = el("li");
    row.dataset.status = check.status;
    row.append(el("span", "lb-check-status", check.status), el("strong", null, ` ${check.name || check.kind || "check"}`));
    if (check.reason) row.append(el("span", "lb-check-reason", `: ${check.reason}`));
    for (const evidence of Array.isArray(check.evidence) ? check.evidence : []) {
      if (!evidence) continue;
      const said = [`${evidence.node || ""}> ${evidence.command || ""}`, ...(evidence.lines || []).map(String)];
      row.append(el("pre", "lb-evidence", said.join("\n")));
    }
    list.append(row);
  }
  return list;
}

// A build's result in words: pass or fail, the failing checks with their evidence, the
// build's problems, and whether it was rolled back. null when the output is not a build's.
export function buildOutcome(output) {
  const data = parsed(output);
  if (!data || (!("verification" in data) && !Array.isArray(data.nodes))) return null;
  const verification = data.verification && typeof data.verification === "object" ? data.verification : null;
  const box = el("section", "lb-outcome");
  box.setAttribute("aria-label", "Build result");
  let verdict;
  let headline;
  if (!verification) {
    verdict = data.status === "success" ? "built" : "fail";
    headline = data.status === "success"
      ? "Built, not verified: the plan has no checks."
      : data.status === "aborted" ? "Stopped: the build did not finish." : "Built in part: see the problems below.";
  } else if (verification.status === "pass") {
    verdict = "pass";
    const count = checkCount(verification.after);
    headline = `Pass: built, and every check holds (${count} check${count === 1 ? "" : "s"}).`;
  } else if (verification.status === "fail") {
    verdict = "fail";
    if (verification.rolled_back) headline = "Fail: a check did not hold, so the build was rolled back: the lab is as it was.";
    else if (verification.on_fail === "keep") headline = "Fail: a check did not hold; the build was kept, as asked.";
    else headline = "Fail: a check did not hold, and the build could not be rolled back completely.";
  } else {
    verdict = "fail";
    headline = `Not built: ${verification.reason || data.error || "the build did not run"}.`;
  }
  box.dataset.verdict = verdict;
  const head = el("p", "lb-verdict");
  head.append(el("span", "lb-badge", verdict === "built" ? "built" : verdict), document.createTextNode(` ${headline}`));
  box.append(head);
  if (verification) {
    box.append(el("p", "lb-rolled-back", verification.rolled_back ? "Rolled back: yes." : "Rolled back: no."));
    if (verification.reason) box.append(el("p", "lb-reason", `Why: ${verification.reason}.`));
    const failing = checkRows(verification.after);
    if (failing.length) {
      box.append(el("h5", null, "Checks that failed"));
      box.append(failedList(failing, "lb-failed"));
    }
    // After a rollback the result lists in full only the checks that held before the
    // build and still do not (what the rollback did not bring back); the others by name,
    // as_before. A result saved in the older shape listed every check: not said here.
    const again = verification.after_rollback;
    const broken = again && Array.isArray(again.as_before) ? checkRows(again) : [];
    if (broken.length) {
      box.append(el("h5", null, "Checks that held before the build and not after the rollback"));
      box.append(failedList(broken, "lb-still-failing"));
    }
  }
  const problems = Array.isArray(data.problems) ? data.problems : [];
  if (problems.length) {
    box.append(el("h5", null, "What was not built"));
    const list = el("ul", "lb-problems");
    for (const problem of problems) list.append(el("li", null, problem));
    box.append(list);
  }
  const now = verification && verification.lab_now;
  if (now && Array.isArray(now.nodes)) {
    box.append(el("p", "lb-lab-now", `The lab now: ${now.nodes.length} node${now.nodes.length === 1 ? "" : "s"}${now.nodes.length ? ` (${now.nodes.join(", ")})` : ""}.`));
  }
  return box;
}

// ------------------------------------------------------------------ on a tool card
// The progress views of this page's builds, by tool call: the saved history, drawn again
// when the turn ends, keeps the progress the user watched (until the page is reloaded).
const watched = new Map();

// A build's tool card gets its progress view on the first progress line.
export function buildProgressOf(card, toolName) {
  if (toolName !== BUILD_TOOL && !card.build) return null;
  if (!card.build) {
    card.build = new BuildProgress();
    card.live.before(card.build.element);
    const id = card.element.dataset.toolCallId;
    if (id) watched.set(id, card.build);
    while (watched.size > 20) watched.delete(watched.keys().next().value);
  }
  return card.build;
}

// A build's result on its tool card (live or saved): the progress ends, the verdict shows.
export function showBuildOutcome(card, output, toolName) {
  if (toolName !== BUILD_TOOL) return false;
  const seen = watched.get(card.element.dataset.toolCallId);
  if (!card.build && seen) {
    card.build = seen;
    card.live.before(seen.element);
  }
  const box = buildOutcome(output);
  if (card.build) card.build.finish(box ? box.dataset.verdict !== "fail" : false);
  if (!box) return false;
  const old = card.element.querySelector(".lb-outcome");
  if (old) old.replaceWith(box);
  else card.view.before(box);
  card.element.open = true; // the verdict is what the user waits for
  return true;
}
