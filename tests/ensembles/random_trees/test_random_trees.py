"""Bojarski et al.'s (DP) completely random decision-tree forests (spec §1-§3, §6, §7)."""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.random_trees import forest as rt
from dpjax.ensembles.random_trees import (
    forest_predict,
    forest_proba,
    leaf_distribution,
    leaf_epsilon,
)
from dpjax.mechanisms import laplace_mechanism
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.privacy.rounding import round_up
from dpjax.trees import DenseTree
from tests.conftest import Z, binomial_tolerance, forest_fn, make_data, reference_leaf
from tests.helpers.fits import fit_random_trees


def exact_counts(forest: DenseTree, codes: np.ndarray, y: np.ndarray, n_classes: int):
    """Leaf class counts ``[k, 2**h, C]`` by pure-Python traversal of every tree."""
    feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
    k, n_internal = feature.shape
    counts = np.zeros((k, n_internal + 1, n_classes))
    for t in range(k):
        for row, label in zip(codes, y, strict=True):
            counts[t, reference_leaf(feature[t], threshold[t], row), label] += 1
    return counts


# --------------------------------------------------------------------------------------------
# Leaf distributions
# --------------------------------------------------------------------------------------------

COUNTS = np.array([
    [3.0, 1.0],     # ordinary
    [0.0, 0.0],     # all zero: fallback
    [-0.5, 2.0],    # a negative count: fallback
    [0.0, 5.0],     # one zero is fine
    [2.0, -1e-6],   # barely negative: fallback
    [1e-3, 0.0],    # tiny positive: fine
    [7.5, 2.5],
    [-3.0, -4.0],   # all negative: fallback
], np.float32)
FALLBACK = np.array([False, True, True, False, True, False, False, True])


def test_paper_leaf_distribution_fallback_exactly_when_negative_or_all_zero():
    key = jax.random.key(0)
    theta = np.asarray(leaf_distribution(key, jnp.asarray(COUNTS), "paper"))
    draw = np.asarray(jax.random.exponential(key, COUNTS.shape))
    uniform = draw / draw.sum(-1, keepdims=True)
    expected = np.where(FALLBACK[:, None], uniform,
                        COUNTS / np.where(FALLBACK, 1, COUNTS.sum(-1))[:, None])
    np.testing.assert_allclose(theta, expected, rtol=1e-6)
    np.testing.assert_allclose(theta.sum(-1), 1.0, rtol=1e-6)
    assert np.all(theta >= 0)
    # fallback rows really are random draws: another key changes them and only them
    other = np.asarray(leaf_distribution(jax.random.key(1), jnp.asarray(COUNTS), "paper"))
    changed = np.any(other != theta, axis=-1)
    np.testing.assert_array_equal(changed, FALLBACK)


def test_smoothed_leaf_distribution_formula():
    theta = np.asarray(leaf_distribution(jax.random.key(0), jnp.asarray(COUNTS), "smoothed"))
    clamped = np.maximum(COUNTS, 0) + 1
    np.testing.assert_allclose(theta, clamped / clamped.sum(-1, keepdims=True), rtol=1e-6)
    three = jnp.asarray([[0.0, 0.0, 0.0], [4.0, -2.0, 1.0]])
    np.testing.assert_allclose(leaf_distribution(jax.random.key(0), three, "smoothed"),
                               [[1 / 3] * 3, [5 / 8, 1 / 8, 2 / 8]], rtol=1e-6)


def test_binary_fallback_is_uniform_on_unit_interval():
    n = 200_000
    theta = np.asarray(leaf_distribution(jax.random.key(2), jnp.zeros((n, 2)), "paper"),
                       np.float64)
    np.testing.assert_allclose(theta.sum(-1), 1.0, rtol=1e-6)
    u = theta[:, 1]
    assert np.all((u >= 0) & (u <= 1))
    # U[0,1]: mean 1/2 (var 1/12), variance 1/12 (var of s^2 ~ (mu4 - sigma^4)/n)
    assert abs(u.mean() - 0.5) < Z * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < Z * math.sqrt((1 / 80 - 1 / 144) / n)
    # and flat: each tenth of [0, 1] holds a tenth of the draws
    decile = np.bincount(np.minimum((u * 10).astype(int), 9), minlength=10) / n
    np.testing.assert_array_less(np.abs(decile - 0.1), binomial_tolerance(0.1, n))


