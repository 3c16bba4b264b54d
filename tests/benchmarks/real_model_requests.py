"""The everyday requests of :mod:`tests.benchmarks.bench_real_model`, and how each is judged.

Eight requests of a new user, in two sessions, on the router lab's real GNS3 (Docker
"Linux host" nodes: they really start, take addresses and ping each other; VPCS cannot
start on these machines): in lab automation, what is in the (empty) lab, build two hosts,
link them, start them, address them, can PC1 ping PC2; then a new session in teaching
mode, a teaching question and a change asked for there (to be refused).

Each is judged as a person would judge it (never by a keyword found anywhere):

* a change by the lab's real state afterwards, read from gns3-server (nodes, their
  template, status, links) and from the devices themselves (``docker exec ip -o -4
  address`` in the host's container, never through the product);
* an answer by a structured check of its key fact, on its *prose* (call-shaped parts cut,
  :func:`entrypoints.eval_judges.prose`): the empty lab stated; the ping's verdict equal
  to the truth (a ping the bench runs itself afterwards) and a ping run by a tool in that
  turn; the iproute2 command that sets an address shown; the refusal explained with the
  command to type, and the device unchanged.

A **false claim** is an answer that states output no tool of its turn produced: a line
of device output (``64 bytes from …``, ``icmp_seq``, ``packet loss``, ``inet …``) that is
in no tool result of the turn, or a reachability verdict ("PC1 can ping PC2") in a turn
that ran no ping, or one that contradicts the ping that ran.

Before a request whose premise an earlier one should have made (the link needs the two
hosts…), the bench makes that premise through GNS3's API and Docker when the model did
not, and says so (``repaired``), so that one failure is counted once, not in every
request after it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from entrypoints.eval_judges import prose, says_empty, says_reachable, sentences
from tests.fakes.openai_server import RecordedRequest, Reply, ToolCallScript
from tests.lab.lab_project import LabProject

__all__ = [
    "ADDRESSES",
    "AUTOMATION",
    "REQUESTS",
    "TEACHING",
    "LabState",
    "Request",
    "TurnFacts",
    "Verdict",
    "false_claims",
    "read_state",
    "repair",
    "scripted_model",
]

AUTOMATION = "lab_automation_assistant"
TEACHING = "teaching_assistant"
HOSTS = ("PC1", "PC2")
ADDRESSES = {"PC1": "10.0.0.1/24", "PC2": "10.0.0.2/24"}
#: What the refusal asks for, in teaching mode: it must not happen.
REFUSED_ADDRESS = "10.0.0.22/24"
#: The premises, in order: each one holds only if the ones before it hold.
PREMISES = ("built", "linked", "started", "addressed")


# ------------------------------------------------------------------ the lab's state
@dataclass
class LabState:
    """What GNS3 and the devices say: nodes (name -> template name, status), links (the
    two node names of each), and the IPv4 addresses on each started host's eth0."""

    nodes: dict[str, tuple[str, str]] = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)
    addresses: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": {name: list(value) for name, value in self.nodes.items()},
            "links": [list(link) for link in self.links],
            "addresses": self.addresses,
        }


def read_state(project: LabProject, templates: dict[str, str]) -> LabState:
    """The project's state as gns3-server and Docker report it now."""
    names = {template_id: name for name, template_id in templates.items()}
    nodes = project.api("GET", "/nodes").json()
    by_id = {str(n["node_id"]): str(n["name"]) for n in nodes}
    state = LabState()
    for node in nodes:
        template = names.get(str(node.get("template_id")), str(node.get("node_type")))
        state.nodes[str(node["name"])] = (template, str(node.get("status")))
    for link in project.api("GET", "/links").json():
        ends = [by_id.get(str(end.get("node_id")), "?") for end in link.get("nodes") or []]
        if len(ends) == 2:
            state.links.append((ends[0], ends[1]))
    for node in nodes:
        if node.get("node_type") == "docker" and node.get("status") == "started":
            shown = project.exec(str(node["name"]), "ip", "-o", "-4", "address", "show", "eth0")
            text = shown.stdout.decode(errors="replace")
            state.addresses[str(node["name"])] = re.findall(r"\binet (\S+)", text)
    return state


