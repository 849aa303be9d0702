"""The RF-L / RF-E baselines' majority vote, and their uniform, data-independent structure."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.random_trees import forest_predict, forest_proba
from dpjax.trees import DenseTree
from tests.conftest import binomial_tolerance, reference_leaf
from tests.helpers.fits import fit_random_trees

# --------------------------------------------------------------------------------------------
# Majority vote
# --------------------------------------------------------------------------------------------


def random_one_hot_forest(seed: int, n_trees: int, depth: int, n_classes: int,
                          n_used: int) -> DenseTree:
    """Random splits on three 10-code features; one-hot leaves over the first ``n_used``
    classes."""
    rng = np.random.default_rng(seed)
    n_internal = 2**depth - 1
    labels = rng.integers(0, n_used, (n_trees, 2**depth))
    return DenseTree(
        feature=jnp.asarray(rng.integers(0, 3, (n_trees, n_internal)), jnp.int32),
        threshold=jnp.asarray(rng.integers(0, 9, (n_trees, n_internal)), jnp.int32),
        leaf=jnp.asarray(np.eye(n_classes, dtype=np.float32)[labels]))


class MajorityVoteTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_majority_vote_is_most_common_tree_label(self):
        n_trees, n_classes = 21, 3
        codes = np.random.default_rng(0).integers(0, 10, (120, 3)).astype(np.uint8)
        both = self.variant(lambda forest, codes: (forest_predict(forest, codes, "majority"),
                                                   forest_proba(forest, codes, "majority")))
        # forests with labels in {0, 1} (an odd number of two-way votes never ties) and in
        # {0, 1, 2}; all of one shape, so each variant compiles once
        for seed, n_used in enumerate([2, 3, 3]):
            forest = random_one_hot_forest(seed, n_trees, 3, n_classes, n_used)
            feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
            labels = np.asarray(forest.leaf).argmax(-1)
            votes = np.array([[labels[t, reference_leaf(feature[t], threshold[t], row)]
                               for t in range(n_trees)] for row in codes])
            tally = np.stack([np.bincount(v, minlength=n_classes) for v in votes])
            got, proba = both(forest, jnp.asarray(codes))
            chex.assert_shape(got, (120,))
            chex.assert_shape(proba, (120, n_classes))
            # np.argmax takes the first maximum: three-class ties go to the lower class
            np.testing.assert_array_equal(got, tally.argmax(-1))
            np.testing.assert_allclose(proba, tally / n_trees, rtol=1e-6)
            if n_used == 2:
                assert np.all(tally.max(-1) > n_trees / 2)
            else:  # the fixed seeds do produce three-way votes
                assert np.any(tally.min(-1) > 0)


# --------------------------------------------------------------------------------------------
# Structure: uniform, data-independent
# --------------------------------------------------------------------------------------------

STRUCT_CODES = np.array([3, 5, 10, 2], np.int32)
STRUCT_TREES, STRUCT_DEPTH = 301, 4


@functools.cache
def rf_structure_fit():
    """``(key, codes, y, epsilon) -> (RF-L forest, RF-E forest)``, jitted once."""
    fit = functools.partial(
        fit_random_trees, n_trees=STRUCT_TREES, depth=STRUCT_DEPTH,
        n_codes_per_feature=STRUCT_CODES, n_classes=2, leaf_estimate="label",
        budget="paper")
    return jax.jit(lambda key, codes, y, epsilon: tuple(
        fit(key, codes, y, epsilon, noise=noise)[0] for noise in ("laplace", "exponential")))


def struct_data(seed: int) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, n, 80) for n in STRUCT_CODES], 1).astype(np.uint8)
    return jnp.asarray(codes), jnp.asarray(rng.integers(0, 2, 80), jnp.int32)


@pytest.mark.slow
def test_rf_structure_is_uniform_and_within_global_range():
    codes, y = struct_data(0)
    forest, _ = rf_structure_fit()(jax.random.key(31), codes, y, 1.0)
    feature = np.asarray(forest.feature).ravel()
    threshold = np.asarray(forest.threshold).ravel()
    n = feature.size
    n_features = len(STRUCT_CODES)
    freq = np.bincount(feature, minlength=n_features) / n
    assert freq.size == n_features
    np.testing.assert_array_less(np.abs(freq - 1 / n_features),
                                 binomial_tolerance(1 / n_features, n))
    for f, n_codes in enumerate(STRUCT_CODES):
        t = threshold[feature == f]
        assert t.min() >= 0 and t.max() <= n_codes - 2, (f, t.min(), t.max())
        share = np.bincount(t, minlength=n_codes - 1) / t.size
        assert share.size == n_codes - 1
        np.testing.assert_array_less(np.abs(share - 1 / (n_codes - 1)),
                                     binomial_tolerance(1 / (n_codes - 1), t.size) + 1e-12)


@pytest.mark.slow
def test_rf_structure_is_data_independent():
    codes, y = struct_data(1)
    other_codes, other_y = struct_data(2)
    key = jax.random.key(32)
    forests = [forest for c, labels in ((codes, y), (codes, 1 - y), (other_codes, other_y))
               for forest in rf_structure_fit()(key, c, labels, 1e6)]
    for forest in forests[1:]:
        chex.assert_trees_all_equal((forest.feature, forest.threshold),
                                    (forests[0].feature, forests[0].threshold))
    # while the leaves did read the labels (RF-L and RF-E, flipped labels)
    for before, after in ((forests[0], forests[2]), (forests[1], forests[3])):
        assert not np.array_equal(np.asarray(before.leaf), np.asarray(after.leaf))