def test_multiclass_fallback_is_uniform_on_simplex():
    n = 100_000
    theta = np.asarray(leaf_distribution(jax.random.key(3), -jnp.ones((n, 3)), "paper"),
                       np.float64)
    # Dirichlet(1, 1, 1): each marginal is Beta(1, 2), mean 1/3, variance 1/18
    for c in range(3):
        assert abs(theta[:, c].mean() - 1 / 3) < Z * math.sqrt(1 / 18 / n)


# --------------------------------------------------------------------------------------------
# Counting without noise
# --------------------------------------------------------------------------------------------


def test_non_private_counts_are_exact():
    codes, y = make_data(0, 150)
    k, h = 4, 3
    forest, costs = forest_fn(k, h, 2, False, leaf_estimate="paper")(
        jax.random.key(4), jnp.asarray(codes), jnp.asarray(y))
    assert costs == {}  # nothing released under DP
    counts = exact_counts(forest, codes, y, 2)
    np.testing.assert_array_equal(counts.sum(axis=(1, 2)), [150] * k)
    theta = np.asarray(forest.leaf)
    total = counts.sum(-1)
    nonempty = total > 0
    assert nonempty.any() and (~nonempty).any()  # the fixed key gives both kinds of leaf
    np.testing.assert_allclose(theta[nonempty], counts[nonempty] / total[nonempty][:, None],
                               rtol=1e-6)
    # empty leaves: theta ~ U[0, 1] (drawn once, a valid distribution)
    np.testing.assert_allclose(theta[~nonempty].sum(-1), 1.0, rtol=1e-6)
    # the smoothed estimate of exact counts is the add-one rule
    smoothed, _ = forest_fn(k, h, 2, False)(jax.random.key(4), jnp.asarray(codes),
                                            jnp.asarray(y))
    chex.assert_trees_all_equal(smoothed.feature, forest.feature)
    np.testing.assert_allclose(smoothed.leaf, (counts + 1) / (total + 2)[..., None], rtol=1e-6)


@pytest.mark.slow
def test_dp_theta_tends_to_non_dp_theta_as_noise_vanishes():
    codes, y = make_data(5, 150)
    key = jax.random.key(5)
    args = (key, jnp.asarray(codes), jnp.asarray(y))
    counts = None
    for estimate in ("paper", "smoothed"):
        exact, _ = forest_fn(4, 3, 2, False, leaf_estimate=estimate)(*args)
        noisy, _ = forest_fn(4, 3, 2, True, leaf_estimate=estimate)(*args, 1e7)
        chex.assert_trees_all_equal((exact.feature, exact.threshold),
                                    (noisy.feature, noisy.threshold))
        if counts is None:
            counts = exact_counts(exact, codes, y, 2)
        if estimate == "paper":
            # a zero count can turn negative under any noise (paper fallback): compare the
            # leaves where every class count is positive
            mask = (counts > 0).all(-1)
            assert mask.sum() >= 4
        else:
            mask = np.ones(counts.shape[:2], bool)
        np.testing.assert_allclose(np.asarray(noisy.leaf)[mask], np.asarray(exact.leaf)[mask],
                                   atol=1e-4)


# --------------------------------------------------------------------------------------------
# Noise
# --------------------------------------------------------------------------------------------


NOISE_DEPTH = 11


def tree_scale(n_trees: int, epsilon: float, sensitivity: float) -> tuple[int, int]:
    """``(t, s)``: the exact discrete-Laplace scale ``t/s`` of one tree's counts, from the
    tree's rounded-down float32 budget ``eps/k`` (what the fit spends)."""
    each = leaf_epsilon(jnp.float32(epsilon), n_trees, NOISE_DEPTH, "parallel")
    t, s = laplace_fraction(round_up(jnp.float32(math.ceil(sensitivity)) / each))
    return int(t), int(s)


@functools.cache
def noisy_count_fit(n_trees: int, sensitivity: float):
    """``(key, codes, y, epsilon) -> (exact counts, noisy counts, costs)`` of a depth-11 forest:
    ``fit_random_trees`` with the leaf estimate replaced by the identity (traced under the
    patch, so the released leaves are the noisy counts themselves)."""
    fit = functools.partial(fit_random_trees, n_trees=n_trees, depth=NOISE_DEPTH,
                            n_codes_per_feature=np.array([10, 10, 10]), n_classes=2,
                            sensitivity=sensitivity)

    def counts(key, codes, y, epsilon):
        exact, _ = fit(key, codes, y, None)
        noisy, costs = fit(key, codes, y, epsilon)
        return exact.leaf, noisy.leaf, costs

    codes, y = make_data(6, 150)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rt, "leaf_distribution",
                      lambda key, counts, estimate="smoothed", pseudo=None: counts)
        return jax.jit(counts).lower(jax.random.key(0), jnp.asarray(codes), jnp.asarray(y),
                                     1.0).compile()


