"""The adapter's public API is exactly what its package exports, and its classes
satisfy the core's ports."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import adapters.postgres
from adapters.postgres import PostgresCheckpointStore, PostgresLLMSettingsStore
from copilot_core.ports import CheckpointStore, LLMSettingsStore


def test_exported_names_are_exactly_all() -> None:
    public = {name for name in dir(adapters.postgres) if not name.startswith("_")}
    modules = {info.name for info in pkgutil.iter_modules(adapters.postgres.__path__)}
    assert public - modules == set(adapters.postgres.__all__)


def test_every_module_declares_all() -> None:
    for info in pkgutil.iter_modules(adapters.postgres.__path__):
        module = importlib.import_module(f"adapters.postgres.{info.name}")
        assert hasattr(module, "__all__"), info.name


def _shape(function: object) -> list[tuple[str, object, object]]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in parameters]


@pytest.mark.parametrize(
    ("port", "adapter"),
    [(CheckpointStore, PostgresCheckpointStore), (LLMSettingsStore, PostgresLLMSettingsStore)],
)
def test_adapters_have_every_method_of_their_port_with_its_parameters(
    port: type, adapter: type
) -> None:
    members = [
        name
        for name, value in vars(port).items()
        if inspect.isfunction(value) and not name.startswith("_")
    ]
    assert members
    for name in members:
        ours = getattr(adapter, name)
        assert inspect.iscoroutinefunction(ours), name
        assert _shape(ours) == _shape(getattr(port, name)), name
