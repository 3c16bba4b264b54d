"""The GNS3 adapter's sub-packages (issue 37): each face exports
exactly its ``__all__``, names its own modules or the other faces define."""

from __future__ import annotations

import importlib
import types

import pytest

SUB_PACKAGES = ("console", "drills", "lab", "model", "rest", "restore", "tools")


@pytest.mark.parametrize("name", SUB_PACKAGES)
def test_each_face_exports_exactly_its_all(name: str) -> None:
    face = importlib.import_module(f"adapters.gns3.{name}")
    public = {
        attribute
        for attribute in dir(face)
        if not attribute.startswith("_")
        and not isinstance(getattr(face, attribute), types.ModuleType)
    }
    assert public == set(face.__all__)
    assert len(set(face.__all__)) == len(face.__all__)


@pytest.mark.parametrize("name", SUB_PACKAGES)
def test_a_face_takes_its_names_from_its_own_modules_or_a_face(name: str) -> None:
    face = importlib.import_module(f"adapters.gns3.{name}")
    for attribute in face.__all__:
        home = getattr(getattr(face, attribute), "__module__", None)
        if home is None or not home.startswith("adapters.gns3."):
            continue  # a constant, or a name the core defines
        assert home.startswith(f"adapters.gns3.{name}.") or home.split(".")[2] in SUB_PACKAGES