@pytest.mark.slow
@pytest.mark.parametrize(("n_trees", "epsilon", "sensitivity"), [
    (1, 1.0, 1.0), (5, 2.0, 1.0), (11, 0.5, 1.0), (5, 2.0, 2.0)])
def test_laplace_count_noise_is_exact_discrete_laplace(n_trees, epsilon, sensitivity):
    """Each counter of each leaf (empty ones included) of the fitted forest gets exact discrete
    Laplace noise ``P(Z = z) ∝ q^|z|``, ``q = exp(-s/t)``, of scale ``t/s >= k Delta / eps``
    (the paper's ``Lap(k Delta / eps)`` on integer counts, spec A1, A2): integer noise of
    variance ``2q/(1-q)^2``, independent per counter. The costs say one release per tree at
    ``Delta s/t <= eps/k``."""
    codes, y = make_data(6, 150)
    exact, noisy, costs = noisy_count_fit(n_trees, sensitivity)(
        jax.random.key(6), jnp.asarray(codes), jnp.asarray(y), epsilon)
    exact = np.asarray(exact, np.float64)
    np.testing.assert_array_equal(exact.sum(axis=(1, 2)), 150)  # really the exact counts
    noise = (np.asarray(noisy, np.float64) - exact).ravel()
    assert np.all(noise == np.round(noise))
    t, s = tree_scale(n_trees, epsilon, sensitivity)
    scale = n_trees * sensitivity / epsilon
    assert scale <= t / s <= scale * (1 + 2e-3)
    q = math.exp(-s / t)
    n = noise.size
    var = 2 * q / (1 - q) ** 2
    support = np.arange(-int(80 * t / s) - 10, int(80 * t / s) + 11).astype(np.float64)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    fourth = float(np.sum(pmf * support**4))
    assert abs(noise.mean()) < Z * math.sqrt(var / n)
    assert abs(noise.var() - var) < Z * math.sqrt((fourth - var**2) / n)
    p0 = (1 - q) / (1 + q)
    assert abs(np.mean(noise == 0) - p0) < binomial_tolerance(p0, n)
    # independent per counter: the two class counters of a leaf are uncorrelated
    pairs = noise.reshape(-1, 2)
    corr = np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]
    assert abs(corr) < Z / math.sqrt(len(pairs))
    (what,) = costs
    assert what == "leaf class counts"
    cost = costs[what]
    assert cost.mechanism == f"discrete Laplace (L1 sens. {sensitivity:g})"
    chex.assert_shape(cost.epsilon, (n_trees,))
    np.testing.assert_allclose(cost.epsilon, sensitivity * s / t, rtol=1e-7)
    assert np.asarray(cost.epsilon, np.float64).sum() <= epsilon
    assert np.asarray(cost.epsilon, np.float64).sum() >= epsilon * (1 - 2e-3)
    np.testing.assert_array_equal(cost.delta, 0.0)


@pytest.mark.slow
def test_replace_one_doubles_the_scale():
    """Sensitivity 2 (replace-one) at ``eps`` draws exactly the noise of sensitivity 1 at
    ``eps/2`` (same key): the scale ``k Delta / eps`` doubles, and so does the reported cost."""
    key = jax.random.key(8)
    counts = jnp.zeros((3, 64, 2))
    one, cost1 = laplace_mechanism(key, counts, 1.0, leaf_epsilon(0.25, 3, 6, "parallel"),
                                   integer=True, event_ndim=2)
    two, cost2 = laplace_mechanism(key, counts, 2.0, leaf_epsilon(0.5, 3, 6, "parallel"),
                                   integer=True, event_ndim=2)
    np.testing.assert_array_equal(two, one)
    np.testing.assert_array_equal(cost2.epsilon, 2 * np.asarray(cost1.epsilon))
    # the same holds through the forest fit: same structure, theta from the same noise
    codes, y = make_data(9, 150)
    fit1 = forest_fn(4, 3, 2, True)
    fit2 = forest_fn(4, 3, 2, True, sensitivity=2.0)
    half_eps, costs1 = fit1(key, jnp.asarray(codes), jnp.asarray(y), 0.25)
    doubled, costs2 = fit2(key, jnp.asarray(codes), jnp.asarray(y), 0.5)
    chex.assert_trees_all_equal(doubled, half_eps)
    np.testing.assert_array_equal(costs2["leaf class counts"].epsilon,
                                  2 * np.asarray(costs1["leaf class counts"].epsilon))
    assert not np.array_equal(fit1(key, jnp.asarray(codes), jnp.asarray(y), 0.5)[0].leaf,
                              doubled.leaf)


