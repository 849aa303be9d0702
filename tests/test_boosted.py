"""Mα-boost, the boosted DP trees (``shared/specs/boosted-dp-trees-malpha.md`` §3–§5, §9).

Every fit here runs on one tiny planted problem (``m = 200`` rows, three features with eight
codes each, label = ``code_0 > 3`` with 5% label noise) through a handful of jitted
configurations cached per module, so the file compiles each configuration once.
"""

from __future__ import annotations

import functools
import itertools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.data import DataDependentWarning
from dpjax.ensembles import boosted
from dpjax.ensembles.boosted import (
    BoostedTrees,
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
from dpjax.mechanisms import exponential_logits, laplace_scale
from dpjax.trees import leaf_index, malpha, split_level_epsilons

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


@functools.cache
def private_fit(n_trees: int, depth: int = 3):
    """Jitted private ``fit_boosted`` (value leaves, folded β) with traced key, ε, α, β_tree."""
    def fit(key, epsilon, alpha, beta_tree):
        return fit_boosted(key, jnp.asarray(CODES), jnp.asarray(Y), epsilon, alpha=alpha,
                           beta_tree=beta_tree, n_trees=n_trees, depth=depth,
                           n_codes_per_feature=N_CODES)
    return jax.jit(fit)


@functools.cache
def exact_fit(n_trees: int = 3, depth: int = 2):
    """Jitted non-private ``fit_boosted`` with a traced α."""
    def fit(alpha):
        return fit_boosted(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y), None,
                           alpha=alpha, n_trees=n_trees, depth=depth, n_codes_per_feature=N_CODES)
    return jax.jit(fit)


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
    """One *un-jitted* private fit (O.C private, settings ``EAGER``) with the boosting weights
    and every mechanism call recorded through ``jax.debug.callback`` (the scan body is traced
    once, so the records are taken at run time, once per round)."""
    records = {"weights": [], "leaf": [], "oc": [], "splits": []}
    real_grow = boosted.grow_malpha_tree

    def grow(key, codes, weights, *args, **kwargs):
        jax.debug.callback(lambda w: records["weights"].append(np.asarray(w)), weights,
                           ordered=True)
        return real_grow(key, codes, weights, *args, **kwargs)

    def recorder(name, real):
        def mechanism(key, value, sensitivity, epsilon, **kwargs):
            jax.debug.callback(
                lambda v, s, e: records[name].append((np.shape(v), np.asarray(s),
                                                      float(e))),
                value, sensitivity, epsilon, ordered=True)
            return real(key, value, sensitivity, epsilon, **kwargs)
        return mechanism

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boosted, "grow_malpha_tree", grow)
        patch.setattr(boosted, "laplace_mechanism", recorder("leaf", boosted.laplace_mechanism))
        patch.setattr(malpha, "laplace_mechanism", recorder("oc", malpha.laplace_mechanism))
        patch.setattr(malpha, "exponential_mechanism",
                      recorder("splits", malpha.exponential_mechanism))
        model = fit_boosted(jax.random.key(3), jnp.asarray(CODES), jnp.asarray(Y),
                            EAGER["epsilon"], alpha=-1.0, beta_tree=EAGER["beta_tree"],
                            n_trees=EAGER["n_trees"], depth=EAGER["depth"],
                            beta_oc=EAGER["beta_oc"], n_codes_per_feature=N_CODES)
        model = jax.block_until_ready(model)
    jax.effects_barrier()
    return model, records


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
    private = private_fit(3)(jax.random.key(0), 1.0, 0.5, 0.5)
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
    model = fit(jax.random.key(5), 1.0, -1.0, 0.5)
    chex.assert_trees_all_equal(model, fit(jax.random.key(5), 1.0, -1.0, 0.5))
    other = fit(jax.random.key(6), 1.0, -1.0, 0.5)
    assert not np.array_equal(other.trees.feature, model.trees.feature)
    assert not np.allclose(other.trees.leaf, model.trees.leaf)


