"""The forests' released class prior (issue 28): shrinkage of the leaves to it, the public
schedule that falls back to the released majority, and their ledgers."""

from __future__ import annotations

import numpy as np
import pytest

import dpjax
from dpjax.ensembles.random_trees.forest import (
    MAJORITY_LABEL,
    PRIOR_LABEL,
    count_scale,
    effective_depth,
    forest_learns,
    leaf_distribution,
)
from tests.helpers.data import imbalanced_threshold

FORESTS = ("random_trees", "rf_laplace", "rf_exponential")


@pytest.fixture(scope="module")
def data():
    return imbalanced_threshold(1000)


def test_schedule_compares_a_leafs_rows_with_its_trees_noise():
    # ñ/2^d rows per leaf against min_signal·Δ·T/ε
    assert float(count_scale(1.0, 10, 1.0)) == 10.0
    assert float(count_scale(0.1, 10, 2.0)) == pytest.approx(200.0)  # replace-one: Δ = 2
    assert bool(forest_learns(1600.0, count_scale(1.0, 10, 1.0), 4, 1.0))       # 100 >= 10
    assert not bool(forest_learns(1600.0, count_scale(0.1, 10, 1.0), 4, 1.01))  # 100 < 101
    assert bool(forest_learns(1600.0, count_scale(0.1, 10, 1.0), 4, 0.99))
    assert not bool(forest_learns(1600.0, count_scale(1.0, 10, 2.0), 4, 6.0))
    assert bool(forest_learns(0.0, count_scale(1.0, 10, 1.0), 4, 0.0))  # min_signal 0: always


def test_pseudo_counts_pull_weak_leaves_to_the_prior():
    counts = np.array([[0.0, 2.0], [40.0, 2.0]], np.float32)
    pseudo = np.array([9.0, 1.0], np.float32)
    label = np.asarray(leaf_distribution(None, counts, "label", pseudo))
    np.testing.assert_array_equal(label, [[1.0, 0.0], [1.0, 0.0]])   # 2 < 9 - 1
    smoothed = np.asarray(leaf_distribution(None, counts, "smoothed", pseudo))
    np.testing.assert_allclose(smoothed[0], [10.0 / 14.0, 4.0 / 14.0], rtol=1e-6)
    plain = np.asarray(leaf_distribution(None, counts, "smoothed"))
    np.testing.assert_allclose(plain[0], [1.0 / 4.0, 3.0 / 4.0], rtol=1e-6)


@pytest.mark.parametrize("method", FORESTS)
def test_tiny_budget_falls_back_to_the_released_majority(data, method):
    X, y = data
    model = dpjax.fit(X, y, method=method, epsilon=0.01, bounds=(0, 1), key=0)
    leaf = np.asarray(model.params.leaf)
    assert np.all(leaf == leaf[0, 0])                        # one distribution everywhere
    assert model.describe().startswith("Majority fallback")
    entries = {e.what: e for e in model.privacy.entries}
    assert set(entries) == {PRIOR_LABEL, MAJORITY_LABEL}
    assert 0.0099 <= model.privacy.epsilon <= 0.01
    np.testing.assert_array_equal(model.predict(X), 0)      # the majority, 80% of the rows


@pytest.mark.parametrize("method", FORESTS)
def test_ample_budget_learns_and_the_ledger_is_the_same_total(data, method):
    X, _ = data
    y = (X[:, 0] > 0.5).astype(int)
    model = dpjax.fit(X, y, method=method, epsilon=20.0, bounds=(0, 1), key=0)
    assert not model.describe().startswith("Majority fallback")
    whats = [e.what for e in model.privacy.entries]
    assert PRIOR_LABEL in whats and MAJORITY_LABEL not in whats
    assert 20.0 * (1 - 2e-3) <= model.privacy.epsilon <= 20.0
    assert model.score(X, y) > 0.9


def test_paper_budget_has_no_prior(data):
    X, y = data
    model = dpjax.fit(X, y, method="rf_laplace", epsilon=0.01, bounds=(0, 1), key=0,
                      budget="paper")
    assert [e.what for e in model.privacy.entries] == ["leaf class counts"]


def test_prior_hyper_parameters_sweep_in_one_program(data):
    X, y = data
    sweep = dpjax.sweep(X, y, method="random_trees", epsilon=[0.01, 20.0], seeds=1,
                        bounds=(0, 1), n_trees=3, depth=3)
    leaf = np.asarray(sweep.params.leaf)
    assert np.all(leaf[0, 0] == leaf[0, 0, 0, 0])           # ε = 0.01: the fallback
    assert not np.all(leaf[1, 0] == leaf[1, 0, 0, 0])       # ε = 20: a forest
    for eps, ledger in zip([0.01, 20.0], sweep.ledgers, strict=True):
        assert eps * (1 - 2e-3) <= ledger.epsilon <= eps


def test_exponential_offset_is_added_in_whole_units():
    """RF-E's utility offset is floored to whole units, so the utilities stay exact integers
    (a fractional offset rounded in float32 could widen a neighbour's gap past the
    sensitivity): a fractional offset selects exactly as its floor does."""
    import jax
    import jax.numpy as jnp

    from dpjax.ensembles.random_trees.forest import release_counts

    counts = jnp.asarray(np.random.default_rng(0).integers(0, 2**20, (3, 4, 2)), jnp.int32)
    kwargs = dict(sensitivity=1.0, noise="exponential", budget="parallel", unit=256)
    key = jax.random.key(2)
    fractional = release_counts(key, counts, 0.5, offset=jnp.asarray([3.999, 0.5]), **kwargs)
    whole = release_counts(key, counts, 0.5, offset=jnp.asarray([1023 / 256, 0.5]), **kwargs)
    np.testing.assert_array_equal(fractional[0], whole[0])


def test_effective_depth_keeps_a_groups_rows_above_its_noise():
    # the deepest k <= d with ñ/2^k >= depth_signal·scale, at least 1; 0: the full depth
    assert int(effective_depth(1600.0, 10.0, 12, 2.0)) == 6        # 1600/64 = 25 >= 20
    assert int(effective_depth(1600.0, 10.0, 4, 2.0)) == 4         # capped at d
    assert int(effective_depth(10.0, 10.0, 12, 2.0)) == 1          # at least one split
    assert int(effective_depth(10.0, 10.0, 12, 0.0)) == 12


def test_leaves_share_their_public_depth_ancestors_counts(data):
    X, y = data
    # ñ ≈ 1000, scale = Δ·T/ε' = 3/0.9: k = floor(log2(1000/(2·3.33))) = 7 of depth 9
    model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0,
                      n_trees=3, depth=9, depth_signal=2.0, min_signal=0.0)
    leaf = np.asarray(model.params.leaf)                     # [3, 512, 2]
    groups = leaf.reshape(3, 2**7, 4, 2)
    np.testing.assert_array_equal(groups, np.broadcast_to(groups[:, :, :1], groups.shape))
    assert not np.all(leaf == leaf[0, 0])
    full = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0,
                     n_trees=3, depth=9, min_signal=0.0)               # depth_signal 0: d
    assert not np.array_equal(np.asarray(full.params.leaf), leaf)
    assert {e.what for e in model.privacy.entries} == {e.what for e in full.privacy.entries}
    assert 1.0 * (1 - 2e-3) <= model.privacy.epsilon <= 1.0