def test_noise_reaches_empty_leaves():
    codes, y = make_data(10, 150)
    codes[:, :] = 0  # every example in the same leaf of every tree
    forest, _ = forest_fn(4, 3, 2, True)(jax.random.key(11), jnp.asarray(codes),
                                         jnp.asarray(y), 2.0)
    exact = exact_counts(forest, codes, y, 2)
    empty = exact.sum(-1) == 0
    assert empty.sum() == 4 * 7
    # smoothed theta of an un-noised empty leaf would be exactly (1/2, 1/2); with noise it is
    # (1/2, 1/2) only when the clamped noisy counts max(Z, 0) + 1 of both classes agree
    theta = np.asarray(forest.leaf)[empty]
    t, s = laplace_fraction(round_up(1.0 / leaf_epsilon(jnp.float32(2.0), 4, 3, "parallel")))
    q = math.exp(-int(s) / int(t))
    pmf_positive = (1 - q) / (1 + q) * q ** np.arange(1, 200)
    p_not_positive = 1 - pmf_positive.sum()
    p_half = p_not_positive**2 + np.sum(pmf_positive**2)
    moved = np.mean(theta[:, 0] != 0.5)
    assert moved > 0
    assert abs(moved - (1 - p_half)) < binomial_tolerance(1 - p_half, len(theta))


# --------------------------------------------------------------------------------------------
# Voting
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_single_tree_majority_equals_threshold():
    codes, y = make_data(12, 150)
    for seed, eps in [(0, 1.0), (1, 0.1), (2, 10.0)]:
        forest, _ = forest_fn(1, 3, 2, True)(
            jax.random.key(seed), jnp.asarray(codes), jnp.asarray(y), eps)
        mv = forest_predict(forest, jnp.asarray(codes), "majority")
        ta = forest_predict(forest, jnp.asarray(codes), "threshold")
        np.testing.assert_array_equal(mv, ta)


def test_voting_rules_on_a_hand_made_forest():
    # three stumps on feature 0 at threshold 4; leaf theta of class 1
    theta1 = np.array([[0.2, 0.9], [0.6, 0.45], [0.4, 0.5]], np.float32)
    forest = DenseTree(feature=jnp.zeros((3, 1), jnp.int32),
                       threshold=jnp.full((3, 1), 4, jnp.int32),
                       leaf=jnp.asarray(np.stack([1 - theta1, theta1], -1)))
    codes = jnp.asarray([[0, 0, 0], [9, 0, 0]], jnp.uint8)
    # left leaf: votes (0, 1, 0) -> class 0; mean theta1 = 0.4 -> class 0
    # right leaf: votes (1, 0, 0): theta 0.5 is no vote for class 1 (strict > 1/2, A6)
    np.testing.assert_allclose(forest_proba(forest, codes, "majority"),
                               [[2 / 3, 1 / 3], [2 / 3, 1 / 3]], rtol=1e-6)
    np.testing.assert_allclose(forest_proba(forest, codes, "threshold")[:, 1],
                               [0.4, 1.85 / 3], rtol=1e-6)
    np.testing.assert_array_equal(forest_predict(forest, codes, "majority"), [0, 0])
    np.testing.assert_array_equal(forest_predict(forest, codes, "threshold"), [0, 1])


@pytest.mark.slow
def test_probabilistic_voting_needs_a_key():
    codes, y = make_data(13, 150)
    forest, _ = forest_fn(4, 3, 2, True)(jax.random.key(14), jnp.asarray(codes),
                                         jnp.asarray(y), 1.0)
    with pytest.raises(ValueError, match="key"):
        forest_predict(forest, jnp.asarray(codes), "probabilistic")
    a = forest_predict(forest, jnp.asarray(codes), "probabilistic", jax.random.key(0))
    b = forest_predict(forest, jnp.asarray(codes), "probabilistic", jax.random.key(0))
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(np.asarray(a))) <= {0, 1}
    # P(class 1) = mean theta: check the coin frequencies over many keys for one example
    n = 20_000
    coins = jax.jit(jax.vmap(lambda k: forest_predict(forest, jnp.asarray(codes[:1]),
                                                      "probabilistic", k)))(
        jax.random.split(jax.random.key(1), n))
    p = float(forest_proba(forest, jnp.asarray(codes[:1]), "probabilistic")[0, 1])
    assert abs(float(np.mean(coins)) - p) < binomial_tolerance(p, n) + 1e-12


