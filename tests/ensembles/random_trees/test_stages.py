"""The public stages of ``dpjax.ensembles.random_trees``: its ``fit`` is literally their
composition (bit for bit, costs included), and voting over the first ``k`` trees of a nested
forest is the ``k``-tree forest."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.random_trees import forest as rt
from dpjax.trees import DenseTree
from tests.helpers.fits import fit_random_trees

M, N_FEATURES, DEPTH, TREES = 80, 3, 3, 7
N_CODES = np.full(N_FEATURES, 10)


def make_data(n_classes: int, seed: int = 0) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 10, (M, N_FEATURES)).astype(np.uint8)
    y = np.minimum(codes[:, 0].astype(np.int32) * n_classes // 10, n_classes - 1)
    flip = rng.random(M) < 0.2
    y[flip] = rng.integers(0, n_classes, flip.sum())
    return jnp.asarray(codes), jnp.asarray(y, jnp.int32)


def composed(key, codes, y, epsilon, *, n_classes, sensitivity=1.0, noise="laplace",
             leaf_estimate="smoothed", budget="parallel"):
    """The forest's ``fit`` written out as its stages (the documented key schedule)."""
    k_structure, k_noise, k_fallback = jax.random.split(key, 3)
    feature, threshold = rt.forest_structures(k_structure, TREES, DEPTH, N_CODES,
                                              threshold_range="global")
    counts = rt.leaf_class_counts(rt.forest_leaf_index(feature, threshold, codes), y,
                                  n_classes, 2**DEPTH)
    if epsilon is None:
        leaf = rt.leaf_distribution(k_fallback, counts.astype(jnp.float32), leaf_estimate)
        return DenseTree(feature=feature, threshold=threshold, leaf=leaf), {}
    release, cost = rt.release_counts(
        k_noise, counts, rt.leaf_epsilon(epsilon, TREES, DEPTH, budget),
        sensitivity=sensitivity, noise=noise, budget=budget)
    leaf = rt.leaf_estimates(k_fallback, release, n_classes, noise=noise,
                             estimate=leaf_estimate)
    return DenseTree(feature=feature, threshold=threshold, leaf=leaf), {rt.COSTS[noise]: cost}


@pytest.mark.slow
@pytest.mark.parametrize(("n_classes", "private", "settings"), [
    (2, False, dict(leaf_estimate="paper")),
    (2, True, dict(leaf_estimate="paper")),
    (3, True, dict(sensitivity=2.0, leaf_estimate="smoothed")),
    (2, True, dict(leaf_estimate="label", budget="paper")),
    (2, True, dict(noise="exponential", leaf_estimate="label", budget="paper")),
    (3, True, dict(noise="exponential", sensitivity=2.0, leaf_estimate="label")),
])
def test_fit_is_the_composition_of_the_stages(n_classes, private, settings):
    """Same forest and same costs (keys, shapes, values, ledger labels), bit for bit."""
    codes, y = make_data(n_classes)

    @jax.jit
    def both(key, epsilon):
        epsilon = epsilon if private else None
        fit = fit_random_trees(key, codes, y, epsilon, n_trees=TREES, depth=DEPTH,
                                  n_codes_per_feature=N_CODES, n_classes=n_classes, **settings)
        return fit, composed(key, codes, y, epsilon, n_classes=n_classes, **settings)

    (forest, costs), (forest2, costs2) = both(jax.random.key(4), jnp.float32(2.0))
    chex.assert_trees_all_equal(forest, forest2)
    assert list(costs) == list(costs2) == ([rt.COSTS[settings.get("noise", "laplace")]]
                                           if private else [])
    for name, cost in costs.items():
        chex.assert_trees_all_equal((cost.epsilon, cost.delta),
                                    (costs2[name].epsilon, costs2[name].delta))
        assert cost.mechanism == costs2[name].mechanism


@pytest.mark.slow
def test_counts_and_routing_are_exact():
    """Each tree's counts hold every row once, in the leaf it is routed to, by class."""
    codes, y = make_data(3)
    feature, threshold = rt.forest_structures(jax.random.key(0), TREES, DEPTH, N_CODES,
                                              threshold_range="global")
    leaves = np.asarray(rt.forest_leaf_index(feature, threshold, codes))
    counts = np.asarray(rt.leaf_class_counts(jnp.asarray(leaves), y, 3, 2**DEPTH))
    assert counts.dtype == np.int32 and counts.shape == (TREES, 2**DEPTH, 3)
    expected = np.zeros_like(counts)
    for t in range(TREES):
        np.add.at(expected[t], (leaves[t], np.asarray(y)), 1)
    np.testing.assert_array_equal(counts, expected)


