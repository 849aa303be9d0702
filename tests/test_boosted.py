"""Mα-boost, the boosted DP trees (``shared/specs/boosted-dp-trees-malpha.md`` §3–§5, §9).

Every fit here runs on one tiny planted problem (``m = 200`` rows, three features with eight
codes each, label = ``code_0 > 3`` with 5% label noise) through a handful of jitted
configurations cached per module, so the file compiles each configuration once.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import learner_fit

import dpjax
from dpjax.api import grid_keys
from dpjax.data import DataDependentWarning
from dpjax.ensembles import boosted
from dpjax.ensembles.boosted import (
    BoostedTrees,
    beta_rounding,
    boosted_decision,
    boosted_predict,
    boosted_proba,
    fit_boosted,
    leaf_link,
    leveraging_coefficient,
    link_bound,
    release_leaves,
    tree_budgets,
)
from dpjax.learners import get_learner
from dpjax.mechanisms import laplace_mechanism, permute_and_flip
from dpjax.mechanisms.laplace import grid_step
from dpjax.trees import leaf_index, malpha, split_level_epsilons
from dpjax.trees.malpha import WEIGHT_UNIT

M_ROWS, N_BINS = 200, 8
N_CODES = np.full(3, N_BINS, np.int32)
ZETA, FLOOR = 1e-4, 1e-6  # ζ (q clamp, §2.5) and ζ' (weight clamp, §3 / A21)
F32_ULP = 2.0**-23


def _planted(seed: int = 2024) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, N_BINS, (M_ROWS, len(N_CODES))).astype(np.uint8)
    y = (codes[:, 0] > 3) ^ (rng.uniform(size=M_ROWS) < 0.05)
    return codes, y.astype(np.int32)


CODES, Y = _planted()
SIGN = 2.0 * Y - 1.0
# Raw features whose public-grid codes are exactly CODES (bin centres of [0, 1]).
X = (CODES + 0.5) / N_BINS
BOUNDS = (np.zeros(len(N_CODES)), np.ones(len(N_CODES)))
FIT = dict(method="boosted", bounds=BOUNDS, n_bins=N_BINS)
BOOSTED = get_learner("boosted")
SIZE_SHARE = 0.05  # the default share of ε for the noisy row count
# Every budget inside a fit is rounded down (float32) and a Laplace release reports the ε its
# exact noise buys: a release spends within [share (1 − SLACK), share] of its spec share.
SLACK = 2e-3


@functools.cache
def private_fit(n_trees: int, depth: int = 3):
    """Jitted private ``fit_boosted`` (value leaves, folded β) with traced key, ε, α, β_tree and
    the public size ``ñ = M_ROWS`` declared: ``(model, costs)``."""
    def fit(key, epsilon, alpha, beta_tree):
        return fit_boosted(key, jnp.asarray(CODES), jnp.asarray(Y), epsilon, alpha=alpha,
                           beta_tree=beta_tree, size=M_ROWS, n_trees=n_trees, depth=depth,
                           n_codes_per_feature=N_CODES)
    return jax.jit(fit)


@functools.cache
def exact_fit(n_trees: int = 3, depth: int = 2):
    """Jitted non-private ``fit_boosted`` with a traced α: the model (its costs are empty)."""
    def fit(alpha):
        model, costs = fit_boosted(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y), None,
                                   alpha=alpha, n_trees=n_trees, depth=depth,
                                   n_codes_per_feature=N_CODES)
        assert costs == {}
        return model
    return jax.jit(fit)


def assert_budget(budget: float, share: float) -> None:
    """A float32 budget handed to a mechanism: at most its exact share, rounded down by a few
    float32 ulps per step of the split (never more)."""
    assert share * (1 - 1e-5) <= budget <= share, (budget, share)


def assert_spent(spent, share: float) -> None:
    """Every value of ``spent`` lies in ``[share (1 − SLACK), share]``."""
    spent = np.asarray(spent, np.float64)
    assert np.all(spent <= share), (spent.max(), share)
    assert np.all(spent >= share * (1 - SLACK)), (spent.min(), share)


# --- numpy references (spec §1.3, §1.4) -------------------------------------------------------


def np_link(u: np.ndarray, alpha: float) -> np.ndarray:
    """``ψ^(α)(u)`` with ``ψ(1/2) := 0``."""
    return alpha * (2 * u - 1) / np.sqrt(u * (1 - u)) + 2 * (1 - alpha) * np.sign(2 * u - 1)


def np_inverse_link(z: np.ndarray, alpha: float) -> np.ndarray:
    excess = np.abs(z) / 2 - (1 - alpha)
    outside = 0.5 * (1 + np.sign(z) * excess / np.sqrt(alpha**2 + excess**2))
    return np.where(excess > 0, outside, 0.5)


def np_link_bound(alpha: float, zeta: float = ZETA) -> float:
    return alpha * (1 - 2 * zeta) / math.sqrt(zeta * (1 - zeta)) + 2 * (1 - alpha)


def np_leaf_sums(leaf: np.ndarray, w: np.ndarray, n_leaves: int) -> np.ndarray:
    """(negative, positive) weighted class sums ``[n_leaves, 2]``."""
    return np.stack([np.bincount(leaf, w * (Y == 0), minlength=n_leaves),
                     np.bincount(leaf, w * (Y == 1), minlength=n_leaves)], axis=-1)


def np_leaf_values(sums: np.ndarray, alpha: float) -> np.ndarray:
    """``ψ(clip(q, ζ, 1 − ζ))`` with ``q = 1/2`` for an empty leaf (§2.5, A12)."""
    total = sums.sum(-1)
    q = np.where(total > 0, sums[:, 1] / np.where(total > 0, total, 1.0), 0.5)
    return np_link(np.clip(q, ZETA, 1 - ZETA), alpha)


def released_margins(model: BoostedTrees, n_rounds: int) -> np.ndarray:
    """``H_{n_rounds}(x_i) = Σ_{t < n_rounds} β_t·h̃_t(x_i)`` of the released model, float64."""
    h = np.zeros(M_ROWS)
    for t in range(n_rounds):
        leaf = np.asarray(leaf_index(model.trees.feature[t], model.trees.threshold[t], CODES))
        h += float(model.beta[t]) * np.asarray(model.trees.leaf[t], np.float64)[leaf]
    return h


def weights_of(margins: np.ndarray, alpha_link: float) -> np.ndarray:
    """Boosting weights ``clip(ψ^{-1}(−y·H), ζ', 1 − ζ')`` (§3 implementation form)."""
    return np.clip(np_inverse_link(-SIGN * margins, alpha_link), FLOOR, 1 - FLOOR)


def node_at_depth(feature: np.ndarray, threshold: np.ndarray, k: int) -> np.ndarray:
    """Heap index of the depth-``k`` node every example passes through."""
    node = np.zeros(M_ROWS, np.int64)
    for _ in range(k):
        f, t = feature[node], threshold[node]
        node = 2 * node + 1 + (CODES[np.arange(M_ROWS), f] > t)
    return node


def partition_error(groups: np.ndarray, w: np.ndarray) -> float:
    """``Σ_λ min{w^1(λ), w^{-1}(λ)}`` of the partition ``groups`` (§5.1)."""
    n = int(groups.max()) + 1
    pos = np.bincount(groups, w * (Y == 1), minlength=n)
    neg = np.bincount(groups, w * (Y == 0), minlength=n)
    return float(np.minimum(pos, neg).sum())


def tree_arrays(model: BoostedTrees, t: int) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(model.trees.feature[t]), np.asarray(model.trees.threshold[t])


# ------------------------------------------------------------------------------------------
# 1. Shapes, determinism, jit == no-jit
# ------------------------------------------------------------------------------------------


EAGER = dict(epsilon=2.0, beta_tree=0.4, n_trees=2, depth=3, beta_oc=0.1)


@pytest.fixture(scope="module")
def eager_private():
    """One *un-jitted* private fit (O.C private, settings ``EAGER``, public size ``M_ROWS``)
    with its costs, and the boosting weights and every mechanism call's shape, sensitivity,
    budget and bound recorded through ``jax.debug.callback`` (the scan body is traced once, so
    the records are taken at run time, once per round). The sensitivities are what the costs
    cannot show."""
    records = {"weights": [], "leaf": [], "oc": [], "splits": []}
    real_grow = boosted.grow_malpha_tree

    def grow(key, codes, weights, *args, **kwargs):
        jax.debug.callback(lambda w: records["weights"].append(np.asarray(w)), weights,
                           ordered=True)
        return real_grow(key, codes, weights, *args, **kwargs)

    def recorder(name, real):
        def mechanism(key, value, sensitivity, epsilon, **kwargs):
            jax.debug.callback(
                lambda v, s, e, b: records[name].append((np.shape(v), np.asarray(s),
                                                         float(e), b)),
                value, sensitivity, epsilon, kwargs.get("bound"), ordered=True)
            return real(key, value, sensitivity, epsilon, **kwargs)
        return mechanism

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boosted, "grow_malpha_tree", grow)
        patch.setattr(boosted, "laplace_mechanism", recorder("leaf", boosted.laplace_mechanism))
        patch.setattr(malpha, "laplace_mechanism", recorder("oc", malpha.laplace_mechanism))
        patch.setattr(malpha, "permute_and_flip", recorder("splits", malpha.permute_and_flip))
        model, costs = fit_boosted(jax.random.key(3), jnp.asarray(CODES), jnp.asarray(Y),
                                   EAGER["epsilon"], alpha=-1.0, beta_tree=EAGER["beta_tree"],
                                   size=M_ROWS, n_trees=EAGER["n_trees"], depth=EAGER["depth"],
                                   beta_oc=EAGER["beta_oc"], n_codes_per_feature=N_CODES)
        model, costs = jax.block_until_ready((model, costs))
    jax.effects_barrier()
    return model, costs, records


def _assert_boosted_shapes(model: BoostedTrees, n_trees: int, depth: int) -> None:
    assert isinstance(model, BoostedTrees)
    chex.assert_shape([model.trees.feature, model.trees.threshold, model.alpha],
                      (n_trees, 2**depth - 1))
    chex.assert_shape(model.trees.leaf, (n_trees, 2**depth))
    chex.assert_shape(model.beta, (n_trees,))
    chex.assert_type([model.trees.feature, model.trees.threshold], jnp.int32)
    chex.assert_type([model.trees.leaf, model.beta, model.alpha], jnp.float32)
    chex.assert_tree_all_finite(model)


def test_fit_shapes_private_and_non_private():
    private, _ = private_fit(3)(jax.random.key(0), 1.0, 0.5, 0.5)
    _assert_boosted_shapes(private, 3, 3)
    exact = exact_fit()(1.0)
    _assert_boosted_shapes(exact, 3, 2)
    # every split is a valid (feature, threshold) of the public grid
    for model in (private, exact):
        assert np.all(np.asarray(model.trees.threshold) <= N_CODES[0] - 1)
        assert np.all((np.asarray(model.trees.feature) >= 0)
                      & (np.asarray(model.trees.feature) < len(N_CODES)))
    # private trees are complete: no "send everything left" frozen split
    assert np.all(np.asarray(private.trees.threshold) < N_CODES[0] - 1)


def test_same_key_same_model_other_key_other_model():
    fit = private_fit(3)
    model, _ = fit(jax.random.key(5), 1.0, -1.0, 0.5)
    chex.assert_trees_all_equal(model, fit(jax.random.key(5), 1.0, -1.0, 0.5)[0])
    other, _ = fit(jax.random.key(6), 1.0, -1.0, 0.5)
    assert not np.array_equal(other.trees.feature, model.trees.feature)
    assert not np.allclose(other.trees.leaf, model.trees.leaf)


def test_jit_equals_no_jit_and_shorter_fits_are_prefixes(eager_private):
    """Tree ``t`` draws from ``fold_in(key, t)``, spends ``ε/T`` and is weighted by the released
    trees before it, so the un-jitted 2-tree fit at ε = 2 is exactly the first two trees of the
    jitted 3-tree fit at ε = 3 (the same ``ε/T = 1`` per tree, the same public size), and so
    are its costs."""
    eager, eager_costs, _ = eager_private
    jitted, costs = private_fit(3)(jax.random.key(3), 1.5 * EAGER["epsilon"], -1.0,
                                   EAGER["beta_tree"])
    prefix = jax.tree.map(lambda a: a[:2], jitted)
    chex.assert_trees_all_equal(eager.trees.feature, prefix.trees.feature)
    chex.assert_trees_all_equal(eager.trees.threshold, prefix.trees.threshold)
    chex.assert_trees_all_close(eager, prefix, rtol=1e-5, atol=1e-6)
    assert list(costs) == list(eager_costs)
    for what, cost in costs.items():
        chex.assert_trees_all_close(eager_costs[what], jax.tree.map(lambda a: a[:2], cost),
                                    rtol=1e-6)


@pytest.mark.parametrize("epsilon", [1.0, None])
def test_n_active_trees_equal_the_shorter_fit(epsilon):
    """``n_active = T'`` (traced) inside a ``T``-tree program gives exactly the ``T'``-tree fit
    (budget ε/T' per tree, after the same noisy row count) and releases nothing after it, at
    zero cost: one compile serves every T' <= T."""
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(depth=2, n_codes_per_feature=N_CODES, alpha=-1.0)
    masked = jax.jit(lambda n: fit_boosted(jax.random.key(5), codes, y, epsilon, n_trees=4,
                                           n_active=n, **common))
    for n_active in (1, 3):
        short, short_costs = jax.jit(lambda n=n_active: fit_boosted(
            jax.random.key(5), codes, y, epsilon, n_trees=n, **common))()
        long, costs = masked(jnp.float32(n_active))
        head = jax.tree.map(lambda a, n=n_active: a[:n], long)
        chex.assert_trees_all_equal(head.trees.feature, short.trees.feature)
        chex.assert_trees_all_close(head, short, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(long.trees.leaf[n_active:], 0.0)
        np.testing.assert_array_equal(long.beta[n_active:], 0.0)
        assert list(costs) == list(short_costs)
        assert ("row count" in costs) == (epsilon is not None)
        for what, cost in costs.items():
            if what == "row count":
                chex.assert_trees_all_close(cost, short_costs[what], rtol=1e-6)
                continue
            chex.assert_trees_all_close(jax.tree.map(lambda a, n=n_active: a[:n], cost),
                                        short_costs[what], rtol=1e-6)
            np.testing.assert_array_equal(cost.epsilon[n_active:], 0.0)


def test_fit_boosted_rejects_bad_static_options():
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(n_trees=1, depth=1, n_codes_per_feature=N_CODES)
    with pytest.raises(ValueError, match="binary"):
        fit_boosted(jax.random.key(0), codes, y, 1.0, n_classes=3, **common)
    with pytest.raises(ValueError, match="does not go with"):
        fit_boosted(jax.random.key(0), codes, y, 1.0, leaf_mechanism="counts",
                    beta_mode="fold", **common)
    with pytest.raises(ValueError, match="oc_alpha"):
        fit_boosted(jax.random.key(0), codes, y, 1.0, oc_alpha="noisy", **common)


# ------------------------------------------------------------------------------------------
# 2. Non-private Algorithm 1, replayed in numpy
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.3, 1.0])
def test_non_private_boosting_replays_algorithm_1(alpha):
    """Weights ``ψ^{-1}(−y·H_{t−1})`` (clamped to ``[ζ', 1 − ζ']``, ``H_0 = 0``), leaves
    ``ψ(clip(q, ζ, 1 − ζ))`` and ``β_t = (a/m)·Σ_i w_i·y_i·h_t(x_i)`` with ``a = α/M_ζ(α)²``
    (§3, A15), recomputed from the fitted splits."""
    model = exact_fit()(alpha)
    a = alpha / np_link_bound(alpha) ** 2
    np.testing.assert_allclose(float(link_bound(alpha, ZETA)), np_link_bound(alpha), rtol=1e-6)
    margins = np.zeros(M_ROWS)
    for t in range(3):
        w = weights_of(margins, alpha)
        if t == 0:
            np.testing.assert_array_equal(w, 0.5)
        feature, threshold = tree_arrays(model, t)
        leaf = np.asarray(leaf_index(feature, threshold, CODES))
        values = np_leaf_values(np_leaf_sums(leaf, w, 4), alpha)
        beta = a / M_ROWS * np.sum(w * SIGN * values[leaf])
        np.testing.assert_allclose(model.trees.leaf[t], values, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(float(model.beta[t]), beta, rtol=1e-4)
        margins = margins + beta * values[leaf]
    # the boosting property (§3): misclassified examples weigh >= 1/2, well classified <= 1/2
    w = weights_of(margins, alpha)
    assert np.all(w[SIGN * margins > 0] <= 0.5) and np.all(w[SIGN * margins < 0] >= 0.5)
    if alpha == 1.0:  # weights moved away from 1/2 (for α < 1 the flat zone may keep them)
        assert np.ptp(w) > 0.01


# ------------------------------------------------------------------------------------------
# 3. Under DP the weights come from the released model (§4.1)
# ------------------------------------------------------------------------------------------


def test_private_weights_come_from_the_released_noisy_model(eager_private):
    model, _, records = eager_private
    weights = records["weights"]
    assert len(weights) == EAGER["n_trees"]
    released = np.asarray(model.trees.leaf)
    np.testing.assert_array_equal(np.asarray(model.beta), 1.0)  # folded β
    assert np.all(np.abs(released) <= 1.0)  # α_LC = 1 under O.C
    clamp, a = 10.0, 1.0 / 10.0**2
    for t in range(EAGER["n_trees"]):
        expected = weights_of(released_margins(model, t), 1.0)
        np.testing.assert_allclose(weights[t], expected, rtol=1e-5, atol=1e-6)
        if t == 0:
            continue
        # The noise-free route (folded values of tree t-1 before the noise) would give
        # clearly different weights: the check above tells the two apart.
        feature, threshold = tree_arrays(model, t - 1)
        leaf = np.asarray(leaf_index(feature, threshold, CODES))
        sums = np_leaf_sums(leaf, weights[t - 1], 2 ** EAGER["depth"])
        values = np.clip(np_leaf_values(sums, 1.0), -clamp, clamp)
        beta = a / M_ROWS * np.sum(values * (sums[:, 1] - sums[:, 0]))
        noise_free = np.clip(beta * values, -1.0, 1.0)
        margins = released_margins(model, t - 1) + noise_free[leaf]
        assert np.abs(weights_of(margins, 1.0) - weights[t]).max() > 0.05


# ------------------------------------------------------------------------------------------
# 4. Folded leaves: |β_t·h_t(λ)| <= α_LC (§4.5)
# ------------------------------------------------------------------------------------------


def _random_leaf_problems(seed: int, n_problems: int, clamp: float, n_leaves: int = 8):
    """Leaf sums of per-example weights in [0, 1] and leaf values in [−M, M], including the
    extreme cases (all weights 1, one class, values ±M aligned with the class). The weights
    lie on the fixed-point grid of private fits (multiples of ``2**-WEIGHT_BITS``): see
    :func:`fixed_point` for the int32 sums ``release_leaves`` takes."""
    rng = np.random.default_rng(seed)
    m = 50
    w = np.floor(rng.uniform(0, 1, (n_problems, m)) * WEIGHT_UNIT) / WEIGHT_UNIT
    w[: n_problems // 4] = 1.0
    y = rng.integers(0, 2, (n_problems, m))
    y[: n_problems // 8] = 1
    leaf = rng.integers(0, n_leaves, (n_problems, m))
    stats = np.zeros((n_problems, n_leaves, 2))
    for p in range(n_problems):
        np.add.at(stats[p], (leaf[p], y[p]), w[p])
    values = rng.uniform(-clamp, clamp, (n_problems, n_leaves))
    aligned = clamp * np.sign(stats[..., 1] - stats[..., 0])
    values[: n_problems // 2] = aligned[: n_problems // 2]
    return jnp.asarray(stats, jnp.float32), jnp.asarray(values, jnp.float32), m


def fixed_point(stats: jax.Array) -> jax.Array:
    """Leaf sums in weight units -> the exact int32 fixed-point sums of a private fit (units
    of ``2**-WEIGHT_BITS``), what ``release_leaves`` takes."""
    scaled = np.asarray(stats, np.float64) * WEIGHT_UNIT
    assert np.array_equal(scaled, np.round(scaled))
    return jnp.asarray(np.round(scaled), jnp.int32)


@pytest.mark.parametrize(("alpha_link", "clamp"), [(1.0, 10.0), (0.1, 10.0), (1.0, 1.0)])
def test_folded_values_are_bounded_by_alpha_link(alpha_link, clamp):
    stats, values, m = _random_leaf_problems(0, 400, clamp)
    a = alpha_link / clamp**2
    beta = jax.vmap(leveraging_coefficient, in_axes=(0, 0, None, None))(values, stats, a, m)
    folded = np.abs(np.asarray(beta)[:, None] * np.asarray(values))
    assert folded.max() <= alpha_link * (1 + 1e-5)
    # the bound is attained: all weights 1, one class, values ±M
    np.testing.assert_allclose(folded.max(), alpha_link, rtol=1e-5)


@functools.cache
def fold_release(clamp: float, m: int):
    """Jitted ``release_leaves`` (value + fold), vmapped over keys and leaf sums, with a traced
    ``α_LC`` and leaf budget and the public size ``m``."""
    def release(keys, stats, alpha_link, epsilon_leaf):
        return jax.vmap(lambda k, s: release_leaves(
            k, s, alpha_link, clamp=clamp, zeta=ZETA, epsilon_leaf=epsilon_leaf,
            epsilon_beta=1.0, sensitivity=1.0, size=m, leaf_mechanism="value",
            beta_mode="fold", leaf_composition="sequential"))(keys, stats)
    return jax.jit(release)


@pytest.mark.parametrize(("alpha_link", "clamp"), [(1.0, 10.0), (0.1, 10.0), (1.0, 1.0)])
def test_release_leaves_fold_without_noise(alpha_link, clamp):
    """With a huge leaf budget the released folded leaves are ``β_t·clip(ψ(q̂), ±M)`` up to the
    fixed-point grid ``g`` of the release (noise of at most a fraction of a grid step: the
    sampler's range caps the precision; ``P(|Z| > 12 g) < e^-24``); with any budget they lie
    in ``[−α_LC, α_LC]``, ``β = 1``, and each leaf is one release costing at most its
    budget."""
    stats, _, m = _random_leaf_problems(1, 40, clamp)
    keys = jax.random.split(jax.random.key(0), stats.shape[0])
    for eps_leaf, noise_free in ((1e9, True), (0.05, False)):
        leaves, beta, costs = fold_release(clamp, m)(keys, fixed_point(stats), alpha_link,
                                                     eps_leaf)
        np.testing.assert_array_equal(beta, 1.0)
        assert np.all(np.abs(np.asarray(leaves)) <= alpha_link)
        assert list(costs) == ["leaves"]
        chex.assert_shape(costs["leaves"].epsilon, leaves.shape)
        assert np.all(np.asarray(costs["leaves"].epsilon, np.float64) <= eps_leaf)
        assert costs["leaves"].mechanism == "discrete Laplace (range 2α_LC)"
        if noise_free:
            sums = np.asarray(stats, np.float64)
            total = sums.sum(-1)
            q = np.where(total > 0, sums[..., 1] / np.where(total > 0, total, 1.0), 0.5)
            values = np.clip(np_link(np.clip(q, ZETA, 1 - ZETA), alpha_link), -clamp, clamp)
            a = alpha_link / clamp**2
            beta_t = a / m * np.sum(values * (sums[..., 1] - sums[..., 0]), -1)
            g = float(grid_step(2 * alpha_link, eps_leaf, alpha_link))
            np.testing.assert_allclose(leaves, beta_t[:, None] * values, rtol=0, atol=13 * g)
            assert g <= 2 * alpha_link * 2.0**-10
        else:
            assert_spent(costs["leaves"].epsilon, eps_leaf)
            assert np.mean(np.abs(np.asarray(leaves)) == alpha_link) > 0.5  # noise dominates


class ReleaseLeavesTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_shapes_and_clamps_for_every_mode(self):
        stats = fixed_point(_random_leaf_problems(2, 1, 10.0)[0][0])
        for mechanism, mode in [("value", "fold"), ("counts", "post")]:
            release = self.variant(lambda k, s, e, mech=mechanism, bm=mode: release_leaves(
                k, s, jnp.float32(0.5), clamp=10.0, zeta=ZETA, epsilon_leaf=e,
                epsilon_beta=e, sensitivity=1.0, size=50, leaf_mechanism=mech, beta_mode=bm,
                leaf_composition="sequential"))
            leaves, beta, costs = release(jax.random.key(1), stats, 0.3)
            chex.assert_shape(leaves, (8,))
            chex.assert_shape(beta, ())
            chex.assert_shape(costs["leaves"].epsilon, (8,))
            chex.assert_tree_all_finite((leaves, beta, costs))
            bound = 0.5 if mode == "fold" else 10.0
            assert np.all(np.abs(np.asarray(leaves)) <= bound), (mechanism, mode)

    @chex.variants(with_jit=True, without_jit=True)
    def test_leaf_link_of_sums(self):
        stats = jnp.array([[3.0, 1.0], [0.0, 0.0], [0.0, 2.0], [-0.5, 1.0]])
        values = self.variant(leaf_link)(stats, 1.0, ZETA)
        q = np.array([0.25, 0.5, 1.0 - ZETA, 1.0 - ZETA])  # empty -> 1/2; negatives -> 0
        # ψ(1 − ζ) ≈ 1/sqrt(ζ) amplifies the float32 rounding of 1 − ζ (~1e-4 relative)
        np.testing.assert_allclose(values, np_link(q, 1.0), rtol=2e-4)
        assert np.all(np.abs(np.asarray(values)) <= np_link_bound(1.0))


# ------------------------------------------------------------------------------------------
# 5. Laplace scales and budgets (§4.2, §4.4, §4.5, §5.3)
# ------------------------------------------------------------------------------------------


def test_fit_spends_eq_18_budgets_with_the_right_sensitivities(eager_private):
    """The costs of the un-jitted O.C fit, per round: ``d`` levels of selections (``2^k`` nodes
    at ``(1 − β_oc)·β_tree·ε/(T·d·2^k)`` each), ``d`` O.C releases (``β_oc·β_tree·ε/(T·d)``
    each) and ``2^d`` folded leaves (``(1 − β_tree)·ε/(T·2^d)`` each); one tree spends ``ε/T``.
    The recorded mechanism calls give the sensitivities: ``Δ^(α_ℓ)(ñ)`` with the node's own α
    for the splits, one weight for the O.C errors (exact fixed-point sums bounded by the public
    size), range ``2·α_LC`` for the folded leaves (bounded by ``α_LC``)."""
    model, costs, records = eager_private
    eps, bt, n_trees, depth, boc = (EAGER[k] for k in ("epsilon", "beta_tree", "n_trees",
                                                       "depth", "beta_oc"))
    assert list(costs) == [*(f"splits at depth {k}" for k in range(depth)),
                           "O.C level errors", "leaves"]  # public size: no row count
    for k in range(depth):
        cost = costs[f"splits at depth {k}"]
        chex.assert_shape(cost.epsilon, (n_trees, 2**k))
        assert cost.mechanism == "permute-and-flip (sens. (Δ^(α)(ñ) + 2^-18·ñ))"
        np.testing.assert_allclose(cost.epsilon, (1 - boc) * bt * eps / (n_trees * depth * 2**k),
                                   rtol=1e-6)
        assert_spent(cost.epsilon, (1 - boc) * bt * eps / (n_trees * depth * 2**k))
    chex.assert_shape(costs["O.C level errors"].epsilon, (n_trees, depth))
    assert_spent(costs["O.C level errors"].epsilon, boc * bt * eps / (n_trees * depth))
    chex.assert_shape(costs["leaves"].epsilon, (n_trees, 2**depth))
    assert costs["leaves"].mechanism == "discrete Laplace (range 2α_LC)"
    assert_spent(costs["leaves"].epsilon, (1 - bt) * eps / (n_trees * 2**depth))
    # one tree spends ε/T: 2^k nodes per level, d O.C releases, 2^d leaves
    per_tree = sum(np.asarray(c.epsilon, np.float64).reshape(n_trees, -1).sum(-1)
                   for c in costs.values())
    assert_spent(per_tree, eps / n_trees)
    # what each mechanism was called with
    assert len(records["splits"]) == len(records["oc"]) == n_trees * depth
    assert len(records["leaf"]) == n_trees
    for t in range(n_trees):
        for k in range(depth):
            shape, sensitivity, epsilon, _ = records["splits"][t * depth + k]
            assert shape == (2**k, len(N_CODES) * N_BINS)
            assert epsilon == float(costs[f"splits at depth {k}"].epsilon[t, 0])
            node_alpha = np.asarray(model.alpha[t, 2**k - 1: 2 ** (k + 1) - 1])
            np.testing.assert_allclose(  # Δ^(α)(ñ) + the float32 rounding margin 2^-18·ñ
                np.ravel(sensitivity),
                3 + 2 * node_alpha * (np.sqrt(M_ROWS) - 1) + 2.0**-18 * M_ROWS, rtol=1e-6)
            shape, sensitivity, epsilon, bound = records["oc"][t * depth + k]
            assert shape == ()  # one weight (fixed point), errors bounded by the public size
            np.testing.assert_allclose(sensitivity, WEIGHT_UNIT)
            assert float(bound) == M_ROWS * WEIGHT_UNIT
            assert_budget(epsilon, boc * bt * eps / (n_trees * depth))
        shape, sensitivity, epsilon, bound = records["leaf"][t]
        assert shape == (2**depth,)
        np.testing.assert_allclose(sensitivity, 2.0)  # 2·α_LC, α_LC = 1 under O.C
        assert float(bound) == 1.0
        assert_budget(epsilon, (1 - bt) * eps / (n_trees * 2**depth))


@pytest.fixture
def laplace_calls(monkeypatch):
    """The shape, sensitivity, budget, bound and event axes of every Laplace release of
    ``release_leaves`` (what the costs cannot show)."""
    calls = []
    real = boosted.laplace_mechanism

    def recording(key, value, sensitivity, epsilon, **kwargs):
        calls.append((np.shape(value), float(sensitivity), float(epsilon),
                      float(kwargs["bound"]), kwargs.get("event_ndim")))
        return real(key, value, sensitivity, epsilon, **kwargs)

    monkeypatch.setattr(boosted, "laplace_mechanism", recording)
    return calls


@pytest.mark.parametrize(
    ("leaf_mechanism", "beta_mode", "composition", "multiplier"),
    [("value", "fold", "sequential", 1.0), ("value", "laplace", "sequential", 1.0),
     ("counts", "post", "parallel", 1.0), ("counts", "post", "sequential", 2.0),
     ("counts", "laplace", "sequential", 2.0)])
def test_release_leaves_scales_and_budgets(laplace_calls, leaf_mechanism, beta_mode,
                                           composition, multiplier):
    eps, bt, n_trees, depth, share, alpha_link, clamp, m = 1.3, 0.3, 4, 3, 0.2, 0.5, 10.0, 50
    budget = tree_budgets(eps, bt, False, n_trees=n_trees, depth=depth, beta_oc=0.1,
                          beta_share=share, beta_mode=beta_mode, leaf_composition=composition,
                          size_share=0.0)
    stats = fixed_point(_random_leaf_problems(3, 1, clamp)[0][0])
    _, _, costs = release_leaves(
        jax.random.key(0), stats, jnp.float32(alpha_link), clamp=clamp, zeta=ZETA,
        epsilon_leaf=budget["leaf"], epsilon_beta=budget["beta"], sensitivity=multiplier,
        size=m, leaf_mechanism=leaf_mechanism, beta_mode=beta_mode,
        leaf_composition=composition)
    per_tree_leaves = (1 - bt) * eps / n_trees
    n_leaves = 2**depth
    beta_share = share if beta_mode == "laplace" else 0.0
    leaf_eps = per_tree_leaves * (1 - beta_share) / (n_leaves if composition == "sequential"
                                                      else 1)
    # (shape, sensitivity, budget, bound, event axes) of each release
    if leaf_mechanism == "counts":  # fixed-point class sums (L1 sensitivity 1 or 2 weights),
        # bounded by the size
        expected = [((n_leaves, 2), multiplier * WEIGHT_UNIT, leaf_eps, m * WEIGHT_UNIT, 1)]
        label = f"L1 sens. {multiplier:g}"
    elif beta_mode == "fold":  # range [−α_LC, α_LC]
        expected = [((n_leaves,), 2 * alpha_link, leaf_eps, alpha_link, 0)]
        label = "range 2α_LC"
    else:  # range [−M, M]
        expected = [((n_leaves,), 2 * clamp, leaf_eps, clamp, 0)]
        label = "range 2M"
    a = alpha_link / clamp**2
    if beta_mode == "laplace":
        expected.append(((), 2 * a * clamp / m + 2 * beta_rounding(a, clamp, n_leaves),
                         per_tree_leaves * share, 2 * a * clamp, None))
    assert len(laplace_calls) == len(expected)
    for call, want in zip(laplace_calls, expected, strict=True):
        assert call[0] == want[0] and call[4] == want[4]
        np.testing.assert_allclose([call[1], call[3]], [want[1], want[3]], rtol=1e-6)
        assert_budget(call[2], want[2])
    # the costs: one per leaf (sequential) or one for the disjoint leaves (parallel), + β
    assert list(costs) == ["leaves"] + (["leveraging coefficient β_t"] if beta_mode == "laplace"
                                        else [])
    assert costs["leaves"].mechanism == f"discrete Laplace ({label})"
    chex.assert_shape(costs["leaves"].epsilon, (n_leaves,) if composition == "sequential"
                      else ())
    assert_spent(costs["leaves"].epsilon, leaf_eps)
    spent = float(np.sum(np.asarray(costs["leaves"].epsilon, np.float64)))
    if beta_mode == "laplace":
        beta_cost = costs["leveraging coefficient β_t"]
        assert beta_cost.mechanism == "discrete Laplace (sens. 2aM/ñ + rounding)"
        chex.assert_shape(beta_cost.epsilon, ())
        assert_spent(beta_cost.epsilon, per_tree_leaves * share)
        spent += float(beta_cost.epsilon)
    # the tree spends ε/T: splits, then the leaves, + β
    assert_spent(float(budget["splits"]) + spent, eps / n_trees)


@pytest.mark.parametrize("oc_private", [True, False])
@pytest.mark.parametrize("size_share", [0.0, SIZE_SHARE])
def test_tree_budgets_formulas(oc_private, size_share):
    eps, bt, n_trees, depth, boc = 2.0, 0.6, 5, 3, 0.25
    budget = tree_budgets(eps, bt, oc_private, n_trees=n_trees, depth=depth, beta_oc=boc,
                          beta_share=0.1, beta_mode="fold", leaf_composition="sequential",
                          size_share=size_share)
    share_oc = boc if oc_private else 0.0
    per_tree = eps * (1 - size_share) / n_trees
    if size_share:
        assert_spent(budget["size"], eps * size_share)
    else:
        np.testing.assert_array_equal(budget["size"], 0.0)
    assert_spent(budget["splits"], (1 - share_oc) * bt * per_tree)
    np.testing.assert_allclose(
        split_level_epsilons(budget["splits"], depth),
        [(1 - share_oc) * bt * per_tree / (depth * 2**k) for k in range(depth)], rtol=1e-6)
    assert_spent(budget["leaf"], (1 - bt) * per_tree / 2**depth)
    if oc_private:
        assert_spent(budget["oc"], boc * bt * per_tree / depth)
    # every share is rounded down: the releases add up to at most ε (and nearly all of it)
    spent = float(budget["size"]) + n_trees * (float(budget["splits"]) + float(budget["leaf"])
                                               * 2**depth)
    spent += n_trees * float(budget["oc"]) * depth if oc_private else 0.0
    assert_spent(spent, eps)
    # jittable with traced ε, β_tree and O.C flag
    traced = jax.jit(lambda e, b, o: tree_budgets(
        e, b, o, n_trees=n_trees, depth=depth, beta_oc=boc, beta_share=0.1, beta_mode="fold",
        leaf_composition="sequential", size_share=size_share))(eps, bt, oc_private)
    chex.assert_trees_all_close(traced, budget, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# 6. The privacy ledger (§4.2 eq. (18), §4.6, §5.3, §9)
# ------------------------------------------------------------------------------------------


def expected_ledger(eps: float, n_trees: int, depth: int, beta_tree: float, alpha,
                    beta_oc: float = 0.1, beta_share: float = 0.1, beta_mode: str = "fold",
                    composition: str = "sequential",
                    size_share: float | None = SIZE_SHARE) -> list[tuple[str, float, int]]:
    """``(what, ε each, count)`` of every entry, in ledger order, straight from the spec (exact
    shares): the noisy row count first when the size is private (``size_share``; ``None``
    when the size is public), then per tree of ``ε (1 − size_share) / T`` the splits of each
    depth, the O.C level errors, the leaves and ``β_t``."""
    entries = []
    if size_share is not None:
        entries.append(("row count", eps * size_share, 1))
    per_tree = eps * (1 - (size_share or 0.0)) / n_trees
    oc_private = alpha == "oc" and depth > 1
    share_oc = beta_oc if oc_private else 0.0
    entries += [(f"splits at depth {k}", (1 - share_oc) * beta_tree * per_tree / (depth * 2**k),
                 n_trees * 2**k) for k in range(depth)]
    if oc_private:
        entries.append(("O.C level errors", beta_oc * beta_tree * per_tree / depth,
                        n_trees * depth))
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    leaves = 2**depth if composition == "sequential" else 1
    entries.append(("leaves", (1 - beta_tree) * (1 - share_beta) * per_tree / leaves,
                    n_trees * leaves))
    if share_beta:
        entries.append(("leveraging coefficient β_t", (1 - beta_tree) * share_beta * per_tree,
                        n_trees))
    return entries


def assert_ledger(ledger: dpjax.PrivacyLedger, eps: float, expected) -> None:
    """The ledger has the expected entries, each release spending at most its spec share (and
    within ``SLACK`` of it), and a total within ``[ε (1 − SLACK), ε]``."""
    assert ledger.private
    assert ledger.requested_epsilon == eps
    assert ledger.epsilon <= eps
    assert ledger.epsilon >= eps * (1 - SLACK)
    assert [(e.what, e.count) for e in ledger.entries] == [(w, c) for w, _, c in expected]
    for entry, (_, each, _) in zip(ledger.entries, expected, strict=True):
        assert_spent(entry.epsilon, each)
    assert all(e.private and e.delta == 0.0 for e in ledger.entries)


def test_default_config_ledger_spends_epsilon():
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, **FIT)
    assert model.hyperparams["alpha"] == "oc" and model.hyperparams["n_trees"] == 10
    assert model.hyperparams["size_share"] == SIZE_SHARE
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, "oc"))
    names = [e.what for e in model.privacy.entries]
    assert names[0] == "row count"  # the row count is private under add/remove
    assert "O.C level errors" in names
    assert model.privacy.entries[0].mechanism == "discrete Laplace (sens. 1)"
    _assert_boosted_shapes(model.params, 10, 4)


def test_spec_section_9_budget_example():
    """ε = 1, β_tree = 0.5, T = 10, d = 4, fixed α, public size: per-node 0.0125, 0.00625,
    0.003125, 0.0015625; the splits of one tree spend 0.05 = β_tree·ε/T. Without a public
    size a share of ε goes to the noisy row count first and the rest is split the same way."""
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, alpha=1.0, public_size=M_ROWS, **FIT)
    splits = model.privacy.entries[:4]
    assert [e.epsilon for e in splits] == pytest.approx([0.0125, 0.00625, 0.003125, 0.0015625],
                                                        rel=1e-6)
    assert sum(e.epsilon * 2**k for k, e in enumerate(splits)) == pytest.approx(0.05, rel=1e-6)
    assert len(model.privacy.entries) == 5  # no O.C entry for a fixed α, no row count
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, 1.0, size_share=None))
    private_size = dpjax.fit(X, Y, epsilon=1.0, key=0, alpha=1.0, **FIT)
    assert_ledger(private_size.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, 1.0))
    assert [e.epsilon for e in private_size.privacy.entries[1:5]] == pytest.approx(
        [0.0125 * (1 - SIZE_SHARE) / 2**k for k in range(4)], rel=1e-6)