def test_jit_equals_no_jit_and_shorter_fits_are_prefixes(eager_private):
    """Tree ``t`` draws from ``fold_in(key, t)``, spends ``ε/T`` and is weighted by the released
    trees before it, so the un-jitted 2-tree fit at ε = 2 is exactly the first two trees of the
    jitted 3-tree fit at ε = 3 (the same ``ε/T = 1`` per tree)."""
    eager, _ = eager_private
    jitted = private_fit(3)(jax.random.key(3), 1.5 * EAGER["epsilon"], -1.0, EAGER["beta_tree"])
    prefix = jax.tree.map(lambda a: a[:2], jitted)
    chex.assert_trees_all_equal(eager.trees.feature, prefix.trees.feature)
    chex.assert_trees_all_equal(eager.trees.threshold, prefix.trees.threshold)
    chex.assert_trees_all_close(eager, prefix, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("epsilon", [1.0, None])
def test_n_active_trees_equal_the_shorter_fit(epsilon):
    """``n_active = T'`` (traced) inside a ``T``-tree program gives exactly the ``T'``-tree fit
    (budget ε/T' per tree) and releases nothing after it: one compile serves every T' <= T."""
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(depth=2, n_codes_per_feature=N_CODES, alpha=-1.0)
    masked = jax.jit(lambda n: fit_boosted(jax.random.key(5), codes, y, epsilon, n_trees=4,
                                           n_active=n, **common))
    for n_active in (1, 3):
        short = fit_boosted(jax.random.key(5), codes, y, epsilon, n_trees=n_active, **common)
        long = masked(jnp.float32(n_active))
        head = jax.tree.map(lambda a, n=n_active: a[:n], long)
        chex.assert_trees_all_equal(head.trees.feature, short.trees.feature)
        chex.assert_trees_all_close(head, short, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(long.trees.leaf[n_active:], 0.0)
        np.testing.assert_array_equal(long.beta[n_active:], 0.0)


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
    model, records = eager_private
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
    extreme cases (all weights 1, one class, values ±M aligned with the class)."""
    rng = np.random.default_rng(seed)
    m = 50
    w = rng.uniform(0, 1, (n_problems, m))
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
    ``α_LC`` and leaf budget."""
    def release(keys, stats, alpha_link, epsilon_leaf):
        return jax.vmap(lambda k, s: release_leaves(
            k, s, alpha_link, clamp=clamp, zeta=ZETA, epsilon_leaf=epsilon_leaf,
            epsilon_beta=1.0, sensitivity=1.0, m=m, leaf_mechanism="value",
            beta_mode="fold"))(keys, stats)
    return jax.jit(release)


@pytest.mark.parametrize(("alpha_link", "clamp"), [(1.0, 10.0), (0.1, 10.0), (1.0, 1.0)])
def test_release_leaves_fold_without_noise(alpha_link, clamp):
    """With a huge leaf budget the released folded leaves are ``β_t·clip(ψ(q̂), ±M)``; with
    any budget they lie in ``[−α_LC, α_LC]`` and ``β = 1``."""
    stats, _, m = _random_leaf_problems(1, 40, clamp)
    keys = jax.random.split(jax.random.key(0), stats.shape[0])
    for eps_leaf, noise_free in ((1e9, True), (0.05, False)):
        leaves, beta = fold_release(clamp, m)(keys, stats, alpha_link, eps_leaf)
        np.testing.assert_array_equal(beta, 1.0)
        assert np.all(np.abs(np.asarray(leaves)) <= alpha_link)
        if noise_free:
            sums = np.asarray(stats, np.float64)
            total = sums.sum(-1)
            q = np.where(total > 0, sums[..., 1] / np.where(total > 0, total, 1.0), 0.5)
            values = np.clip(np_link(np.clip(q, ZETA, 1 - ZETA), alpha_link), -clamp, clamp)
            a = alpha_link / clamp**2
            beta_t = a / m * np.sum(values * (sums[..., 1] - sums[..., 0]), -1)
            np.testing.assert_allclose(leaves, beta_t[:, None] * values, rtol=1e-4,
                                       atol=1e-6)
        else:
            assert np.mean(np.abs(np.asarray(leaves)) == alpha_link) > 0.5  # noise dominates


class ReleaseLeavesTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_shapes_and_clamps_for_every_mode(self):
        stats = jnp.asarray(_random_leaf_problems(2, 1, 10.0)[0][0])
        for mechanism, mode in [("value", "fold"), ("counts", "post")]:
            release = self.variant(lambda k, s, e, mech=mechanism, bm=mode: release_leaves(
                k, s, jnp.float32(0.5), clamp=10.0, zeta=ZETA, epsilon_leaf=e,
                epsilon_beta=e, sensitivity=1.0, m=50, leaf_mechanism=mech, beta_mode=bm))
            leaves, beta = release(jax.random.key(1), stats, 0.3)
            chex.assert_shape(leaves, (8,))
            chex.assert_shape(beta, ())
            chex.assert_tree_all_finite((leaves, beta))
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
    """The recorded mechanisms of the un-jitted O.C fit, per round: ``d`` exponential
    mechanisms (``2^k`` nodes at ``(1 − β_oc)·β_tree·ε/(T·d·2^k)`` each, sensitivity
    ``Δ^(α_ℓ)(m)`` with the node's own α), ``d`` O.C releases (``β_oc·β_tree·ε/(T·d)``,
    sensitivity 1) and one vector of ``2^d`` folded leaves (``(1 − β_tree)·ε/(T·2^d)`` each,
    range ``2·α_LC``)."""
    model, records = eager_private
    eps, bt, n_trees, depth, boc = (EAGER[k] for k in ("epsilon", "beta_tree", "n_trees",
                                                       "depth", "beta_oc"))
    assert len(records["splits"]) == len(records["oc"]) == n_trees * depth
    assert len(records["leaf"]) == n_trees
    for t in range(n_trees):
        for k in range(depth):
            shape, sensitivity, epsilon = records["splits"][t * depth + k]
            assert shape == (2**k, len(N_CODES) * N_BINS)
            assert epsilon == pytest.approx((1 - boc) * bt * eps / (n_trees * depth * 2**k),
                                            rel=1e-6)
            node_alpha = np.asarray(model.alpha[t, 2**k - 1: 2 ** (k + 1) - 1])
            np.testing.assert_allclose(np.ravel(sensitivity),
                                       3 + 2 * node_alpha * (np.sqrt(M_ROWS) - 1), rtol=1e-6)
            shape, sensitivity, epsilon = records["oc"][t * depth + k]
            assert shape == ()
            np.testing.assert_allclose(sensitivity, 1.0)
            assert epsilon == pytest.approx(boc * bt * eps / (n_trees * depth), rel=1e-6)
        shape, sensitivity, epsilon = records["leaf"][t]
        assert shape == (2**depth,)
        np.testing.assert_allclose(sensitivity, 2.0)  # 2·α_LC, α_LC = 1 under O.C
        assert epsilon == pytest.approx((1 - bt) * eps / (n_trees * 2**depth), rel=1e-6)
    # one tree spends ε/T: 2^k nodes per level, d O.C releases, 2^d leaves
    total = sum(shape[0] * e for shape, _, e in records["splits"][:depth])
    total += sum(e for _, _, e in records["oc"][:depth]) + 2**depth * records["leaf"][0][2]
    assert total == pytest.approx(eps / n_trees, rel=1e-5)


@pytest.fixture
def laplace_calls(monkeypatch):
    calls = []
    real = boosted.laplace_mechanism

    def recording(key, value, sensitivity, epsilon):
        calls.append((np.shape(value), float(sensitivity), float(epsilon)))
        return real(key, value, sensitivity, epsilon)

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
                          beta_share=share, beta_mode=beta_mode, leaf_composition=composition)
    stats = _random_leaf_problems(3, 1, clamp)[0][0]
    release_leaves(jax.random.key(0), stats, jnp.float32(alpha_link), clamp=clamp, zeta=ZETA,
                   epsilon_leaf=budget["leaf"], epsilon_beta=budget["beta"],
                   sensitivity=multiplier, m=m, leaf_mechanism=leaf_mechanism,
                   beta_mode=beta_mode)
    per_tree_leaves = (1 - bt) * eps / n_trees
    n_leaves = 2**depth
    beta_share = share if beta_mode == "laplace" else 0.0
    leaf_eps = per_tree_leaves * (1 - beta_share) / (n_leaves if composition == "sequential"
                                                      else 1)
    if leaf_mechanism == "counts":
        expected = [((n_leaves, 2), multiplier, leaf_eps)]  # class sums, L1 sensitivity 1 or 2
    elif beta_mode == "fold":
        expected = [((n_leaves,), 2 * alpha_link, leaf_eps)]  # range [−α_LC, α_LC]
    else:
        expected = [((n_leaves,), 2 * clamp, leaf_eps)]  # range [−M, M]
    if beta_mode == "laplace":
        a = alpha_link / clamp**2
        expected.append(((), 2 * a * clamp / m, per_tree_leaves * share))
    assert len(laplace_calls) == len(expected)
    for (shape, sens, epsilon), (want_shape, want_sens, want_eps) in zip(
            laplace_calls, expected, strict=True):
        assert shape == want_shape
        assert sens == pytest.approx(want_sens, rel=1e-6)
        assert epsilon == pytest.approx(want_eps, rel=1e-6)
    # the tree spends ε/T: splits, then 2^d sequential leaves (or one parallel release), + β
    releases = [n_leaves if composition == "sequential" else 1, 1]
    spent = sum(e * r for (_, _, e), r in zip(laplace_calls, releases, strict=False))
    assert float(budget["splits"]) + spent == pytest.approx(eps / n_trees, rel=1e-6)


@pytest.mark.parametrize("oc_private", [True, False])
def test_tree_budgets_formulas(oc_private):
    eps, bt, n_trees, depth, boc = 2.0, 0.6, 5, 3, 0.25
    budget = tree_budgets(eps, bt, oc_private, n_trees=n_trees, depth=depth, beta_oc=boc,
                          beta_share=0.1, beta_mode="fold", leaf_composition="sequential")
    share_oc = boc if oc_private else 0.0
    assert float(budget["splits"]) == pytest.approx((1 - share_oc) * bt * eps / n_trees,
                                                    rel=1e-6)
    np.testing.assert_allclose(
        split_level_epsilons(budget["splits"], depth),
        [(1 - share_oc) * bt * eps / (n_trees * depth * 2**k) for k in range(depth)], rtol=1e-6)
    assert float(budget["leaf"]) == pytest.approx((1 - bt) * eps / (n_trees * 2**depth),
                                                  rel=1e-6)
    if oc_private:
        assert float(budget["oc"]) == pytest.approx(boc * bt * eps / (n_trees * depth), rel=1e-6)
    # the tree's releases add up to ε/T
    spent = float(budget["splits"]) + float(budget["leaf"]) * 2**depth
    spent += float(budget["oc"]) * depth if oc_private else 0.0
    assert spent == pytest.approx(eps / n_trees, rel=1e-6)
    # jittable with traced ε, β_tree and O.C flag
    traced = jax.jit(lambda e, b, o: tree_budgets(
        e, b, o, n_trees=n_trees, depth=depth, beta_oc=boc, beta_share=0.1, beta_mode="fold",
        leaf_composition="sequential"))(eps, bt, oc_private)
    chex.assert_trees_all_close(traced, budget, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# 6. The privacy ledger (§4.2 eq. (18), §4.6, §5.3, §9)
# ------------------------------------------------------------------------------------------


def expected_ledger(eps: float, n_trees: int, depth: int, beta_tree: float, alpha,
                    beta_oc: float = 0.1, beta_share: float = 0.1, beta_mode: str = "fold",
                    composition: str = "sequential") -> list[tuple[float, int]]:
    """``(ε each, count)`` of every entry, in ledger order, straight from the spec, with the
    shares as the float32 values the fit uses (the learner rounds them so the ledger and the
    fit agree)."""
    beta_tree, beta_oc, beta_share = (float(np.float32(v)) for v in (beta_tree, beta_oc,
                                                                      beta_share))
    oc_private = alpha == "oc" and depth > 1
    share_oc = beta_oc if oc_private else 0.0
    entries = [((1 - share_oc) * beta_tree * eps / (n_trees * depth * 2**k), n_trees * 2**k)
               for k in range(depth)]
    if oc_private:
        entries.append((beta_oc * beta_tree * eps / (n_trees * depth), n_trees * depth))
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    per_leaf = composition == "sequential"
    entries.append(((1 - beta_tree) * (1 - share_beta) * eps / (n_trees * (2**depth if per_leaf
                                                                            else 1)),
                    n_trees * (2**depth if per_leaf else 1)))
    if share_beta:
        entries.append(((1 - beta_tree) * share_beta * eps / n_trees, n_trees))
    return entries


def assert_ledger(ledger: dpjax.PrivacyLedger, eps: float, expected) -> None:
    assert ledger.private
    assert ledger.requested_epsilon == eps
    assert ledger.epsilon <= eps
    assert ledger.epsilon == pytest.approx(eps, rel=1e-12)
    assert [(e.epsilon, e.count) for e in ledger.entries] == [
        (pytest.approx(each, rel=1e-12), count) for each, count in expected]
    assert all(e.private and e.delta == 0.0 for e in ledger.entries)


def test_default_config_ledger_spends_exactly_epsilon():
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, **FIT)
    assert model.hyperparams["alpha"] == "oc" and model.hyperparams["n_trees"] == 10
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, "oc"))
    names = [e.what for e in model.privacy.entries]
    assert "O.C level errors" in names
    _assert_boosted_shapes(model.params, 10, 4)


