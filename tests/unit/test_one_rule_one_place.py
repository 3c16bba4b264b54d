"""One rule, one place (issue 37): the user's limits under the operator's policy are
applied by the core's use cases only; an adapter hands them in with the request and maps
the core's refusal, it never decides a limit itself.

The rules are :class:`~copilot_core.policy.UserLimits`' methods that refuse, cap, floor
or judge, and :func:`~copilot_core.policy.check_llm_endpoint` (with the two names it is
called by in adapters). This test reads every
module of the three packages and finds each call of one of them: the core's calls must be
in the use cases named below, and the adapters' and entry points' calls must be exactly
the named exceptions (each with its reason), so that a new place fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("copilot_core", "adapters", "entrypoints")
RULES = frozenset(
    {
        "require_mode",
        "require_approval",
        "cap_mode",
        "floor_approval",
        "allows_mode",
        "allows_approval",
        "check_llm_endpoint",
        "check_endpoint",  # adapters.llm's: the endpoint rule with the host resolved
        "llm_endpoints",  # the web's LlmEndpointCheck, were it called there again
        "_endpoints",  # ModelSettings' EndpointCheck (that same rule, handed in)
    }
)

#: The core modules that apply the limits, one use case each.
CORE_PLACES = {
    "copilot_core/_limits.py",  # the rules themselves
    "copilot_core/_turn_start.py",  # a turn: its mode (refused when asked above, capped)
    "copilot_core/rollback.py",  # the user's undo
    "copilot_core/_toolgate.py",  # every tool call (the agent's, MCP's): mode and approval
    "copilot_core/_drills.py",  # a fault drill changes the lab
    "copilot_core/_model_settings.py",  # a user's stored LLM settings
    "copilot_core/_lab_build.py",  # a lab plan built on the user's click
}

#: What adapters may still call, and why (a new call anywhere else in them fails).
ADAPTER_PLACES = {
    # The LLM provider is the port that builds a user's model: the endpoint rule needs
    # the host resolved (I/O), so the core carries the limits to it (ModelOverrides).
    ("adapters/llm/_endpoints.py", "check_endpoint", "check_llm_endpoint"),
    ("adapters/llm/_provider.py", "SettingsLanguageModelProvider.for_user", "check_endpoint"),
}


def _calls(path: Path, root: Path = ROOT) -> set[tuple[str, str, str]]:
    """(module, enclosing function, rule) for each call of a rule in ``path``."""
    found: set[tuple[str, str, str]] = set()
    module = path.relative_to(root).as_posix()

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Call):
                function = child.func
                if isinstance(function, ast.Attribute):
                    name = function.attr
                elif isinstance(function, ast.Name):
                    name = function.id
                else:
                    name = ""
                if name in RULES:
                    found.add((module, ".".join(scope), name))
            visit(child, scope)

    visit(ast.parse(path.read_text(encoding="utf-8")), ())
    return found


def _every_call() -> set[tuple[str, str, str]]:
    return {
        call
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for call in _calls(path)
    }


def test_no_adapter_or_entry_point_decides_a_limit_itself() -> None:
    outside = {call for call in _every_call() if not call[0].startswith("copilot_core/")}

    assert outside == ADAPTER_PLACES


def test_the_core_applies_the_limits_only_in_its_use_cases() -> None:
    modules = {module for module, _, _ in _every_call() if module.startswith("copilot_core/")}

    assert modules <= CORE_PLACES, sorted(modules - CORE_PLACES)
    assert {
        "copilot_core/_turn_start.py",
        "copilot_core/rollback.py",
        "copilot_core/_model_settings.py",
    } <= modules
    assert "copilot_core/_toolgate.py" in modules


def test_the_scan_finds_a_call_in_an_adapter(tmp_path: Path) -> None:
    """The scan itself: a rule called in a handler is found, with where it is."""
    sample = tmp_path / "adapters" / "web" / "_sample.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "class C:\n    async def h(self, limits):\n        limits.cap_mode(None)\n",
        encoding="utf-8",
    )

    assert _calls(sample, tmp_path) == {("adapters/web/_sample.py", "C.h", "cap_mode")}
