"""The RF-L / RF-E baselines through the api: sweeps and hyper-parameter validation."""

from __future__ import annotations

import chex
import numpy as np
import pytest

import dpjax
from dpjax._keys import grid_keys
from dpjax.learners import get_learner
from tests.conftest import learner_fit
from tests.helpers.rf_baselines import (
    BOUNDS,
    N_LEAVES,
    assert_one_hot,
    assert_within_budget,
    easy_data,
    laplace_cost,
)

# --------------------------------------------------------------------------------------------
# Sweep
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_rf_laplace_sweep(easy):
    (X, y), (X_test, y_test) = easy
    epsilons = [0.1, 1.0, 10.0]
    sweep = dpjax.sweep(X, y, method="rf_laplace", epsilon=epsilons, seeds=3, bounds=BOUNDS,
                        budget="paper")
    chex.assert_shape([sweep.params.feature, sweep.params.threshold], (3, 3, 21, 15))
    chex.assert_shape(sweep.params.leaf, (3, 3, 21, 16, 2))
    assert_one_hot(sweep.params.leaf)
    assert [g["epsilon"] for g in sweep.grid] == epsilons
    for eps, ledger in zip(epsilons, sweep.ledgers, strict=True):
        assert ledger.requested_epsilon == eps
        assert_within_budget(ledger.epsilon, eps)
        (entry,) = ledger.entries
        assert entry.count == N_LEAVES
        assert entry.epsilon == pytest.approx(laplace_cost(eps, N_LEAVES), rel=1e-5)
    accuracy = sweep.score(X_test, y_test)
    chex.assert_shape(accuracy, (3, 3))
    assert accuracy[2].mean() >= accuracy[0].mean(), accuracy
    assert accuracy[2].mean() > 0.8 and accuracy[2].min() >= 0.75, accuracy
    # grid point i of seed j is the learner's fit with its own key and the seed's (shared,
    # data-independent) structure key
    structure, points = grid_keys(dpjax.as_key(1), len(sweep.grid))
    params, costs = learner_fit(sweep.model(2, 1), X, y, points[2], 10.0,
                                structure_key=structure)
    chex.assert_trees_all_equal(sweep.model(2, 1).params, params)
    assert dpjax.PrivacyLedger(requested_epsilon=10.0).with_costs(costs).entries == (
        sweep.ledgers[2].entries)
    # so the grid points of one seed share the structure and draw their own noise
    for i in (1, 2):
        chex.assert_trees_all_equal(
            (sweep.params.feature[0, 1], sweep.params.threshold[0, 1]),
            (sweep.params.feature[i, 1], sweep.params.threshold[i, 1]))
    assert not np.array_equal(sweep.params.feature[2, 0], sweep.params.feature[2, 1])


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "params", "match"), [
    ("rf_exponential", {"noise": "laplace"}, "noise"),
    ("rf_exponential", {"noise": "discrete_laplace"}, "noise"),
    ("rf_laplace", {"noise": "discrete_laplace"}, "noise"),
    ("rf_laplace", {"noise": "exponential"}, "noise"),
    ("rf_laplace", {"alpha": 0.5}, "no parameter"),
    ("rf_exponential", {"beta_tree": 0.5}, "no parameter"),
    ("rf_laplace", {"budget": "sequential"}, "budget"),
    ("rf_laplace", {"leaf_composition": "leaf"}, "no parameter"),
    ("rf_laplace", {"n_trees": 0}, "n_trees"),
    ("rf_exponential", {"depth": 2.5}, "depth"),
    ("rf_laplace", {"voting": "mean"}, "voting"),
])
def test_invalid_hyper_parameters_raise(method, params, match):
    X, y = easy_data(7, 20)
    with pytest.raises(ValueError, match=match):
        dpjax.fit(X, y, method=method, epsilon=1.0, bounds=BOUNDS, key=0, **params)
    with pytest.raises(ValueError, match=match):
        get_learner(method, params)


def test_rf_noise_defaults_and_allowed_options():
    assert get_learner("rf_exponential").noise == "exponential"
    assert get_learner("rf_laplace").noise == "laplace"
    # the Laplace mechanism always draws exact discrete Laplace noise on the integer counts:
    # the separate "discrete_laplace" option is gone
    for method in ("rf_laplace", "random_trees"):
        with pytest.raises(ValueError, match="noise"):
            get_learner(method, {"noise": "discrete_laplace"})
