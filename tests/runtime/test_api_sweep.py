"""The user-facing API: ``dpjax.sweep``."""

from __future__ import annotations

import chex
import numpy as np
import pytest

import dpjax
from dpjax._keys import grid_keys
from tests.conftest import learner_fit
from tests.helpers.api import SMALL, assert_spent

# --------------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------------

SWEEP_EPS = (0.5, 2.0)


@pytest.fixture(scope="module")
def toy_sweep(toy_xy):
    X, y, bounds = toy_xy
    return dpjax.sweep(X, y, method="random_trees", epsilon=SWEEP_EPS, seeds=3, bounds=bounds,
                       **SMALL)


@pytest.mark.slow
def test_sweep_shapes_and_ledgers(toy_xy, toy_sweep):
    X, y, _ = toy_xy
    sweep = toy_sweep
    chex.assert_shape([sweep.params.feature, sweep.params.threshold], (2, 3, 3, 7))
    chex.assert_shape(sweep.params.leaf, (2, 3, 3, 8, 2))
    assert sweep.seeds == (0, 1, 2)
    assert [g["epsilon"] for g in sweep.grid] == list(SWEEP_EPS)
    assert len(sweep.ledgers) == 2
    for ledger, eps in zip(sweep.ledgers, SWEEP_EPS, strict=True):
        assert ledger.private
        assert ledger.requested_epsilon == eps
        assert_spent(ledger.epsilon, eps)
        prior, rest = ledger.entries           # the class prior, then the leaves or fallback
        assert_spent(prior.epsilon, 0.1 * eps)
        assert rest.count == (3 if rest.what == "leaf class counts" else 1)
        assert_spent(rest.total_epsilon, 0.9 * eps)
    proba = sweep.predict_proba(X)
    assert proba.shape == (2, 3, len(y), 2)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-5)
    assert sweep.score(X, y).shape == (2, 3)
    assert sweep.model(1, 2).privacy is sweep.ledgers[1]


@pytest.mark.slow
def test_sweep_model_is_the_learner_fit_with_its_own_key(toy_xy, toy_sweep):
    """sweep.model(i, j) is the learner's fit with point ``i``'s own key and the seed's
    structure key (``dpjax._keys.grid_keys``: data-independent splits, shared along the grid):
    equal to float32 rounding, and its ledger is that fit's costs."""
    X, y, _ = toy_xy
    for i, eps in enumerate(SWEEP_EPS):
        for j, seed in enumerate(toy_sweep.seeds):
            swept = toy_sweep.model(i, j)
            structure, points = grid_keys(dpjax.as_key(seed), len(SWEEP_EPS))
            params, costs = learner_fit(swept, X, y, points[i], eps, structure_key=structure)
            np.testing.assert_array_equal(swept.params.feature, params.feature)
            np.testing.assert_array_equal(swept.params.threshold, params.threshold)
            np.testing.assert_allclose(swept.params.leaf, params.leaf, rtol=1e-5, atol=1e-6)
            ledger = dpjax.PrivacyLedger(requested_epsilon=eps).with_costs(costs)
            assert ledger.entries == swept.privacy.entries
    # the structure is shared along the grid, the noise is not
    np.testing.assert_array_equal(toy_sweep.params.feature[0], toy_sweep.params.feature[1])
    assert not np.allclose(toy_sweep.params.leaf[0], toy_sweep.params.leaf[1])


def test_sweep_with_explicit_seed_list(toy_xy, toy_sweep):
    X, y, bounds = toy_xy
    # same grid shape as toy_sweep, so the compiled sweep is reused
    sweep = dpjax.sweep(X, y, method="random_trees", epsilon=SWEEP_EPS, seeds=[5, 9, 0],
                        bounds=bounds, **SMALL)
    assert sweep.seeds == (5, 9, 0)
    assert sweep.timings.compile_s == 0.0
    chex.assert_shape(sweep.params.feature, (2, 3, 3, 7))
    structure, points = grid_keys(dpjax.as_key(9), len(SWEEP_EPS))
    params, _ = learner_fit(sweep.model(0, 1), X, y, points[0], SWEEP_EPS[0],
                            structure_key=structure)
    np.testing.assert_array_equal(sweep.model(0, 1).params.feature, params.feature)
    # seed 0 at index 2 is toy_sweep's seed 0 at index 0: the very same models
    chex.assert_trees_all_equal(sweep.model(1, 2).params, toy_sweep.model(1, 0).params)
    with pytest.raises(ValueError, match="epsilon"):
        dpjax.sweep(X, y, method="random_trees", epsilon=[1.0, 0.0], seeds=2, bounds=bounds,
                    **SMALL)
    for bad in (0, [], [1.5], True, "1"):
        with pytest.raises(ValueError, match="seeds"):
            dpjax.sweep(X, y, method="random_trees", epsilon=SWEEP_EPS, seeds=bad, bounds=bounds,
                        **SMALL)


def test_sweep_default_seed_is_fresh_entropy(toy_xy):
    """``seeds=None`` (the default) fits one seed drawn from OS entropy: two sweeps differ."""
    X, y, bounds = toy_xy
    kwargs = dict(method="rf_laplace", epsilon=[1.0, 10.0], bounds=bounds, n_trees=3, depth=2)
    first, second = dpjax.sweep(X, y, **kwargs), dpjax.sweep(X, y, **kwargs)
    assert first.seeds == second.seeds == (None,)
    chex.assert_shape(first.params.feature, (2, 1, 3, 3))
    assert not np.array_equal(first.params.feature, second.params.feature)


@pytest.mark.slow
def test_sweep_reuses_compiled_program_with_new_data(toy_xy):
    """Two sweeps with the same shapes and settings share one compiled program, but each must
    fit its own data (the data are arguments of the cached program, not constants)."""
    X, y, bounds = toy_xy
    kwargs = dict(method="rf_laplace", epsilon=[1.0, 10.0], seeds=2, bounds=bounds,
                  n_trees=3, depth=2)
    first = dpjax.sweep(X, y, **kwargs)
    flipped = dpjax.sweep(X, 1 - y, **kwargs)
    assert flipped.timings.compile_s == 0.0  # the cached program was reused
    structure, points = grid_keys(dpjax.as_key(1), 2)
    fresh, _ = learner_fit(flipped.model(1, 1), X, 1 - y, points[1], 10.0,
                           structure_key=structure)
    chex.assert_trees_all_close(flipped.model(1, 1).params, fresh, atol=1e-5)
    assert not np.allclose(first.params.leaf, flipped.params.leaf)