def test_spec_section_9_budget_example():
    """ε = 1, β_tree = 0.5, T = 10, d = 4, fixed α: per-node 0.0125, 0.00625, 0.003125,
    0.0015625; the splits of one tree spend 0.05 = β_tree·ε/T."""
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, alpha=1.0, **FIT)
    splits = model.privacy.entries[:4]
    assert [e.epsilon for e in splits] == pytest.approx([0.0125, 0.00625, 0.003125, 0.0015625],
                                                        rel=1e-12)
    assert sum(e.epsilon * 2**k for k, e in enumerate(splits)) == pytest.approx(0.05)
    assert len(model.privacy.entries) == 5  # no O.C entry for a fixed α
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, 1.0))


@pytest.mark.parametrize(("eps", "beta_tree", "alpha"), [
    (0.5, 0.1, 0.1), (5.0, 0.9, "oc"), (0.01, 0.5, 1.0), (25.0, 0.3, "oc"), (1.0, 0.5, "oc")])
def test_ledger_through_fit(eps, beta_tree, alpha):
    model = dpjax.fit(X, Y, epsilon=eps, key=1, beta_tree=beta_tree, alpha=alpha, n_trees=3,
                      depth=2, **FIT)
    assert_ledger(model.privacy, eps, expected_ledger(eps, 3, 2, beta_tree, alpha))


