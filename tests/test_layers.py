"""The package's layers depend downward only: no import cycle anywhere, counting imports
made inside functions (``if TYPE_CHECKING:`` imports do not count), and the core imports
nothing above it. Imports are read with ``ast``, not by running the modules."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "src" / "chainrule"

# The core: state, tensor, table, node, dispatch, engine and the rule-namespace registry.
# Higher layers (ops, linalg, autograd, transforms, checks) register into it.
CORE = {"chainrule._state", "chainrule._tensor", "chainrule._table", "chainrule._node",
        "chainrule._dual", "chainrule._ns", "chainrule._dispatch", "chainrule._engine",
        "chainrule.backend"}


def _modules():
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _type_checking_nodes(tree):
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    skip.update(id(n) for n in ast.walk(stmt))
    return skip


def imports_of(module, path, mods):
    """The chainrule modules ``module`` imports (anywhere in its code)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "chainrule"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "chainrule":
                continue
            names = []
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{target}.{alias.name}"
                names.append(sub if sub in mods else target)
        else:
            continue
        found.update(n for n in names if n in mods and n != module)
    return found


@functools.lru_cache(maxsize=None)
def import_graph():
    mods = _modules()
    return {m: imports_of(m, p, mods) for m, p in mods.items()}


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert len(graph) > 40  # every module was read
    found = cycles(graph)
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_core_imports_nothing_above_it():
    graph = import_graph()
    upward = {m: sorted(graph[m] - CORE) for m in CORE if m in graph and graph[m] - CORE}
    assert not upward, f"core modules importing higher layers: {upward}"


def test_the_checker_finds_a_cycle_and_ignores_type_checking(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from chainrule import x\n"
           "def f():\n    from chainrule import y\n")
    path = tmp_path / "m.py"
    path.write_text(src)
    mods = {"chainrule.x": None, "chainrule.y": None, "chainrule.m": path}
    assert imports_of("chainrule.m", path, mods) == {"chainrule.y"}


@pytest.mark.parametrize("module", sorted(CORE - {"chainrule.backend"}))
def test_core_modules_exist(module):
    assert module in import_graph()