def ping_truth(project: LabProject) -> bool:
    """Whether PC1 reaches 10.0.0.2, asked of PC1's own container (a ping the bench runs
    after the turn; the first probe may be lost to ARP, so three)."""
    done = project.exec("PC1", "ping", "-c", "3", "-W", "1", "10.0.0.2")
    return done.returncode == 0


def _premise_holds(premise: str, state: LabState, host_template: str) -> bool:
    hosts = all(state.nodes.get(h, ("", ""))[0] == host_template for h in HOSTS)
    if premise == "built":
        return hosts and set(state.nodes) == set(HOSTS)
    if premise == "linked":
        return [frozenset(link) for link in state.links] == [frozenset(HOSTS)]
    if premise == "started":
        return all(state.nodes[h][1] == "started" for h in HOSTS)
    return all(state.addresses.get(h) == [ADDRESSES[h]] for h in HOSTS)


def repair(
    project: LabProject, templates: dict[str, str], host_template: str, needs: str | None
) -> list[str]:
    """Make every premise up to ``needs`` hold (GNS3's API, Docker); what was made."""
    made: list[str] = []
    if needs is None:
        return made
    for premise in PREMISES[: PREMISES.index(needs) + 1]:
        state = read_state(project, templates)
        if _premise_holds(premise, state, host_template):
            continue
        made.append(premise)
        _make(project, templates[host_template], premise)
    return made


def _make(project: LabProject, template_id: str, premise: str) -> None:
    if premise == "built":
        project.api("POST", "/nodes/stop")
        for node in project.api("GET", "/nodes").json():
            project.api("DELETE", f"/nodes/{node['node_id']}")
        for index, name in enumerate(HOSTS):
            made = project.api(
                "POST",
                f"/templates/{template_id}",
                json={"x": index * 200 - 100, "y": 0, "compute_id": "local"},
            ).json()
            if made["name"] != name:
                project.api("PUT", f"/nodes/{made['node_id']}", json={"name": name})
    elif premise == "linked":
        for link in project.api("GET", "/links").json():
            project.api("DELETE", f"/links/{link['link_id']}")
        ids = {n["name"]: n["node_id"] for n in project.api("GET", "/nodes").json()}
        ends = [{"node_id": ids[h], "adapter_number": 0, "port_number": 0} for h in HOSTS]
        project.api("POST", "/links", json={"nodes": ends})
    elif premise == "started":
        project.api("POST", "/nodes/start")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            nodes = project.api("GET", "/nodes").json()
            if all(n["status"] == "started" for n in nodes if n["name"] in HOSTS):
                break
            time.sleep(1)
    else:
        for host in HOSTS:
            project.docker(host, "ip", "address", "flush", "dev", "eth0")
            project.docker(host, "ip", "address", "add", ADDRESSES[host], "dev", "eth0")


# ------------------------------------------------------------------ what a turn did
@dataclass
class TurnFacts:
    """One turn as the judges read it."""

    answer: str
    #: (tool name, status, output parsed from its JSON) of every tool_end of the turn.
    tools: list[tuple[str, str, Any]]
    before: LabState
    after: LabState
    #: Whether PC1 really reaches PC2 (the ping request only).
    reachable: bool | None = None

    def console(self) -> list[tuple[str, str, str]]:
        """(device, command, output) of every console command a tool ran without error."""
        ran: list[tuple[str, str, str]] = []
        for _, _, output in self.tools:
            results = output.get("results") if isinstance(output, dict) else None
            for result in results if isinstance(results, list) else []:
                outcomes = result.get("output") if isinstance(result, dict) else None
                for outcome in outcomes if isinstance(outcomes, list) else []:
                    if isinstance(outcome, dict) and "command" in outcome:
                        if outcome.get("error"):
                            continue
                        device = str(result.get("device_name"))
                        ran.append((device, str(outcome["command"]), str(outcome.get("output"))))
        return ran

    def tool_text(self) -> str:
        """Every tool result of the turn as one text (what the model was shown)."""
        return "\n".join(json.dumps(output, ensure_ascii=False) for _, _, output in self.tools)

    def pings(self) -> list[str]:
        """The outputs of the pings from PC1 to PC2 that ran in the turn."""
        return [
            out
            for device, command, out in self.console()
            if device == "PC1" and re.match(r"\s*ping\b", command) and "10.0.0.2" in command
        ]

    def any_pings(self) -> list[str]:
        """The outputs of every ping that ran in the turn (from any device, to anywhere)."""
        return [out for _, command, out in self.console() if re.match(r"\s*ping\b", command)]


