"""Each setting is declared once: a section of the service's settings *is* the settings
type of the component it configures (the type its constructor takes), and every field
of a section is declared by exactly one class, beside its component, never again in
``entrypoints``.

That each setting then reaches its object is tests/api/test_every_setting_reaches_its_object.py.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

import pytest

from adapters.gns3 import Gns3ToolExecutor
from adapters.mcp import McpEndpoint
from adapters.sqlite import SqliteCheckpointStore
from adapters.web import create_web_app
from copilot_core import BuiltinAgent, ChatService, TurnRunner
from entrypoints._resources import open_console_runner, open_gns3_client
from entrypoints.container import policy_book
from entrypoints.settings import SECTIONS, Settings, section_fields

#: Each section, and the components that take it whole (callable, parameter): the first
#: takes exactly the section's type, the others a type the section is (a base of it).
TAKERS: dict[str, list[tuple[Callable[..., Any], str]]] = {
    "gns3": [(open_gns3_client, "settings"), (Gns3ToolExecutor, "settings")],
    "console": [(open_console_runner, "settings")],
    "agent": [(BuiltinAgent, "settings")],
    "chat": [(ChatService, "settings"), (TurnRunner, "settings")],
    "web": [(create_web_app, "settings")],
    "store": [(SqliteCheckpointStore, "settings")],
    "mcp": [(McpEndpoint, "settings")],
    "policy": [(policy_book, "section")],
}


def _taken(taker: Callable[..., Any], parameter: str) -> type[Any]:
    """The settings type ``taker`` declares for ``parameter`` (``X | None`` is ``X``)."""
    function = taker.__init__ if isinstance(taker, type) else taker  # type: ignore[misc]
    annotation = inspect.signature(function).parameters[parameter].annotation
    if isinstance(annotation, str):
        annotation = eval(annotation, function.__globals__)  # our own annotations
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [arg for arg in get_args(annotation) if arg is not type(None)]
    assert isinstance(annotation, type), (taker, parameter, annotation)
    return annotation


def test_the_sections_are_the_settings_fields_that_are_models() -> None:
    assert set(TAKERS) == set(SECTIONS)
    for name, model in SECTIONS.items():
        assert Settings.model_fields[name].annotation is model, name


@pytest.mark.parametrize("section", list(TAKERS))
def test_a_section_is_the_type_its_component_takes(section: str) -> None:
    model = Settings.model_fields[section].annotation
    (first, parameter), *others = TAKERS[section]
    assert _taken(first, parameter) is model, f"{section}: {first.__qualname__}"
    for taker, name in others:
        assert issubclass(model, _taken(taker, name)), f"{section}: {taker.__qualname__}"


@pytest.mark.parametrize("section", list(TAKERS))
def test_every_field_of_a_section_is_declared_by_one_class_beside_its_component(
    section: str,
) -> None:
    model = Settings.model_fields[section].annotation
    assert isinstance(model, type)
    for field in section_fields(model):
        declaring = [cls for cls in model.__mro__ if field in vars(cls).get("__annotations__", {})]
        assert len(declaring) == 1, f"{section}.{field} is declared by {declaring}"
        (owner,) = declaring
        if section != "policy":  # the policy's component is the service itself
            assert not owner.__module__.startswith("entrypoints"), (section, field, owner)


def test_no_setting_is_declared_in_the_service_besides_its_own() -> None:
    """``entrypoints`` declares the top-level settings and the policy section; the
    names of the components' fields appear in no other model there."""
    import entrypoints._sections
    import entrypoints.settings

    component_fields = {
        field
        for name, model in SECTIONS.items()
        if name != "policy"
        for field in section_fields(model)
    }
    for module in (entrypoints.settings, entrypoints._sections):
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                own = set(vars(value).get("__annotations__", {}))
                if value is Settings:
                    own -= set(SECTIONS)
                assert not own & component_fields, (value, own & component_fields)