@pytest.mark.parametrize(("n_trees", "depth"), [(1, 1), (2, 1), (7, 3), (20, 6)])
@pytest.mark.parametrize("alpha", [0.1, 1.0, "oc"])
def test_ledger_grid(n_trees, depth, alpha):
    """The learner's ledger (what ``dpjax.fit`` records) over T, d, ε, β_tree and the modes;
    ``d = 1`` under O.C has no O.C entry (nothing to calibrate)."""
    for eps, beta_tree in itertools.product([0.01, 0.7, 10.0], [0.1, 0.5, 0.9]):
        for mechanism, mode, composition in [("value", "fold", "sequential"),
                                             ("value", "laplace", "sequential"),
                                             ("counts", "post", "parallel")]:
            params = BOOSTED.resolve(dict(n_trees=n_trees, depth=depth, alpha=alpha,
                                          beta_tree=beta_tree, leaf_mechanism=mechanism,
                                          beta_mode=mode, leaf_composition=composition))
            ledger = dpjax.PrivacyLedger(entries=tuple(BOOSTED.ledger(eps, params, 1.0)),
                                         requested_epsilon=eps)
            assert_ledger(ledger, eps, expected_ledger(eps, n_trees, depth, beta_tree, alpha,
                                                       beta_mode=mode, composition=composition))
            has_oc = any(e.what == "O.C level errors" for e in ledger.entries)
            assert has_oc == (alpha == "oc" and depth > 1)


