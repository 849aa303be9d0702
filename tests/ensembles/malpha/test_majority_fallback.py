"""Mα-boost's default budget (issue 28): the released class counts (its size ñ), the public
schedule of boosted trees ``T'``, the leaves' shrinkage to the round's released balance, the
majority fallback when no tree is affordable, and their ledgers."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.ensembles.malpha.boosting import (
    MAJORITY_LABEL,
    PRIOR_LABEL,
    affordable_trees,
    prior_margin,
)
from dpjax.ensembles.malpha.leaves import shrunk_sums
from dpjax.losses.proper import inverse_link
from tests.helpers.data import imbalanced_threshold

SMALL = dict(n_trees=4, depth=2, bounds=(0, 1))


@pytest.fixture(scope="module")
def data():
    return imbalanced_threshold(2000)


def test_schedule_keeps_a_leafs_rows_above_its_noise():
    # T' = floor(ñ (1 − β_tree) ε / (2^d Δ min_signal))
    assert float(affordable_trees(1600.0, 1.0, 0.5, 3, 1.0, 5.0)) == 20.0
    assert float(affordable_trees(1600.0, 1.0, 0.5, 3, 2.0, 5.0)) == 10.0   # replace-one
    assert float(affordable_trees(1600.0, 0.1, 0.5, 3, 1.0, 5.0)) == 2.0
    assert float(affordable_trees(1600.0, 0.01, 0.5, 3, 1.0, 5.0)) == 0.0   # the fallback
    assert float(affordable_trees(100.0, 0.01, 0.5, 3, 1.0, 0.0)) > 1e6     # 0: every tree


def test_prior_margin_is_the_link_of_the_released_share():
    margin = prior_margin(jnp.asarray([300.0, 100.0]), 1e-4, 10.0)
    assert float(inverse_link(margin, 1.0)) == pytest.approx(0.25, rel=1e-5)
    assert float(prior_margin(jnp.asarray([-5.0, 1e6]), 1e-4, 10.0)) == 10.0   # clipped


def test_shrinkage_pulls_weak_leaves_to_the_rounds_balance():
    noisy = jnp.asarray([[30.0, 10.0], [1.0, 3.0], [49.0, 7.0]])
    shrunk = np.asarray(shrunk_sums(noisy, 10.0))
    np.testing.assert_allclose(shrunk[1], [1.0 + 8.0, 3.0 + 2.0], rtol=1e-6)   # 80/20 balance
    assert shrunk[1, 0] > shrunk[1, 1]                        # the weak leaf follows the balance
    np.testing.assert_array_equal(np.asarray(shrunk_sums(noisy, 0.0)), noisy)


def test_tiny_budget_falls_back_to_the_released_majority(data):
    X, y = data
    model = dpjax.fit(X, y, method="malpha", epsilon=0.01, key=0, **SMALL)
    assert not np.asarray(model.params.beta).any()
    assert model.describe().startswith("Majority fallback")
    assert {e.what for e in model.privacy.entries} == {PRIOR_LABEL, MAJORITY_LABEL}
    assert 0.01 * (1 - 2e-3) <= model.privacy.epsilon <= 0.01
    np.testing.assert_array_equal(model.predict(X), 0)        # the majority, 80% of the rows


def test_ample_budget_boosts_the_scheduled_trees(data):
    X, y = data
    model = dpjax.fit(X, y, method="malpha", epsilon=10.0, key=0, **SMALL)
    whats = [e.what for e in model.privacy.entries]
    assert PRIOR_LABEL in whats and MAJORITY_LABEL not in whats and "row count" not in whats
    assert 10.0 * (1 - 2e-3) <= model.privacy.epsilon <= 10.0
    assert np.asarray(model.params.beta).all()
    assert float(model.params.prior) == 0.0       # the trees' scores alone decide
    assert model.score(X, y) > 0.9
    assert not model.describe().startswith("Majority fallback")


def test_schedule_drops_trees_at_a_small_budget(data):
    X, y = data
    # ε = 0.05, ε' = 0.9·ε after the class counts, ñ ≈ 2000, 4 leaves:
    # T' = floor(2000·0.5·0.045/(4·5)) = 2 trees of 4
    model = dpjax.fit(X, y, method="malpha", epsilon=0.05, key=0, **SMALL)
    beta = np.asarray(model.params.beta)
    assert beta[:2].all() and not beta[2:].any()
    assert 0.05 * (1 - 2e-3) <= model.privacy.epsilon <= 0.05


def test_prior_share_zero_and_the_paper_budget_have_no_prior(data):
    X, y = data
    for params in ({"prior_share": 0.0}, {"budget": "paper"}):
        model = dpjax.fit(X, y, method="malpha", epsilon=0.01, key=0, **SMALL, **params)
        whats = [e.what for e in model.privacy.entries]
        assert "row count" in whats and PRIOR_LABEL not in whats
        assert np.asarray(model.params.beta).all() and float(model.params.prior) == 0.0


def test_schedule_hyper_parameters_sweep_in_one_program(data):
    X, y = data
    sweep = dpjax.sweep(X, y, method="malpha", epsilon=[0.01, 10.0], min_signal=[5.0, 0.0],
                        seeds=1, **SMALL)
    beta = np.asarray(sweep.params.beta)
    by_point = {(g["epsilon"], g["min_signal"]): beta[i, 0] for i, g in enumerate(sweep.grid)}
    assert not by_point[(0.01, 5.0)].any() and by_point[(0.01, 0.0)].all()
    for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True):
        assert point["epsilon"] * (1 - 2e-3) <= ledger.epsilon <= point["epsilon"]
