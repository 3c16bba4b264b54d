"""Device output without a device (issue 40, case 4): what an answer states that only a
device or a test could have shown, and whether a tool of the conversation showed it.

Asked "can PC1 ping PC2?", a 1.5B model made no call and wrote a four-reply ping
transcript and "PC1 can ping PC2"; no address was set and there was no link. The agent
asks a model whose answer states such output once to run the tool, and marks a final
answer that still does as unverified. This module is the pure part: the *claims* of an
answer (:func:`claims`), and which of them no tool produced (:class:`Seen`).

A claim is
  * a line a device prints: a ping's reply or summary (VPCS, Linux, Windows, Cisco's
    ``!!!!!`` and success rate, a timeout), a traceroute hop, a row of an interface or
    route table, an address or interface line (``IP/MASK : 10.0.0.1/24``,
    ``inet 10.0.0.1/24``, ``Gi0/0 is up, line protocol is up``);
  * a sentence stating a test's result ("PC1 can ping PC2", "10.0.0.2 is reachable",
    "the ping succeeded"), a device's address ("PC1 has 10.0.0.1/24", "- PC1:
    10.0.0.1/24") or an interface's state ("Gi0/0 is up").

Not a claim: a question; a sentence said as an instruction, a plan, a condition or an
explanation ("should", "if", "when", "you can", "I'll", "to check…", or one that starts
with a command: "Run ping 10.0.0.2 on PC1"); a failure reasoned from the lab ("PC1
cannot reach PC2 because there is no link"); a line under an introduction that says it
is an example or the user's to run ("you should see:", "for example:", "run this:").

A claim is seen when what the tools showed holds it:
  * a test's result (ping, traceroute, reachability) by a tool's output that shows a
    test's result (a success for a claimed success) for an address the claim names, in
    this turn or earlier in the session (the same test of the same address); a claim
    naming no address only by such an output of this turn (which test it was cannot be
    told);
  * a device's state (address, interface, table row) by every address it names (else
    every interface) in what the tools showed: their outputs, the arguments of the calls
    that succeeded (the change just made) and the lab's topology, in this turn or
    earlier (a device keeps its address).

Everything here is plain text processing, synchronous and I/O free; history is read
only when an answer makes a claim (most answers make none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from copilot_core._messages import Message, Role
from copilot_core._tools import ToolSpec

__all__ = ["Claim", "Seen", "ask_to_run", "claim_dicts", "claims", "unverified_note"]

ClaimKind = Literal["ping", "traceroute", "reachability", "address", "interface", "table"]
#: Kinds that are a test's result (seen only by a test's output); the rest are state.
_TESTS = frozenset({"ping", "traceroute", "reachability"})
#: The longest claim text kept (in the status event and the stored message).
_TEXT = 120
#: At most this many claims are reported (the first ones, in answer order).
_REPORTED = 5

_IP = r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)"
_IP_RE = re.compile(_IP)
_IFACE = (
    r"(?:(?:TenGigabit|Gigabit|Fast)?Ethernet ?\d+(?:/\d+)*|Serial ?\d+(?:/\d+)*|"
    r"Loopback ?\d+|Vlan ?\d+|Port-channel ?\d+|"
    r"(?:Gi|Fa|Te|Et|Se|Lo|Po|eth|ens|enp\d+s|e)\d+(?:/\d+)*)(?:\.\d+)?"
)
_IFACE_RE = re.compile(rf"\b{_IFACE}\b", re.IGNORECASE)
_DEVICE = r"(?:PC|R|SW|S|H|Host|Router|Switch|Server|Client|VPCS|Node)[-_]?\d+"
_DEVICE_RE = re.compile(rf"\b{_DEVICE}\b", re.IGNORECASE)
_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class _LinePattern:
    regex: re.Pattern[str]
    kind: ClaimKind
    #: Whether the line says a test succeeded (``None``: it does not say; an ``int``:
    #: the number in that group of the match is above zero).
    success: bool | int | None = None
    #: Words one of which every match holds (lower-case): an ASCII text without any is
    #: not searched (see :func:`_may_hold`). Empty: always searched (an anchored pattern
    #: fails at once).
    needs: tuple[str, ...] = ()


def _may_hold(text: str, lower: str, needs: tuple[str, ...]) -> bool:
    """Whether a pattern whose every match holds one of ``needs`` may match ``text``
    (``lower``: its lower-case): a substring test is some hundred times faster than a
    search with many alternatives, and most of an answer holds none of the words. Only
    for ASCII text: with ``re.IGNORECASE`` a few other letters match ASCII ones (the
    Kelvin sign a ``k``), which lower-casing does not give; other text is searched."""
    return not needs or not text.isascii() or any(word in lower for word in needs)


#: Lines a device prints (searched in each line of a code block, and each sentence).
_LINES = (
    # ping: VPCS "84 bytes from 10.0.0.2 icmp_seq=1 ttl=64 time=0.5 ms", Linux "64 bytes
    # from 10.0.0.2: icmp_seq=1…", Windows "Reply from 10.0.0.2: bytes=32…"
    _LinePattern(
        re.compile(rf"\b\d+ bytes from (?:\S+ \()?({_IP})", _I), "ping", True, ("bytes from",)
    ),
    _LinePattern(re.compile(rf"\breply from ({_IP}): bytes=", _I), "ping", True, ("reply from",)),
    _LinePattern(re.compile(r"^\s*!{3,}\s*$"), "ping", True),
    _LinePattern(re.compile(r"\bsuccess rate is (\d+) percent", _I), "ping", 1, ("success rate",)),
    _LinePattern(
        re.compile(r"\b\d+ packets transmitted, (\d+) (?:packets )?received", _I),
        "ping",
        1,
        ("packets transmitted",),
    ),
    _LinePattern(re.compile(r"\brequest timed out\b", _I), "ping", False, ("timed out",)),
    _LinePattern(
        re.compile(r"\bdestination (?:host|net) unreachable\b", _I), "ping", False, ("unreachable",)
    ),
    _LinePattern(
        re.compile(rf"\bhost \(?({_IP})\)? not reachable\b", _I), "ping", False, ("not reachable",)
    ),
    _LinePattern(re.compile(rf"({_IP}) icmp_seq=\d+ timeout\b", _I), "ping", False, ("icmp_seq",)),
    # traceroute: "traceroute to 10.0.0.2 (10.0.0.2), 30 hops max", VPCS "trace to
    # 10.0.0.2, 8 hops max", and hops " 1   10.0.0.1   1.234 ms"
    _LinePattern(re.compile(rf"^\s*(?:traceroute|trace) to (?:\S+ \()?({_IP})", _I), "traceroute"),
    _LinePattern(
        re.compile(rf"^\s*\d{{1,2}}\s+(?:\S+\s+\()?({_IP})\)?\s+\d+(?:\.\d+)?\s*ms", _I),
        "traceroute",
        True,
    ),
    # tables: Cisco "show ip interface brief", FRR "show interface brief", routes
    _LinePattern(
        re.compile(
            rf"^\s*({_IFACE})\s+({_IP}|unassigned)\s+(?:YES|NO)\s+\S+\s+"
            r"(?:up|down|administratively down)\s+(?:up|down)\b",
            _I,
        ),
        "table",
    ),
    _LinePattern(re.compile(rf"^\s*({_IFACE})\s+(?:up|down)\s+\S+\s+({_IP})/\d+", _I), "table"),
    _LinePattern(
        re.compile(
            rf"^\s*[A-Z][>*]*(?:\s+[A-Z0-9]{{1,3}})?\s+({_IP})/\d+\s+(?:\[\d+/\d+\]\s+)?"
            r"(?:is directly connected|via\b)"
        ),
        "table",
    ),
    # addresses and interface lines: VPCS "IP/MASK : 10.0.0.1/24", Linux "inet
    # 10.0.0.1/24", Cisco "Internet address is 10.0.0.1/24", "Gi0/0 is up, line…"
    _LinePattern(re.compile(rf"^\s*IP/MASK\s*:\s*({_IP})", _I), "address"),
    _LinePattern(re.compile(rf"^\s*inet ({_IP})/\d+", _I), "address"),
    _LinePattern(
        re.compile(rf"\binternet address is ({_IP})", _I), "address", None, ("internet address",)
    ),
    _LinePattern(
        re.compile(rf"^\s*({_IFACE}) is (?:up|down|administratively down), line protocol is", _I),
        "interface",
    ),
)

#: Words one of which every match of :data:`_REACH_YES` holds (:func:`_may_hold`).
_REACH_YES_NEEDS = ("ping", "reach", "communicate", "talk to", "repl", "packet", "respons",
                    "connectivity")  # fmt: skip
_REACH_YES = re.compile(
    r"(?<!\bi )(?<!\bwe )(?<!\byou )"
    r"\b(?:can|could|is able to|was able to|are able to|were able to)\s+"
    r"(?:successfully\s+)?(?:ping|reach|communicate with|talk to)\b"
    r"|\bsuccessfully\s+(?:pinged|reached)\b"
    r"|\b(?:is|are|was|were)\s+(?:now\s+|still\s+|fully\s+)?reachable\b"
    r"|\bpings?\b[^.;]{0,40}?\b(?:succeeded|successful|worked|passed|went through)\b"
    r"|\b(?:all|\d+|four|five)\s+(?:of\s+\w+\s+)?(?:ping\s+|echo\s+)?(?:replies|packets)\s+"
    r"(?:were\s+)?(?:received|returned|came back)\b"
    r"|\breceived\s+(?:all\s+)?(?:\d+\s+|four\s+|five\s+)?(?:ping\s+|echo\s+)?(?:replies|responses)\b"
    r"|(?<![\d.])0% packet loss\b"
    r"|\bconnectivity\b[^.;]{0,60}?\b(?:is|was|has been)\s+"
    r"(?:working|confirmed|verified|established|successful|fine|ok)\b",
    _I,
)
_REACH_NO_NEEDS = ("ping", "reach", "packet", "repl", "respons")
_REACH_NO = re.compile(
    r"(?<!\bi )(?<!\bwe )(?<!\byou )"
    r"\b(?:cannot|can't|can not|could not|couldn't|is unable to|was unable to|failed to|"
    r"fails to)\s+(?:ping|reach)\b"
    r"|\b(?:is|are|was|were)\s+(?:not\s+|un)reachable\b"
    r"|\bpings?\b[^.;]{0,40}?\b(?:failed|fails|timed out|times out)\b"
    r"|\b100% packet loss\b"
    r"|\b(?:got|received|with) no (?:replies|reply|response)\b|\bno (?:replies|reply) from\b",
    _I,
)
#: A failure reasoned from the lab (its missing link, its missing address), not a test.
_REASONED = re.compile(
    r"\b(?:because|since|as there|no link|not (?:connected|linked|cabled)|missing|without|"
    r"no (?:ip )?address|not (?:yet )?(?:configured|started))\b",
    _I,
)
#: What every address holds (a cheap search before :data:`_ADDRESS`'s).
_DOTTED = re.compile(r"\d\.\d")
_ADDRESS = re.compile(
    rf"\b(?:{_DEVICE}|{_IFACE})(?:'s)?\b[^.;:!?\n]{{0,40}}?"
    r"\b(?:is|are|has|have|was|were|uses|got|holds|configured with|assigned)\b"
    rf"[^;!?\n]{{0,40}}?{_IP}"
    rf"|^(?:{_DEVICE}|{_IFACE})\s*[:=]\s*{_IP}",
    _I,
)
_INTERFACE_NEEDS = ("up", "down")
_INTERFACE = re.compile(
    rf"\b{_IFACE}\b[^.;!?\n]{{0,30}}?\b(?:is|are|was|were)\s+(?:now\s+|currently\s+|still\s+)?"
    r"(?:up|down|administratively down|shut ?down)\b",
    _I,
)
#: A sentence said as a condition, a plan, an instruction or an explanation.
_HEDGED = re.compile(
    r"\b(?:if|whether|when|whenever|should|would|might|may|will|once|unless|expect(?:s|ed)?|"
    r"e\.g|example|suppose|assum(?:e|ing)|needs? to|must|let me|let's|let us|you can|plan|"
    r"suggest(?:s|ed|ion)?|recommend(?:s|ed)?|propos(?:e|ed|al)|"
    r"you could|can you|please|make sure|ensure|try|to (?:check|verify|test|see|confirm|"
    r"find out|make sure))\b|'ll\b",
    _I,
)
#: An introduction saying that what follows is an example or the user's to run.
_EXAMPLE = re.compile(
    r"\b(?:should|would|might|may|expect(?:s|ed)?|e\.g|example|for instance|sample|typical|"
    r"typically|something like|similar|such as|like this|looks? like|you(?:'ll| will) see|"
    r"will (?:see|show|look|print|get|display|return)|you can|you could|you should|your)\b",
    _I,
)
#: A sentence (or an introduction) that starts with a command to the user.
_IMPERATIVE = re.compile(
    r"^(?:run|type|enter|use|try|execute|issue|check|verify|configure|set|assign|give|"
    r"add|connect|link|start|open|make|ensure|see|do|go|click|select|press|to)\b",
    _I,
)
#: An introduction whose main clause tells the user to run something ("To check, run:").
_COMMAND = re.compile(
    r"^(?:to [^,]{0,80},\s*)?(?:run|type|enter|use|try|execute|issue|open|paste|copy|do)\b", _I
)
#: A command prompt a transcript starts with ("PC1> ping 10.0.0.2", "R1#show ip route").
_PROMPT = re.compile(r"^[\w.-]+(?:\([\w-]+\))?[>#$]\s*\S")
#: What every claim holds (a number, an address, or a test's word): a line or sentence
#: without any is skipped at once (most of an answer).
_CUE = re.compile(r"\d|!!!|ping|reach|repl|packet|connectiv|succe|timed out", _I)
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_MARKUP = re.compile(r"\*\*|__|`")


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing an answer states that only a device or a test could have shown."""

    kind: ClaimKind
    #: The claimed line or sentence, as written (cut to 120 characters).
    text: str
    addresses: tuple[str, ...] = ()
    interfaces: tuple[str, ...] = ()
    #: For a test: whether it claims a success (``None``: it does not say).
    success: bool | None = None

    def to_dict(self) -> dict[str, str]:
        """What is reported of it (status event, stored message)."""
        return {"kind": self.kind, "text": self.text}