def test_replace_one_and_laplace_beta_still_total_epsilon():
    eps = 0.8
    model = dpjax.fit(X, Y, epsilon=eps, key=0, neighbouring="replace_one", beta_mode="laplace",
                      n_trees=2, depth=1, **FIT)
    ledger = model.privacy
    assert ledger.neighbouring == "replace_one"
    assert_ledger(ledger, eps, expected_ledger(eps, 2, 1, 0.5, "oc", beta_mode="laplace"))
    assert ledger.entries[-1].what == "leveraging coefficients β_t"
    assert not any("O.C" in e.what for e in ledger.entries)  # d = 1: nothing to calibrate
    assert "sens. 2" in ledger.entries[0].mechanism  # doubled split sensitivity
    assert "2M" in ledger.entries[1].mechanism  # unfolded value leaves: range [−M, M]


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
    assert fixed.privacy.private and fixed.privacy.epsilon == pytest.approx(1.0, rel=1e-12)


def test_paper_fast_beta_warns_and_is_not_private_through_fit():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, Y, epsilon=1.0, key=0, beta_mode="paper_fast", alpha=0.5,
                          n_trees=1, depth=1, **FIT)
    assert model.privacy.private is False
    assert model.privacy.epsilon == math.inf
    assert model.privacy.not_private_reasons == ("β_t from the data without noise (paper_fast)",)


