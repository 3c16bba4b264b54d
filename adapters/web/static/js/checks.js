// Checks of intent as the page writes and names them: each kind's fields (the form that
// adds one) and the plain line that says what a check checks. The service validates.

const text = (name, label, placeholder) => ({ name, label, type: "text", placeholder });
const choice = (name, label, options) => ({ name, label, type: "select", options });
const YES_NO = [["true", "yes"], ["false", "no"]];

export const KINDS = {
  reachability: {
    label: "Reachability (ping)",
    fields: [
      text("from", "From node", "PC1"),
      text("to", "To (address or node)", "PC2 or 10.0.2.10"),
      choice("expect", "Expect", [["reachable", "reachable"], ["unreachable", "unreachable"]]),
      { name: "count", label: "Pings", type: "number", placeholder: "3" },
    ],
  },
  ospf_neighbor: {
    label: "OSPF neighbour",
    fields: [
      text("node", "Router", "R1"),
      text("neighbor", "Neighbour (router id, address or node)", "R2"),
      choice("state", "State", ["full", "2way", "init", "exstart", "exchange", "loading", "attempt", "down"].map((s) => [s, s])),
    ],
  },
  bgp_session: {
    label: "BGP session",
    fields: [
      text("node", "Router", "R1"),
      text("peer", "Peer (address or node)", "10.0.12.2"),
      choice("state", "State", ["established", "idle", "active", "connect", "opensent", "openconfirm"].map((s) => [s, s])),
    ],
  },
  route: {
    label: "Route",
    fields: [
      text("node", "Router", "R1"),
      text("prefix", "Prefix", "10.0.2.0/24"),
      choice("present", "Present", YES_NO),
      text("via", "Via (next hop, interface or node)", "optional"),
      choice("protocol", "Protocol", [["", "any"], ...["ospf", "bgp", "static", "connected", "rip", "isis", "eigrp", "kernel", "local"].map((p) => [p, p])]),
    ],
  },
  interface: {
    label: "Interface",
    fields: [
      text("node", "Node", "R2"),
      text("interface", "Interface", "eth1 or Gi0/0"),
      choice("state", "State", [["up", "up"], ["down", "down"]]),
    ],
  },
  config_line: {
    label: "Configuration line",
    fields: [
      text("node", "Node", "R1"),
      text("line", "Line", "ip ospf network point-to-point"),
      choice("present", "Present", YES_NO),
    ],
  },
};

// What a check checks, in a line: its name, else what the service would call it.
export function checkLabel(check) {
  if (check.name) return check.name;
  const has = check.present === false ? "lacks" : "has";
  switch (check.kind) {
    case "reachability":
      return `${check.from} ${check.expect === "unreachable" ? "does not reach" : "reaches"} ${check.to}`;
    case "ospf_neighbor":
      return `${check.node} OSPF neighbour ${check.neighbor} ${check.state || "full"}`;
    case "bgp_session":
      return `${check.node} BGP session with ${check.peer} ${check.state || "established"}`;
    case "route":
      return `${check.node} ${has} a route to ${check.prefix}${check.via ? ` via ${check.via}` : ""}`;
    case "interface":
      return `${check.node} ${check.interface} ${check.state || "up"}`;
    case "config_line":
      return `${check.node} ${has} '${check.line}'`;
    default:
      return check.kind || "check";
  }
}

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

// The inputs of a kind, as labelled fields named after the check's own fields.
export function kindFields(kind) {
  return KINDS[kind].fields.map((field) => {
    const label = el("label", "intent-field");
    label.append(el("span", null, field.label));
    let input;
    if (field.type === "select") {
      input = document.createElement("select");
      for (const [value, shown] of field.options) input.append(new Option(shown, value));
    } else {
      input = document.createElement("input");
      input.type = field.type;
      input.placeholder = field.placeholder;
      input.autocomplete = "off";
    }
    input.name = field.name;
    label.append(input);
    return label;
  });
}

// The check a filled form describes: empty fields are left out (the service says what a
// check lacks), yes/no are booleans and a count is a number.
export function checkOf(form) {
  const value = (name) => form.elements.namedItem(name).value.trim();
  const kind = value("kind");
  const check = { kind };
  const name = value("name");
  if (name) check.name = name;
  for (const field of KINDS[kind].fields) {
    const raw = value(field.name);
    if (raw === "") continue;
    if (field.options === YES_NO) check[field.name] = raw === "true";
    else if (field.type === "number") check[field.name] = Number(raw);
    else check[field.name] = raw;
  }
  return check;
}
