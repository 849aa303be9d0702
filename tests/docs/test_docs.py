"""Docs that cannot drift (``docs/testing.md#the-docs-tests``): the Python blocks of the README
and of every page under ``docs/`` run as written, the learner lists are the registry's, every
``dpjax.x.y`` named exists and every relative link points at a file (and heading) that exists.

A page's blocks run in order in one namespace, as a reader pastes them. The fence's info string
says how: ```` ```python ```` runs in the fast tier, ```` ```python slow ```` puts the page's test
in the full tier, ```` ```python no-run ```` is shown as Python and never run (a fragment, a
multi-host launch: keep them rare)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from dpjax.learners import FAMILIES, registration

BUILT_IN = {name for names in FAMILIES.values() for name in names}
"""dpjax's own learners (a test's toy registered by another test file is not documented)."""

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DESIGN = (ROOT / "docs" / "design.md").read_text()
LEARNER_PAGES = ROOT / "docs" / "learners"
SPECS = ROOT / "docs" / "specs"
"""The papers' specs: reference text about the papers, not dpjax's API; their blocks do not run."""

PAGES = [ROOT / "README.md"] + sorted(
    path for path in (ROOT / "docs").rglob("*.md") if SPECS not in path.parents)
"""Every page whose Python blocks run."""

FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
TAGS = {"", "slow", "no-run"}


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) up to the next ``## `` heading."""
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def table_methods(text: str) -> set[str]:
    """The backticked names in the first cell of every row of the section's tables (a name
    may be a link: ``[`boosted`](docs/learners/boosted.md)``)."""
    names: set[str] = set()
    for row in re.findall(r"^\| *(\[?`[^|]*)\|", text, re.M):
        names |= set(re.findall(r"`([a-z_]+)`", row))
    return names


def fenced(text: str) -> list[tuple[str, str]]:
    """Every ```` ```python ```` block as ``(tag, code)``."""
    return [(tag.strip(), code) for tag, code in FENCE.findall(text)]


def python_blocks(text: str) -> list[str]:
    """The blocks that run."""
    return [code for tag, code in fenced(text) if tag != "no-run"]


def test_readme_learner_table_is_the_registry():
    table = section(README, "## Learners")
    assert table_methods(table) == BUILT_IN
    for method in BUILT_IN:   # each row links to the learner's page
        assert f"[`{method}`](docs/learners/{method}.md)" in table, method


def test_design_overview_table_is_the_registry():
    assert table_methods(section(DESIGN, "## Overview")) == BUILT_IN


def test_one_page_per_learner():
    """``docs/learners/`` holds exactly the built-in learners' pages, each naming its config
    class and its scikit-learn estimator, with the sections every page has."""
    assert {path.stem for path in LEARNER_PAGES.glob("*.md")} == BUILT_IN
    for method in sorted(BUILT_IN):
        page = (LEARNER_PAGES / f"{method}.md").read_text()
        entry = registration(method)
        assert page.startswith(f"# `{method}`"), method
        assert f"`{entry.estimator}`" in page, (method, entry.estimator)
        assert f"`dpjax.learners.{entry.config.__name__}`" in page, (method, entry.config)
        for heading in ("## The ledger", "## When to choose it", "## Measured"):
            assert f"\n{heading}\n" in page, (method, heading)
        assert f'method="{method}"' in "".join(python_blocks(page)), method


def test_every_python_fence_has_a_known_tag():
    bad = [(name(path), tag) for path in PAGES for tag, _ in fenced(path.read_text())
           if tag not in TAGS]
    assert not bad, bad


def test_the_readme_has_python_blocks():
    assert len(python_blocks(README)) >= 5


def page_params() -> list:
    """One test per page with Python blocks to run, in the full tier if a block says ``slow``."""
    params = []
    for path in PAGES:
        blocks = fenced(path.read_text())
        if any(tag != "no-run" for tag, _ in blocks):
            marks = [pytest.mark.slow] if any(tag == "slow" for tag, _ in blocks) else []
            params.append(pytest.param(path, marks=marks, id=name(path)))
    return params


CHECKS = {"docs/functional.md": lambda namespace: len(namespace["ledgers"]) == 8}
"""What a page's namespace holds once its blocks have run, beyond their own asserts."""


@pytest.mark.parametrize("path", page_params())
def test_page_python_blocks_run_in_order(path, tmp_path, monkeypatch):
    """Every running block of the page, in order, in one namespace (as a reader would paste
    them), in a scratch directory (a block may write a model file)."""
    text = path.read_text()
    if "matplotlib" in text or "plots" in text:
        pytest.importorskip("matplotlib")
        monkeypatch.setenv("MPLBACKEND", "Agg")
    if "sklearn" in text:
        pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs"}
    try:
        for number, block in enumerate(python_blocks(text), 1):
            exec(compile(block, f"{name(path)} python block {number}", "exec"), namespace)
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    assert CHECKS.get(name(path), lambda _: True)(namespace)


def test_the_functional_page_shows_a_vmapped_fit():
    """``docs/functional.md``'s example (issue 50): one ``jax.jit`` that vmaps the pure fit
    over 8 shards and feeds the scores into further JAX code; every ledger within its
    budget (the block asserts it; the page's run checks the 8 ledgers)."""
    blocks = python_blocks((ROOT / "docs" / "functional.md").read_text())
    assert blocks and "jax.vmap(f" in blocks[0] and "ledger.epsilon <= 1.0" in blocks[0]


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
            for part in parts[cut:]:
                target = getattr(target, part)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_dpjax_name_in_the_docs_and_docstrings_exists():
    """A moved or renamed module leaves no stale ``dpjax.x.y`` behind in the README, the docs,
    the docstrings, the examples, experiments, benchmarks or audits."""
    files = [path for entry in DOCUMENTED for path in
             ([ROOT / entry] if entry.endswith(".md") else sorted((ROOT / entry).rglob("*")))
             if path.suffix in (".py", ".md")]
    stale = {f"{path.relative_to(ROOT)}:{number}: {match}"
             for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for match in DOTTED.findall(line) if not resolves(match.rstrip("."))}
    assert not stale, sorted(stale)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a page (lower case, punctuation dropped, spaces to
    hyphens; a repeated heading gets ``-1``, ``-2``, ...) and its explicit ``<a id=...>``."""
    found: set[str] = set(re.findall(r'<a id="([^"]+)"', text))
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def test_every_relative_link_resolves():
    """Each relative link of the README and the docs names a file or folder that exists, and a
    ``#heading`` of a page that has it."""
    broken = []
    for path in PAGES:
        text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue                       # https:, mailto:
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            if not resolved.exists():
                broken.append(f"{name(path)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(
                    resolved.read_text()):
                broken.append(f"{name(path)}: {target} (no such heading)")
    assert not broken, broken