@pytest.mark.parametrize("leaf_mechanism", ["value", "counts"])
def test_paper_fast_beta_warns_and_is_not_private(leaf_mechanism):
    params = BOOSTED.resolve(dict(beta_mode="paper_fast", leaf_mechanism=leaf_mechanism,
                                  alpha=0.5))
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        entries = BOOSTED.ledger(1.0, params, 1.0)
    ledger = dpjax.PrivacyLedger(entries=tuple(entries), requested_epsilon=1.0)
    assert ledger.private is False and ledger.epsilon == math.inf
    assert [e.what for e in entries if not e.private] == [
        "β_t from the data without noise (paper_fast)"]


# ------------------------------------------------------------------------------------------
# 7. Float32 budgets inside the fit vs the ledger
# ------------------------------------------------------------------------------------------


BUDGET_MODES = [("value", "fold", "sequential"), ("value", "laplace", "sequential"),
                ("counts", "post", "parallel")]


def _budget_pairs(eps, n_trees, depth, beta_tree, alpha, mode):
    """``(float32 budget used by the fit, ledger ε of that release, sensitivity)``."""
    mechanism, beta_mode, composition = mode
    params = BOOSTED.resolve(dict(n_trees=n_trees, depth=depth, alpha=alpha,
                                  beta_tree=beta_tree, leaf_mechanism=mechanism,
                                  beta_mode=beta_mode, leaf_composition=composition))
    entries = BOOSTED.ledger(eps, params, 1.0)
    oc_private = alpha == "oc" and depth > 1
    # the fit receives ε and β_tree as float32 arrays (dpjax.fit / dpjax.sweep)
    budget = tree_budgets(jnp.float32(eps), jnp.float32(beta_tree), oc_private,
                          n_trees=n_trees, depth=depth, beta_oc=params["beta_oc"],
                          beta_share=params["beta_share"],
                          beta_mode=beta_mode, leaf_composition=composition)
    levels = np.asarray(split_level_epsilons(budget["splits"], depth))
    pairs = [(levels[k], entries[k].epsilon, "exponential") for k in range(depth)]
    rest = entries[depth:]
    if oc_private:
        pairs.append((np.float32(budget["oc"]), rest.pop(0).epsilon, 1.0))
    pairs.append((np.float32(budget["leaf"]), rest.pop(0).epsilon, 2.0))
    if beta_mode == "laplace":
        pairs.append((np.float32(budget["beta"]), rest.pop(0).epsilon, 0.02))
    assert not rest
    return pairs


