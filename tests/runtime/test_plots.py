"""``dpjax.plots``: each picture draws what it says from released values (matplotlib, Agg)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import dpjax  # noqa: E402
from dpjax import plots  # noqa: E402


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
    assert len(texts) == 3 + 4                      # 3 splits, 4 subtrees of 2 leaves
    assert sum(" < " in t for t in texts) == 3
    assert "tree 2 (top 2 of 3 levels)" in ax.get_title()
    rules = dpjax.fit(X, y, method="rule_list", epsilon=1.0, bounds=(0, 1), key=0)
    with pytest.raises(ValueError, match="no dense trees"):
        plots.plot_tree(rules)


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