@pytest.mark.parametrize(("eps", "beta_tree", "alpha"), [
    (0.5, 0.1, 0.1), (5.0, 0.9, "oc"), (0.01, 0.5, 1.0), (25.0, 0.3, "oc"), (1.0, 0.5, "oc")])
def test_ledger_through_fit(eps, beta_tree, alpha):
    model = dpjax.fit(X, Y, epsilon=eps, key=1, beta_tree=beta_tree, alpha=alpha, n_trees=3,
                      depth=2, **FIT)
    assert_ledger(model.privacy, eps, expected_ledger(eps, 3, 2, beta_tree, alpha))


LEDGER_MODES = [("value", "fold", "sequential"), ("value", "laplace", "sequential"),
                ("counts", "post", "parallel")]


@functools.cache
def fit_costs(n_trees: int, depth: int, mode: tuple[str, str, str], public_size: bool,
              size_share: float = SIZE_SHARE):
    """``(epsilon, alpha, beta_tree) -> costs`` of ``fit_boosted``, jitted and vmapped over the
    three (traced) settings. Only the costs are returned, so XLA drops the samplers: cheap."""
    mechanism, beta_mode, composition = mode

    def costs(epsilon, alpha, beta_tree):
        return fit_boosted(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y), epsilon,
                           alpha=alpha, beta_tree=beta_tree, size=M_ROWS if public_size else None,
                           n_trees=n_trees, depth=depth, n_codes_per_feature=N_CODES,
                           leaf_mechanism=mechanism, beta_mode=beta_mode,
                           leaf_composition=composition, size_share=size_share)[1]
    return jax.jit(jax.vmap(costs))


