"""``sample_weight`` in ``[0, 1]`` for the forests: weighted counts at unchanged sensitivity."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.ensembles.random_trees import forest as rt
from dpjax.privacy import fixed_point

FOREST = dict(n_trees=3, depth=3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (500, 3))
    return X, (X[:, 0] + 0.1 * rng.normal(size=500) > 0.5).astype(int)


@pytest.mark.parametrize("method", ["random_trees", "rf_laplace"])
def test_zero_weights_are_removed_rows(data, method):
    """Without noise, weights in {0, 1} give the leaves of the kept rows alone (same key)."""
    X, y = data
    keep = np.arange(len(y)) % 3 != 0
    weighted = dpjax.fit(X, y, method=method, epsilon=None, bounds=(0, 1), key=4,
                         sample_weight=keep.astype(float), **FOREST)
    subset = dpjax.fit(X[keep], y[keep], method=method, epsilon=None, bounds=(0, 1), key=4,
                       **FOREST)
    np.testing.assert_array_equal(weighted.params.leaf, subset.params.leaf)


@pytest.mark.slow
def test_a_record_moves_each_tree_by_at_most_its_weight(data):
    """Adding one record of weight w changes one tree's fixed-point counts by floor(256 w) in
    L1: within the sensitivity (1 record = 256 units) the release is calibrated to."""
    X, y = data
    codes = jnp.asarray(np.minimum((X * 10).astype(np.uint8), 9))
    feature, threshold = rt.forest_structures(jax.random.key(0), 3, 3, jnp.full(3, 10), "global")
    weights = jnp.asarray(np.random.default_rng(0).uniform(0, 1, len(y)), jnp.float32)
    counts = rt.leaf_class_counts(rt.forest_leaf_index(feature, threshold, codes),
                                  jnp.asarray(y), 2, 8, weights)
    more = rt.leaf_class_counts(rt.forest_leaf_index(feature, threshold, codes[:-1]),
                                jnp.asarray(y[:-1]), 2, 8, weights[:-1])
    change = np.abs(np.asarray(counts) - np.asarray(more)).sum((1, 2))
    np.testing.assert_array_equal(change, int(np.floor(float(weights[-1]) * 256)))
    assert change.max() <= 2**fixed_point.BITS


@pytest.mark.slow
def test_weighted_fits_spend_the_same_budget_and_learn(data):
    X, y = data
    plain = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0,
                      prior_share=0.0, **FOREST)
    weighted = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0,
                         prior_share=0.0, sample_weight=np.linspace(0.5, 1, len(y)), **FOREST)
    assert weighted.privacy.entries == plain.privacy.entries
    assert weighted.score(X, y) > 0.7


@pytest.mark.parametrize(("weights", "method", "message"), [
    (np.ones(500), "boosted", "not supported by boosted"),
    (np.full(500, np.nan), "random_trees", "finite"),
    (np.ones(499), "random_trees", "one weight per row"),
])
def test_bad_weights_are_refused(data, weights, method, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        dpjax.fit(X, y, method=method, epsilon=1.0, bounds=(0, 1), sample_weight=weights)


def test_weights_outside_the_unit_interval_are_clipped_with_a_warning(data):
    """A weight derived from private data must not turn the fit into an error: weights outside
    ``[0, 1]`` are clipped (the fit equals the one on the clipped weights), and the warning
    prints no weight."""
    X, y = data
    weights = np.linspace(-0.5, 1.5, len(y))
    weights[7] = 123.456
    with pytest.warns(UserWarning, match=r"clipped into it") as caught:
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=3,
                          sample_weight=weights, **FOREST)
    assert not any("123" in str(w.message) for w in caught)
    clipped = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=3,
                        sample_weight=np.clip(weights, 0.0, 1.0), **FOREST)
    chex.assert_trees_all_equal(model.params, clipped.params)


def test_weighted_rf_exponential_stops_where_its_count_cap_could_bind():
    """RF-E's permute-and-flip compares the weighted fixed-point counts by their exact int32
    gaps, each count capped at ``2**30`` units so that counts and offset stay within int32:
    weighted RF-E takes at most 4,194,303 rows (refused before any work), where no count
    reaches the cap; RF-L's Laplace release is exact in int32 up to the fixed-point limit."""
    from dpjax._preparation import check_limits
    from dpjax.learners import get_learner

    shape = (2**30 // fixed_point.UNIT, 3)
    with pytest.raises(ValueError, match="rf_exponential with sample_weight takes at most"):
        check_limits(get_learner("rf_exponential"), shape, 10, 2, 1, private=True,
                     weighted=True)
    check_limits(get_learner("rf_exponential"), (shape[0] - 1, 3), 10, 2, 1, private=True,
                 weighted=True)
    check_limits(get_learner("rf_exponential"), shape, 10, 2, 1, private=True)
    check_limits(get_learner("rf_laplace"), shape, 10, 2, 1, private=True, weighted=True)
