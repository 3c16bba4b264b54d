from __future__ import annotations

import importlib
import pkgutil
import types

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
