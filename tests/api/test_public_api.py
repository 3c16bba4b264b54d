"""The packages' public names are exactly their ``__all__``, and every module has one."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import adapters.web
import entrypoints


@pytest.mark.parametrize("package", [adapters.web, entrypoints])
def test_every_module_declares_all(package: object) -> None:
    path = package.__path__  # type: ignore[attr-defined]
    for info in pkgutil.iter_modules(path):
        if info.name == "__main__":
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")  # type: ignore[attr-defined]
        assert hasattr(module, "__all__"), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_adapters_web_exports_exactly_its_all() -> None:
    public = {name for name in vars(adapters.web) if not name.startswith("_")}
    assert public - {"testing"} == set(adapters.web.__all__)
    assert adapters.web.__all__ == sorted(adapters.web.__all__)