def claims(answer: str) -> list[Claim]:
    """The claims of ``answer``, in order, each once (see the module doc)."""
    found: list[Claim] = []
    intro = ""  # the latest plain sentence: what introduces a block or a list
    fenced = False
    for raw in answer.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            if _CUE.search(raw) and not _is_example(intro):
                found.extend(_line_claims(raw))
            continue
        item = bool(_LIST.match(raw))
        line = _MARKUP.sub("", _LIST.sub("", raw, count=1)).strip()
        for sentence in _SENTENCE.split(line) if line else ():
            if not _CUE.search(sentence):
                if not item and not _PROMPT.match(sentence):
                    intro = sentence
                continue
            on_line = _line_claims(sentence)
            if on_line:
                if not _is_example(intro) and not _EXAMPLE.search(sentence):
                    found.extend(on_line)
                continue  # (a transcript line introduces nothing)
            if not (item and _is_plan(intro)):
                found.extend(_sentence_claims(sentence))
            if not item and not _PROMPT.match(sentence):
                intro = sentence
    unique: dict[tuple[str, str], Claim] = {}
    for claim in found:
        unique.setdefault((claim.kind, claim.text), claim)
    return list(unique.values())


def _line_claims(text: str) -> list[Claim]:
    """The device-output claim of one line of a block, or one sentence (at most one)."""
    out: list[Claim] = []
    lower = text.lower()
    for pattern in _LINES:
        if not _may_hold(text, lower, pattern.needs):
            continue
        match = pattern.regex.search(text)
        if match is None:
            continue
        success = pattern.success
        if isinstance(success, int) and not isinstance(success, bool):
            success = int(match.group(success)) > 0
        out.append(_claim(pattern.kind, text, success))
        break  # one line is one claim
    return out


