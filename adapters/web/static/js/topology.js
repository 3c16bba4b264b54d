// The lab drawn as SVG: nodes at GNS3's positions, links with port labels, status
// colours; details of a node on click; kept current by GNS3's notifications.

import { ApiError, call, openStream, readEvents } from "./api.js";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A small drawing per kind of node, centred on (0, 0), about 36 px wide.
const GLYPHS = {
  router: ["M-12 0h24M0 -12v24", "M-12 0l5 -4M-12 0l5 4M12 0l-5 -4M12 0l-5 4"],
  switch: ["M-13 -5h26l-5 -4M13 -5l-5 4", "M13 5h-26l5 -4M-13 5l5 4"],
  hub: ["M-12 0h24M0 -12v24M-8 -8l16 16M8 -8l-16 16"],
  computer: ["M-12 -10h24v15h-24z", "M-5 10h10M0 5v5"],
  server: ["M-9 -13h18v26h-18z", "M-5 -7h10M-5 -2h10M-5 3h10"],
  firewall: ["M-13 -10h26v20h-26z", "M-13 0h26M-4 -10v10M5 0v10"],
  cloud: ["M-12 6a6 6 0 0 1 0 -12a9 9 0 0 1 16 -3a7 7 0 0 1 8 15z"],
  nat: ["M-12 -4h20l-4 -4M-12 4h20l-4 4"],
  other: ["M-8 -8h16v16h-16z"],
};

export class LabView {
  constructor({ onError } = {}) {
    this.project = null;
    this.data = null;
    this.selected = null;
    this.follow = null; // AbortController of the notification stream
    this.timer = null;
    this.onError = onError;
    this.loads = 0;
    $("lab-toggle").addEventListener("click", () => this.setOpen(!this.isOpen()));
    this.setOpen(localStorage.getItem("copilot.lab-collapsed") !== "1", false);
  }

  isOpen() {
    return $("lab-toggle").getAttribute("aria-expanded") === "true";
  }

  setOpen(open, remember = true) {
    $("lab-toggle").setAttribute("aria-expanded", String(open));
    $("lab-body").hidden = !open;
    if (remember) {
      if (open) localStorage.removeItem("copilot.lab-collapsed");
      else localStorage.setItem("copilot.lab-collapsed", "1");
    }
  }

  // Show (or, with null, hide) a project's lab and follow its changes.
  show(project) {
    this.stop();
    this.project = project && project.status === "opened" ? project : null;
    this.data = null;
    this.selected = null;
    $("lab").hidden = !this.project;
    $("node-details").hidden = true;
    $("lab-drawing").replaceChildren();
    if (!this.project) return;
    $("lab-summary").textContent = "Loading the lab…";
    this.reload();
    this.followChanges(this.project.id);
  }

  stop() {
    if (this.follow) this.follow.abort();
    this.follow = null;
    clearTimeout(this.timer);
  }

  path(rest = "") {
    return `/projects/${encodeURIComponent(this.project.id)}/topology${rest}`;
  }

