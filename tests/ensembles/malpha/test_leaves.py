"""Mα-boost leaf release and ``β_t`` (spec §4.4, §4.5): folded leaves bounded by ``α_LC``,
``release_leaves`` in every mode, its Laplace scales and budgets, and ``leaf_link``."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import (
    WEIGHT_UNIT,
    beta_rounding,
    leaf_link,
    leaves,
    leveraging_coefficient,
    release_leaves,
    tree_budgets,
)
from dpjax.mechanisms.laplace import grid_step
from tests.helpers.malpha import ZETA, assert_budget, assert_spent, np_link, np_link_bound

# ------------------------------------------------------------------------------------------
# Folded leaves: |β_t·h_t(λ)| <= α_LC (§4.5)
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


@pytest.mark.slow
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
# Laplace scales and budgets of release_leaves (§4.4, §4.5)
# ------------------------------------------------------------------------------------------


@pytest.fixture
def laplace_calls(monkeypatch):
    """The shape, sensitivity, budget, bound and event axes of every Laplace release of
    ``release_leaves`` (what the costs cannot show)."""
    calls = []
    real = leaves.laplace_mechanism

    def recording(key, value, sensitivity, epsilon, **kwargs):
        calls.append((np.shape(value), float(sensitivity), float(epsilon),
                      float(kwargs["bound"]), kwargs.get("event_ndim")))
        return real(key, value, sensitivity, epsilon, **kwargs)

    monkeypatch.setattr(leaves, "laplace_mechanism", recording)
    return calls


@pytest.mark.slow
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