def _sentence_claims(sentence: str) -> list[Claim]:
    """The claims of one plain sentence (none when it is a question or hedged)."""
    text = sentence.strip()
    if not text or text.endswith("?"):
        return []
    lower = text.lower()
    kind: ClaimKind
    success: bool | None = None
    if _may_hold(text, lower, _REACH_YES_NEEDS) and _REACH_YES.search(text):
        kind, success = "reachability", True
    elif (
        _may_hold(text, lower, _REACH_NO_NEEDS)
        and _REACH_NO.search(text)
        and not _REASONED.search(text)
    ):
        kind, success = "reachability", False
    elif _DOTTED.search(text) and _ADDRESS.search(text):
        kind = "address"
    elif _may_hold(text, lower, _INTERFACE_NEEDS) and _INTERFACE.search(text):
        kind = "interface"
    else:
        return []
    # (a hedged or imperative sentence claims nothing: asked after the claim's own
    # patterns, which most sentences fail sooner)
    if _HEDGED.search(text) or _IMPERATIVE.match(text):
        return []
    return [_claim(kind, text, success)]


def _claim(kind: ClaimKind, text: str, success: bool | None) -> Claim:
    text = " ".join(text.split())
    return Claim(
        kind,
        text if len(text) <= _TEXT else text[: _TEXT - 1] + "…",
        tuple(dict.fromkeys(_IP_RE.findall(text))),
        tuple(dict.fromkeys(m.group(0).lower() for m in _IFACE_RE.finditer(text))),
        success,
    )