def _check_budget_grid(beta_tree: float) -> None:
    for eps, n_trees, depth, alpha, mode in itertools.product(
            [0.1, 1.0, 3.7, 25.0], [1, 7], [1, 3], ["oc", 0.5], BUDGET_MODES):
        for used, ledger, sensitivity in _budget_pairs(eps, n_trees, depth, beta_tree, alpha,
                                                       mode):
            excess_ulps = (float(used) - ledger) / float(np.spacing(np.float32(ledger)))
            where = (eps, n_trees, depth, beta_tree, alpha, mode, float(used), ledger)
            assert excess_ulps <= 4, where
            # what the mechanisms make of it still pays at least the ledger's ε
            if sensitivity == "exponential":  # rate ε/(2Δ), rounded down
                delta = 21.0  # Δ^(1)(100)
                rate = float(exponential_logits(1.0, delta, used))
                assert rate <= ledger / (2 * delta), where
            else:  # Laplace scale Δ/ε, rounded up
                assert float(laplace_scale(sensitivity, used)) >= sensitivity / ledger, where


@pytest.mark.parametrize("beta_tree", [0.1, 0.3, 0.5, 0.7])
def test_float32_budgets_never_exceed_the_ledger(beta_tree):
    _check_budget_grid(beta_tree)


def test_float32_budgets_never_exceed_the_ledger_beta_tree_near_one():
    _check_budget_grid(0.9)


# ------------------------------------------------------------------------------------------
# 8. Objective calibration (§5)
# ------------------------------------------------------------------------------------------


def test_private_oc_alphas_per_level():
    """Private O.C (§5.3): root α = 1, one α per level, in [0, 1], non-increasing."""
    fit = private_fit(3)
    seen_below_one = False
    for seed, eps in itertools.product(range(3), [0.3, 5.0, 1e5]):
        model = fit(jax.random.key(seed), eps, -1.0, 0.5)
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
    model = private_fit(3)(jax.random.key(4), 1e5, -1.0, 0.5)
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
    private = private_fit(3)(jax.random.key(0), 1.0, alpha, 0.5)
    np.testing.assert_allclose(private.alpha, alpha, rtol=1e-7)
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
    sweep = private_sweep
    point = sweep.grid[i]
    single = dpjax.fit(X, Y, key=sweep.seeds[j], epsilon=point["epsilon"], alpha=point["alpha"],
                       beta_tree=point["beta_tree"], n_trees=3, depth=2, **FIT)
    model = sweep.model(i, j)
    assert model.privacy.epsilon == pytest.approx(single.privacy.epsilon, rel=1e-12)
    assert np.mean(model.predict(X) == single.predict(X)) >= 0.99
    same_splits = np.all(np.asarray(model.params.trees.feature)
                         == np.asarray(single.params.trees.feature), axis=-1)
    assert same_splits.any()
    np.testing.assert_allclose(np.asarray(model.params.trees.leaf)[same_splits],
                               np.asarray(single.params.trees.leaf)[same_splits], atol=1e-4)


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
    model = private_fit(3)(jax.random.key(0), 1e4, 1.0, 0.5)
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
