"""``describe()`` reads clearly (issue 51): released leaf scores shown as scores, never summed into
what reads as record counts; no test that cannot split given the tests above it; boosted tables
on lines of at most 100 characters."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import make_feature_spec
from dpjax.data.describe import code_runs, wrap_items
from dpjax.trees.describe import (
    additive_terms,
    branches_open,
    class_scores_text,
    reachable_leaves,
    shown_tree,
    tree_lines,
)

COUNTS_LIKE = re.compile(r"\d+ leaves: \S+ \(")
"""The old summary of a subtree, ``512 leaves: 0 (0: 270, 1: 242)``: summed scores as counts."""


@pytest.fixture(scope="module")
def spec():
    """``x``: 8 bins of [0, 8) and a missing code; ``colour``: 3 categories, other, missing."""
    X = pd.DataFrame({"x": [1.0, 5.0], "colour": pd.Categorical(["red", "blue"])})
    return make_feature_spec(X, {"x": (0.0, 8.0), "colour": ["red", "green", "blue"]},
                             n_bins=8, missing=["x", "colour"])


def routed_leaves(feature, threshold, n_codes):
    """The leaves some code vector reaches, by routing every code vector."""
    depth = (len(feature) + 1).bit_length() - 1
    grid = np.array(list(itertools.product(*[range(int(k)) for k in n_codes])))
    node = np.zeros(len(grid), int)
    for _ in range(depth):
        node = 2 * node + 1 + (grid[np.arange(len(grid)), feature[node]] > threshold[node])
    reached = np.zeros(2**depth, bool)
    reached[node - (2**depth - 1)] = True
    return reached


def test_a_test_that_cannot_split_is_left_out(spec):
    """Root ``x < 4``; its yes branch tests ``x < 6`` (every code there is below: cannot split),
    its no branch ``x < 2`` (every code there is above): one split, two leaves."""
    feature, threshold = np.array([0, 0, 0]), np.array([3, 5, 1])
    yes, no = branches_open(feature, threshold, spec.n_codes)
    np.testing.assert_array_equal(yes, [True, True, False])
    np.testing.assert_array_equal(no, [True, False, True])
    np.testing.assert_array_equal(reachable_leaves(feature, threshold, spec.n_codes),
                                  [True, False, False, True])
    lines = tree_lines(feature, threshold, spec, lambda leaves: f"leaves {leaves.tolist()}")
    assert lines == ["if x < 4:", "  -> leaves [0]", "else:", "  -> leaves [3]"]


def test_is_not_missing_is_not_repeated_inside_itself(spec):
    """``colour is not missing`` (threshold 3: its 4 values left, missing right) twice on a
    path: the inner one is dropped for its open branch; a deeper subtree lists its reachable
    leaves only (under the root's no branch, ``x < 3`` then ``x < 1`` can only be false on its
    no side: leaves 4, 5 and 7)."""
    feature, threshold = np.array([1, 1, 0, 0, 0, 0, 0]), np.array([3, 3, 2, 0, 0, 0, 0])
    lines = tree_lines(feature, threshold, spec, lambda leaves: str(leaves.tolist()),
                       max_depth=1)
    assert lines == ["if colour is not missing:", "  -> 2 leaves: [0, 1]", "else:",
                     "  -> 3 leaves: [4, 5, 7]"]
    lines = tree_lines(feature, threshold, spec, lambda leaves: str(leaves.tolist()))
    assert sum("colour is not missing" in line for line in lines) == 1
    shown = shown_tree(feature, threshold, spec.n_codes, max_depth=3)
    assert shown.children[0].node == 3            # the inner colour test gave way to x < 1


@pytest.mark.parametrize("seed", range(20))
def test_reachable_leaves_are_the_routed_ones(spec, seed):
    """Random depth-4 structures on the two features (thresholds anywhere in their codes):
    the leaves :func:`reachable_leaves` finds are exactly those some code vector reaches."""
    rng = np.random.default_rng(seed)
    feature = rng.integers(0, 2, 15)
    threshold = rng.integers(0, spec.n_codes[feature] - 1)
    np.testing.assert_array_equal(reachable_leaves(feature, threshold, spec.n_codes),
                                  routed_leaves(feature, threshold, spec.n_codes))


def test_class_scores_are_shown_as_scores():
    classes = ("no", "yes")
    assert class_scores_text(np.array([[0.2, 0.8]]), classes) == "yes (scores no: 0.2, yes: 0.8)"
    text = class_scores_text(np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7]]), classes)
    assert text == "mean scores no: 0.467, yes: 0.533; leading no in 1, yes in 2"


def test_additive_terms_fold_single_feature_trees_into_the_table(spec):
    """A tree on ``x`` alone adds its leaf per code of ``x`` to the table's row; a tree on two
    features makes the score not additive."""
    table = np.zeros((2, 9))
    table[1, :6] = np.arange(6)
    feature, threshold = np.array([[0, 0, 0]]), np.array([[3, 5, 1]])
    leaf = np.array([[1.0, 2.0, 3.0, 4.0]])
    terms = additive_terms(table, feature, threshold, leaf, spec.n_codes)
    np.testing.assert_array_equal(terms[0], [1, 1, 1, 1, 4, 4, 4, 4, 4])
    np.testing.assert_array_equal(terms[1], table[1])
    assert additive_terms(table, np.array([[0, 1, 1]]), threshold, leaf, spec.n_codes) is None
    # a tree that cannot split (every code of x is <= 8) is a constant: its one reachable leaf
    # joins the first feature's term, so the terms still sum to F - F_0
    constant = additive_terms(table, feature, np.array([[8, 8, 8]]), leaf, spec.n_codes)
    np.testing.assert_array_equal(constant[0], np.ones(9))
    np.testing.assert_array_equal(constant[1], table[1])


def test_code_runs_merge_equal_bins_and_wrap(spec):
    texts = ["+0.1"] * 3 + ["-0.2"] * 5 + ["+0.3"]
    items = code_runs(spec, 0, texts)
    assert items == ["[0, 3) +0.1", "[3, 8] -0.2", "is missing +0.3"]
    lines = wrap_items("  + x:", [f"item {i:03d}" for i in range(40)], width=40)
    assert lines[0] == "  + x:" and all(len(line) <= 40 for line in lines)
    assert " ".join(lines[1:]).replace(";", "").split() == " ".join(
        f"item {i:03d}" for i in range(40)).split()


def path_conditions(text: str) -> list[tuple[list[tuple[str, bool]], str]]:
    """Each ``if`` line of a described tree with the conditions above it, ``(condition,
    taken)`` (``taken``: the yes branch)."""
    found, stack = [], []                       # stack: (indent, condition, taken)
    for line in text.splitlines():
        body = line.lstrip()
        indent = len(line) - len(body)
        stack = [s for s in stack if s[0] < indent or (s[0] == indent and body == "else:")]
        if body == "else:":
            indent_, condition, _ = stack.pop()
            stack.append((indent_, condition, False))
        elif body.startswith("if "):
            found.append(([(c, taken) for _, c, taken in stack], body[3:-1]))
            stack.append((indent, body[3:-1], True))
        elif body.startswith("tree ") or not body.startswith("->"):
            stack = []
    return found


def assert_every_test_splits(text: str) -> None:
    """No condition repeats on its path, and a numeric ``name < v`` lies strictly inside the
    interval the path's earlier tests on ``name`` leave."""
    checked = 0
    for above, condition in path_conditions(text):
        assert condition not in [c for c, _ in above], (above, condition)
        match = re.fullmatch(r"(\S+) < (\S+)", condition)
        if not match:
            continue
        name, value = match[1], float(match[2])
        lower, upper = -np.inf, np.inf
        for c, taken in above:
            earlier = re.fullmatch(rf"{re.escape(name)} < (\S+)", c)
            if earlier:
                lower, upper = ((lower, min(upper, float(earlier[1]))) if taken
                                else (max(lower, float(earlier[1])), upper))
        assert lower < value < upper, (above, condition)
        checked += 1
    assert checked > 0


