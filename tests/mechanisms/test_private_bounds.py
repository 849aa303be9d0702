"""``bounds="private"`` (:mod:`dpjax.mechanisms.quantiles`, ``dpjax._private_bounds``): the
public candidates, the quantile utilities and their sensitivity, the released ranges, the
ledger, and the refusals."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax._private_bounds import LABEL
from dpjax.mechanisms.quantiles import (
    candidate_grid,
    private_ranges,
    quantile_utilities,
    widened,
)


def test_grid_is_public_sorted_and_symmetric():
    grid = candidate_grid()
    assert grid.size == 393 and np.all(np.diff(grid) > 0)
    np.testing.assert_array_equal(grid, -grid[::-1])
    assert grid[196] == 0.0 and grid[-1] == 1.75 * 2.0**32


@pytest.mark.parametrize("k", [20, 100])
def test_utilities_move_by_at_most_k_minus_1_per_added_record(k):
    """Adding one record (anywhere, or a missing value) moves every candidate's utility by at
    most ``k − 1``; replacing one by at most ``k`` (within the replace-one multiplier 2)."""
    rng = np.random.default_rng(k)
    grid = candidate_grid()
    values = rng.normal(3.0, 40.0, 500)
    base = quantile_utilities(values, grid, k)
    for extra in (-1e9, -3.0, 0.0, 2.5, 1e12, np.nan):
        added = quantile_utilities(np.append(values, extra), grid, k)
        assert np.abs(added - base).max() <= k - 1
        replaced = quantile_utilities(np.append(values[:-1], extra), grid, k)
        assert np.abs(replaced - base).max() <= k
    # the best candidates are the grid's neighbours of the true quantiles
    for side, q in ((0, 1 / k), (1, 1 - 1 / k)):
        true = np.searchsorted(grid, np.quantile(values, q))
        assert abs(int(np.argmax(base[side])) - int(true)) <= 1


def test_released_ranges_cover_the_bulk_of_large_data():
    rng = np.random.default_rng(0)
    columns = np.stack([rng.normal(40, 10, 20000), rng.exponential(1000, 20000)], 1)
    lower, upper, cost = private_ranges(jax.random.key(0), columns, 1.0, 1.0)
    grid = candidate_grid()
    q = np.quantile(columns, [0.05, 0.95], axis=0)
    # within a grid step or two (factors of 1.25) of the 5% and 95% points
    for released, true in ((lower, q[0]), (upper, q[1])):
        gap = np.searchsorted(grid, released) - np.searchsorted(grid, true)
        assert np.all(np.abs(gap) <= 2), (released, true)
    assert np.asarray(cost.epsilon).shape == (2, 2)
    assert np.asarray(cost.epsilon).sum() == pytest.approx(1.0, rel=1e-6)


def test_widened_ranges_are_never_empty():
    low, high = widened(np.array([[3, 5], [5, 5], [6, 2], [392, 392], [0, 0]]), 393)
    np.testing.assert_array_equal(low, [3, 5, 6, 391, 0])
    np.testing.assert_array_equal(high, [5, 6, 7, 392, 1])


@pytest.fixture(scope="module")
def people():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"age": rng.normal(40, 10, 8000), "income": rng.exponential(1e3, 8000),
                      "colour": rng.choice(["red", "green"], 8000)})
    y = ((X.age > 45) | (X.income > 2000)).astype(int).to_numpy()
    return X, y


def test_fit_with_private_bounds_charges_its_share_and_learns(people):
    """6,000 rows, 2 numeric columns at ε = 1: the default share 0.25 leaves each of the 4
    selections 0.0625, about the rule of thumb m >= 760·n/(share·ε) = 6,080 rows."""
    X, y = people
    declared = {"age": "private", "income": "private", "colour": ["red", "green"]}
    model = dpjax.fit(X[:6000], y[:6000], method="boosted", epsilon=1.0, key=0,
                      bounds=declared)
    entries = {e.what: e for e in model.privacy.entries}
    assert entries[LABEL].epsilon * entries[LABEL].count == pytest.approx(0.25, rel=1e-5)
    assert entries[LABEL].count == 4                         # 2 columns x 2 quantiles
    assert 1.0 * (1 - 2e-3) <= model.privacy.epsilon <= 1.0
    assert 0 < model.spec.lower[0] < 40 < model.spec.upper[0] < 200     # a released range
    assert model.score(X[6000:], y[6000:]) > 0.9
    other = dpjax.fit(X[:6000], y[:6000], method="boosted", epsilon=1.0, key=1,
                      bounds=declared, bounds_share=0.1)
    entries = {e.what: e for e in other.privacy.entries}
    assert entries[LABEL].epsilon * entries[LABEL].count == pytest.approx(0.1, rel=1e-5)


def test_private_bounds_through_an_estimator(people):
    from dpjax.sklearn import DPRandomTreesClassifier

    X, y = people
    clf = DPRandomTreesClassifier(epsilon=1.0, bounds="private", bounds_share=0.2,
                                  random_state=0).fit(X[["age", "income"]][:6000], y[:6000])
    assert LABEL in {e.what for e in clf.privacy_.entries}
    assert clf.privacy_.epsilon <= 1.0


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(bounds="private", epsilon=None), "needs epsilon"),
    (dict(bounds="private"), "not numeric"),
    (dict(bounds={"age": "private", "nope": (0, 1)}), "does not have"),
    (dict(bounds="private", bounds_share=1.5), "bounds_share must be in"),
    (dict(bounds={"age": "private"}, delta=1e-6), "use delta=0"),
    (dict(bounds={"age": "private"}, on_out_of_bounds="error"), "on_out_of_bounds='clip'"),
])
def test_private_bounds_refusals(people, kwargs, message):
    X, y = people
    kwargs = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        dpjax.fit(X[:200], y[:200], method="random_trees", key=0, **kwargs)


def test_a_sweep_refuses_private_bounds(people):
    X, y = people
    with pytest.raises(ValueError, match="dpjax.fit's"):
        dpjax.sweep(X[:200], y[:200], method="random_trees", epsilon=[1.0], seeds=[0],
                    bounds="private")


@pytest.mark.filterwarnings("ignore::dpjax.data.ImplausibleBoundsWarning")   # tiny data
def test_the_rest_of_the_budget_never_tops_epsilon_up():
    """The ranges' releases (as the ledger adds them, float64) plus the rest the learner gets
    stay within ε over random budgets, shares and column counts."""
    from dpjax._private_bounds import release_bounds

    rng = np.random.default_rng(3)
    for _ in range(25):
        n = int(rng.integers(1, 4))
        frame = pd.DataFrame(rng.normal(size=(50, n)), columns=[f"c{j}" for j in range(n)])
        epsilon, share = float(rng.uniform(0.01, 20)), float(rng.uniform(0.05, 0.95))
        _, rest, costs, _ = release_bounds(jax.random.key(0), frame, "private", epsilon, share,
                                        1.0)
        spent = float(np.sum(np.asarray(next(iter(costs.values())).epsilon, np.float64)))
        assert spent + rest <= epsilon
        assert spent + rest >= epsilon * (1 - 1e-5)


def test_implausible_private_ranges_warn_and_predictions_do_not(people):
    """Below the rule of thumb (banknote's 960 rows, 4 columns at ε = 1: it asks for about
    12,000) a released range reaches ±2^24 and the fit says so, naming the rule of thumb (a
    function of the budget, not of the rows); on the 8,000 rows of two columns at ε = 1 no
    range does. A prediction clips values outside the released ranges without a warning (a
    tenth of the records lie outside by design), and a model file keeps which ranges were
    released."""
    X, y = dpjax.load_dataset("banknote")
    with pytest.warns(dpjax.data.ImplausibleBoundsWarning, match="12,160 rows") as caught:
        small = dpjax.fit(X[:960], y[:960], method="boosted", epsilon=1.0, key=0,
                          bounds="private")
    assert "960" not in str(caught[0].message)
    assert small.spec.released == tuple(X.columns)
    people_X, people_y = people
    declared = {"age": "private", "income": "private", "colour": ["red", "green"]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", dpjax.FixedKeyWarning)     # key=0: an experiment
        model = dpjax.fit(people_X, people_y, method="boosted", epsilon=1.0, key=0,
                          bounds=declared)
        model.predict(people_X.assign(age=1e6))         # outside the released range: no warning
        assert dpjax.load(model.to_json()).spec.released == ("age", "income")
