"""Docs that cannot drift: the README's Python blocks run as written, and the learner lists of
the README and of ``docs/design.md`` are the registry's."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from dpjax.learners import FAMILIES, registration

BUILT_IN = {name for names in FAMILIES.values() for name in names}
"""dpjax's own learners (a test's toy registered by another test file is not documented)."""

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DESIGN = (ROOT / "docs" / "design.md").read_text()


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) up to the next ``## `` heading."""
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def table_methods(text: str) -> set[str]:
    """The backticked names in the first cell of every row of the section's tables."""
    names: set[str] = set()
    for row in re.findall(r"^\| *(`[^|]*)\|", text, re.M):
        names |= set(re.findall(r"`([a-z_]+)`", row))
    return names


def test_readme_methods_table_is_the_registry():
    assert table_methods(section(README, "## Methods")) == BUILT_IN


def test_design_overview_table_is_the_registry():
    assert table_methods(section(DESIGN, "## Overview")) == BUILT_IN


def test_the_readme_names_every_estimator_and_config():
    for entry in map(registration, sorted(BUILT_IN)):
        assert f"`{entry.estimator}`" in README, entry.estimator
        assert f"`{entry.config.__name__}`" in README, entry.config.__name__


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_readme_has_python_blocks():
    assert len(python_blocks(README)) >= 5


@pytest.mark.slow
def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    """Every ```python block of the README, in order, in one namespace (as a reader would
    paste them), in a scratch directory (a block writes a model file)."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    for number, block in enumerate(python_blocks(README), 1):
        exec(compile(block, f"README.md python block {number}", "exec"), namespace)


def test_the_functional_page_runs():
    """``docs/functional.md``'s example (issue 50): one ``jax.jit`` that vmaps the pure fit
    over 8 shards and feeds the scores into further JAX code; every ledger within its
    budget (the block asserts it)."""
    blocks = python_blocks((ROOT / "docs" / "functional.md").read_text())
    assert blocks and "jax.vmap(f" in blocks[0] and "ledger.epsilon <= 1.0" in blocks[0]
    namespace: dict = {"__name__": "functional"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/functional.md python block {number}", "exec"), namespace)
    assert len(namespace["ledgers"]) == 8


DOTTED = re.compile(r"(?<![\w/.])(dpjax(?:\.[A-Za-z_]\w*)+)")
DOCUMENTED = ["README.md", "docs", "dpjax", "examples", "experiments", "benchmarks", "audits"]


def resolves(reference: str) -> bool:
    """Whether ``dpjax.a.b.c`` names a module, or an attribute of the longest module prefix."""
    parts = reference.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_dpjax_name_in_the_docs_and_docstrings_exists():
    """A moved or renamed module leaves no stale ``dpjax.x.y`` behind in the README, the design
    note, the docstrings, the examples, experiments, benchmarks or audits."""
    files = [path for entry in DOCUMENTED for path in
             ([ROOT / entry] if entry.endswith(".md") else sorted((ROOT / entry).rglob("*")))
             if path.suffix in (".py", ".md")]
    stale = {f"{path.relative_to(ROOT)}:{number}: {match}"
             for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for match in DOTTED.findall(line) if not resolves(match.rstrip("."))}
    assert not stale, sorted(stale)
