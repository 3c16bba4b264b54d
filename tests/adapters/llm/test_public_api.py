"""The adapter's public API is exactly what its package exports."""

from __future__ import annotations

import importlib
import pkgutil

import adapters.llm


def test_exported_names_are_exactly_all() -> None:
    public = {name for name in dir(adapters.llm) if not name.startswith("_")}
    modules = {info.name for info in pkgutil.iter_modules(adapters.llm.__path__)}
    assert public - modules == set(adapters.llm.__all__)
    assert adapters.llm.__all__ == sorted(adapters.llm.__all__)


def test_every_module_declares_all() -> None:
    for info in pkgutil.iter_modules(adapters.llm.__path__):
        module = importlib.import_module(f"adapters.llm.{info.name}")
        assert hasattr(module, "__all__"), info.name