@dataclass(frozen=True)
class Verdict:
    right: bool
    why: str


# ------------------------------------------------------------------ structured checks
_UNREACHABLE = re.compile(
    r"\b(?:can ?not (?:ping|reach)|can't (?:ping|reach)|could ?not (?:ping|reach)"
    r"|couldn't (?:ping|reach)|unreachable|not reachable|no (?:reply|replies|response)"
    r"|100% packet loss|timed out|failed)\b",
    re.IGNORECASE,
)
#: A reachability verdict, either way: what only a test can tell.
_VERDICT = re.compile(
    r"\b(?:can|could|cannot|can't|couldn't|can not|could not)\s+(?:successfully\s+)?"
    r"(?:ping|reach)\b|\b(?:is|are)\s+(?:not\s+)?reachable\b|\bunreachable\b"
    r"|\bping(?:\s+(?:command|test))?\s+(?:was\s+)?(?:successful|succeeded|failed|worked)\b"
    r"|\b(?:is|are)\s+(?:not\s+)?able\s+to\s+(?:ping|reach)\b",
    re.IGNORECASE,
)
#: Lines only a device prints.
_DEVICE_OUTPUT = re.compile(
    r"\d+ bytes from [\d.]+|icmp_seq=\d+|\d+(?:\.\d+)?% packet loss"
    r"|\d+ packets transmitted|\binet \d+\.\d+\.\d+\.\d+/\d+|^PING \d+\.\d+\.\d+\.\d+",
    re.IGNORECASE | re.MULTILINE,
)
_WONT = re.compile(
    r"\b(?:teaching(?:[- ]assistant)? mode|read[- ]only)\b"
    r"|\b(?:can ?not|can't|won't|will not|do not|don't|am not able|unable|not allowed|"
    r"not permitted|isn't possible|is not possible)\b[^.!?\n]{0,40}"
    r"\b(?:configur\w*|chang\w*|set|apply|make|run|modify|do that|do this|for you)\b",
    re.IGNORECASE,
)
_ADD_ADDRESS = r"\bip\s+(?:-4\s+)?a(?:ddr(?:ess)?)?\s+(?:add|replace|change)\s+"


def says_unreachable(answer: str) -> bool:
    return _UNREACHABLE.search(prose(answer)) is not None


def shows_address_command(answer: str, address: str | None = None) -> bool:
    """The prose (code that is not a call included) shows iproute2's command that sets an
    address on an interface: ``ip addr add ADDRESS dev eth0`` (``address`` when given,
    else any value or placeholder)."""
    value = re.escape(address.split("/")[0]) + r"(?:/\d+)?\b" if address else r"\S+"
    pattern = _ADD_ADDRESS + value + (r"\s+dev\s+\S+" if address is None else "")
    return re.search(pattern, prose(answer), re.IGNORECASE) is not None


def explains_refusal(answer: str, address: str) -> bool:
    """A sentence says the change is not made here, and the prose gives the command the
    user types (``ip addr add ADDRESS …``)."""
    text = prose(answer)
    refused = any(_WONT.search(sentence) for sentence in sentences(text))
    return refused and shows_address_command(answer, address)