def _is_example(intro: str) -> bool:
    return bool(intro) and (bool(_EXAMPLE.search(intro)) or bool(_COMMAND.match(intro)))


def _is_plan(intro: str) -> bool:
    return bool(intro) and (bool(_HEDGED.search(intro)) or bool(_IMPERATIVE.match(intro)))


# ------------------------------------------------------------------------ evidence
#: A tool's output that shows a test succeeded, or a test's result at all.
_TEST_PASSED = re.compile(
    r"bytes from|reply from \S+ bytes=|!!!|success rate is [1-9]|(?<![\d.])0% packet loss"
    r"|\"reachable\":\s*true|\b[1-9]\d* (?:packets )?received",
    _I,
)
_TEST_RESULT = re.compile(
    rf"{_TEST_PASSED.pattern}|timeout|timed out|unreachable|not reachable|packet loss"
    r"|success rate|\"reachable\":|\btrace(?:route)?\b|\bping\b",
    _I,
)
#: A tool's output that shows a traceroute.
_TRACED = re.compile(r"\btrace(?:route)? to\b|\bhops max\b", _I)
_FAILED = frozenset({"error", "failed", "rejected", "aborted", "rolled_back"})


class Seen:
    """What the tools of a session showed, to tell the claims of an answer no tool
    produced (:meth:`unseen`). ``history`` is the session's stored messages (read only
    when an answer makes a claim); :meth:`add` takes each step of this turn."""

    __slots__ = ("_history", "_read", "_turn_outputs", "_turn_state")

    def __init__(self, history: Sequence[Message] = ()) -> None:
        self._history = history
        self._read: tuple[list[str], list[str]] | None = None
        self._turn_outputs: list[str] = []
        self._turn_state: list[str] = []

    def add(self, step: Iterable[Message]) -> None:
        """One step of this turn: its tool results and the calls that succeeded."""
        outputs, state = _sightings(step)
        self._turn_outputs.extend(outputs)
        self._turn_state.extend(state)

    def unseen(self, answer: str, topology: Mapping[str, Any] | None = None) -> list[Claim]:
        """The claims of ``answer`` that no tool produced (at most five, in order);
        ``topology`` is the lab's state the model was given (its addresses are seen)."""
        found = claims(answer)
        if not found:
            return []
        if self._read is None:
            self._read = _sightings(self._history)
        history_outputs, history_state = self._read
        turn = self._turn_outputs
        every_output = [*history_outputs, *turn]
        state = [*every_output, *history_state, *self._turn_state]
        if topology is not None:
            state.append(json.dumps(topology, ensure_ascii=False))
        missing = [
            claim
            for claim in found
            if not (
                _test_seen(claim, every_output if claim.addresses else turn)
                if claim.kind in _TESTS
                else _state_seen(claim, state)
            )
        ]
        return missing[:_REPORTED]


