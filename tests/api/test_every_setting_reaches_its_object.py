"""Every documented setting, changed alone, reaches an object the service runs with.

For each setting of :class:`entrypoints.Settings` (the ones ``docs/configuration.md``
lists, one ``COPILOT_*`` variable each), the container is built with that one setting
set to a value found nowhere else (a "sentinel"), its resources are opened, and the
object graph of everything it built is searched for the sentinel. A setting that is
parsed and then ignored is not found, and the test names it.

A few settings configure what is not an object of the container (the address the
server listens on, logging) or need a service the container connects to; they are
listed in ``ELSEWHERE`` with the test that covers them, and that list is checked too.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import pytest
from dependency_injector import providers
from pydantic.fields import FieldInfo

from entrypoints import Settings, build_container
from entrypoints.container import resolve
from entrypoints.settings import _fields

#: Settings that do not configure an object of the container, and where they are tested.
ELSEWHERE: dict[str, str] = {
    "host": "the server's bind address (tests/api/test_entrypoints.py serves on it)",
    "port": "the server's port (tests/api/test_entrypoints.py)",
    "data_dir": "where the SQLite files go (tests/api/test_settings_and_container.py)",
    "skills_dir": "a folder of skills (tests/api/test_settings_and_container.py)",
    "log_level": "logging set-up (tests/api/test_entrypoints.py)",
    "log_format": "logging set-up (tests/api/test_entrypoints.py)",
    "database_url": "PostgreSQL instead of SQLite (tests/api/test_postgres_service.py)",
    "database_schema": "PostgreSQL's schema (tests/api/test_postgres_service.py)",
    "redis_url": "Redis turn log (tests/api/test_replicas_service.py)",
    "redis_prefix": "Redis keys' prefix (tests/api/test_replicas_service.py)",
    "turn_lease": "with Redis only: the turn lease (tests/api/test_replicas_service.py)",
    "gns3__url": "the GNS3 server (every API test points it at its GNS3)",
    "gns3__username": "signing in to GNS3 (tests/api/test_account.py)",
    "gns3__deleted_projects": "the project watcher's (tests/e2e/test_project_lifecycle.py)",
    "policy__file": "the operator's policy file (tests/unit/core/test_operator_policy.py)",
    "agent__tool_argument_limits": "per-tool limits (a mapping: no single sentinel)",
    "web__cors_origins": "CORS (a list: tests/api/test_validation_and_auth.py)",
}

#: What a setting needs beside it to have an effect (both runs get it).
NEEDS: dict[str, dict[str, str]] = {
    # A user's groups are cached by the policy, which exists only once something is set.
    "policy__groups_cache_ttl": {"COPILOT_POLICY__DENY_PRIVATE_LLM_ENDPOINTS": "true"},
}

_INT, _FLOAT = 7919, 7.919  # found nowhere else in a freshly built service


def _leaves() -> Iterator[tuple[str, str, FieldInfo]]:
    for section, name, info in _fields():
        dest = f"{section}__{name}" if section else name
        yield dest, name, info


def _upper_bound(info: FieldInfo) -> float | None:
    for item in info.metadata:
        if isinstance(item, annotated_types.Le):
            return float(item.le)  # type: ignore[arg-type]
    return None


def _sentinel(info: FieldInfo) -> tuple[str, Any]:
    """The variable's text and the value that text should become somewhere."""
    annotation = info.annotation
    args = [a for a in get_args(annotation) if a is not type(None)]
    base = (
        args[0] if get_origin(annotation) in (types.UnionType,) and len(args) == 1 else annotation
    )
    if base is bool:
        return ("false" if info.default else "true"), (not info.default)
    if get_origin(base) is Literal:
        other = next(choice for choice in get_args(base) if choice != info.default)
        return str(other), other
    if base is int:
        value = _INT
        bound = _upper_bound(info)
        if bound is not None and value > bound:
            value = int(bound) - 13
        return str(value), value
    if base is float:
        return str(_FLOAT), _FLOAT
    if base is str and info.metadata:  # a URL (its pattern): one no other setting names
        return "http://sentinel-7919.example:7919", "http://sentinel-7919.example:7919"
    raise AssertionError(f"no sentinel for a setting of type {annotation!r}")


def _objects(roots: Iterable[Any], limit: int = 200_000) -> Iterator[tuple[str, Any]]:
    """Every value reachable from ``roots`` (attributes, slots, items), with its path."""
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [(f"<{type(root).__name__}>", root) for root in roots]
    while stack and len(seen) < limit:
        path, value = stack.pop()
        if isinstance(value, str | bytes | int | float | type(None)):
            yield path, value  # shared objects (True, small ints): every place counts
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        yield path, value
        if isinstance(value, types.ModuleType | type | types.FunctionType):
            continue
        if isinstance(value, dict):
            stack.extend((f"{path}[{key!r}]", item) for key, item in list(value.items())[:1000])
            continue
        if isinstance(value, list | tuple | set | frozenset):
            stack.extend((f"{path}[{n}]", item) for n, item in enumerate(list(value)[:1000]))
            continue
        stack.extend((f"{path}.{key}", item) for key, item in _attributes(value))


def _attributes(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, types.MethodType):
        yield "__self__", value.__self__
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        yield from list(state.items())
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()) or ():
            if isinstance(slot, str) and slot != "__dict__":
                try:
                    yield slot, getattr(value, slot)
                except AttributeError:
                    continue


def _found(value: Any, name: str, graph: Iterable[tuple[str, Any]]) -> list[str]:
    hits = []
    for path, item in graph:
        if type(item) is not type(value) or item != value:
            continue
        # A flipped boolean is everywhere: it counts only under the setting's own name.
        if isinstance(value, bool) and not path.rsplit(".", 1)[-1].lstrip("_").endswith(name):
            continue
        hits.append(path)
    return hits


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("COPILOT_GNS3__URL", "http://127.0.0.1:9")  # nothing answers there


async def _graph() -> list[tuple[str, Any]]:
    container = build_container(Settings())
    await container.init_resources()  # type: ignore[misc]
    try:
        roots: list[Any] = [await resolve(container.web.collaborators())]
        provider: providers.Provider[Any]
        for provider in container.traverse(types=[providers.Singleton, providers.Resource]):
            roots.append(await resolve(provider()))
        return list(_objects(roots))
    finally:
        await container.shutdown_resources()  # type: ignore[misc]


def test_the_lists_of_exceptions_name_real_settings() -> None:
    settings = {dest for dest, _, _ in _leaves()}
    assert set(ELSEWHERE) <= settings
    assert set(NEEDS) <= settings - set(ELSEWHERE)


@pytest.mark.parametrize(
    ("dest", "name", "info"),
    [leaf for leaf in _leaves() if leaf[0] not in ELSEWHERE],
    ids=lambda value: value if isinstance(value, str) else "",
)
async def test_a_setting_changed_alone_reaches_an_object_of_the_service(
    monkeypatch: pytest.MonkeyPatch, dest: str, name: str, info: FieldInfo
) -> None:
    text, value = _sentinel(info)
    for variable, needed in NEEDS.get(dest, {}).items():
        monkeypatch.setenv(variable, needed)
    before = _found(value, name, await _graph())
    monkeypatch.setenv(f"COPILOT_{dest.upper()}", text)
    after = _found(value, name, await _graph())
    assert len(after) > len(before), (
        f"COPILOT_{dest.upper()}={text} reached no object of the service "
        f"(the value is found at {before or 'no place'} with or without it)"
    )
