"""``dpjax.plots``: each picture draws what it says from released values (matplotlib, Agg)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import StepPatch  # noqa: E402

import dpjax  # noqa: E402
from dpjax import plots  # noqa: E402
from dpjax.trees.describe import shown_tree  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (400, 3))
    return X, (X[:, 1] > 0.5).astype(int)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.slow
def test_plot_tree_draws_every_split_and_leaf_box(data):
    X, y = data
    model = dpjax.fit(X, y, method="random_trees", n_trees=2, depth=3, epsilon=1.0,
                      bounds=(0, 1), key=0)
    ax = plots.plot_tree(model, tree=1, max_depth=2)
    texts = [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None]
    shown = shown_tree(np.asarray(model.params.feature[1]),
                       np.asarray(model.params.threshold[1]), model.spec.n_codes, 2)
    splits, groups = count_shown(shown)
    assert len(texts) == splits + groups and splits >= 1  # the tests that split, the subtrees
    assert sum(" < " in t for t in texts) == splits
    assert not any(re.search(r"leaves: \S+ \(", t) for t in texts)   # scores, not counts
    assert "tree 2 (down to 2 tests that split, of 3 levels)" in ax.get_title()
    rules = dpjax.fit(X, y, method="rule_list", epsilon=1.0, bounds=(0, 1), key=0)
    with pytest.raises(ValueError, match="no dense trees"):
        plots.plot_tree(rules)


def count_shown(shown):
    """``(splits, leaf groups)`` of a :func:`~dpjax.trees.describe.shown_tree`."""
    if shown.node < 0:
        return 0, 1
    counts = [count_shown(child) for child in shown.children]
    return 1 + sum(c[0] for c in counts), sum(c[1] for c in counts)


def test_plot_tree_leaves_out_a_test_that_cannot_split():
    """A hand-made forest: the root's yes branch repeats a test that cannot split there, so
    the picture has one split box and two leaf boxes."""
    X = np.linspace(0, 1, 64)[:, None]
    model = dpjax.fit(X, (X[:, 0] > 0.5).astype(int), method="random_trees", n_trees=1,
                      depth=2, epsilon=None, bounds=(0, 1), key=0)
    model = dataclasses.replace(model, params=model.params.replace(
        feature=np.zeros((1, 3), np.int32), threshold=np.array([[3, 5, 1]], np.int32)))
    ax = plots.plot_tree(model)
    texts = [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None]
    assert len(texts) == 3 and sum(" < " in t for t in texts) == 1
    lines = [line.strip() for line in model.describe().splitlines()]
    assert sum(line.startswith("if ") for line in lines) == 1 and "if x0 < 0.4:" in lines


@pytest.fixture(scope="module")
def cyclic(data):
    X, y = data
    return dpjax.fit(X, y, method="boosted", shape="cyclic", epsilon=2.0, bounds=(0, 1), key=0)


def bin_centres(model, feature):
    edges = np.concatenate([[model.spec.lower[feature]], model.spec.bin_edges(feature),
                            [model.spec.upper[feature]]])
    return (edges[:-1] + edges[1:]) / 2


@pytest.mark.slow
def test_plot_shape_of_an_additive_model_is_its_exact_term(data, cyclic):
    """Moving one feature of a row from bin a to bin b moves the decision function by the
    curve's step from a to b, whatever the other features (the model is additive)."""
    X, _ = data
    ax = plots.plot_shape(cyclic, "x1")
    (stairs,) = [p for p in ax.patches if isinstance(p, StepPatch)]
    curve = stairs.get_data().values
    shape = plots.shape_of(cyclic, 1)
    assert shape.exact and shape.feature == "x1" and len(shape.labels) == len(curve)
    np.testing.assert_allclose(curve, shape.values)
    centres = bin_centres(cyclic, 1)
    for row in X[:3]:
        rows = np.repeat(row[None], len(centres), 0)
        rows[:, 1] = centres
        moved = cyclic.decision_function(rows)
        np.testing.assert_allclose(moved - moved[0], curve - curve[0], atol=1e-5)
    assert np.ptp(curve) > 0.1                       # x1 carries the label
    with_rows = plots.shape_of(cyclic, 1, X)        # rows add nothing to an exact term
    assert with_rows.exact and np.array_equal(with_rows.values, shape.values)
    axes = plots.plot_shape(cyclic, [0, "x1", 2])
    assert len(axes) == 3 and all("boosted: x" in a.get_title() for a in axes)
    with pytest.raises(ValueError, match="plot_shape"):
        plots.plot_tree(cyclic)


@pytest.mark.slow
def test_plot_shape_of_stumps_is_exact(data):
    """Boosted trees of depth 1 each split on one feature: the model is additive, its curve
    exact without rows."""
    X, y = data
    model = dpjax.fit(X, y, method="boosted", shape="random", n_trees=4, depth=1,
                      epsilon=2.0, bounds=(0, 1), key=0)
    shape = plots.shape_of(model, "x1")
    assert shape.exact
    rows = np.repeat(X[:1], len(shape.values), 0)
    rows[:, 1] = bin_centres(model, 1)
    moved = model.decision_function(rows)
    np.testing.assert_allclose(moved - moved[0], shape.values - shape.values[0], atol=1e-5)


@pytest.mark.slow
def test_plot_shape_of_a_tree_model_needs_rows(data):
    """Trees that split on several features have no exact per-feature curve: without X a
    clear error, with X the partial dependence (the mean decision function with the feature
    set to each bin)."""
    X, y = data
    model = dpjax.fit(X, y, method="boosted", shape="random", n_trees=3, epsilon=2.0,
                      bounds=(0, 1), key=0)
    with pytest.raises(ValueError, match="pass X"):
        plots.plot_shape(model, 1)
    ax = plots.plot_shape(model, 1, X[:50])
    assert "partial dependence" in ax.get_title()
    curve = [p for p in ax.patches if isinstance(p, StepPatch)][0].get_data().values
    expected = []
    for centre in bin_centres(model, 1):
        rows = X[:50].copy()
        rows[:, 1] = centre
        expected.append(model.decision_function(rows).mean())
    np.testing.assert_allclose(curve, expected, atol=1e-5)
    forest = dpjax.fit(X, y, method="random_trees", n_trees=2, depth=3, epsilon=1.0,
                       bounds=(0, 1), key=0)
    shape = plots.shape_of(forest, "x1", X)
    assert not shape.exact and np.all((shape.values >= 0) & (shape.values <= 1))


@pytest.mark.slow
def test_plot_importances_and_ledger(data):
    X, y = data
    model = dpjax.fit(X, y, method="boosted", epsilon=2.0, bounds=(0, 1), key=0)
    ax = plots.plot_importances(model)
    widths = sorted(p.get_width() for p in ax.patches)
    np.testing.assert_allclose(widths, np.sort(model.feature_importances()))
    ax = plots.plot_ledger(model.privacy)
    bars = [p for p in ax.patches]
    assert len(bars) == len(model.privacy.entries)
    assert sum(p.get_width() for p in bars) == pytest.approx(model.privacy.basic_epsilon)


@pytest.mark.slow
def test_plot_sweep_one_line_per_other_setting(data):
    X, y = data
    sweep = dpjax.sweep(X, y, method="boosted", epsilon=[0.5, 2.0], learning_rate=[0.5, 1.0],
                        seeds=2, bounds=(0, 1))
    ax = plots.plot_sweep(sweep, X, y)
    assert len(ax.lines) == 2
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [0.5, 2.0])
    accuracy = np.asarray(sweep.score(X, y))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), accuracy[[0, 2]].mean(1))