def _test_seen(claim: Claim, outputs: Sequence[str]) -> bool:
    if claim.kind == "traceroute":
        marker = _TRACED
    else:
        marker = _TEST_PASSED if claim.success else _TEST_RESULT
    return any(
        marker.search(output)
        and (not claim.addresses or any(_holds(output, ip) for ip in claim.addresses))
        for output in outputs
    )


def _state_seen(claim: Claim, texts: Sequence[str]) -> bool:
    if claim.addresses:
        return all(any(_holds(text, ip) for text in texts) for ip in claim.addresses)
    if claim.interfaces:
        lowered = [text.lower() for text in texts]
        return all(any(name in text for text in lowered) for name in claim.interfaces)
    return any(claim.text.lower() in text.lower() for text in texts)


def _holds(text: str, address: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(address)}(?!\.?\d)", text) is not None


def _sightings(messages: Iterable[Message]) -> tuple[list[str], list[str]]:
    """The tool outputs of ``messages``, and the arguments of their calls that succeeded."""
    arguments: dict[str, str] = {}
    outputs: list[str] = []
    state: list[str] = []
    for message in messages:
        if message.role is Role.ASSISTANT:
            for call in message.tool_calls or ():
                arguments[call.id] = call.function.arguments
        elif message.role is Role.TOOL:
            outputs.append(message.content)
            made = arguments.get(message.tool_call_id or "")
            if made is not None and _succeeded(message.content):
                state.append(made)
    return outputs, state


def _succeeded(content: str) -> bool:
    """Whether a tool message says its call succeeded (as the page reads it)."""
    try:
        value = json.loads(content)
    except ValueError:
        return True  # plain text output
    if not isinstance(value, dict):
        return True
    if value.get("status") in _FAILED:
        return False
    return not ("error" in value and "results" not in value)