@pytest.mark.parametrize(("n_trees", "depth"), [(1, 1), (2, 1), (7, 3), (20, 6)])
@pytest.mark.parametrize("mode", LEDGER_MODES)
def test_ledger_grid(n_trees, depth, mode):
    """The ledger assembled from the fit's costs (what ``dpjax.fit`` records) over T, d, ε,
    β_tree, α and the modes equals the spec's (with the noisy row count; a public size is
    checked for one configuration); ``d = 1`` under O.C has no O.C entry (nothing to
    calibrate)."""
    grid = list(itertools.product([0.01, 0.7, 10.0], [0.1, 0.5, 0.9], [0.1, 1.0, "oc"]))
    epsilons, beta_trees, alphas = (jnp.asarray(
        [BOOSTED.encode_traced(name, value) for value in values], jnp.float32)
        for name, values in zip(("epsilon", "beta_tree", "alpha"), zip(*grid, strict=True),
                                strict=True))
    for public_size in (False, True) if (n_trees, depth) == (7, 3) else (False,):
        costs = fit_costs(n_trees, depth, mode, public_size)(epsilons, alphas, beta_trees)
        for i, (eps, beta_tree, alpha) in enumerate(grid):
            ledger = dpjax.PrivacyLedger(requested_epsilon=eps).with_costs(
                jax.tree.map(lambda a, i=i: a[i], costs))
            assert_ledger(ledger, eps, expected_ledger(
                eps, n_trees, depth, beta_tree, alpha, beta_mode=mode[1], composition=mode[2],
                size_share=None if public_size else SIZE_SHARE))
            has_oc = any(e.what == "O.C level errors" for e in ledger.entries)
            assert has_oc == (alpha == "oc" and depth > 1)


