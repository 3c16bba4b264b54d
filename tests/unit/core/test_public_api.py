from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import copilot_core


def test_the_package_exports_exactly_its_all() -> None:
    public = {
        name
        for name, value in vars(copilot_core).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(copilot_core.__all__)
    assert list(copilot_core.__all__) == sorted(copilot_core.__all__)


def test_every_module_declares_all_and_defines_what_it_lists() -> None:
    for info in pkgutil.iter_modules(copilot_core.__path__):
        module = importlib.import_module(f"copilot_core.{info.name}")
        assert hasattr(module, "__all__"), info.name
        for name in module.__all__:
            assert hasattr(module, name), f"{info.name}.{name}"


PUBLIC_MODULES = {
    "bootstrap",
    "drills",
    "errors",
    "events",
    "faults",
    "intent",
    "labs",
    "policy",
    "ports",
    "rollback",
    "rules",
    "testing",
}


def test_only_the_topical_modules_are_public_the_rest_is_internal() -> None:
    names = {info.name for info in pkgutil.iter_modules(copilot_core.__path__)}
    assert {name for name in names if not name.startswith("_")} == PUBLIC_MODULES


def test_the_root_is_what_a_service_embedding_the_core_needs() -> None:
    # A small surface (issue 12): the facade, the runner and its log, the agent and its
    # gate, and the values they speak; the rest lives in the topical modules.
    assert 20 <= len(copilot_core.__all__) <= 32
    for name in ("ChatService", "TurnRunner", "SessionKey", "BuiltinAgent", "ToolGate"):
        assert name in copilot_core.__all__


def test_a_name_that_left_the_root_is_not_importable_from_it() -> None:
    # InMemoryTurnLog lives in copilot_core.bootstrap; the root keeps no alias (no outside
    # users at 0.1, so no deprecation path).
    assert "InMemoryTurnLog" not in copilot_core.__all__
    with pytest.raises(AttributeError, match="InMemoryTurnLog"):
        copilot_core.InMemoryTurnLog  # type: ignore[attr-defined]  # noqa: B018