# ------------------------------------------------------------------------- wording
def _described(found: Sequence[Claim]) -> str:
    return "; ".join(f"“{claim.text}”" for claim in found[:3])


def ask_to_run(
    found: Sequence[Claim],
    tools: Sequence[ToolSpec] = (),
    topology: Mapping[str, Any] | None = None,
    question: str = "",
) -> str:
    """What the model is told, once in a turn, when its answer states unseen output: the
    claims, and what to run, as concretely as the request allows: the offered ``tools``
    that say they run such a test (a ping) or show such state (a show command), and, for
    a test, where from and to, read from the claim (the lab's node names in
    ``topology``, else device-like names, and its address), else from the user's
    ``question`` ("Can PC1 ping PC2?" answered "The ping was successful."). A 1.5B model
    told only "run the tool that shows it" wrote the same invented answer again (issue
    40)."""
    tests = [claim for claim in found if claim.kind in _TESTS]
    named = [spec.name for spec in tools if _mentions(spec, "ping" if tests else "show")][:3]
    run = f"Call {' or '.join(named)}" if named else "Run the tool that shows it"
    what = "the device's show command"
    if tests:
        source, target = _ends(" ".join(c.text for c in tests), tests, topology)
        if question and not (source and target):
            asked_source, asked_target = _ends(question, (), topology)
            source = source or asked_source
            target = target or (asked_target if asked_target != source else "")
        what = "a ping" + (f" from {source}" if source else "")
        what += f" to {target}" if target else ""
    return (
        "Note from the copilot service, not from the user: your reply states what a device "
        f"printed or what a test showed ({_described(found)}), but no tool in this "
        "conversation produced that output, so your reply was not taken as the answer. "
        f"{run} now to run {what}, and answer from its result. If no tool you have can "
        "show it, answer again without stating that output, and say that it was not "
        "checked."
    )


def _ends(text: str, tests: Sequence[Claim], topology: Mapping[str, Any] | None) -> tuple[str, str]:
    """Where a test ``text`` tells of ran from and to: the device after "from" (else the
    first one named), and the first address claimed (``tests``; else the other device
    named)."""
    devices = _devices_in(text, topology)
    after_from = [d for d in devices if re.search(rf"\bfrom\s+{re.escape(d)}\b", text, _I)]
    source = (after_from or devices or [""])[0]
    claimed = [a for claim in tests for a in claim.addresses]
    address = next(iter(claimed or [m.group(0) for m in _IP_RE.finditer(text)]), "")
    target = address or next((d for d in devices if d != source), "")
    return source, target


#: What a tool's summary says when it runs a test, or shows a device's state.
_RUNS = {
    "ping": re.compile(r"\bping\b", _I),
    "show": re.compile(r"\bshow\b[ ,/)]*(?:ip\b|ping\b|commands?\b|diagnostic\b|,)", _I),
}


def _mentions(spec: ToolSpec, word: str) -> bool:
    """Whether ``spec``'s summary (its brief, else its description's first sentence)
    says it runs ``word`` (``ping``, or ``show`` commands)."""
    summary = spec.brief or spec.description.split(". ", 1)[0]
    return _RUNS[word].search(summary) is not None


def _devices_in(text: str, topology: Mapping[str, Any] | None) -> list[str]:
    """The lab's node names ``text`` names, in its order (without a lab: device-like
    names such as PC1, R2)."""
    nodes = topology.get("nodes") if topology else None
    names = [
        str(node["name"])
        for node in nodes or ()
        if isinstance(node, Mapping) and isinstance(node.get("name"), str) and node["name"]
    ]
    if not names:
        return list(dict.fromkeys(m.group(0) for m in _DEVICE_RE.finditer(text)))
    found = [
        (match.start(), name)
        for name in names
        if (match := re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)) is not None
    ]
    return [name for _, name in sorted(found)]


def unverified_note(found: Sequence[Claim], *, asked: bool) -> str:
    """The ``status`` message: the model was asked to run the tool (``asked``), or its
    final answer is marked unverified."""
    if asked:
        return (
            f"the answer stated device output no tool produced ({_described(found)}); "
            "the model was asked to run the tool"
        )
    return (
        f"this answer states device output no tool produced ({_described(found)}): it is unverified"
    )


def claim_dicts(found: Sequence[Claim]) -> list[dict[str, str]]:
    """The claims as reported."""
    return [claim.to_dict() for claim in found]