def test_replace_one_and_laplace_beta_still_total_epsilon():
    """Replace-one: the row count is public (no noisy count), split and count sensitivities
    double; unfolded value leaves and a separately noised β_t."""
    eps = 0.8
    model = dpjax.fit(X, Y, epsilon=eps, key=0, neighbouring="replace_one", beta_mode="laplace",
                      n_trees=2, depth=1, **FIT)
    ledger = model.privacy
    assert ledger.neighbouring == "replace_one"
    assert_ledger(ledger, eps, expected_ledger(eps, 2, 1, 0.5, "oc", beta_mode="laplace",
                                               size_share=None))
    assert ledger.entries[-1].what == "leveraging coefficient β_t"
    assert ledger.entries[-1].mechanism == "discrete Laplace (sens. 2aM/ñ + rounding)"
    assert not any("O.C" in e.what for e in ledger.entries)  # d = 1: nothing to calibrate
    assert ledger.entries[0].mechanism == (
        "permute-and-flip (sens. 2·(Δ^(α)(ñ) + 2^-18·ñ))")  # doubled
    assert ledger.entries[1].mechanism == "discrete Laplace (range 2M)"  # value leaves, ±M


def test_public_size_replaces_the_noisy_row_count():
    """Under add/remove the row count is private: without a public size a noisy count is
    released first (its share of ε, discrete Laplace of sensitivity 1); a declared size
    releases none and leaves the whole budget to the trees."""
    noisy = dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, **FIT)
    declared = dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, public_size=M_ROWS,
                         **FIT)
    assert noisy.privacy.entries[0].what == "row count"
    assert noisy.privacy.entries[0].count == 1
    assert not any(e.what == "row count" for e in declared.privacy.entries)
    assert_ledger(noisy.privacy, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc"))
    assert_ledger(declared.privacy, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc", size_share=None))
    # the count's share is the size_share hyper-parameter
    costs = fit_costs(3, 2, ("value", "fold", "sequential"), False, 0.2)(
        jnp.float32([2.0]), jnp.float32([-1.0]), jnp.float32([0.5]))
    ledger = dpjax.PrivacyLedger(requested_epsilon=2.0).with_costs(
        jax.tree.map(lambda a: a[0], costs))
    assert_ledger(ledger, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc", size_share=0.2))
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="public_size"):
            dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, public_size=bad, **FIT)


def test_noisy_row_count_sets_the_public_size():
    """With ``size=None`` the fit first releases ``m`` + discrete Laplace noise (key: the first
    half of the split key) at ``size_share·ε``, then fits exactly as with that size declared
    (minus the count's share of ε)."""
    key, eps = jax.random.key(9), 2.0
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(n_trees=2, depth=2, n_codes_per_feature=N_CODES, alpha=-1.0)
    model, costs = jax.jit(lambda k: fit_boosted(k, codes, y, eps, **common))(key)
    budget = tree_budgets(eps, 0.5, True, n_trees=2, depth=2, beta_oc=0.1, beta_share=0.1,
                          beta_mode="fold", leaf_composition="sequential",
                          size_share=SIZE_SHARE)
    count, count_cost = laplace_mechanism(jax.random.split(key)[0], jnp.float32(M_ROWS), 1.0,
                                          budget["size"], integer=True)
    assert costs["row count"].mechanism == "discrete Laplace (sens. 1)"
    assert float(costs["row count"].epsilon) == float(count_cost.epsilon)
    assert_spent(costs["row count"].epsilon, eps * SIZE_SHARE)
    # the same fit with the released count declared and ε reduced by the count's share
    declared, _ = jax.jit(lambda k, n: fit_boosted(k, codes, y, eps * (1 - SIZE_SHARE),
                                                   size=n, **common))(key, count)
    chex.assert_trees_all_equal(model.trees.feature, declared.trees.feature)
    chex.assert_trees_all_close(model, declared, rtol=1e-4, atol=1e-5)
    assert float(count) != M_ROWS  # the released count is noisy


def test_exact_oc_under_dp_warns_and_is_not_private():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, Y, epsilon=1.0, key=0, oc_alpha="exact", n_trees=1, depth=1, **FIT)
    assert model.privacy.private is False
    assert model.privacy.epsilon == math.inf
    assert [e.what for e in model.privacy.entries if not e.private] == [
        "O.C α from exact weighted errors (paper)"]
    assert model.privacy.not_private_reasons == ("O.C α from exact weighted errors (paper)",)
    # exact O.C with a fixed α reads nothing: private again
    fixed = dpjax.fit(X, Y, epsilon=1.0, key=0, oc_alpha="exact", alpha=0.5, n_trees=1, depth=1,
                      **FIT)
    assert_ledger(fixed.privacy, 1.0, expected_ledger(1.0, 1, 1, 0.5, 0.5))