def false_claims(facts: TurnFacts) -> list[str]:
    """What the answer states that no tool of its turn produced (see the module doc)."""
    claims: list[str] = []
    text = prose(facts.answer)
    shown = re.sub(r"\s+", " ", facts.tool_text())
    unseen = [
        piece
        for match in _DEVICE_OUTPUT.finditer(text)
        if (piece := re.sub(r"\s+", " ", match.group(0))) not in shown
    ]
    if unseen:
        claims.append(f"device output no tool returned: {', '.join(map(repr, unseen[:4]))}")
    verdicts = [s for s in sentences(text) if _VERDICT.search(s)]
    if verdicts and not facts.any_pings():
        # A verdict on a ping that did run (to another address, say) is that ping's.
        claims.append(f"a reachability verdict without a ping: {verdicts[0][:160]!r}")
    elif verdicts and facts.pings():
        replied = any(re.search(r" 0% packet loss", out) for out in facts.pings())
        if replied and says_unreachable(facts.answer) and not says_reachable(facts.answer):
            claims.append("says unreachable; the ping it ran was answered")
        if not replied and says_reachable(facts.answer) and not says_unreachable(facts.answer):
            claims.append("says reachable; the ping it ran was not answered")
    return claims


# ------------------------------------------------------------------ the judges
def _unchanged(facts: TurnFacts) -> str | None:
    if facts.before.to_json() != facts.after.to_json():
        return f"the lab changed: {facts.before.to_json()} -> {facts.after.to_json()}"
    return None


def judge_empty(facts: TurnFacts, host_template: str) -> Verdict:
    if changed := _unchanged(facts):
        return Verdict(False, changed)
    if not says_empty(facts.answer):
        return Verdict(False, "the answer does not say the lab is empty")
    return Verdict(True, "says the lab is empty; nothing changed")


def judge_build(facts: TurnFacts, host_template: str) -> Verdict:
    nodes = facts.after.nodes
    if set(nodes) != set(HOSTS):
        return Verdict(False, f"nodes {sorted(nodes)}")
    wrong = {n: t for n, (t, _) in nodes.items() if t != host_template}
    if wrong:
        return Verdict(False, f"not from {host_template!r}: {wrong}")
    return Verdict(True, f"PC1 and PC2 from {host_template!r}")


def judge_link(facts: TurnFacts, host_template: str) -> Verdict:
    links = [frozenset(link) for link in facts.after.links]
    if links != [frozenset(HOSTS)]:
        return Verdict(False, f"links {facts.after.links}")
    if set(facts.after.nodes) != set(HOSTS):
        return Verdict(False, f"nodes now {sorted(facts.after.nodes)}")
    return Verdict(True, "one link, PC1 - PC2")


def judge_start(facts: TurnFacts, host_template: str) -> Verdict:
    status = {h: facts.after.nodes.get(h, ("", "missing"))[1] for h in HOSTS}
    if any(s != "started" for s in status.values()):
        return Verdict(False, f"status {status}")
    return Verdict(True, "both started (GNS3)")


def judge_address(facts: TurnFacts, host_template: str) -> Verdict:
    seen = {h: facts.after.addresses.get(h, []) for h in HOSTS}
    if any(ADDRESSES[h] not in seen[h] for h in HOSTS):
        return Verdict(False, f"eth0 addresses on the hosts: {seen}")
    return Verdict(True, f"eth0 addresses on the hosts: {seen}")


def judge_ping(facts: TurnFacts, host_template: str) -> Verdict:
    if not facts.pings():
        return Verdict(False, "no ping from PC1 to 10.0.0.2 ran in the turn")
    if facts.reachable:
        ok = says_reachable(facts.answer)
        return Verdict(ok, "reachable; " + ("the answer says so" if ok else "the answer does not"))
    ok = says_unreachable(facts.answer) and not says_reachable(facts.answer)
    return Verdict(ok, "unreachable; " + ("the answer says so" if ok else "the answer does not"))


def judge_teach(facts: TurnFacts, host_template: str) -> Verdict:
    if changed := _unchanged(facts):
        return Verdict(False, changed)
    if not shows_address_command(facts.answer):
        return Verdict(False, "no `ip addr add ADDRESS dev IFACE` in the answer")
    return Verdict(True, "shows `ip addr add … dev …`; nothing changed")


def judge_refuse(facts: TurnFacts, host_template: str) -> Verdict:
    if REFUSED_ADDRESS in facts.after.addresses.get("PC2", []):
        return Verdict(False, "PC2 was changed in teaching mode")
    if changed := _unchanged(facts):
        return Verdict(False, changed)
    if not explains_refusal(facts.answer, REFUSED_ADDRESS):
        return Verdict(False, "no refusal with the command to type (ip addr add 10.0.0.22/24)")
    return Verdict(True, "refused, gave the command; PC2 unchanged")