# --------------------------------------------------------------------------------------------
# Shapes and multi-class
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("n_trees", "depth", "n_classes"), [(1, 3, 2), (4, 3, 2), (4, 3, 3)])
def test_forest_shapes(n_trees, depth, n_classes):
    codes, y = make_data(15, 150, n_classes)
    forest, costs = forest_fn(n_trees, depth, n_classes, True)(
        jax.random.key(16), jnp.asarray(codes), jnp.asarray(y), 1.0)
    # one count-vector release per tree, within the budget
    chex.assert_shape(costs["leaf class counts"].epsilon, (n_trees,))
    spent = np.asarray(costs["leaf class counts"].epsilon, np.float64)
    assert 1.0 * (1 - 2e-3) <= spent.sum() <= 1.0
    chex.assert_shape([forest.feature, forest.threshold], (n_trees, 2**depth - 1))
    chex.assert_shape(forest.leaf, (n_trees, 2**depth, n_classes))
    chex.assert_type([forest.feature, forest.threshold], jnp.int32)
    np.testing.assert_allclose(np.asarray(forest.leaf).sum(-1), 1.0, rtol=1e-5)
    for voting in ("majority", "threshold", "probabilistic"):
        proba = forest_proba(forest, jnp.asarray(codes), voting)
        chex.assert_shape(proba, (150, n_classes))
        np.testing.assert_allclose(np.asarray(proba).sum(-1), 1.0, rtol=1e-5)


def test_multiclass_forest_learns():
    codes, y = make_data(17, 150, 3)
    test_codes, test_y = make_data(18, 300, 3)
    forest, _ = forest_fn(4, 3, 3, True)(jax.random.key(19), jnp.asarray(codes),
                                         jnp.asarray(y), 5.0)
    for voting in ("majority", "threshold"):
        pred = np.asarray(forest_predict(forest, jnp.asarray(test_codes), voting))
        assert set(np.unique(pred)) <= {0, 1, 2}
        # y depends on feature 0 only: well above the 1/3 chance level
        assert np.mean(pred == test_y) > 0.5, voting


@pytest.mark.slow
def test_forests_are_nested_by_tree_index():
    """Tree i's structure depends on (key, i) only: the first k trees of a 21-tree forest are
    the trees of a k-tree forest fitted with the same key."""
    codes = jnp.asarray(np.random.default_rng(0).integers(0, 10, (50, 4)), jnp.uint8)
    y = jnp.asarray(np.arange(50) % 2, jnp.int32)
    common = dict(depth=4, n_codes_per_feature=np.full(4, 10), n_classes=2)
    big, _ = fit_random_trees(jax.random.key(7), codes, y, None, n_trees=21, **common)
    small, _ = fit_random_trees(jax.random.key(7), codes, y, None, n_trees=5, **common)
    np.testing.assert_array_equal(big.feature[:5], small.feature)
    np.testing.assert_array_equal(big.threshold[:5], small.threshold)


@pytest.mark.slow
def test_structure_key_shares_the_structure_but_not_the_noise():
    """``structure_key`` (what a sweep passes) sets the data-independent structure; the key
    sets the noise. Without it the structure comes from the key."""
    codes, y = make_data(20, 150)
    fit = jax.jit(lambda key, structure_key: fit_random_trees(
        key, jnp.asarray(codes), jnp.asarray(y), 1.0, n_trees=4, depth=3,
        n_codes_per_feature=np.full(3, 10), n_classes=2, structure_key=structure_key))
    shared = jax.random.key(21)
    a, _ = fit(jax.random.key(1), shared)
    b, _ = fit(jax.random.key(2), shared)
    chex.assert_trees_all_equal((a.feature, a.threshold), (b.feature, b.threshold))
    assert not np.array_equal(a.leaf, b.leaf)  # each fit draws its own noise
    default, _ = fit(jax.random.key(1), None)
    from_key, _ = fit(jax.random.key(1), jax.random.split(jax.random.key(1), 3)[0])
    chex.assert_trees_all_equal(default, from_key)
    assert not np.array_equal(default.feature, a.feature)
