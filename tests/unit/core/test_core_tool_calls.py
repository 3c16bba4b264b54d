"""The core calls no tool by name: what it asks of the lab goes through typed ports
(``RestorePoints``, ``CheckProbes``, a call's ``ChangeSteps``); the tool executor is the
agent's, through the gate, and the gate alone runs a verified change.

An AST scan of every module of ``copilot_core`` for its calls into a tool source:

* a call of a ``ToolExecutor`` member (``execute``, ``assess``, ``change_steps``) or of
  the gate's way of
  running a call (``run``, ``call``, ``exchange``) on something named for tools or a gate;
* a tool call built with a tool's name written in the core (a string constant, or a
  module-level name bound to one, as the name of a ``ParsedToolCall``).

The set found must be exactly the gate's own calls into its executor and the agent's
tool path: a new use case that calls a tool by name (as ``Rollback`` did with
``restore_point`` and ``StandingIntent`` with ``verify_intent``) fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import copilot_core

CORE = Path(copilot_core.__file__).parent
#: The members through which a call reaches a tool source.
MEMBERS = frozenset({"execute", "assess", "change_steps", "run", "call", "exchange"})
#: What is allowed: the gate running its executor, and the agent running its tools (its
#: step's tools, which the tool step runs through the gate).
ALLOWED = {
    ("_toolgate", "self._tools.assess"),
    ("_toolgate", "self._tools.change_steps"),
    ("_toolgate", "self._tools.execute"),
    ("_toolgate", "self.exchange"),
    ("_agent", "self._tool_step.run"),
    ("_tool_step", "self._gate.run"),
    # The user's click on a shown plan: the tool source's own build call (LabBuildCalls,
    # never named here) through the gate, the click its approval.
    ("_lab_build", "self._gate.call"),
}


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level names bound to a string."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def _named_tool(call: ast.Call, constants: dict[str, str]) -> str | None:
    """The tool name written in the core that ``call`` builds a tool call of, if any."""
    func = ast.unparse(call.func)
    if func not in {"ParsedToolCall", "ParsedToolCall.parse"}:
        return None
    name = next((kw.value for kw in call.keywords if kw.arg == "name"), None)
    if name is None and len(call.args) > 1:
        name = call.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value
    if isinstance(name, ast.Name) and name.id in constants:
        return constants[name.id]
    return None


def calls_into_tools(source: str, module: str) -> set[tuple[str, str]]:
    """(module, what) for each call into a tool source in ``source``."""
    tree = ast.parse(source)
    constants = _string_constants(tree)
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        tool = _named_tool(node, constants)
        if tool is not None:
            found.add((module, f"tool {tool!r}"))
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MEMBERS:
            receiver = ast.unparse(func.value)
            named = "tool" in receiver.lower() or "gate" in receiver.lower()
            if named or (module == "_toolgate" and receiver == "self"):  # the gate's own
                found.add((module, ast.unparse(func)))
    return found


def core_calls_into_tools() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(CORE.glob("*.py")):
        found |= calls_into_tools(path.read_text(encoding="utf-8"), path.stem)
    return found


def test_the_core_calls_into_tools_only_through_the_gate_on_the_agents_path() -> None:
    assert core_calls_into_tools() == ALLOWED


#: The packages whose modules may run a verified change (only the gate does).
PACKAGES = (CORE, CORE.parent / "adapters", CORE.parent / "entrypoints")


def callers_of(function: str) -> set[str]:
    """The modules (paths under the repository) whose code calls ``function``."""
    found: set[str] = set()
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(function):
                    found.add(str(path.relative_to(CORE.parent)))
    return found


def test_the_gate_alone_runs_a_verified_change() -> None:
    # Not the tool source from inside ``execute`` (as the GNS3 executor did), nor any
    # other use case: the gate, with the steps its source gives it (a composite source
    # hands the question on to the source that offers the tool).
    assert callers_of("verify_change") == {"copilot_core/_toolgate.py"}
    assert callers_of("change_steps") == {
        "copilot_core/_toolgate.py",
        "adapters/mcp/_composite.py",
    }


def test_the_rollback_use_case_calls_no_tool() -> None:
    assert {entry for entry in core_calls_into_tools() if entry[0] == "rollback"} == set()


def test_the_scan_finds_a_tool_called_by_name_on_the_executor() -> None:
    # What Rollback and StandingIntent did before their ports: the scan must see it.
    source = (
        'VERIFY = "verify_intent"\n'
        "async def run(self, context):\n"
        '    call = ParsedToolCall.parse("id", VERIFY, "{}")\n'
        "    await self.tools.execute(call, context)\n"
        "    await self._gate.call(ParsedToolCall('id', 'restore_point', '{}', {}), context)\n"
    )
    assert calls_into_tools(source, "use_case") == {
        ("use_case", "tool 'verify_intent'"),
        ("use_case", "tool 'restore_point'"),
        ("use_case", "self.tools.execute"),
        ("use_case", "self._gate.call"),
    }