@pytest.fixture(scope="module")
def banknote():
    X, y = dpjax.load_dataset("banknote")
    return X, y, dpjax.data.public_bounds("banknote")


@pytest.mark.slow
def test_random_trees_describe_scores_and_splits(banknote):
    """The issue's forest: no ``N leaves: class (counts)`` line, every shown test splits, and
    a subtree's mean scores are the mean of its reachable leaves' released scores."""
    X, y, bounds = banknote
    model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                      n_trees=3, depth=10)
    text = model.describe()
    assert not COUNTS_LIKE.search(text), text
    assert "mean scores 0: " in text and "; leading " in text
    assert_every_test_splits(text)
    # tree 1's first subtree: its reachable leaves' mean scores
    leaf, spec = np.asarray(model.params.leaf), model.spec
    first = shown_tree(np.asarray(model.params.feature[0]),
                       np.asarray(model.params.threshold[0]), spec.n_codes)
    while first.node >= 0:
        first = first.children[0]
    mean = leaf[0, first.leaves].mean(0)
    line = next(line for line in text.splitlines() if "->" in line)
    assert len(first.leaves) > 1, line
    assert f"{len(first.leaves)} leaves: mean scores 0: {mean[0]:.3g}, 1: {mean[1]:.3g}" in line


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (600, 3))
    return X, (X[:, 1] + 0.3 * X[:, 0] > 0.6).astype(int)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["cyclic", "random"])
def test_boosted_describe_lines_are_short(planted, shape):
    """32 bins per feature used to print on one line of some 760 characters: runs of equal
    moves merge into ranges and the items wrap at 100 characters."""
    X, y = planted
    model = dpjax.fit(X, y, method="boosted", epsilon=4.0, bounds=(0, 1), key=0, shape=shape,
                      n_trees=3)
    text = model.describe()
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert all(f"  {line}" in model.summary() for line in text.splitlines())
    if shape == "cyclic":
        assert "  + x1:" in text and "[0, " in text
    else:
        assert_every_test_splits(text)
        assert "    tree 1:" in text                      # indented under its title