  // Read the topology again soon (several changes in a row make one read).
  refreshSoon(delay = 250) {
    if (!this.project) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.reload(), delay);
  }

  async reload() {
    if (!this.project) return;
    const project = this.project;
    const generation = ++this.loads;
    let data;
    try {
      data = await call("GET", this.path());
    } catch (error) {
      if (generation !== this.loads || project !== this.project) return;
      $("lab-summary").textContent = `The lab could not be read: ${error.message}`;
      if (error instanceof ApiError && error.status === 401 && this.onError) this.onError(error);
      return;
    }
    if (generation !== this.loads || project !== this.project) return;
    this.data = data;
    this.render();
  }

  async followChanges(projectId) {
    const controller = new AbortController();
    this.follow = controller;
    for (let attempt = 0; !controller.signal.aborted; attempt++) {
      try {
        const response = await openStream("GET", this.path("/events"), { signal: controller.signal });
        await readEvents(response.body, ({ data }) => {
          if (data.type === "ready") attempt = 0;
          if (data.type === "topology") this.refreshSoon();
        });
      } catch {
        /* GNS3's stream ended or failed: read the lab again and retry, backing off */
      }
      if (controller.signal.aborted || !this.project || this.project.id !== projectId) return;
      this.refreshSoon(0);
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * 2 ** attempt, 30000)));
    }
  }

  render() {
    const { nodes, links, web_ui: webUi } = this.data;
    const counts = {};
    for (const node of nodes) counts[node.status] = (counts[node.status] || 0) + 1;
    const states = Object.entries(counts).map(([status, n]) => `${n} ${status}`).join(", ");
    $("lab-summary").textContent =
      `${nodes.length} node${nodes.length === 1 ? "" : "s"}${states ? ` (${states})` : ""}, ` +
      `${links.length} link${links.length === 1 ? "" : "s"}`;
    const link = $("lab-web-ui");
    link.hidden = !webUi;
    if (webUi) link.href = webUi;
    const drawing = $("lab-drawing");
    if (!nodes.length) {
      drawing.replaceChildren(el("p", "lab-empty", "No nodes yet: ask the copilot to build something."));
      $("node-details").hidden = true;
      return;
    }
    drawing.replaceChildren(this.drawing(nodes, links));
    const chosen = nodes.find((n) => n.node_id === this.selected);
    if (chosen) this.details(chosen);
    else $("node-details").hidden = true;
  }

  drawing(nodes, links) {
    const centre = new Map(nodes.map((n) => [n.node_id, [n.x + n.width / 2, n.y + n.height / 2]]));
    const xs = nodes.flatMap((n) => [n.x, n.x + n.width]);
    const ys = nodes.flatMap((n) => [n.y, n.y + n.height + 18]);
    const pad = 30;
    const box = [Math.min(...xs) - pad, Math.min(...ys) - pad, Math.max(...xs) + pad, Math.max(...ys) + pad];
    const root = svg("svg", {
      viewBox: `${box[0]} ${box[1]} ${Math.max(box[2] - box[0], 200)} ${Math.max(box[3] - box[1], 120)}`,
      role: "group",
      "aria-label": "Topology",
      preserveAspectRatio: "xMidYMid meet",
    });
    for (const link of links) {
      if (link.ends.length !== 2) continue;
      const [a, b] = link.ends.map((end) => centre.get(end.node_id));
      if (!a || !b) continue;
      const line = svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "link-line" });
      if (link.capturing) line.classList.add("capturing");
      const group = svg("g", { class: "link", "data-link-id": link.link_id });
      group.append(svg("title", {}, link.ends.map((e) => `${e.node} ${e.port}`).join(" ↔ ")), line);
      link.ends.forEach((end, index) => {
        const [from, to] = index === 0 ? [a, b] : [b, a];
        const x = from[0] + (to[0] - from[0]) * 0.3;
        const y = from[1] + (to[1] - from[1]) * 0.3;
        group.append(svg("text", { x, y: y + 4, class: "port-label" }, end.port));
      });
      root.append(group);
    }
    for (const node of nodes) root.append(this.nodeGlyph(node, centre.get(node.node_id)));
    return root;
  }

  nodeGlyph(node, [cx, cy]) {
    const group = svg("g", {
      class: "node",
      transform: `translate(${cx} ${cy})`,
      tabindex: 0,
      role: "button",
      "data-node-id": node.node_id,
      "data-status": node.status,
      "aria-label": `${node.name}, ${node.node_type}, ${node.status}`,
    });
    if (node.node_id === this.selected) group.classList.add("selected");
    group.append(svg("rect", { x: -22, y: -22, width: 44, height: 44, rx: 10, class: "node-shape" }));
    for (const d of GLYPHS[node.kind] || GLYPHS.other) group.append(svg("path", { d, class: "node-glyph" }));
    group.append(svg("circle", { cx: 18, cy: -18, r: 6, class: "node-dot", "data-status": node.status }));
    group.append(svg("text", { x: 0, y: 40, class: "node-name" }, node.name));
    const choose = () => {
      this.selected = node.node_id;
      for (const other of document.querySelectorAll(".node.selected")) other.classList.remove("selected");
      group.classList.add("selected");
      this.details(node);
    };
    group.addEventListener("click", choose);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        choose();
      }
    });
    return group;
  }

  details(node) {
    const box = $("node-details");
    box.hidden = false;
    const close = el("button", "icon-button", "✕");
    close.type = "button";
    close.setAttribute("aria-label", "Close node details");
    close.addEventListener("click", () => {
      this.selected = null;
      box.hidden = true;
      for (const other of document.querySelectorAll(".node.selected")) other.classList.remove("selected");
    });
    const title = el("h3", null, node.name);
    title.append(close);
    const facts = el("dl");
    const fact = (label, value) => {
      if (value === null || value === undefined || value === "") return;
      facts.append(el("dt", null, label));
      const dd = el("dd");
      if (value instanceof Node) dd.append(value);
      else dd.textContent = value;
      facts.append(dd);
    };
    fact("Status", node.status);
    fact("Type", node.node_type);
    if (node.console) {
      const link = el("a", "node-console", node.console);
      link.href = node.console;
      fact("Console", link);
    } else fact("Console", "none");
    const used = node.ports.filter((p) => p.in_use).map((p) => p.short_name);
    fact("Ports", `${node.ports.length} (${used.length ? `in use: ${used.join(", ")}` : "none in use"})`);
    box.replaceChildren(title, facts);
    if (node.web_ui) {
      const web = el("a", "node-web-ui", "Web console in GNS3");
      web.href = node.web_ui;
      web.target = "_blank";
      web.rel = "noopener noreferrer";
      box.append(web);
    }
  }
}