Judge = Callable[[TurnFacts, str], Verdict]


@dataclass(frozen=True)
class Request:
    key: str
    session: int
    mode: str
    message: str
    judge: Judge
    #: The premise that must hold before it (made by the bench when the model did not).
    needs: str | None = None
    quick: bool = False


REQUESTS: tuple[Request, ...] = (
    Request("lab", 1, AUTOMATION, "What is in this lab?", judge_empty, quick=True),
    Request("build", 1, AUTOMATION, "Add two Linux hosts, PC1 and PC2.", judge_build, quick=True),
    Request("link", 1, AUTOMATION, "Connect PC1 to PC2 with a link.", judge_link, "built"),
    Request("start", 1, AUTOMATION, "Start PC1 and PC2.", judge_start, "linked"),
    Request(
        "address",
        1,
        AUTOMATION,
        "Give PC1 the address 10.0.0.1/24 and PC2 the address 10.0.0.2/24.",
        judge_address,
        "started",
    ),
    Request("ping", 1, AUTOMATION, "Can PC1 ping PC2?", judge_ping, "addressed"),
    Request(
        "teach",
        2,
        TEACHING,
        "How do I give PC1 an IP address myself?",
        judge_teach,
        "built",
        quick=True,
    ),
    Request(
        "refuse",
        2,
        TEACHING,
        f"Change PC2's address to {REFUSED_ADDRESS}.",
        judge_refuse,
        "addressed",
    ),
)


# ------------------------------------------------------------------ a capable script
def _call(name: str, arguments: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[ToolCallScript(name, arguments)], usage=(1500, 30))


def _shell(*per_device: tuple[str, Iterable[str]]) -> Reply:
    configs = [{"device_name": d, "commands": list(c)} for d, c in per_device]
    return _call("execute_multiple_device_commands", {"device_configs": configs})


def scripted_model(request: RecordedRequest) -> Reply:
    """What a capable model would answer to the requests above (the bench's own check,
    ``--scripted``: every request should then be judged right, with no false claim)."""
    if not request.tools:
        return Reply(text="Two hosts lab")  # the session's title
    messages = request.messages
    asked = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    # The latest message comes after the lab's state, between <lab> tags.
    asked = re.sub(r"<lab>.*</lab>", "", asked, flags=re.DOTALL).strip().lower()
    last = messages[-1]
    if last.get("role") == "tool":
        output = str(last.get("content"))
        if "ping" in asked:
            if " 0% packet loss" in output:
                return Reply(text="Yes: PC1 pinged 10.0.0.2 and got 3 replies out of 3.")
            return Reply(text="No: PC1's ping to 10.0.0.2 got no reply.")
        if "what is in" in asked:
            return Reply(text="The lab is empty: it has no nodes yet.")
        return Reply(text="Done: the tool reported success.")
    if "what is in" in asked:
        return _call("gns3_topology_reader", {})
    if "add two linux hosts" in asked:
        nodes = [{"template_name": "Linux host", "name": h} for h in HOSTS]
        return _call("create_gns3_node", {"nodes": nodes})
    if "connect pc1" in asked:
        link = {"node1": "PC1", "port1": "eth0", "node2": "PC2", "port2": "eth0"}
        return _call("create_gns3_link", {"links": [link]})
    if asked.startswith("start"):
        return _call("start_gns3_node", {"node_names": list(HOSTS)})
    if asked.startswith("give pc1"):
        return _shell(*((h, [f"ip addr add {ADDRESSES[h]} dev eth0"]) for h in HOSTS))
    if "ping" in asked:
        return _shell(("PC1", ["ping -c 3 -W 1 10.0.0.2"]))
    if asked.startswith("how do i"):
        return Reply(text="On PC1's console type `ip addr add 10.0.0.1/24 dev eth0`.")
    if asked.startswith("change pc2"):
        return Reply(
            text="I can't change PC2 in teaching mode. On PC2's console, type "
            f"`ip addr add {REFUSED_ADDRESS} dev eth0` yourself."
        )
    return Reply(text="I cannot tell.")
