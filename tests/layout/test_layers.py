"""The package layout holds (``docs/design.md``, "Layout"): imports run downwards only, there is
no import cycle, the families do not import each other, and the runtime is generic over the
registry.

Layers, lowest first: ``privacy`` and ``data`` (nothing else of dpjax); ``mechanisms`` and
``losses``; ``trees``; the learner contract ``learner``; the families (``ensembles.<family>``,
``rules``); the runtime (everything else). An import counts wherever it is written (module level
or inside a function), except under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dpjax"
LAYERS = {"privacy": 0, "data": 0, "mechanisms": 1, "losses": 1, "trees": 2, "learner": 3,
          "ensembles": 4, "rules": 4}
RUNTIME = 5
REGISTRATION = "dpjax.learners"
"""The one runtime module that names the built-in families (importing them registers them)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_by_name(node: ast.AST) -> str | None:
    """The module of an ``import_module("dpjax...")`` or ``importlib.import_module(...)`` call
    whose argument is a string constant (an f-string or a variable is not resolved)."""
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    argument = node.args[0]
    if called == "import_module" and isinstance(argument, ast.Constant) and isinstance(
            argument.value, str) and argument.value.split(".")[0] == "dpjax":
        return argument.value
    return None


def imports(name: str, source: str | None = None) -> set[str]:
    """The dpjax modules ``name`` imports (``from pkg import sub`` counts as ``pkg.sub`` when
    ``sub`` is a module; ``import_module("dpjax.x")`` counts as ``dpjax.x``), outside
    ``TYPE_CHECKING`` blocks. ``source`` replaces the module's file (a test's variant)."""
    tree = ast.parse(MODULES[name].read_text() if source is None else source)
    skipped = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
               and _type_checking(block) for n in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        by_name = _imported_by_name(node)
        if by_name is not None:
            found.add(by_name)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "dpjax"}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] != "dpjax":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found - {name}


GRAPH = {name: imports(name) for name in MODULES}


def layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.get(parts[1], RUNTIME) if len(parts) > 1 else RUNTIME


def family(name: str) -> str | None:
    """The family a module belongs to: ``dpjax.ensembles.<family>`` (a folder) or
    ``dpjax.rules``."""
    parts = name.split(".")
    if parts[:2] == ["dpjax", "ensembles"] and len(parts) > 2:
        return ".".join(parts[:3])
    return "dpjax.rules" if parts[:2] == ["dpjax", "rules"] else None


def test_every_module_is_seen():
    assert "dpjax.privacy.composition" in GRAPH and "dpjax.ensembles.malpha.tree" in GRAPH
    assert sum(len(edges) for edges in GRAPH.values()) > 100


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_run_downwards(name):
    """No module imports one of a higher layer; privacy and data import nothing else of
    dpjax."""
    upward = sorted(m for m in GRAPH[name] if layer(m) > layer(name))
    assert not upward, f"{name} (layer {layer(name)}) imports {upward}"
    if layer(name) == 0:
        top = name.split(".")[1]
        assert all(m.split(".")[1] == top for m in GRAPH[name]), GRAPH[name]


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if family(n)))
def test_families_do_not_import_each_other(name):
    others = sorted(m for m in GRAPH[name] if family(m) not in (None, family(name)))
    assert not others, f"{name} imports another family: {others}"


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if layer(n) == RUNTIME))
def test_the_runtime_names_no_learner(name):
    """Runtime modules reach the learners through the registry only (``dpjax.learners`` is the
    one list of built-in families)."""
    if name == REGISTRATION:
        return
    named = sorted(m for m in GRAPH[name] if family(m) or m == "dpjax.ensembles")
    assert not named, f"{name} imports learners directly: {named}"


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of ``graph`` (its modules in order, the first repeated last), if any."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            found = visit(nxt) if nxt not in state else None
            if found:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        found = visit(node) if node not in state else None
        if found:
            return found
    return None


def test_no_import_cycle():
    found = cycle(GRAPH)
    assert found is None, "import cycle: " + " -> ".join(found or ())


def test_an_import_module_string_counts_as_an_import():
    """The cycle that ``learner.py`` once had through ``importlib.import_module("dpjax.
    learners")`` (inside ``register``) is seen: the same source with that call is a cycle."""
    variant = MODULES["dpjax.learner"].read_text() + (
        '\n\ndef _load():\n    import importlib\n'
        '    return importlib.import_module("dpjax.learners")\n')
    graph = {**GRAPH, "dpjax.learner": imports("dpjax.learner", variant)}
    assert "dpjax.learners" in graph["dpjax.learner"]
    assert cycle(graph) is not None and cycle(GRAPH) is None
