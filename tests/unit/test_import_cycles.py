"""No import cycles among the modules of the code, imports under ``TYPE_CHECKING``
included (issue 37): a type both sides need lives in a values module both import.

The import-linter contract "No import cycles" (``acyclic_siblings``) finds cycles among
the modules and sub-packages of each package; this test also finds the ones it cannot
see, between a package's ``__init__`` and a module inside it, by reading the whole graph
module by module (grimp, the graph import-linter builds on).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("copilot_core", "adapters", "entrypoints")


def strongly_connected(
    nodes: Iterable[str], edges: Callable[[str], Iterable[str]]
) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or not
    (Tarjan's algorithm, iterative: no recursion limit on a deep graph)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(edges(step)))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_search_finds_a_cycle_and_only_a_cycle() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["d"]}
    assert strongly_connected(graph, lambda node: graph[node]) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others_type_checking_imports_included() -> None:
    for package in PACKAGES:  # the graph is this tree's, not an installed copy's
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        assert Path(spec.origin).resolve().is_relative_to(ROOT), spec.origin
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False, cache_dir=None)
    assert len(graph.modules) > 100  # the tree was found
    assert strongly_connected(graph.modules, graph.find_modules_directly_imported_by) == []
