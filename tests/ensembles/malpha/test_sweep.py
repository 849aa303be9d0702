"""``dpjax.sweep`` over Mα-boost: grid, params and ledgers, every grid point its own release, and
non-private sweeps."""

from __future__ import annotations

import itertools
import math

import chex
import jax
import numpy as np
import pytest

import dpjax
from dpjax._keys import grid_keys
from dpjax.ensembles.malpha import malpha_predict
from tests.conftest import learner_fit
from tests.helpers.malpha import FIT, M_ROWS, X, Y, assert_ledger, exact_fit, expected_ledger

# ------------------------------------------------------------------------------------------
# Sweeps
# ------------------------------------------------------------------------------------------


SWEEP = dict(n_trees=3, depth=2, **FIT)


@pytest.fixture(scope="module")
def private_sweep():
    return dpjax.sweep(X, Y, epsilon=[0.5, 5.0], alpha=[0.1, 1.0, "oc"], beta_tree=[0.1, 0.9],
                       seeds=2, **SWEEP)


@pytest.mark.slow
def test_sweep_grid_params_and_ledgers(private_sweep):
    sweep = private_sweep
    grid = list(itertools.product([0.5, 5.0], [0.1, 1.0, "oc"], [0.1, 0.9]))
    assert sweep.grid == tuple(dict(epsilon=e, alpha=a, beta_tree=b) for e, a, b in grid)
    assert sweep.seeds == (0, 1)
    params = sweep.params
    chex.assert_shape([params.trees.feature, params.trees.threshold, params.alpha],
                      (12, 2, 3, 3))
    chex.assert_shape(params.trees.leaf, (12, 2, 3, 4))
    chex.assert_shape(params.beta, (12, 2, 3))
    assert len(sweep.ledgers) == 12
    for (eps, alpha, beta_tree), ledger, i in zip(grid, sweep.ledgers, range(12), strict=True):
        # each grid point is its own release: its own noisy row count, then its trees
        assert_ledger(ledger, eps, expected_ledger(eps, 3, 2, beta_tree, alpha))
        node_alpha = np.asarray(params.alpha[i])
        if alpha == "oc":
            np.testing.assert_array_equal(node_alpha[..., 0], 1.0)
        else:
            np.testing.assert_allclose(node_alpha, alpha, rtol=1e-7)
    proba = sweep.predict_proba(X)
    chex.assert_shape(proba, (12, 2, M_ROWS, 2))
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(("i", "j"), [(0, 0), (7, 1), (11, 0)])
def test_sweep_models_match_single_fits(private_sweep, i, j):
    """Grid point ``i`` of seed ``j`` is the learner's fit with its own key
    (``dpjax._keys.grid_keys``: its own noise and its own noisy row count), with the point's
    traced settings; its ledger is that fit's costs."""
    sweep = private_sweep
    point = sweep.grid[i]
    model = sweep.model(i, j)
    key = grid_keys(dpjax.as_key(sweep.seeds[j]), len(sweep.grid))[1][i]
    params, costs = learner_fit(model, X, Y, key, point["epsilon"], alpha=point["alpha"],
                                beta_tree=point["beta_tree"])
    ledger = dpjax.PrivacyLedger(requested_epsilon=point["epsilon"]).with_costs(costs)
    assert [(e.what, e.count) for e in ledger.entries] == [
        (e.what, e.count) for e in model.privacy.entries]
    for mine, theirs in zip(ledger.entries, model.privacy.entries, strict=True):
        assert mine.epsilon == pytest.approx(theirs.epsilon, rel=1e-6)
    # the vmapped sweep and the single fit agree: the same splits, the same released leaves
    # (to float32 rounding) and the same predictions
    chex.assert_trees_all_equal((model.params.trees.feature, model.params.trees.threshold),
                                (params.trees.feature, params.trees.threshold))
    chex.assert_trees_all_close(model.params, params, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(model.predict(X),
                                  np.asarray(malpha_predict(params, model.encode(X))))


@pytest.mark.slow
def test_sweep_points_have_their_own_noise(private_sweep):
    """Two grid points that differ only in ε (same seed) release different noise: every model
    of a sweep is its own release (the grid does not share keys)."""
    sweep = private_sweep
    low = sweep.grid.index(dict(epsilon=0.5, alpha=1.0, beta_tree=0.9))
    high = sweep.grid.index(dict(epsilon=5.0, alpha=1.0, beta_tree=0.9))
    a, b = sweep.model(low, 0).params, sweep.model(high, 0).params
    assert not np.array_equal(a.trees.feature, b.trees.feature)
    # the seeds of a point differ too
    assert not np.array_equal(sweep.model(high, 0).params.trees.feature,
                              sweep.model(high, 1).params.trees.feature)


@pytest.mark.slow
def test_non_private_sweep():
    sweep = dpjax.sweep(X, Y, epsilon=None, alpha=[0.1, 1.0, "oc"], seeds=2, **SWEEP)
    assert [g["alpha"] for g in sweep.grid] == [0.1, 1.0, "oc"]
    assert all(g["epsilon"] is None for g in sweep.grid)
    for ledger in sweep.ledgers:
        assert not ledger.private and ledger.epsilon == math.inf
    chex.assert_shape(sweep.params.trees.leaf, (3, 2, 3, 4))
    # non-private boosting ignores the key; each point is the plain non-private fit
    for i, alpha in enumerate([0.1, 1.0, -1.0]):
        chex.assert_trees_all_equal(jax.tree.map(lambda a, i=i: a[i, 0], sweep.params),
                                    jax.tree.map(lambda a, i=i: a[i, 1], sweep.params))
        exact = exact_fit()(alpha)
        point = jax.tree.map(lambda a, i=i: a[i, 0], sweep.params)
        chex.assert_trees_all_equal(point.trees.feature, exact.trees.feature)
        chex.assert_trees_all_close(point, exact, rtol=1e-4, atol=1e-6)
    assert (sweep.score(X, Y) > 0.9).all()