def test_paper_fast_beta_warns_and_is_not_private_through_fit():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, Y, epsilon=1.0, key=0, beta_mode="paper_fast", alpha=0.5,
                          n_trees=1, depth=1, **FIT)
    assert model.privacy.private is False
    assert model.privacy.epsilon == math.inf
    assert model.privacy.not_private_reasons == ("β_t from the data without noise (paper_fast)",)


@pytest.mark.parametrize("leaf_mechanism", ["value", "counts"])
def test_paper_fast_beta_warns_and_is_not_private(leaf_mechanism):
    """The learner's list of non-private parts (the ledger marks each one): ``paper_fast`` β
    and exact O.C under DP warn; the private modes list nothing."""
    params = BOOSTED.resolve(dict(beta_mode="paper_fast", leaf_mechanism=leaf_mechanism,
                                  alpha=0.5))
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        reasons = BOOSTED.not_private(params)
    assert reasons == ["β_t from the data without noise (paper_fast)"]
    ledger = dpjax.PrivacyLedger(requested_epsilon=1.0)
    for what in reasons:
        ledger = ledger.record(dpjax.mechanisms.LedgerEntry(what, "none", 0.0, private=False))
    assert ledger.private is False and ledger.epsilon == math.inf
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        assert BOOSTED.not_private(BOOSTED.resolve(dict(oc_alpha="exact"))) == [
            "O.C α from exact weighted errors (paper)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        assert BOOSTED.not_private(BOOSTED.resolve({})) == []
        assert BOOSTED.not_private(BOOSTED.resolve(dict(oc_alpha="exact", alpha=0.5))) == []


# ------------------------------------------------------------------------------------------
# 7. Float32 budgets inside the fit vs the ledger
# ------------------------------------------------------------------------------------------


BUDGET_MODES = [("value", "fold", "sequential"), ("value", "laplace", "sequential"),
                ("counts", "post", "parallel")]


@functools.cache
def budget_fn(n_trees: int, depth: int, beta_mode: str, composition: str):
    """``tree_budgets`` (private size: ``SIZE_SHARE``) jitted and vmapped over ε, with the
    split budget's per-level shares."""
    def budgets(epsilon, beta_tree, oc_private):
        budget = tree_budgets(epsilon, beta_tree, oc_private, n_trees=n_trees, depth=depth,
                              beta_oc=0.1, beta_share=0.1, beta_mode=beta_mode,
                              leaf_composition=composition, size_share=SIZE_SHARE)
        return {**budget, "levels": split_level_epsilons(budget["splits"], depth)}
    return jax.jit(jax.vmap(budgets, in_axes=(0, None, None)))


# the costs the mechanisms report for given budgets (costs only: XLA drops the samplers)
selection_costs = jax.jit(jax.vmap(lambda e: permute_and_flip(
    jax.random.key(0), jnp.zeros(2), 21.0, e)[1].epsilon))
laplace_costs = jax.jit(jax.vmap(lambda e: laplace_mechanism(
    jax.random.key(0), jnp.zeros(2), 2.0, e, bound=1.0, event_ndim=1)[1].epsilon))


def _check_budget_grid(beta_tree: float) -> None:
    """Over a grid of ε, T, d, α and the modes: every float32 budget the fit hands a mechanism
    is at most its exact (float64) spec share, the mechanisms' costs are at most their
    budgets, and all releases together stay within ε."""
    epsilons = [0.1, 1.0, 3.7, 25.0]
    selections, releases = [], []
    for n_trees, depth, alpha, mode in itertools.product([1, 7], [1, 3], ["oc", 0.5],
                                                          BUDGET_MODES):
        _, beta_mode, composition = mode
        oc_private = alpha == "oc" and depth > 1
        budget = budget_fn(n_trees, depth, beta_mode, composition)(
            jnp.float32(epsilons), jnp.float32(beta_tree), oc_private)
        budget = {k: np.asarray(v, np.float64) for k, v in budget.items()}
        for i, eps in enumerate(epsilons):
            spec = {(w, c): each for w, each, c in expected_ledger(
                eps, n_trees, depth, beta_tree, alpha, beta_mode=beta_mode,
                composition=composition)}
            where = (eps, n_trees, depth, beta_tree, alpha, mode)
            used = [("row count", budget["size"][i], 1)]
            used += [(f"splits at depth {k}", budget["levels"][i, k], n_trees * 2**k)
                     for k in range(depth)]
            if oc_private:
                used.append(("O.C level errors", budget["oc"][i], n_trees * depth))
            leaves = 2**depth if composition == "sequential" else 1
            used.append(("leaves", budget["leaf"][i], n_trees * leaves))
            if beta_mode == "laplace":
                used.append(("leveraging coefficient β_t", budget["beta"][i], n_trees))
            assert sorted((w, c) for w, _, c in used) == sorted(spec), where
            for what, each, count in used:
                assert each <= spec[(what, count)], (where, what)
                assert each >= spec[(what, count)] * (1 - 1e-5), (where, what)
            assert math.fsum(each * count for _, each, count in used) <= eps, where
            for what, each, _ in used:
                (selections if what.startswith("splits") else releases).append(each)
    # what the mechanisms make of them: permute-and-flip spends exactly its budget, a Laplace
    # release at most its budget
    selections, releases = np.float32(selections), np.float32(releases)
    np.testing.assert_array_equal(selection_costs(jnp.asarray(selections)), selections)
    assert np.all(np.asarray(laplace_costs(jnp.asarray(releases))) <= releases)


@pytest.mark.parametrize("beta_tree", [0.1, 0.3, 0.5, 0.7])
def test_float32_budgets_never_exceed_the_spec(beta_tree):
    _check_budget_grid(beta_tree)


def test_float32_budgets_never_exceed_the_spec_beta_tree_near_one():
    _check_budget_grid(0.9)


# ------------------------------------------------------------------------------------------
# 8. Objective calibration (§5)
# ------------------------------------------------------------------------------------------


def test_private_oc_alphas_per_level():
    """Private O.C (§5.3): root α = 1, one α per level, in [0, 1], non-increasing."""
    fit = private_fit(3)
    seen_below_one = False
    for seed, eps in itertools.product(range(3), [0.3, 5.0, 1e5]):
        model, _ = fit(jax.random.key(seed), eps, -1.0, 0.5)
        alpha = np.asarray(model.alpha)
        np.testing.assert_array_equal(alpha[:, 0], 1.0)
        assert np.all((alpha >= 0) & (alpha <= 1))
        levels = [alpha[:, 2**k - 1: 2 ** (k + 1) - 1] for k in range(3)]
        for k, level in enumerate(levels):
            np.testing.assert_array_equal(level, level[:, :1] * np.ones_like(level))
            if k:
                assert np.all(level[:, 0] <= levels[k - 1][:, 0])
        seen_below_one |= bool((alpha < 1).any())
    assert seen_below_one


def test_private_oc_with_huge_epsilon_is_the_level_error_ratio():
    """With a huge budget the noisy level errors are exact: ``α_k = min(α_{k−1}, E_k/E_0)``
    with ``E_k = Σ_{depth-k nodes} min{w^1, w^{−1}}`` of the released splits (first tree,
    weights 1/2)."""
    model, _ = private_fit(3)(jax.random.key(4), 1e5, -1.0, 0.5)
    feature, threshold = tree_arrays(model, 0)
    w = np.full(M_ROWS, 0.5)
    errors = [partition_error(node_at_depth(feature, threshold, k), w) for k in range(3)]
    expected = np.minimum.accumulate([e / errors[0] for e in errors])
    got = [float(model.alpha[0, 2**k - 1]) for k in range(3)]
    np.testing.assert_allclose(got, expected, atol=2e-3)
    assert expected[-1] < 0.9  # a real schedule, not the trivial α = 1


def test_exact_oc_replays_breadth_first_schedule():
    """Exact O.C (§5.1–§5.2): node ``ℓ`` (breadth-first) is split with ``α_ℓ = err(h_ℓ)/
    err(h_1)``, ``err(h) = Σ_leaves min{w^1, w^{−1}}`` of the tree as it stands; replayed
    for every tree under the weights of the released model (α_LC = 1)."""
    model = exact_fit()(-1.0)
    alpha = np.asarray(model.alpha)
    assert (alpha[0] < 1).any()
    for t in range(3):
        w = weights_of(released_margins(model, t), 1.0)
        feature, threshold = tree_arrays(model, t)
        node = np.zeros(M_ROWS, np.int64)
        root_error = partition_error(node, w)
        for j in range(len(feature)):
            err = partition_error(node, w)
            want = err / root_error if root_error > 1e-12 else 1.0
            np.testing.assert_allclose(alpha[t, j], want, rtol=1e-4, atol=1e-6,
                                       err_msg=f"tree {t} node {j}")
            here = node == j
            right = CODES[np.arange(M_ROWS), feature[j]] > threshold[j]
            node = np.where(here, 2 * j + 1 + right, node)


def test_beta_oc_must_be_positive():
    """Private O.C needs a positive share for its releases (``β_oc = 0`` would be infinite
    noise)."""
    with pytest.raises(ValueError, match="beta_oc"):
        dpjax.fit(X, Y, epsilon=1.0, key=0, beta_oc=0.0, n_trees=1, depth=2, **FIT)


@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_fixed_alpha_is_used_at_every_node(alpha):
    private, costs = private_fit(3)(jax.random.key(0), 1.0, alpha, 0.5)
    np.testing.assert_allclose(private.alpha, alpha, rtol=1e-7)
    # a fixed α reads no O.C estimate: those releases cost nothing
    np.testing.assert_array_equal(costs["O.C level errors"].epsilon, 0.0)
    exact = exact_fit()(alpha)
    np.testing.assert_allclose(exact.alpha, alpha, rtol=1e-7)


# ------------------------------------------------------------------------------------------
# 9. Sweeps
# ------------------------------------------------------------------------------------------


SWEEP = dict(n_trees=3, depth=2, **FIT)


@pytest.fixture(scope="module")
def private_sweep():
    return dpjax.sweep(X, Y, epsilon=[0.5, 5.0], alpha=[0.1, 1.0, "oc"], beta_tree=[0.1, 0.9],
                       seeds=2, **SWEEP)


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


@pytest.mark.parametrize(("i", "j"), [(0, 0), (7, 1), (11, 0)])
def test_sweep_models_match_single_fits(private_sweep, i, j):
    """Grid point ``i`` of seed ``j`` is the learner's fit with its own key
    (``dpjax.api.grid_keys``: its own noise and its own noisy row count), with the point's
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
                                  np.asarray(boosted_predict(params, model.encode(X))))


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


# ------------------------------------------------------------------------------------------
# 10. Predictions
# ------------------------------------------------------------------------------------------


class PredictTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_planted_problem_and_prediction_rules(self):
        model = exact_fit()(1.0)
        codes = jnp.asarray(CODES)
        decision = np.asarray(self.variant(boosted_decision)(model, codes))
        proba = np.asarray(self.variant(boosted_proba)(model, codes))
        predict = np.asarray(self.variant(boosted_predict)(model, codes))
        chex.assert_shape(decision, (M_ROWS,))
        chex.assert_shape(proba, (M_ROWS, 2))
        chex.assert_shape(predict, (M_ROWS,))
        np.testing.assert_allclose(decision, released_margins(model, 3), rtol=1e-5, atol=1e-6)
        assert np.mean(predict == Y) > 0.9
        np.testing.assert_array_equal(predict, (decision >= 0).astype(np.int32))
        np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
        np.testing.assert_array_equal(proba[:, 1] > 0.5, decision > 0)
        np.testing.assert_array_equal(proba[:, 1] < 0.5, decision < 0)

    def test_zero_score_predicts_positive_with_probability_half(self):
        model = jax.tree.map(jnp.zeros_like, exact_fit()(1.0))
        codes = jnp.asarray(CODES)
        np.testing.assert_array_equal(boosted_predict(model, codes), 1)
        np.testing.assert_allclose(boosted_proba(model, codes), 0.5)


def test_private_fit_with_large_budget_learns_the_planted_split():
    model, _ = private_fit(3)(jax.random.key(0), 1e4, 1.0, 0.5)
    assert np.mean(np.asarray(boosted_predict(model, jnp.asarray(CODES))) == Y) > 0.9


def test_model_api_predictions_are_consistent():
    model = dpjax.fit(X, Y, epsilon=5.0, key=2, n_trees=3, depth=2, **FIT)
    np.testing.assert_array_equal(model.encode(X), CODES)
    proba = model.predict_proba(X)
    decision = np.asarray(boosted_decision(model.params, jnp.asarray(CODES)))
    np.testing.assert_array_equal(model.predict(X), (decision >= 0).astype(int))
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(proba[:, 1] > 0.5, decision > 0)


# ------------------------------------------------------------------------------------------
# 11. Input validation through dpjax.fit
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "match"), [
    (dict(alpha=0), r"alpha must be in \(0, 1\]"),
    (dict(alpha=1.5), r"alpha must be in \(0, 1\]"),
    (dict(alpha="foo"), r"alpha must be in \(0, 1\]"),
    (dict(alpha=True), r"alpha must be in \(0, 1\]"),
    (dict(beta_tree=0), r"beta_tree must be in \(0, 1\)"),
    (dict(beta_tree=1), r"beta_tree must be in \(0, 1\)"),
    (dict(leaf_mechanism="counts", beta_mode="fold"), "does not go with"),
    (dict(leaf_mechanism="value", beta_mode="post"), "does not go with"),
    (dict(leaf_composition="parallel", leaf_mechanism="value"), "parallel"),
    (dict(oc_alpha="approximate"), "oc_alpha must be one of"),
    (dict(zeta=0.5), "zeta"),
    (dict(n_trees=0), "n_trees"),
    (dict(depth=21), "depth"),
    (dict(clamp=-1.0), "clamp"),
    (dict(beta_oc=1.0), "beta_oc"),
    (dict(size_share=0.0), "size_share"),
    (dict(size_share=1.0), "size_share"),
])
def test_invalid_hyper_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        dpjax.fit(X, Y, epsilon=1.0, key=0, **params, **FIT)


def test_multiclass_labels_raise():
    y3 = np.arange(M_ROWS) % 3
    with pytest.raises(ValueError, match="binary"):
        dpjax.fit(X, y3, epsilon=1.0, key=0, classes=[0, 1, 2], n_trees=1, depth=1, **FIT)


def test_invalid_sweep_values_raise():
    with pytest.raises(ValueError, match="alpha"):
        dpjax.sweep(X, Y, epsilon=1.0, alpha=[0.5, 0.0], n_trees=1, depth=1, **FIT)
    with pytest.raises(ValueError, match="beta_tree"):
        dpjax.sweep(X, Y, epsilon=1.0, beta_tree=[0.5, 1.0], n_trees=1, depth=1, **FIT)