@pytest.mark.slow
def test_release_shapes_costs_and_bad_noise():
    codes, y = make_data(2)
    feature, threshold = rt.forest_structures(jax.random.key(0), TREES, DEPTH, N_CODES,
                                              threshold_range="global")
    counts = rt.leaf_class_counts(rt.forest_leaf_index(feature, threshold, codes), y, 2,
                                  2**DEPTH)
    noisy, cost = rt.release_counts(jax.random.key(1), counts, jnp.float32(0.5), sensitivity=1.0,
                                    noise="laplace", budget="parallel")
    chex.assert_shape(noisy, (TREES, 2**DEPTH, 2))
    chex.assert_shape(cost.epsilon, (TREES,))
    assert np.all(np.asarray(cost.epsilon) <= 0.5)
    labels, cost = rt.release_counts(jax.random.key(1), counts, jnp.float32(0.5),
                                     noise="exponential", budget="paper", sensitivity=1.0)
    chex.assert_shape(labels, (TREES, 2**DEPTH))
    chex.assert_shape(cost.epsilon, (TREES, 2**DEPTH))
    with pytest.raises(ValueError, match="noise"):
        rt.release_counts(jax.random.key(1), counts, jnp.float32(0.5), noise="gaussian",
                          sensitivity=1.0, budget="parallel")


def test_fallback_leaves_is_the_paper_estimates_rule():
    counts = jnp.asarray([[0.0, 0.0], [3.0, -1.0], [2.0, 0.0], [1.0, 4.0]])
    np.testing.assert_array_equal(rt.fallback_leaves(counts), [True, True, False, False])
    theta = rt.leaf_distribution(jax.random.key(0), counts, "paper")
    np.testing.assert_allclose(theta[2:], [[1.0, 0.0], [0.2, 0.8]], rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("voting", ["majority", "threshold"])
def test_first_k_trees_of_a_nested_forest_are_the_k_tree_forest(voting):
    """Structures and exact counts are nested, so (with the deterministic smoothed estimate)
    the first k trees of a 21-tree fit are a k-tree fit: voting with ``n_active = k`` (traced,
    one program for every k) predicts what the k-tree forest predicts."""
    codes, y = make_data(3, seed=1)
    fit = dict(depth=DEPTH, n_codes_per_feature=N_CODES, n_classes=3)
    big, _ = fit_random_trees(jax.random.key(5), codes, y, None, n_trees=21, **fit)
    ks = jnp.arange(1, 22, 2)
    proba = jax.jit(jax.vmap(lambda k: rt.forest_proba(big, codes, voting, n_active=k)))(ks)
    pred = jax.jit(jax.vmap(lambda k: rt.forest_predict(big, codes, voting, n_active=k)))(ks)
    for i, k in enumerate(np.asarray(ks)):
        small, _ = fit_random_trees(jax.random.key(5), codes, y, None, n_trees=int(k), **fit)
        np.testing.assert_allclose(proba[i], rt.forest_proba(small, codes, voting), rtol=1e-6)
        np.testing.assert_array_equal(pred[i], rt.forest_predict(small, codes, voting))


def test_vote_defaults_and_masking():
    """``n_active=None`` is the plain mean over all trees; trees beyond ``n_active`` do not
    count; majority ties go to the lower class."""
    theta = jnp.asarray([[[0.2, 0.8]], [[0.5, 0.5]], [[0.9, 0.1]], [[0.0, 1.0]]])  # [T, m, C]
    chex.assert_trees_all_equal(rt.vote(theta, "threshold"), theta.mean(0))
    np.testing.assert_allclose(rt.vote(theta, "threshold", n_active=2), [[0.35, 0.65]])
    np.testing.assert_allclose(rt.vote(theta, "majority", n_active=3), [[2 / 3, 1 / 3]])
    np.testing.assert_allclose(rt.vote(theta, "majority", n_active=4), [[0.5, 0.5]])
    np.testing.assert_allclose(rt.vote(theta, "majority", n_active=4),
                               rt.vote(theta, "majority"))
